//! Reading a sled 0.34.7 database without sled, for `grove salvage` of a store sled refuses
//! to open (one damaged message makes it fail with `Read corrupted data`).
//!
//! sled keeps everything in the log file `db`: segments of `segment_size` bytes (from its
//! `conf` file), each a 20-byte header and then messages. A message is a header — CRC-32,
//! kind, length, segment number, page id — and its payload; a payload too large for a segment
//! is a blob file `blobs/<lsn>` (CRC-32, kind, payload) the message names. With compression
//! on, payloads are zstd frames behind a length. A page is rebuilt from its newest
//! replacement (a whole node) and the links (one key set or removed) logged after it; a
//! leaf node holds the keys from `lo` (inclusive) to `hi` (exclusive, empty: no end), each
//! stored without the first `prefix_len` bytes of `lo`. grove keeps all its keys in sled's
//! default tree, so every leaf page holds grove's keys.
//!
//! [`scan`] reads every segment message by message, checks each CRC, and skips what fails
//! to the next message that checks out. Old copies of pages (segments sled reclaimed, pages
//! split or merged since) are told apart by their log sequence number: pages are applied
//! oldest first, and each one replaces whatever older pages said of its key range. A page
//! whose newest message is damaged is not trusted at all — an older copy would bring back
//! an older state — and its key range, when any copy of it tells it, is emptied and
//! reported. Everything the scan could not read is a line of [`SledScan::damage`]; what it
//! hands out is only what sled itself wrote and checksummed, which grove then checks again
//! with its own checksums (salvage copies only sessions that verify).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

use super::KvError;

/// sled's default segment size, used when the `conf` file does not say.
const DEFAULT_SEGMENT: u64 = 512 * 1024;
/// Bytes of a segment header.
const SEGMENT_HEADER: usize = 20;
/// Smallest message header: CRC-32, kind, and three one-byte varints.
const MIN_HEADER: usize = 8;

/// Message kinds (sled `MessageKind`).
const CAP: u8 = 2;
const FREE: u8 = 4;
const INLINE_NODE: u8 = 8;
const BLOB_NODE: u8 = 9;
const INLINE_LINK: u8 = 10;
const BLOB_LINK: u8 = 11;

/// What a scan of a sled database read.
#[derive(Debug, Default)]
pub struct SledScan {
    /// Every key and value the scan could trust.
    pub pairs: BTreeMap<Vec<u8>, Vec<u8>>,
    /// What it could not read, one line each.
    pub damage: Vec<String>,
    /// Keys that were in damaged pages' ranges (from older copies of those pages), so that
    /// the sessions they belonged to can be named.
    pub lost_keys: Vec<Vec<u8>>,
}

/// One message of the log that checked out.
struct Message {
    lsn: i64,
    pid: u64,
    kind: u8,
    payload: Vec<u8>,
}

/// A message that failed its checks, with what its header seemed to say.
struct Damaged {
    /// Byte offset in `db`.
    offset: u64,
    /// Bytes skipped.
    len: u64,
    /// Page id, log sequence number and payload, when the header looked like a page's.
    page: Option<(u64, i64, Vec<u8>)>,
    /// Why.
    why: String,
}

