//! grove's binary records: the values stored under the keys of docs/format.md.
//!
//! Every value is `[format version: u8] ++ bincode(standard config)`. The version is grove's
//! own, independent of sled's; a value of an unknown version is refused with a typed error.

use bincode::{Decode, Encode};
use compact_str::CompactString;

use crate::digest::Digest;
use crate::error::CodecError;

/// The record format versions this build reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FormatVersion {
    /// The first format (entries, leaf records, indexes, session records).
    V1 = 1,
}

impl FormatVersion {
    /// The version new values are written with.
    pub const CURRENT: FormatVersion = FormatVersion::V1;

    /// Parses a version byte.
    pub fn from_byte(b: u8) -> Result<FormatVersion, CodecError> {
        match b {
            1 => Ok(FormatVersion::V1),
            other => Err(CodecError::UnknownFormatVersion(other)),
        }
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
    /// slices it out instead of parsing the line ([`crate::view::message_span`]).
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
pub fn encode<T: Encode>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    encode_onto(&mut out, value);
    out
}

/// [`encode`], appending the record to `out` (one buffer, no intermediate copies).
fn encode_onto<T: Encode>(out: &mut Vec<u8>, value: &T) {
    let start = out.len();
    out.push(FormatVersion::CURRENT as u8);
    // Encoding into a Vec cannot fail for these plain data types.
    if bincode::encode_into_std_write(value, out, bincode::config::standard()).is_err() {
        out.truncate(start + 1);
    }
    let sum = checksum(&out[start..]);
    out.extend_from_slice(&sum);
}

/// Packs a log row: an entry's (or leaf record's) node record and its line in one value,
/// `[node record length: u32 BE] ++ node record ++ line bytes` (docs/format.md, "Log rows").
/// The node record carries its own checksum; the line is covered by the node's `content`
/// hash.
pub fn encode_log(node: &NodeRecord, line: &[u8]) -> Vec<u8> {
    // A node record is its id and about a hundred bytes of fixed fields.
    let mut out = Vec::with_capacity(4 + 160 + node.id.len() + line.len());
    encode_log_into(&mut out, node, line);
    out
}

/// [`encode_log`], appending the row to `out`.
pub fn encode_log_into(out: &mut Vec<u8>, node: &NodeRecord, line: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    encode_onto(out, node);
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

/// Decodes the node record of a log row (the line is not touched).
pub fn decode_log_node(bytes: &[u8]) -> Result<NodeRecord, CodecError> {
    decode(split_log(bytes)?.0)
}

/// Decodes a record, checking its checksum, its format version and that every byte was used.
pub fn decode<T: Decode<()>>(bytes: &[u8]) -> Result<T, CodecError> {
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
    FormatVersion::from_byte(version)?;
    // The limit bounds what a length field may claim: a value with a valid checksum but an
    // absurd length (written by something else, or forged) is refused, not allocated.
    let config = bincode::config::standard().with_limit::<DECODE_LIMIT>();
    let (value, used) = bincode::decode_from_slice(body, config)
        .map_err(|e| CodecError::CorruptRecord(e.to_string()))?;
    if used != body.len() {
        return Err(CodecError::CorruptRecord(format!(
            "{} trailing bytes",
            body.len() - used
        )));
    }
    Ok(value)
}
