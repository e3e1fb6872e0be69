//! grove's binary records: the values stored under the keys of docs/format.md.
//!
//! Every value is `[format version: u8] ++ bincode(standard config)`. The version is grove's
//! own, independent of sled's; a value of an unknown version is refused with a typed error.
//! Node records are written as version 2, which adds the CRC-32 of the log row's line, and read
//! as version 1 too (log rows of store layouts up to 8); every other record is version 1.

use bincode::{Decode, Encode};
use compact_str::CompactString;

use crate::digest::Digest;
use crate::error::CodecError;
use crate::op::OpStamp;

/// The record format versions this build reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FormatVersion {
    /// The first format (entries, leaf records, indexes, session records).
    V1 = 1,
    /// Node records followed by the CRC-32 of their log row's line (store layout 9), so that
    /// a read checks a line for a fraction of the cost of its blake3 content hash. Only node
    /// records have this version.
    V2 = 2,
    /// A version-2 node record followed by the [`crate::op::OpStamp`] of the operation whose
    /// first record it is (store layout 10). Only node records have this version.
    V3 = 3,
}

impl FormatVersion {
    /// The version new values are written with, node records excepted ([`Self::NODE`]).
    pub const CURRENT: FormatVersion = FormatVersion::V1;

    /// The version the node records of new log rows are written with.
    pub const NODE: FormatVersion = FormatVersion::V2;

    /// Parses a version byte.
    pub fn from_byte(b: u8) -> Result<FormatVersion, CodecError> {
        match b {
            1 => Ok(FormatVersion::V1),
            2 => Ok(FormatVersion::V2),
            3 => Ok(FormatVersion::V3),
            other => Err(CodecError::UnknownFormatVersion(other)),
        }
    }

    /// Whether a node record of this version holds the CRC-32 of its line.
    pub fn has_line_crc(self) -> bool {
        self >= FormatVersion::V2
    }

    /// Whether a node record of this version ends with an operation stamp.
    pub fn has_op_stamp(self) -> bool {
        self >= FormatVersion::V3
    }
}

/// How an entry's `parentId` resolved within its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Encode, Decode)]
pub enum Parent {
    /// `parentId` is `null` or `""`.
    Root,
    /// The parent entry's sequence number.
    Seq(u64),
    /// `parentId` names no entry (an orphan root).
    Missing,
    /// `parentId` equals the entry's own id (a root).
    SelfRef,
    /// The parent is the given entry, but following parents from here loops; this entry is
    /// the earliest of its cycle in log order and counts as a tree root.
    Cycle(u64),
}

impl Parent {
    /// The parent's sequence number when the walk may follow it.
    pub fn seq(self) -> Option<u64> {
        match self {
            Parent::Seq(s) | Parent::Cycle(s) => Some(s),
            _ => None,
        }
    }
}

/// Where a leaf record points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Encode, Decode)]
pub enum LeafTarget {
    /// `targetId: null`: the leaf is the root position.
    Null,
    /// An entry.
    Seq(u64),
    /// `targetId` names no entry (kept from an import, reported as a warning).
    Missing,
}

/// A jump pointer: an ancestor and its depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Encode, Decode)]
pub struct Jump {
    /// The ancestor's sequence number.
    pub seq: u64,
    /// The ancestor's depth.
    pub depth: u64,
}

