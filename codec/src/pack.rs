//! Packs: several records in one stored value, so that a large imported session takes a
//! few keys per hundred records instead of two per record (docs/format.md, "Packs").
//!
//! A **log pack** holds consecutive log rows (each exactly the value of a single log row,
//! [`crate::record::encode_log`]); an **id pack** holds a sorted run of the entry-id index.
//! Both begin with a table of end offsets guarded by a checksum, so that one record of a
//! pack is found without decoding the others.

use crate::error::CodecError;
use crate::record::{checksum, NodeRecord, CHECKSUM_LEN};

/// Most records in one log pack.
pub const LOG_PACK_RECORDS: usize = 256;
/// A log pack is closed once its rows reach this many bytes (a larger row is alone).
pub const LOG_PACK_BYTES: usize = 128 * 1024;
/// Most ids in one id pack.
pub const ID_PACK_IDS: usize = 512;

fn corrupt(what: &str, detail: impl std::fmt::Display) -> CodecError {
    CodecError::CorruptRecord(format!("{what}: {detail}"))
}

fn u32_of(n: usize) -> [u8; 4] {
    // Offsets are below 4 GiB: `LogPackWriter::push` refuses a row that would pass it, and
    // id packs hold a few KiB.
    u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes()
}

/// Which bytes a pack's checksum covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Covers {
    /// The count and the ends (log packs: each row carries its own checks).
    Table,
    /// The count, the ends and the body (id packs).
    All,
}

/// Builds `mark ++ count:u32 BE ++ end:u32 BE × count ++ crc32 LE ++ body` (the checksum
/// does not cover `mark`).
fn seal(mark: &[u8], ends: &[usize], body: &[u8], covers: Covers) -> Vec<u8> {
    let mut out = header(mark, ends, body, covers);
    out.extend_from_slice(body);
    out
}

/// The part of a sealed pack before its body.
fn header(mark: &[u8], ends: &[usize], body: &[u8], covers: Covers) -> Vec<u8> {
    let mut out = Vec::with_capacity(mark.len() + 4 + 4 * ends.len() + CHECKSUM_LEN + body.len());
    out.extend_from_slice(mark);
    out.extend_from_slice(&u32_of(ends.len()));
    for &end in ends {
        out.extend_from_slice(&u32_of(end));
    }
    let table = &out[mark.len()..];
    let sum = match covers {
        Covers::Table => checksum(table),
        Covers::All => {
            let mut h = crc32fast::Hasher::new();
            h.update(table);
            h.update(body);
            h.finalize().to_le_bytes()
        }
    };
    out.extend_from_slice(&sum);
    out
}

/// A parsed pack: its end offsets (checked) and body.
#[derive(Debug, Clone, Copy)]
struct Table<'a> {
    ends: &'a [u8],
    body: &'a [u8],
    count: usize,
}

impl<'a> Table<'a> {
    fn parse(what: &str, bytes: &'a [u8], covers: Covers) -> Result<Table<'a>, CodecError> {
        let (count, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or_else(|| corrupt(what, "shorter than its count"))?;
        let count = u32::from_be_bytes(*count) as usize;
        let table_len = count
            .checked_mul(4)
            .filter(|&n| n + CHECKSUM_LEN <= rest.len())
            .ok_or_else(|| corrupt(what, format!("{count} records do not fit")))?;
        let (ends, rest) = rest.split_at(table_len);
        let (sum, body) = rest.split_at(CHECKSUM_LEN);
        let expected = match covers {
            Covers::Table => checksum(&bytes[..4 + table_len]),
            Covers::All => {
                let mut h = crc32fast::Hasher::new();
                h.update(&bytes[..4 + table_len]);
                h.update(body);
                h.finalize().to_le_bytes()
            }
        };
        if expected != sum {
            return Err(corrupt(what, "table checksum mismatch"));
        }
        if count == 0 {
            return Err(corrupt(what, "empty"));
        }
        let table = Table { ends, body, count };
        let mut previous = 0;
        for i in 0..count {
            let end = table.end(i);
            if end < previous || end > body.len() {
                return Err(corrupt(what, format!("record {i} ends out of bounds")));
            }
            previous = end;
        }
        if previous != body.len() {
            return Err(corrupt(what, "trailing bytes"));
        }
        Ok(table)
    }

    fn end(&self, i: usize) -> usize {
        let at = 4 * i;
        match self.ends.get(at..at + 4) {
            Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]) as usize,
            _ => 0,
        }
    }