/// A leaf node as sled serializes it, keys decoded in full.
#[derive(Clone)]
struct Leaf {
    lo: Vec<u8>,
    hi: Vec<u8>,
    prefix: Vec<u8>,
    pairs: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// A page as the log leaves it.
enum Update {
    Leaf(Leaf),
    /// An index node, the meta page, the id counter, or a freed page.
    Other,
    Set(Vec<u8>, Vec<u8>),
    Del(Vec<u8>),
    /// A link that changes no key (merge bookkeeping).
    NoKey,
}

/// Whether sled failed to open a database because its files are damaged: it reports a
/// message that fails its checksum as corruption, and trips on some damage (a panic).
pub fn is_damage(e: &KvError) -> bool {
    matches!(
        e,
        KvError::Sled(sled::Error::Corruption { .. } | sled::Error::ReportableBug(_))
            | KvError::Panic {
                backend: "sled",
                ..
            }
    )
}

/// Reads what it can of the sled database in `dir`.
pub fn scan(dir: &Path) -> Result<SledScan, KvError> {
    let mut out = SledScan::default();
    let (segment, compressed) = match std::fs::read(dir.join("conf")) {
        Ok(conf) => read_conf(&conf),
        Err(e) => {
            out.damage.push(format!(
                "sled's conf file could not be read ({e}); its defaults were assumed"
            ));
            (DEFAULT_SEGMENT, false)
        }
    };
    let db = dir.join("db");
    let file = std::fs::File::open(&db).map_err(io(format!("opening {}", db.display())))?;
    let mut messages = Vec::new();
    let mut damaged = Vec::new();
    let mut segments = Segments::new(file, segment);
    while let Some((base, buf)) = segments.next(&db)? {
        scan_segment(buf, base, segment, &mut messages, &mut damaged);
    }
    let blobs = dir.join("blobs");
    let mut pages: HashMap<u64, Vec<(i64, Update)>> = HashMap::new();
    for m in messages {
        let payload = match m.kind {
            BLOB_NODE | BLOB_LINK => match read_blob(&blobs, &m.payload) {
                Ok(p) => p,
                Err(why) => {
                    damaged.push(Damaged {
                        offset: 0,
                        len: 0,
                        page: Some((m.pid, m.lsn, Vec::new())),
                        why,
                    });
                    continue;
                }
            },
            _ => m.payload,
        };
        // Only pages' nodes and links are compressed; a batch manifest, a cap, a free page,
        // the counter and the meta page are read as written (their contents are not used).
        let payload = if compressed && (INLINE_NODE..=BLOB_LINK).contains(&m.kind) {
            match decompress(&payload) {
                Some(p) => p,
                None => {
                    damaged.push(Damaged {
                        offset: 0,
                        len: 0,
                        page: Some((m.pid, m.lsn, Vec::new())),
                        why: format!("page {}: a payload does not decompress", m.pid),
                    });
                    continue;
                }
            }
        } else {
            payload
        };
        let update = match m.kind {
            INLINE_NODE | BLOB_NODE => {
                parse_node(&payload).map(|n| n.map_or(Update::Other, Update::Leaf))
            }
            INLINE_LINK | BLOB_LINK => parse_link(&payload),
            FREE => Some(Update::Other),
            // Meta page and id counter replace a page too.
            5..=7 => Some(Update::Other),
            _ => continue,
        };
        match update {
            Some(u) => pages.entry(m.pid).or_default().push((m.lsn, u)),
            None => damaged.push(Damaged {
                offset: 0,
                len: 0,
                page: Some((m.pid, m.lsn, Vec::new())),
                why: format!(
                    "page {}: a message passed its checksum but does not parse",
                    m.pid
                ),
            }),
        }
    }
    // The newest damaged message of each page it seems to belong to.
    let mut newest_damage: HashMap<u64, (i64, usize)> = HashMap::new();
    for (i, d) in damaged.iter().enumerate() {
        match &d.page {
            Some((pid, lsn, _)) => {
                let e = newest_damage.entry(*pid).or_insert((*lsn, i));
                if *lsn > e.0 {
                    *e = (*lsn, i);
                }
            }
            None => out.damage.push(format!(
                "{} (bytes {}..{} of db): what it held is lost",
                d.why,
                d.offset,
                d.offset + d.len
            )),
        }
    }
    // Each page as its newest replacement and the links after it leave it: (lsn, leaf,
    // trusted). A page whose newest message is damaged only empties the range of its last
    // good copy.
    let mut leaves: Vec<(i64, Leaf, bool)> = Vec::new();
    for (pid, mut updates) in pages {
        updates.sort_by_key(|(lsn, _)| *lsn);
        let Some(start) = updates
            .iter()
            .rposition(|(_, u)| matches!(u, Update::Leaf(_) | Update::Other))
        else {
            continue;
        };
        let base_lsn = updates[start].0;
        let mut last = base_lsn;
        let mut leaf = match &updates[start].1 {
            Update::Leaf(l) => Some(l.clone()),
            _ => None,
        };
        for (lsn, u) in &updates[start + 1..] {
            last = *lsn;
            if let Some(leaf) = leaf.as_mut() {
                match u {
                    Update::Set(k, v) => {
                        leaf.pairs.insert(join(&leaf.prefix, k), v.clone());
                    }
                    Update::Del(k) => {
                        leaf.pairs.remove(&join(&leaf.prefix, k));
                    }
                    _ => {}
                }
            }
        }
        match newest_damage.get(&pid).copied() {
            // Superseded by a newer good copy: the damage lost nothing, and is said.
            Some((lsn, i)) if lsn < base_lsn => {
                newest_damage.remove(&pid);
                let d = &damaged[i];
                out.damage.push(format!(
                    "{} (bytes {}..{} of db): an older copy of sled page {pid}, which a newer \
                     copy replaces: nothing is lost",
                    d.why,
                    d.offset,
                    d.offset + d.len
                ));
                if let Some(leaf) = leaf {
                    leaves.push((last, leaf, true));
                }
            }
            Some((lsn, i)) => {
                newest_damage.remove(&pid);
                let d = &damaged[i];
                let range = leaf.as_ref().map(|l| (l.lo.clone(), l.hi.clone()));
                out.damage.push(lost_page(d, pid, range));
                if let Some(leaf) = leaf {
                    leaves.push((lsn, leaf, false));
                }
            }
            None => {
                if let Some(leaf) = leaf {
                    leaves.push((last, leaf, true));
                }
            }
        }
    }
    // Damaged messages of pages with no good copy: a node that still parses tells its range.
    for (pid, (lsn, i)) in newest_damage {
        let d = &damaged[i];
        let (_, _, payload) = d
            .page
            .as_ref()
            .map_or((0, 0, &[][..]), |(p, l, b)| (*p, *l, &b[..]));
        let loose = if compressed {
            decompress(payload)
        } else {
            Some(payload.to_vec())
        };
        let leaf = loose.as_deref().and_then(parse_node).flatten();
        let range = leaf.as_ref().map(|l| (l.lo.clone(), l.hi.clone()));
        out.damage.push(lost_page(d, pid, range));
        if let Some(leaf) = leaf {
            out.lost_keys.extend(leaf.pairs.keys().cloned());
            leaves.push((lsn, leaf, false));
        }
    }
    leaves.sort_by_key(|(lsn, _, _)| *lsn);
    for (_, leaf, trusted) in leaves {
        let doomed: Vec<Vec<u8>> = out
            .pairs
            .range(leaf.lo.clone()..)
            .take_while(|(k, _)| leaf.hi.is_empty() || **k < leaf.hi)
            .map(|(k, _)| k.clone())
            .collect();
        for k in doomed {
            out.pairs.remove(&k);
            if !trusted {
                out.lost_keys.push(k);
            }
        }
        if trusted {
            out.pairs.extend(leaf.pairs);
        }
    }
    out.lost_keys.sort();
    out.lost_keys.dedup();
    out.lost_keys.retain(|k| !out.pairs.contains_key(k));
    Ok(out)
}

/// Whether the part of the log sled reads when it opens the database in `dir` — every
/// segment from the one holding the newest snapshot's sequence number on (all of them without
/// a snapshot) — holds a message that fails its checksum. sled takes such a message for a torn
/// tail and zeroes the rest of its segment when it opens the database, so a store for which
/// this is true is opened only from a copy by commands that read ([`super::SledKv::open_read_only`]).
/// A torn tail left by a crash counts too. Costs one read of that part of the log.
pub fn recovery_is_damaged(dir: &Path) -> Result<bool, KvError> {
    let segment = std::fs::read(dir.join("conf")).map_or(DEFAULT_SEGMENT, |c| read_conf(&c).0);
    let snapshot_lsn = std::fs::read_dir(dir)
        .map_err(io(format!("listing {}", dir.display())))?
        .filter_map(|e| {
            let name = e.ok()?.file_name();
            let hex = name.to_str()?.strip_prefix("snap.")?.to_owned();
            u64::from_str_radix(&hex, 16).ok()
        })
        .max()
        .unwrap_or(0);
    let first = snapshot_lsn / segment * segment;
    let db = dir.join("db");
    let file = match std::fs::File::open(&db) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io(format!("opening {}", db.display()))(e)),
    };
    let mut segments = Segments::new(file, segment);
    while let Some((base, buf)) = segments.next(&db)? {
        if segment_lsn(buf).is_some_and(|lsn| lsn >= first) {
            let (mut messages, mut damaged) = (Vec::new(), Vec::new());
            scan_segment(buf, base, segment, &mut messages, &mut damaged);
            if !damaged.is_empty() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The error of the I/O `what` (a closure for `map_err`).
fn io(what: String) -> impl FnOnce(std::io::Error) -> KvError {
    move |source| KvError::Io {
        context: what,
        source,
    }
}

/// The segments of sled's `db` file, read one at a time into one buffer.
struct Segments {
    file: std::fs::File,
    segment: u64,
    base: u64,
    buf: Vec<u8>,
}

impl Segments {
    fn new(file: std::fs::File, segment: u64) -> Segments {
        let len = usize::try_from(segment).unwrap_or(usize::MAX);
        Segments {
            file,
            segment,
            base: 0,
            buf: Vec::with_capacity(len.min(1 << 24)),
        }
    }

    /// The next segment's offset and bytes (the last may be short); `None` at the end of
    /// `db` (the file's path, for the error).
    fn next(&mut self, db: &Path) -> Result<Option<(u64, &[u8])>, KvError> {
        self.buf.clear();
        let read = (&mut self.file)
            .take(self.segment)
            .read_to_end(&mut self.buf)
            .map_err(io(format!("reading {}", db.display())))?;
        if read == 0 {
            return Ok(None);
        }
        let base = self.base;
        self.base += self.segment;
        Ok(Some((base, &self.buf)))
    }
}

/// The sequence number of the segment whose bytes `buf` holds, when its header checks out
/// (sled: CRC-32 of bytes 4..20, inverted; the lsn and the highest stable lsn, each xored
/// with `i64::MAX`).
fn segment_lsn(buf: &[u8]) -> Option<u64> {
    let header = buf.get(..SEGMENT_HEADER)?;
    let stored = u32::from_le_bytes(header.get(..4)?.try_into().ok()?) ^ 0xFFFF_FFFF;
    if crc32fast::hash(header.get(4..)?) != stored {
        return None;
    }
    let lsn = u64::from_le_bytes(header.get(4..12)?.try_into().ok()?) ^ 0x7FFF_FFFF_FFFF_FFFF;
    Some(lsn)
}

/// The damage line of a page that cannot be trusted, with the key range it covered if known.
fn lost_page(d: &Damaged, pid: u64, range: Option<(Vec<u8>, Vec<u8>)>) -> String {
    let place = if d.len > 0 {
        format!(" (bytes {}..{} of db)", d.offset, d.offset + d.len)
    } else {
        String::new()
    };
    match range {
        Some((lo, hi)) => format!(
            "{}{place}: sled page {pid} cannot be trusted; its keys from {} to {} are lost",
            d.why,
            super::hex(&lo),
            if hi.is_empty() {
                "the end".to_owned()
            } else {
                super::hex(&hi)
            }
        ),
        None => format!(
            "{}{place}: sled page {pid} cannot be trusted; which keys it held is unknown",
            d.why
        ),
    }
}

fn join(prefix: &[u8], key: &[u8]) -> Vec<u8> {
    let mut full = Vec::with_capacity(prefix.len() + key.len());
    full.extend_from_slice(prefix);
    full.extend_from_slice(key);
    full
}

/// The segment size and compression sled's `conf` file records (its text, then a CRC-32).
fn read_conf(conf: &[u8]) -> (u64, bool) {
    let text = String::from_utf8_lossy(conf.get(..conf.len().saturating_sub(4)).unwrap_or(&[]));
    let mut segment = DEFAULT_SEGMENT;
    let mut compressed = false;
    for line in text.lines() {
        match line.split_once(": ") {
            Some(("segment_size", v)) => segment = v.trim().parse().unwrap_or(DEFAULT_SEGMENT),
            Some(("use_compression", v)) => compressed = v.trim() == "true",
            _ => {}
        }
    }
    (segment.max(4096), compressed)
}

/// Reads the messages of one segment (starting at byte `base` of `db`), skipping what does
/// not check out.
fn scan_segment(
    buf: &[u8],
    base: u64,
    segment: u64,
    messages: &mut Vec<Message>,
    damaged: &mut Vec<Damaged>,
) {
    // The file ends inside this segment (a cut, or a crash's torn tail): bytes left at its
    // end that are no whole message are a message cut short, however few.
    let short = (buf.len() as u64) < segment;
    let mut pos = SEGMENT_HEADER;
    while pos < buf.len() {
        if let Some((m, next)) = message_at(buf, pos, segment) {
            let cap = m.kind == CAP;
            messages.push(m);
            if cap {
                return;
            }
            pos = next;
            continue;
        }
        if buf[pos..].iter().all(|b| *b == 0) {
            // The unused rest of the segment.
            return;
        }
        // Damage: go on at the next message that checks out.
        let resume = (pos + 1..buf.len().saturating_sub(MIN_HEADER - 1))
            .find(|q| message_at(buf, *q, segment).is_some());
        let end = resume.unwrap_or(buf.len());
        if resume.is_none() && !short && buf[pos..].iter().filter(|b| **b != 0).count() <= 1 {
            // A flipped bit in the unused rest of the segment: nothing was there.
            return;
        }
        let page = header_at(buf, pos).and_then(|h| {
            let plausible = (INLINE_NODE..=BLOB_LINK).contains(&h.kind);
            let body = buf.get(pos + h.header_len..)?;
            let body = body.get(..usize::try_from(h.len).ok()?.min(body.len()))?;
            let lsn = i64::try_from(h.segment.checked_mul(segment)? + pos as u64).ok()?;
            plausible.then(|| (h.pid, lsn, body.to_vec()))
        });
        damaged.push(Damaged {
            offset: base + pos as u64,
            len: (end - pos) as u64,
            page,
            why: "a sled log message fails its checksum".to_owned(),
        });
        pos = end;
    }
}

/// A message header as read, unchecked.
struct Header {
    crc: u32,
    kind: u8,
    len: u64,
    segment: u64,
    pid: u64,
    header_len: usize,
}

fn header_at(buf: &[u8], pos: usize) -> Option<Header> {
    let mut cur = buf.get(pos..)?;
    let crc = u32::from_le_bytes(cur.get(..4)?.try_into().ok()?);
    let kind = *cur.get(4)?;
    cur = &cur[5..];
    let len = varint(&mut cur)?;
    let segment = varint(&mut cur)?;
    let pid = varint(&mut cur)?;
    let header_len = buf.len() - pos - cur.len();
    Some(Header {
        crc,
        kind,
        len,
        segment,
        pid,
        header_len,
    })
}

/// The message at `pos` if it checks out, and where the next one begins.
fn message_at(buf: &[u8], pos: usize, segment: u64) -> Option<(Message, usize)> {
    let h = header_at(buf, pos)?;
    if !(1..=BLOB_LINK).contains(&h.kind) {
        return None;
    }
    let start = pos + h.header_len;
    let end = start.checked_add(usize::try_from(h.len).ok()?)?;
    let body = buf.get(start..end)?;
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(body);
    hasher.update(buf.get(pos + 4..start)?);
    if hasher.finalize() ^ 0xFFFF_FFFF != h.crc {
        return None;
    }
    let lsn = i64::try_from(
        h.segment
            .checked_mul(segment)?
            .checked_add((pos as u64) % segment)?,
    )
    .ok()?;
    Some((
        Message {
            lsn,
            pid: h.pid,
            kind: h.kind,
            payload: body.to_vec(),
        },
        end,
    ))
}

/// A blob's payload, checked against its CRC-32.
fn read_blob(blobs: &Path, pointer: &[u8]) -> Result<Vec<u8>, String> {
    let id = i64::from_le_bytes(
        pointer
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or("a blob message without its blob's number")?,
    );
    let bytes = std::fs::read(blobs.join(id.to_string())).map_err(|e| format!("blob {id}: {e}"))?;
    let (crc, rest) = bytes
        .split_at_checked(4)
        .ok_or(format!("blob {id} is cut short"))?;
    let crc = u32::from_le_bytes(crc.try_into().map_err(|_| format!("blob {id}"))?);
    if crc32fast::hash(rest) != crc {
        return Err(format!("blob {id} fails its checksum"));
    }
    Ok(rest.get(1..).unwrap_or_default().to_vec())
}

/// A compressed payload: its length as a varint, then a zstd frame.
fn decompress(payload: &[u8]) -> Option<Vec<u8>> {
    let mut cur = payload;
    varint(&mut cur)?;
    zstd::stream::decode_all(cur).ok()
}

/// sled's varint.
fn varint(cur: &mut &[u8]) -> Option<u64> {
    let first = *cur.first()?;
    let (value, used) = match first {
        0..=240 => (u64::from(first), 1),
        241..=248 => (
            240 + 256 * (u64::from(first) - 241) + u64::from(*cur.get(1)?),
            2,
        ),
        249 => (
            2288 + 256 * u64::from(*cur.get(1)?) + u64::from(*cur.get(2)?),
            3,
        ),
        other => {
            let n = usize::from(other) - 247;
            let mut bytes = [0u8; 8];
            bytes[..n].copy_from_slice(cur.get(1..=n)?);
            (u64::from_le_bytes(bytes), n + 1)
        }
    };
    *cur = cur.get(used..)?;
    Some(value)
}

fn ivec(cur: &mut &[u8]) -> Option<Vec<u8>> {
    let len = usize::try_from(varint(cur)?).ok()?;
    let bytes = cur.get(..len)?.to_vec();
    *cur = &cur[len..];
    Some(bytes)
}

fn byte(cur: &mut &[u8]) -> Option<u8> {
    let b = *cur.first()?;
    *cur = &cur[1..];
    Some(b)
}

/// A node: `Some(None)` for an index node, `None` when it does not parse.
fn parse_node(payload: &[u8]) -> Option<Option<Leaf>> {
    let mut cur = payload;
    varint(&mut cur)?; // next
    varint(&mut cur)?; // merging_child
    byte(&mut cur)?; // merging
    let prefix_len = usize::from(byte(&mut cur)?);
    let lo = ivec(&mut cur)?;
    let hi = ivec(&mut cur)?;
    let prefix = lo.get(..prefix_len)?.to_vec();
    if byte(&mut cur)? != 0 {
        return Some(None);
    }
    let n = usize::try_from(varint(&mut cur)?).ok()?;
    let mut keys = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        keys.push(join(&prefix, &ivec(&mut cur)?));
    }
    let mut pairs = BTreeMap::new();
    for key in keys {
        pairs.insert(key, ivec(&mut cur)?);
    }
    Some(Some(Leaf {
        lo,
        hi,
        prefix,
        pairs,
    }))
}

fn parse_link(payload: &[u8]) -> Option<Update> {
    let mut cur = payload;
    Some(match byte(&mut cur)? {
        0 => Update::Set(ivec(&mut cur)?, ivec(&mut cur)?),
        1 => Update::Del(ivec(&mut cur)?),
        2..=4 => Update::NoKey,
        _ => return None,
    })
}