/// The per-record metadata of the log: one per entry or leaf record, keyed by sequence.
///
/// In a log row it is encoded as version 2, its fields followed by the CRC-32 of the row's
/// line ([`encode_log`], [`LogRow::line_crc`]). That CRC is not a field: it describes the
/// stored bytes of the line, not the fold, so a node derived again from its parent equals the
/// stored one in rows of every layout.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct NodeRecord {
    /// The entry's (or leaf record's) id: inline up to 24 bytes (pi's ids take 8), so
    /// staging and caching nodes allocates nothing for it. Encoded as a string.
    #[bincode(with_serde)]
    pub id: CompactString,
    /// [`crate::EntryKind::tag`].
    pub kind: u8,
    /// The resolved parent. For a leaf record: the leaf before the move.
    pub parent: Parent,
    /// Number of ancestors (0 for a root).
    pub depth: u64,
    /// First sequence number of this entry's linear run: the entries `run_start..=seq` are a
    /// chain in which each one's parent is the one before it, so a path reads a run with one
    /// range scan.
    pub run_start: u64,
    /// Skew-binary jump pointer (an ancestor; `None` for roots): ancestor-at-depth and the
    /// deepest common ancestor take O(log depth) steps.
    pub jump: Option<Jump>,
    /// Nearest compaction ancestor, the entry itself included (spec §10.3).
    pub checkpoint: Option<u64>,
    /// Last entry on the full path that set the model (model_change or assistant message).
    pub model_at: Option<u64>,
    /// Last `thinking_level_change` on the full path.
    pub thinking_at: Option<u64>,
    /// Last `active_tools_change` on the full path.
    pub tools_at: Option<u64>,
    /// For leaf records: the target.
    pub leaf_target: Option<LeafTarget>,
    /// Whether a later entry with the same id shadows this one.
    pub shadowed: bool,
    /// blake3 of the stored line bytes.
    pub content: Digest,
    /// Chain digest (entries) or the content hash again (leaf records).
    pub digest: Digest,
    /// Message entries: where the `message` object lies in the line, so that a context build
    /// slices it out instead of parsing the line ([`crate::fields::message_span`]).
    pub message: Option<MessageSpan>,
}

/// The byte range of a message entry's `message` value in its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Encode, Decode)]
pub struct MessageSpan {
    /// Byte offset of the value's first byte.
    pub start: u32,
    /// Its length in bytes.
    pub len: u32,
    /// Whether its `content` is missing or `null` (or it is not an object): the case a
    /// context build may have to rewrite (spec §5.4).
    pub null_content: bool,
}

/// A session's immutable description.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct SessionRecord {
    /// The session id (pi header `id`).
    pub id: String,
    /// The header line grove exports.
    pub header: String,
    /// Header `timestamp`.
    pub created: String,
    /// Header `cwd`.
    pub cwd: String,
    /// Header `parentSession`.
    pub parent_session: Option<String>,
    /// The grove id of the session this one was forked from.
    pub parent_session_id: Option<String>,
    /// The file this session was imported from, if any.
    pub source_path: Option<String>,
}

/// A session's mutable head, rewritten with every write.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct HeadRecord {
    /// Sequence number the next record gets.
    pub next_seq: u64,
    /// The active leaf (`None` = root position).
    pub leaf: Option<u64>,
    /// Number of tree entries (leaf records excluded).
    pub entries: u64,
    /// The last `session_info` entry in log order.
    pub name_at: Option<u64>,
    /// Timestamp of the last record grove wrote (kept non-decreasing).
    pub last_timestamp: Option<String>,
}

/// Who holds a session, in a store whose backend processes share (the lease row; the busy
/// rule, spec §7.2). A store one process holds keeps its leases in memory, as these records.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct LeaseRecord {
    /// 0: an agent turn; 1: a navigation.
    pub holder: u8,
    /// The lease's token: whoever presents it holds the lease.
    pub token: String,
    /// When it expires, in milliseconds since the Unix epoch (`u64::MAX`: never).
    pub expires_ms: u64,
    /// What a renewal extends it by, in milliseconds (0: it does not expire).
    pub ttl_ms: u64,
}

/// An operation on the store as a whole (tag `0x21`): a retention run, say. `detail` is a
/// JSON object's text, whose shape is the kind's (docs/format.md, "StoreOpRecord").
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct StoreOpRecord {
    /// What it is: `retain`.
    pub kind: String,
    /// When it began (ms since the Unix epoch).
    pub time_ms: u64,
    /// Who made it.
    pub actor: String,
    /// `started` while it runs (what a crash leaves), then `done`.
    pub status: String,
    /// What it did, as JSON object text.
    pub detail: String,
}

/// The current label of one target id.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct LabelRecord {
    /// The trimmed label as a JSON string literal.
    pub label: String,
    /// The `label` entry that set it.
    pub set_by: u64,
}