    /// Record `i`'s bytes (offsets were checked by `parse`).
    fn get(&self, i: usize) -> &'a [u8] {
        let start = if i == 0 { 0 } else { self.end(i - 1) };
        self.body.get(start..self.end(i)).unwrap_or_default()
    }
}

/// Accumulates log rows into a pack.
#[derive(Debug, Default)]
pub struct LogPackWriter {
    ends: Vec<usize>,
    body: Vec<u8>,
}

impl LogPackWriter {
    /// An empty pack.
    pub fn new() -> LogPackWriter {
        LogPackWriter::default()
    }

    /// An empty pack with room for `rows` rows of `bytes` bytes in all, and its table.
    pub fn with_capacity(rows: usize, bytes: usize) -> LogPackWriter {
        LogPackWriter {
            ends: Vec::with_capacity(rows),
            body: Vec::with_capacity(bytes + 1 + 4 + 4 * rows + CHECKSUM_LEN),
        }
    }

    /// Adds one log row (the value [`crate::record::encode_log`] returns). A pack's offsets
    /// are u32: a row that would end past 4 GiB is refused, and the pack is left as it was.
    pub fn push(&mut self, row: &[u8]) -> Result<(), CodecError> {
        let end = self.body.len() + row.len();
        if u32::try_from(end).is_err() {
            return Err(corrupt(
                "log pack",
                format!("a row of {} bytes does not fit (4 GiB at most)", row.len()),
            ));
        }
        self.body.extend_from_slice(row);
        self.ends.push(end);
        Ok(())
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Whether the pack is full: [`LOG_PACK_RECORDS`] rows or [`LOG_PACK_BYTES`] bytes.
    pub fn is_full(&self) -> bool {
        self.ends.len() >= LOG_PACK_RECORDS || self.body.len() >= LOG_PACK_BYTES
    }

    /// The pack's value; the writer is left empty.
    pub fn take(&mut self) -> Vec<u8> {
        let out = seal(&[], &self.ends, &self.body, Covers::Table);
        self.ends.clear();
        self.body.clear();
        out
    }

    /// Adds the log row of `node` and `line`, encoded in place
    /// ([`crate::record::encode_log`]). A row that would end past 4 GiB is refused, and the
    /// pack is left as it was.
    pub fn push_log(&mut self, node: &NodeRecord, line: &[u8]) -> Result<(), CodecError> {
        self.push_log_stamped(node, line, None)
    }

    /// [`Self::push_log`] of an operation's first record, with its stamp
    /// ([`crate::record::encode_log_stamped`]).
    pub fn push_log_stamped(
        &mut self,
        node: &NodeRecord,
        line: &[u8],
        stamp: Option<&crate::op::OpStamp>,
    ) -> Result<(), CodecError> {
        let start = self.body.len();
        crate::record::encode_log_stamped_into(&mut self.body, node, line, stamp);
        let end = self.body.len();
        if u32::try_from(end).is_err() {
            self.body.truncate(start);
            return Err(corrupt(
                "log pack",
                format!(
                    "a row of {} bytes does not fit (4 GiB at most)",
                    end - start
                ),
            ));
        }
        self.ends.push(end);
        Ok(())
    }

    /// Bytes of the rows held.
    pub fn body_len(&self) -> usize {
        self.body.len()
    }

    /// The one row held, as a single log row's value; `None` (and the writer unchanged)
    /// unless it holds exactly one.
    pub fn take_row(&mut self) -> Option<Vec<u8>> {
        if self.ends.len() != 1 {
            return None;
        }
        self.ends.clear();
        Some(std::mem::take(&mut self.body))
    }

    /// The pack as a batch: the value of a log key (tag `0x10`) holding the rows of
    /// consecutive records, [`BATCH_MARK`] then the pack ([`LogValue`]); the writer is left empty.
    pub fn take_batch(&mut self) -> Vec<u8> {
        // The table goes in front of the rows in place (a move within the buffer, which
        // `with_capacity` sized for it), not into a copy.
        let header = header(&[BATCH_MARK], &self.ends, &[], Covers::Table);
        let mut out = std::mem::take(&mut self.body);
        out.splice(0..0, header);
        self.ends.clear();
        out
    }
}

/// The first byte of a log value (tag `0x10`) that holds a batch — a log pack of the rows of
/// consecutive records — rather than a single row. A single row begins with its node record's
/// length as a u32 big-endian, whose first byte is never `0xFF` (a node record is its id and
/// about a hundred bytes; it would need an id of nearly 4 GiB).
pub const BATCH_MARK: u8 = 0xFF;

/// The value of a log key (tag `0x10`): one record's row, or a batch of consecutive rows
/// starting at the key's seq (docs/format.md, "Batches").
#[derive(Debug, Clone, Copy)]
pub enum LogValue<'a> {
    /// A single log row.
    Row(&'a [u8]),
    /// A batch: the rows of records `seq ..` (of one transaction, or of several coalesced).
    Batch(LogPack<'a>),
}

impl<'a> LogValue<'a> {
    /// Tells a row from a batch, checking a batch's table (rows are checked when decoded).
    pub fn parse(bytes: &'a [u8]) -> Result<LogValue<'a>, CodecError> {
        match bytes.split_first() {
            Some((&BATCH_MARK, pack)) => {
                Table::parse("log batch", pack, Covers::Table).map(|t| LogValue::Batch(LogPack(t)))
            }
            _ => Ok(LogValue::Row(bytes)),
        }
    }

    /// Records held: 1 for a row.
    pub fn len(&self) -> usize {
        match self {
            LogValue::Row(_) => 1,
            LogValue::Batch(pack) => pack.len(),
        }
    }

    /// Always false: a value holds at least one record.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The row of record `i` of the value, or `None` past its end.
    pub fn row(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            LogValue::Row(row) => (i == 0).then_some(*row),
            LogValue::Batch(pack) => pack.row(i),
        }
    }
}

/// A stored log pack: consecutive log rows, the first at the seq of its key.
#[derive(Debug, Clone, Copy)]
pub struct LogPack<'a>(Table<'a>);

impl<'a> LogPack<'a> {
    /// Parses a pack, checking its table (the rows are checked when decoded).
    pub fn parse(bytes: &'a [u8]) -> Result<LogPack<'a>, CodecError> {
        Table::parse("log pack", bytes, Covers::Table).map(LogPack)
    }

    /// Rows held (at least one).
    pub fn len(&self) -> usize {
        self.0.count
    }

    /// Always false: an empty pack is refused by [`LogPack::parse`].
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Row `i` (the value of a single log row), or `None` past the end.
    pub fn row(&self, i: usize) -> Option<&'a [u8]> {
        (i < self.0.count).then(|| self.0.get(i))
    }
}

/// Builds an id pack from `(id, seq)` pairs in strictly increasing byte order of the ids.
pub fn encode_id_pack<'s>(pairs: impl IntoIterator<Item = (&'s str, u64)>) -> Vec<u8> {
    let pairs = pairs.into_iter();
    // Room for the pairs the iterator announces, with ids of a pi entry's 8 characters.
    let (at_least, _) = pairs.size_hint();
    let mut ends = Vec::with_capacity(at_least);
    let mut body = Vec::with_capacity(at_least * 16);
    for (id, seq) in pairs {
        body.extend_from_slice(&seq.to_be_bytes());
        body.extend_from_slice(id.as_bytes());
        ends.push(body.len());
    }
    seal(&[], &ends, &body, Covers::All)
}

/// A stored id pack: a sorted run of the entry-id index, `(id, seq)` pairs.
#[derive(Debug, Clone, Copy)]
pub struct IdPack<'a>(Table<'a>);

impl<'a> IdPack<'a> {
    /// Parses a pack, checking its checksum (which covers every byte) and its table: cheap
    /// enough for every lookup. [`IdPack::check`] also checks each pair.
    pub fn parse(bytes: &'a [u8]) -> Result<IdPack<'a>, CodecError> {
        Table::parse("id pack", bytes, Covers::All).map(IdPack)
    }

    /// Checks each pair: a seq and a UTF-8 id, ids strictly increasing (what the writer
    /// guarantees and a matching checksum all but proves; for verification).
    pub fn check(&self) -> Result<(), CodecError> {
        let mut previous: Option<&[u8]> = None;
        for i in 0..self.0.count {
            let raw = self.0.get(i);
            if raw.len() < 8 {
                return Err(corrupt("id pack", format!("pair {i} is too short")));
            }
            let id = &raw[8..];
            if std::str::from_utf8(id).is_err() {
                return Err(corrupt("id pack", format!("id {i} is not UTF-8")));
            }
            if previous.is_some_and(|p| p >= id) {
                return Err(corrupt("id pack", format!("id {i} is out of order")));
            }
            previous = Some(id);
        }
        Ok(())
    }

    /// Pairs held (at least one).
    pub fn len(&self) -> usize {
        self.0.count
    }

    /// Always false: an empty pack is refused by [`IdPack::parse`].
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Pair `i`: the id and its seq.
    pub fn pair(&self, i: usize) -> (&'a str, u64) {
        let raw = self.0.get(i);
        let (seq, id) = raw.split_at(8.min(raw.len()));
        let seq = seq.try_into().map(u64::from_be_bytes).unwrap_or_default();
        // `parse` checked every id.
        (std::str::from_utf8(id).unwrap_or_default(), seq)
    }

    /// The first id (the pack's key).
    pub fn first(&self) -> &'a str {
        self.pair(0).0
    }