/// The persisted context view of a session's active leaf (grove preset): the selected
/// entries as ascending ranges of sequence numbers, in selection order.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct ViewRecord {
    /// The entry the view was built at.
    pub leaf: u64,
    /// The leaf's checkpoint when the view was built.
    pub checkpoint: Option<u64>,
    /// Selected entries: each `(first, last)` is every seq from `first` to `last`.
    pub segments: Vec<(u64, u64)>,
}

/// A chunk of the rows a persisted view materializes: `(seq, log row)` in ascending seq, each
/// row a byte-for-byte copy of the log's (`[node length: u32 BE] ++ node record ++ line`).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct ViewRowsRecord {
    /// [`ViewRowsRecord::digest_of`] the seqs the view wanted materialized when the chunk was
    /// written: the chunks hold a prefix of them (the byte budget may cut the rest).
    pub wanted: u64,
    /// The rows, by seq.
    pub rows: Vec<(u64, Vec<u8>)>,
}

/// Most rows in one children-index or leaf-history pack.
pub const INDEX_PACK_ROWS: usize = 1024;

/// A run of the children index of an imported session (table `0x1D`): `(parent seq, child
/// seq)` pairs in ascending order, the parent of a root being `u64::MAX`. An import writes its
/// rows this way, [`INDEX_PACK_ROWS`] to a value, instead of one key per row: sled's open and
/// its page table grow with the number of keys, not their bytes.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct ChildPackRecord {
    /// The rows, ascending.
    pub rows: Vec<(u64, u64)>,
}

/// A run of the leaf history of an imported session (table `0x1E`): the seqs of its leaf
/// records in ascending order, [`INDEX_PACK_ROWS`] to a value.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct LeafPackRecord {
    /// The seqs, ascending.
    pub seqs: Vec<u64>,
}

impl ViewRowsRecord {
    /// A digest of a list of seqs: XXH3-128 of their little-endian bytes, first 8 bytes.
    pub fn digest_of(seqs: &[u64]) -> u64 {
        let bytes: Vec<u8> = seqs.iter().flat_map(|s| s.to_le_bytes()).collect();
        twox_hash::XxHash3_128::oneshot(&bytes) as u64
    }
}

/// The most bytes the containers of one decoded record may claim (1 GiB).
const DECODE_LIMIT: usize = 1 << 30;

/// Length of the checksum trailer of every record.
pub const CHECKSUM_LEN: usize = 4;

/// CRC-32 (IEEE), little-endian: it catches every burst error of up to 32 bits and costs a
/// few nanoseconds on the read path (a node record is checked on every read). Tampering is
/// the chain digest's job, not this checksum's.
pub(crate) fn checksum(bytes: &[u8]) -> [u8; CHECKSUM_LEN] {
    crc32fast::hash(bytes).to_le_bytes()
}

/// Encodes a record: `version ++ bincode body ++ crc32(version ++ body)` (little-endian).
/// Node records encoded this way are version 1, without the CRC of a line: log rows are
/// written by [`encode_log`].
pub fn encode<T: Encode>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    encode_onto(&mut out, FormatVersion::CURRENT, value, &[]);
    out
}

/// [`encode`] as `version`, appending the record to `out` (one buffer, no intermediate
/// copies); `suffix` follows the bincode body inside the checksummed payload.
fn encode_onto<T: Encode>(out: &mut Vec<u8>, version: FormatVersion, value: &T, suffix: &[u8]) {
    let start = out.len();
    out.push(version as u8);
    // Encoding into a Vec cannot fail for these plain data types.
    if bincode::encode_into_std_write(value, out, bincode::config::standard()).is_err() {
        out.truncate(start + 1);
    }
    out.extend_from_slice(suffix);
    let sum = checksum(&out[start..]);
    out.extend_from_slice(&sum);
}

/// The CRC-32 (IEEE) of a line, as a version-2 node record holds it: a read checks the line
/// against it (a few nanoseconds per hundred bytes, against about a microsecond for blake3 of
/// a 500-byte line); the content hash stays the chain's input and `verify`'s check.
pub fn line_crc(line: &[u8]) -> u32 {
    crc32fast::hash(line)
}