    /// The seq of `id`, by binary search.
    pub fn get(&self, id: &str) -> Option<u64> {
        let (mut lo, mut hi) = (0, self.0.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let raw = self.0.get(mid);
            let (seq, at) = raw.split_at(8.min(raw.len()));
            match at.cmp(id.as_bytes()) {
                std::cmp::Ordering::Equal => {
                    return seq.try_into().ok().map(u64::from_be_bytes);
                }
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        None
    }

    /// Every pair, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, u64)> + '_ {
        (0..self.0.count).map(|i| self.pair(i))
    }
}

/// Bits per id in an [`IdFilter`].
pub const FILTER_BITS_PER_ID: usize = 10;
/// Bit positions probed per id.
pub const FILTER_PROBES: u8 = 7;

/// A Bloom filter of the packed ids of a session, written with its id packs. The packed ids
/// never change, so it answers "certainly not packed" for most ids that are not, and an
/// append's duplicate check skips the id-pack lookup — a read of a cold page of a large
/// index — for them (false-positive rate about 1 % at 10 bits per id).
///
/// `filter := probes:u8 ++ bits (m = 8 × len bits) ++ crc32(probes ++ bits) LE`; id `x` sets
/// the bits `(h1 + i × h2) mod m` for `i < probes`, where `h1` is the low and `h2` the high 64
/// bits of XXH3-128 of `x` (seed 0), `h2` with its low bit set (store layout 6; layouts up to 5
/// took them from `blake3(x)`, and opening such a store rebuilds its filters). A filter only
/// needs a fast, stable, well-mixed hash: the ids' integrity is the digests' job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdFilter {
    probes: u8,
    bits: Vec<u8>,
}

/// The two hashes an [`IdFilter`] probes with, computed once per id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdHash(u64, u64);

impl IdHash {
    /// The hashes of `id`.
    pub fn of(id: &str) -> IdHash {
        let hash = twox_hash::XxHash3_128::oneshot(id.as_bytes());
        // The two halves of the 128-bit value (truncation intended).
        IdHash(hash as u64, (hash >> 64) as u64 | 1)
    }
}