/// Packs a log row: an entry's (or leaf record's) node record and its line in one value,
/// `[node record length: u32 BE] ++ node record ++ line bytes` (docs/format.md, "LogRow").
/// The node record is version 2 ([`FormatVersion::NODE`]): its payload ends with
/// [`line_crc`] of the line, under the record's own checksum. Every log row is made here.
pub fn encode_log(node: &NodeRecord, line: &[u8]) -> Vec<u8> {
    // A node record is its id and about a hundred bytes of fixed fields.
    let mut out = Vec::with_capacity(4 + 160 + node.id.len() + line.len());
    encode_log_into(&mut out, node, line);
    out
}

/// [`encode_log`], appending the row to `out`.
pub fn encode_log_into(out: &mut Vec<u8>, node: &NodeRecord, line: &[u8]) {
    encode_log_stamped_into(out, node, line, None);
}

/// [`encode_log`] of an operation's first record: with `stamp`, its node record is version 3,
/// the CRC of the line followed by the stamp, under the record's checksum.
pub fn encode_log_stamped(node: &NodeRecord, line: &[u8], stamp: Option<&OpStamp>) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 192 + node.id.len() + line.len());
    encode_log_stamped_into(&mut out, node, line, stamp);
    out
}

/// [`encode_log_stamped`], appending the row to `out`.
pub fn encode_log_stamped_into(
    out: &mut Vec<u8>,
    node: &NodeRecord,
    line: &[u8],
    stamp: Option<&OpStamp>,
) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    let mut suffix = line_crc(line).to_le_bytes().to_vec();
    let version = match stamp {
        Some(stamp) => {
            suffix.extend_from_slice(&stamp.to_bytes());
            FormatVersion::V3
        }
        None => FormatVersion::NODE,
    };
    encode_onto(out, version, node, &suffix);
    // A node record is a few hundred bytes at most, far below u32::MAX.
    let len = u32::try_from(out.len() - start - 4).unwrap_or(u32::MAX);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    out.extend_from_slice(line);
}

/// Splits a log row into its encoded node record and its line bytes.
pub fn split_log(bytes: &[u8]) -> Result<(&[u8], &[u8]), CodecError> {
    let (len, rest) = bytes
        .split_first_chunk::<4>()
        .ok_or_else(|| CodecError::CorruptRecord("log row shorter than its length".to_owned()))?;
    let len = u32::from_be_bytes(*len) as usize;
    if len > rest.len() {
        return Err(CodecError::CorruptRecord(format!(
            "log row node length {len} exceeds the row ({} bytes)",
            rest.len()
        )));
    }
    Ok(rest.split_at(len))
}

/// A decoded log row: its node record, the CRC-32 of the line the node record holds (rows
/// of store layout 9 and later), and the line's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRow<'a> {
    /// The node record.
    pub node: NodeRecord,
    /// [`line_crc`] of the line when the row was written; `None` in version-1 node records.
    pub line_crc: Option<u32>,
    /// The line's bytes (the row's tail).
    pub line: &'a [u8],
    /// The stamp of the operation this record begins (version-3 node records).
    pub op: Option<OpStamp>,
}

/// What a log row's line was checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineCheck {
    /// The CRC-32 in its node record (version 2).
    Crc,
    /// The node's blake3 content hash (version-1 node records, which hold no CRC).
    ContentHash,
}

impl std::fmt::Display for LineCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LineCheck::Crc => "CRC-32",
            LineCheck::ContentHash => "content hash",
        })
    }
}

impl LogRow<'_> {
    /// Checks the line the cheapest way the row allows: against its CRC-32 when the node
    /// record holds one, else against the content hash. `Err` names the check that failed.
    pub fn check_line(&self) -> Result<(), LineCheck> {
        match self.line_crc {
            Some(crc) if line_crc(self.line) == crc => Ok(()),
            Some(_) => Err(LineCheck::Crc),
            None if crate::digest::content_hash(self.line) == self.node.content => Ok(()),
            None => Err(LineCheck::ContentHash),
        }
    }
}