impl IdFilter {
    /// A filter holding `ids` (`count` of them).
    pub fn build<'s>(count: usize, ids: impl IntoIterator<Item = &'s str>) -> IdFilter {
        let bytes = (count * FILTER_BITS_PER_ID).div_ceil(8).max(8);
        let mut filter = IdFilter {
            probes: FILTER_PROBES,
            bits: vec![0; bytes],
        };
        for id in ids {
            for bit in filter.positions(id) {
                filter.bits[bit / 8] |= 1 << (bit % 8);
            }
        }
        filter
    }

    fn positions(&self, id: &str) -> impl Iterator<Item = usize> {
        self.positions_of(IdHash::of(id))
    }

    fn positions_of(&self, hash: IdHash) -> impl Iterator<Item = usize> {
        let m = (self.bits.len() as u64) * 8;
        let IdHash(h1, h2) = hash;
        (0..u64::from(self.probes))
            .map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % m.max(1)) as usize)
    }

    /// Whether `id` may be in the set (`false`: certainly not).
    pub fn may_contain(&self, id: &str) -> bool {
        self.may_contain_hash(IdHash::of(id))
    }

    /// [`IdFilter::may_contain`] of the id whose hash this is (one hash for many filters).
    pub fn may_contain_hash(&self, hash: IdHash) -> bool {
        self.positions_of(hash).all(|bit| {
            self.bits
                .get(bit / 8)
                .is_some_and(|b| b & (1 << (bit % 8)) != 0)
        })
    }

    /// `probes ++ bits`, appended to `out`.
    fn write_body(&self, out: &mut Vec<u8>) {
        out.push(self.probes);
        out.extend_from_slice(&self.bits);
    }

    /// Parses `probes ++ bits`.
    fn from_body(what: &str, body: &[u8]) -> Result<IdFilter, CodecError> {
        let (&probes, bits) = body.split_first().ok_or_else(|| corrupt(what, "empty"))?;
        if probes == 0 {
            return Err(corrupt(what, "no probes"));
        }
        Ok(IdFilter {
            probes,
            bits: bits.to_vec(),
        })
    }

    /// The stored value.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + self.bits.len() + CHECKSUM_LEN);
        self.write_body(&mut out);
        seal_value(out)
    }

    /// Parses a stored filter, checking its checksum.
    pub fn decode(bytes: &[u8]) -> Result<IdFilter, CodecError> {
        IdFilter::from_body("id filter", unseal_value("id filter", bytes, 2)?)
    }
}

/// `body ++ crc32(body) LE`.
fn seal_value(mut body: Vec<u8>) -> Vec<u8> {
    let sum = checksum(&body);
    body.extend_from_slice(&sum);
    body
}

/// The body of a value sealed by [`seal_value`], at least `min` bytes, its checksum checked.
fn unseal_value<'a>(what: &str, bytes: &'a [u8], min: usize) -> Result<&'a [u8], CodecError> {
    if bytes.len() < min + CHECKSUM_LEN {
        return Err(corrupt(what, "too short"));
    }
    let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
    if checksum(body) != sum {
        return Err(corrupt(what, "checksum mismatch"));
    }
    Ok(body)
}

/// The description of one **id run**: the ids of the appended records `first .. end` of a
/// session, stored as id packs under the run's first seq (docs/format.md, "Id runs"). It
/// carries the run's Bloom filter, so a lookup reads the packs of only the runs that may
/// hold an id.
///
/// `meta := end:u64 BE ++ count:u64 BE ++ probes:u8 ++ bits ++ crc32(everything before) LE`
/// (the run's first seq is in its key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdRunMeta {
    /// One past the last record the run covers.
    pub end: u64,
    /// Ids in the run (one per record it covers).
    pub count: u64,
    /// The filter of the run's ids.
    pub filter: IdFilter,
}

impl IdRunMeta {
    /// The stored value.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(17 + self.filter.bits.len() + CHECKSUM_LEN);
        out.extend_from_slice(&self.end.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        self.filter.write_body(&mut out);
        seal_value(out)
    }

    /// Parses a stored run description, checking its checksum.
    pub fn decode(bytes: &[u8]) -> Result<IdRunMeta, CodecError> {
        let body = unseal_value("id run", bytes, 18)?;
        let (words, filter) = body.split_at(16);
        let (end, count) = words.split_at(8);
        let word = |w: &[u8]| w.try_into().map(u64::from_be_bytes).unwrap_or_default();
        Ok(IdRunMeta {
            end: word(end),
            count: word(count),
            filter: IdFilter::from_body("id run", filter)?,
        })
    }
}