/// Splits a log row and decodes its node record (version 1 or 2); the line is not checked.
pub fn decode_log(bytes: &[u8]) -> Result<LogRow<'_>, CodecError> {
    let (node, line) = split_log(bytes)?;
    let (node, line_crc, op) = decode_node_stamped(node)?;
    Ok(LogRow {
        node,
        line_crc,
        line,
        op,
    })
}

/// Decodes the node record of a log row (the line is not touched).
pub fn decode_log_node(bytes: &[u8]) -> Result<NodeRecord, CodecError> {
    Ok(decode_node(split_log(bytes)?.0)?.0)
}

/// Decodes a node record of version 1 (its fields), 2 (its fields, then the CRC-32 of its
/// line as u32 little-endian) or 3 (then an operation stamp), checking its checksum and that
/// every byte was used; the stamp is not returned ([`decode_node_stamped`]).
pub fn decode_node(bytes: &[u8]) -> Result<(NodeRecord, Option<u32>), CodecError> {
    decode_node_stamped(bytes).map(|(node, crc, _)| (node, crc))
}

/// [`decode_node`] with the operation stamp of a version-3 node record.
#[allow(clippy::type_complexity)]
pub fn decode_node_stamped(
    bytes: &[u8],
) -> Result<(NodeRecord, Option<u32>, Option<OpStamp>), CodecError> {
    let (version, body) = open(bytes)?;
    let (node, used) = decode_body::<NodeRecord>(body)?;
    let rest = &body[used..];
    if !version.has_line_crc() {
        return exact(rest).map(|()| (node, None, None));
    }
    let (crc, rest) = rest.split_first_chunk::<4>().ok_or_else(|| {
        CodecError::CorruptRecord("node record ends before its line's CRC".to_owned())
    })?;
    let crc = Some(u32::from_le_bytes(*crc));
    if !version.has_op_stamp() {
        return exact(rest).map(|()| (node, crc, None));
    }
    let (stamp, used) = decode_body::<OpStamp>(rest)?;
    exact(&rest[used..]).map(|()| (node, crc, Some(stamp)))
}

/// Decodes a record of version 1, checking its checksum, its format version and that every
/// byte was used. Node records of log rows are version 2: [`decode_node`] reads both.
pub fn decode<T: Decode<()>>(bytes: &[u8]) -> Result<T, CodecError> {
    let (version, body) = open(bytes)?;
    if version != FormatVersion::V1 {
        return Err(CodecError::UnknownFormatVersion(version as u8));
    }
    let (value, used) = decode_body(body)?;
    exact(&body[used..]).map(|()| value)
}

/// Checks a record's checksum and version byte; returns the version and the bincode body
/// (with whatever follows it).
fn open(bytes: &[u8]) -> Result<(FormatVersion, &[u8]), CodecError> {
    if bytes.len() < 1 + CHECKSUM_LEN {
        return Err(CodecError::CorruptRecord(format!(
            "{} bytes is too short",
            bytes.len()
        )));
    }
    let (payload, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
    if checksum(payload) != sum {
        return Err(CodecError::CorruptRecord("checksum mismatch".to_owned()));
    }
    let (&version, body) = payload
        .split_first()
        .ok_or_else(|| CodecError::CorruptRecord("empty value".to_owned()))?;
    Ok((FormatVersion::from_byte(version)?, body))
}

/// Decodes a bincode value from the start of `body`; returns it and the bytes it used.
fn decode_body<T: Decode<()>>(body: &[u8]) -> Result<(T, usize), CodecError> {
    // The limit bounds what a length field may claim: a value with a valid checksum but an
    // absurd length (written by something else, or forged) is refused, not allocated.
    let config = bincode::config::standard().with_limit::<DECODE_LIMIT>();
    bincode::decode_from_slice(body, config).map_err(|e| CodecError::CorruptRecord(e.to_string()))
}

/// Refuses bytes left after a record's value.
fn exact(rest: &[u8]) -> Result<(), CodecError> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(CodecError::CorruptRecord(format!(
            "{} trailing bytes",
            rest.len()
        )))
    }
}
