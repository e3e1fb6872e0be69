//! Import of pi JSONL (spec §2, §3.5), streaming and atomic.
//!
//! Pass 1 streams the file: each line's bytes go to the log in bounded batches while a
//! compact summary of each record (ids, parent id, kind, content hash) stays in memory.
//! Pass 2 resolves parents against the final id map (pi resolves ids to their last
//! occurrence), derives every node record with the same fold as append, and writes the
//! indexes. The session becomes visible only in the last batch ("write first, publish
//! last"); an import killed midway leaves a pending marker whose rows the next open
//! removes.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use grove_codec::digest::{self, Digest};
use grove_codec::pack;
use grove_codec::reader::{Diagnostic, JsonlReader, Strictness, DEFAULT_MAX_LINE_BYTES};
use grove_codec::record::{
    self, ChildPackRecord, HeadRecord, LabelRecord, LeafPackRecord, LeafTarget, NodeRecord, Parent,
    SessionRecord, INDEX_PACK_ROWS,
};
use grove_codec::EntryKind;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::util;
use crate::kv::Durability;
use crate::kv::WriteBatch;
use crate::log::fold;
use crate::log::shared::Logs;
use grove_codec::op::{OpKind, OpStamp};

/// Which rule sets the imported session's leaf (spec §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeafRule {
    /// Replay `leaf` lines when the file has any, else the last entry (both pi rules agree
    /// then).
    #[default]
    Auto,
    /// pi-CLI's view: the last line's entry, or a final leaf line's `parentId`.
    LastLine,
}

/// Options of an import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Strict (default) or lenient line validation.
    pub strictness: Strictness,
    /// The leaf rule.
    pub leaf_rule: LeafRule,
    /// The file's path, recorded as the session's source and named in errors.
    pub source_path: Option<PathBuf>,
    /// The grove session this one derives from (forks).
    pub parent_session_id: Option<String>,
    /// The longest line accepted, in bytes (its LF not counted); a longer one fails the
    /// import with [`GroveError::LineTooLong`], in lenient mode too. Default
    /// [`DEFAULT_MAX_LINE_BYTES`] (256 MiB).
    pub max_line_bytes: usize,
    /// The operation the import is recorded as: [`OpKind::Import`] (default), or
    /// [`OpKind::Fork`] for the session a fork makes.
    pub operation: OpKind,
    /// The operations the records were written in, for a copy of a grove session that keeps
    /// its operation log ([`Handle::stamps`](crate::Session::stamps), read from the source
    /// the file was exported from in harness flavor): each pair stamps the record at that
    /// position (0 is the first line after the header) as the first of an operation, and
    /// records not named carry no stamp (a legacy operation's). When set, `operation` is not
    /// used. Positions must rise strictly and name records of the file, or the import fails
    /// with [`GroveError::InvalidArgument`] and writes nothing.
    pub stamps: Option<Vec<(u64, OpStamp)>>,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions {
            strictness: Strictness::default(),
            leaf_rule: LeafRule::default(),
            source_path: None,
            parent_session_id: None,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            operation: OpKind::Import,
            stamps: None,
        }
    }
}

/// What an import did.
#[derive(Debug, Clone)]
pub struct ImportReport {
    /// The new session's id.
    pub session: String,
    /// Tree entries imported (shadowed duplicates included).
    pub entries: u64,
    /// Leaf records imported.
    pub leaf_records: u64,
    /// The session's leaf after import.
    pub leaf: Option<String>,
    /// Ids that occurred more than once (the last occurrence wins).
    pub duplicate_ids: Vec<String>,
    /// Lines dropped or changed, torn tails and skipped lines among them.
    pub diagnostics: Vec<Diagnostic>,
    /// Problems that did not fail the import (e.g. an earlier leaf line naming no entry).
    pub warnings: Vec<String>,
}

struct Pending {
    id: String,
    parent_id: Option<String>,
    kind: EntryKind,
    target: Option<String>,
    label: Option<String>,
    content: Digest,
}

const BATCH_BYTES: usize = 4 << 20;

/// Imports a pi session file.
pub(crate) fn import_file(
    logs: &Arc<Logs>,
    actor: &str,
    path: &Path,
    options: ImportOptions,
) -> Result<ImportReport> {
    let file = std::fs::File::open(path).map_err(|source| GroveError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut options = options;
    if options.source_path.is_none() {
        options.source_path = Some(path.to_owned());
    }
    import_reader(
        logs,
        actor,
        std::io::BufReader::with_capacity(1 << 20, file),
        options,
    )
}

/// Imports pi session JSONL from any reader.
pub(crate) fn import_reader(
    logs: &Arc<Logs>,
    actor: &str,
    input: impl BufRead,
    options: ImportOptions,
) -> Result<ImportReport> {
    let file = options.source_path.clone();
    let codec_err = |e| GroveError::from_codec(e, file.clone());
    let mut reader = JsonlReader::with_max_line_bytes(
        input,
        options.strictness,
        Box::new(util::random_entry_id),
        options.max_line_bytes,
    )
    .map_err(codec_err)?;
    let header = reader.header().clone();
    if logs.inner.sid_of(&header.id)?.is_some() {
        return Err(GroveError::SessionExists(header.id));
    }
    let sid = logs.inner.alloc_sid()?;
    let mut batch = WriteBatch::new();
    batch.put(keys::pending(sid), Vec::new());
    logs.inner.commit(batch, Durability::None)?;
    let result = import_body(logs, actor, sid, &mut reader, &options, &header);
    match result {
        Ok(report) => Ok(report),
        Err(e) => {
            // Nothing was published: remove the rows written so far.
            let _ = logs.purge(sid);
            Err(e)
        }
    }
}

fn import_body<R: BufRead>(
    logs: &Arc<Logs>,
    actor: &str,
    sid: u64,
    reader: &mut JsonlReader<R>,
    options: &ImportOptions,
    header: &grove_codec::Header,
) -> Result<ImportReport> {
    let file = options.source_path.clone();
    let invalid = |reason: String| GroveError::InvalidSession {
        file: file.clone(),
        reason,
    };
    // Pass 1: read every line; the lines go to an anonymous spool file until their node
    // records are known (a log row packs both), so memory holds only the small metadata.
    let mut records: Vec<Pending> = Vec::new();
    let mut last_timestamp: Option<String> = None;
    let mut batch = WriteBatch::new();
    // Held until the import is written: the payload collection waits.
    let _gate = logs.inner.payload_gate.read_recursive();
    let mut staged = crate::core::payloads::SeenPayloads::default();
    let mut spool = Spool::new(logs.inner.spool_dir.as_deref())?;
    while let Some(line) = reader
        .next_line()
        .map_err(|e| GroveError::from_codec(e, file.clone()))?
    {
        let env = line.envelope;
        let label = (env.kind == EntryKind::Label)
            .then(|| crate::log::labels::label_value(&line.text).map(|(_, json)| json))
            .flatten();
        records.push(Pending {
            id: env.id,
            parent_id: env.parent_id,
            kind: env.kind,
            target: env.target_id,
            label,
            content: digest::content_hash(line.text.as_bytes()),
        });
        last_timestamp = Some(env.timestamp);
        spool.push(line.text.as_bytes())?;
    }
    let mut spool = spool.rewind()?;
    // Pass 2: resolve ids as pi does (the last occurrence wins).
    let mut id_map: HashMap<&str, u64> = HashMap::with_capacity(records.len());
    let mut duplicate_ids = Vec::new();
    for (seq, r) in records.iter().enumerate() {
        if id_map.insert(r.id.as_str(), seq as u64).is_some() {
            duplicate_ids.push(r.id.clone());
        }
    }
    let is_leaf = |seq: u64| records[seq as usize].kind == EntryKind::Leaf;
    let mut parents: Vec<Parent> = Vec::with_capacity(records.len());
    for r in &records {
        let parent = match (&r.kind, &r.parent_id) {
            (EntryKind::Leaf, None) => Parent::Root,
            (EntryKind::Leaf, Some(p)) => id_map.get(p.as_str()).map_or(Parent::Missing, |&s| Parent::Seq(s)),
            (_, None) => Parent::Root,
            (_, Some(p)) if *p == r.id => Parent::SelfRef,
            (_, Some(p)) => match id_map.get(p.as_str()) {
                None => Parent::Missing,
                Some(&s) if is_leaf(s) => {
                    return Err(invalid(format!(
                        "entry {} is attached to leaf record {p}; grove does not treat leaf records as tree nodes",
                        r.id
                    )))
                }
                Some(&s) => Parent::Seq(s),
            },
        };
        if r.kind == EntryKind::Leaf {
            if let Some(t) = &r.target {
                if id_map.get(t.as_str()).is_some_and(|&s| is_leaf(s)) {
                    return Err(invalid(format!(
                        "leaf record {} targets leaf record {t}; grove does not treat leaf records as tree nodes",
                        r.id
                    )));
                }
            }
        }
        parents.push(parent);
    }
    let nodes = derive_all(&records, &mut parents);
    // The leaf.
    let mut warnings = Vec::new();
    let resolve = |id: &str| id_map.get(id).copied().filter(|&s| !is_leaf(s));
    let mut leaf: Option<u64> = None;
    let mut leaf_targets: Vec<Option<LeafTarget>> = vec![None; records.len()];
    for (seq, r) in records.iter().enumerate() {
        if r.kind == EntryKind::Leaf {
            let target = match &r.target {
                None => LeafTarget::Null,
                Some(t) => match resolve(t) {
                    Some(s) => LeafTarget::Seq(s),
                    None => {
                        warnings.push(format!(
                            "leaf record {} targets {t}, which is not an entry",
                            r.id
                        ));
                        LeafTarget::Missing
                    }
                },
            };
            leaf_targets[seq] = Some(target);
            leaf = match target {
                LeafTarget::Seq(s) => Some(s),
                _ => None,
            };
            if seq + 1 == records.len() {
                if let (LeafTarget::Missing, LeafRule::Auto) = (target, options.leaf_rule) {
                    return Err(invalid(format!(
                        "Entry {} not found",
                        r.target.clone().unwrap_or_default()
                    )));
                }
            }
        } else {
            leaf = resolve(&r.id);
        }
    }
    if options.leaf_rule == LeafRule::LastLine {
        if let Some(last) = records.last() {
            leaf = if last.kind == EntryKind::Leaf {
                warnings.push(format!(
                    "the file ends with leaf line {}; pi's SessionManager resumes at its parent",
                    last.id
                ));
                last.parent_id.as_deref().and_then(resolve)
            } else {
                resolve(&last.id)
            };
        }
    }
    // The id index as sorted id packs, written along with the log packs (below).
    let mut ids: Vec<(&str, u64)> = id_map.iter().map(|(id, &seq)| (*id, seq)).collect();
    ids.sort_unstable();
    let id_filter = pack::IdFilter::build(ids.len(), ids.iter().map(|(id, _)| *id));
    let mut id_packs = ids.chunks(pack::ID_PACK_IDS);
    let id_pack_count = ids.len().div_ceil(pack::ID_PACK_IDS);
    let mut id_packs_written = 0usize;
    let mut log_pack = pack::LogPackWriter::new();
    let mut pack_first = 0u64;
    // Index rows. The children index and the leaf history go to packs at the end
    // (`0x1D`, `0x1E`): one key per 1,024 rows instead of one per row.
    let mut child_rows: Vec<(u64, u64)> = Vec::new();
    let mut leaf_seqs: Vec<u64> = Vec::new();
    let mut name_at = None;
    let mut labels: HashMap<&str, Option<LabelRecord>> = HashMap::new();
    let mut entries = 0u64;
    let mut carried = match &options.stamps {
        Some(stamps) => Some(carried_stamps(stamps, records.len() as u64)?),
        None => None,
    };
    for (seq, (r, node)) in records.iter().zip(nodes).enumerate() {
        let seq = seq as u64;
        let Some(mut node) = node else {
            return Err(GroveError::Corrupt(format!(
                "import derived no node record for record {seq} (a bug)"
            )));
        };
        // Whether this record holds its id (pi resolves an id to its last occurrence).
        let holds_id = id_map.get(r.id.as_str()) == Some(&seq);
        if r.kind == EntryKind::Leaf {
            let previous = parents[seq as usize].seq();
            let target = leaf_targets[seq as usize].unwrap_or(LeafTarget::Missing);
            node = fold::leaf_node(&r.id, previous, target, r.content);
            leaf_seqs.push(seq);
        } else {
            entries += 1;
            node.shadowed = !holds_id;
            if let Some(pseq) = keys::child_row(&node, seq) {
                child_rows.push((pseq, seq));
            }
            match r.kind {
                EntryKind::SessionInfo => name_at = Some(seq),
                EntryKind::Compaction => batch.put(keys::compaction(sid, seq), Vec::new()),
                EntryKind::Label => {
                    if let Some(t) = &r.target {
                        let rec = r
                            .label
                            .clone()
                            .map(|label| LabelRecord { label, set_by: seq });
                        labels.insert(t.as_str(), rec);
                    }
                }
                _ => {}
            }
        }
        let line = spool.next_line()?;
        if let Ok(text) = std::str::from_utf8(&line) {
            fold::set_message_span(&mut node, text);
        }
        if log_pack.is_empty() {
            pack_first = seq;
        }
        // The import is one operation, stamped on its first record, unless it carries the
        // operations of the session it copies.
        let stamp = match carried.as_mut() {
            Some(carried) => carried
                .next_if(|(at, _)| *at == seq)
                .map(|(_, s)| s.clone()),
            None => (seq == 0).then(|| OpStamp::new(options.operation, actor, util::now_ms())),
        };
        // Large string values go to the payload store; the row keeps the cut line.
        let stored = logs.inner.stage_line(&line, &mut batch, &mut staged)?;
        let stored = stored.as_deref().unwrap_or(&line);
        log_pack
            .push(&record::encode_log_stamped(&node, stored, stamp.as_ref()))
            .map_err(|e| invalid(format!("record {seq}: {e}")))?;
        let last = seq + 1 == records.len() as u64;
        if log_pack.is_full() || last {
            batch.put(keys::log_pack(sid, pack_first), log_pack.take());
            // The id packs go out in step with the log packs, in the same batches: written
            // after all the log rows instead, the id index made sled relocate the log
            // pages and leave about half its file as free segments, which it rewrites
            // with zeros on every open (docs/design.md, "Backends").
            let due = if last {
                id_pack_count
            } else {
                id_pack_count * (seq as usize + 1) / records.len()
            };
            while id_packs_written < due {
                let Some(chunk) = id_packs.next() else { break };
                if let Some(&(first, _)) = chunk.first() {
                    batch.put(
                        keys::id_pack(sid, first),
                        pack::encode_id_pack(chunk.iter().copied()),
                    );
                }
                id_packs_written += 1;
            }
        }
        if batch.size() > BATCH_BYTES {
            logs.inner
                .commit(std::mem::take(&mut batch), Durability::None)?;
        }
    }
    child_rows.sort_unstable();
    for rows in child_rows.chunks(INDEX_PACK_ROWS) {
        if let Some(&(parent, child)) = rows.first() {
            let rows = rows.to_vec();
            batch.put(
                keys::child_pack(sid, parent, child),
                record::encode(&ChildPackRecord { rows }),
            );
        }
    }
    for seqs in leaf_seqs.chunks(INDEX_PACK_ROWS) {
        if let Some(&first) = seqs.first() {
            let seqs = seqs.to_vec();
            batch.put(
                keys::leaf_pack(sid, first),
                record::encode(&LeafPackRecord { seqs }),
            );
        }
    }
    for (target, rec) in labels {
        if let Some(rec) = rec {
            let text = crate::log::labels::label_text(&rec.label);
            batch.put(
                keys::by_label(&text, &header.id, sid, rec.set_by),
                Vec::new(),
            );
            batch.put(keys::label(sid, target), record::encode(&rec));
        }
    }
    let head = HeadRecord {
        next_seq: records.len() as u64,
        leaf,
        entries,
        name_at,
        last_timestamp,
    };
    let session = SessionRecord {
        id: header.id.clone(),
        header: header.raw.clone(),
        created: header.timestamp.clone(),
        cwd: header.cwd.clone(),
        parent_session: header.parent_session.clone(),
        parent_session_id: options.parent_session_id.clone(),
        source_path: options
            .source_path
            .as_ref()
            .map(|p| p.display().to_string()),
    };
    batch.put(keys::head(sid), record::encode(&head));
    for key in crate::log::catalogue::index_keys(sid, &session, head.last_timestamp.as_deref()) {
        batch.put(key, Vec::new());
    }
    batch.put(keys::session(sid), record::encode(&session));
    if !records.is_empty() {
        batch.put(
            keys::packed(sid),
            (records.len() as u64).to_be_bytes().to_vec(),
        );
        batch.put(keys::id_filter(sid), id_filter.encode());
    }
    logs.publish(sid, &header.id, batch)?;
    Ok(ImportReport {
        session: header.id.clone(),
        entries,
        leaf_records: records.len() as u64 - entries,
        leaf: leaf.map(|s| records[s as usize].id.clone()),
        duplicate_ids,
        diagnostics: reader.take_diagnostics(),
        warnings,
    })
}

/// The carried stamps of an import ([`ImportOptions::stamps`]), checked against the number of
/// records: positions that rise strictly and name records of the file.
fn carried_stamps(
    stamps: &[(u64, OpStamp)],
    records: u64,
) -> Result<std::iter::Peekable<std::slice::Iter<'_, (u64, OpStamp)>>> {
    let mut previous: Option<u64> = None;
    for (at, _) in stamps {
        if *at >= records {
            return Err(GroveError::InvalidArgument(format!(
                "an operation stamp names record {at}, and the file holds {records}"
            )));
        }
        if previous.is_some_and(|p| p >= *at) {
            return Err(GroveError::InvalidArgument(format!(
                "operation stamps out of order: record {at} after record {}",
                previous.unwrap_or_default()
            )));
        }
        previous = Some(*at);
    }
    Ok(stamps.iter().peekable())
}

/// Derives every node record in an order where parents come first, whatever the file
/// order. The earliest member of each parent cycle gets [`Parent::Cycle`] and counts as a
/// root. Every slot is filled; they stay `Option`s so that the vector is not copied.
fn derive_all(records: &[Pending], parents: &mut [Parent]) -> Vec<Option<NodeRecord>> {
    const NEW: u8 = 0;
    const ON_STACK: u8 = 1;
    const DONE: u8 = 2;
    let n = records.len();
    let mut state = vec![NEW; n];
    let mut nodes: Vec<Option<NodeRecord>> = vec![None; n];
    for start in 0..n {
        if state[start] == DONE {
            continue;
        }
        let mut stack = vec![start];
        state[start] = ON_STACK;
        while let Some(&top) = stack.last() {
            let next = match parents[top] {
                Parent::Seq(p) if records[top].kind != EntryKind::Leaf => Some(p as usize),
                _ => None,
            };
            match next {
                Some(p) if state[p] == NEW => {
                    state[p] = ON_STACK;
                    stack.push(p);
                    continue;
                }
                Some(p) if state[p] == ON_STACK => {
                    // A cycle: the members are stack[pos..]; the earliest in log order
                    // becomes its root.
                    let pos = stack.iter().rposition(|&s| s == p).unwrap_or(0);
                    let earliest = stack[pos..].iter().copied().min().unwrap_or(p);
                    if let Parent::Seq(q) = parents[earliest] {
                        parents[earliest] = Parent::Cycle(q);
                    }
                    // Unwind to the earliest member; it is derived next as a root.
                    while let Some(&s) = stack.last() {
                        if s == earliest {
                            break;
                        }
                        state[s] = NEW;
                        stack.pop();
                    }
                    continue;
                }
                _ => {}
            }
            let parent_node = match parents[top] {
                Parent::Seq(p) => nodes[p as usize].as_ref(),
                _ => None,
            };
            let parent_jump = parent_node
                .and_then(|p| p.jump)
                .and_then(|j| nodes[j.seq as usize].as_ref());
            let r = &records[top];
            let node = fold::derive_node(
                top as u64,
                &r.id,
                r.kind,
                parents[top],
                parent_node,
                parent_jump,
                r.content,
            );
            nodes[top] = Some(node);
            state[top] = DONE;
            stack.pop();
        }
    }
    nodes
}

/// The lines of an import between pass 1 and the writing of their log rows: an anonymous
/// temporary file of length-prefixed lines, read back in order.
struct Spool {
    file: std::io::BufWriter<std::fs::File>,
    dir: PathBuf,
}

/// A spool being read back.
struct SpoolReader {
    file: std::io::BufReader<std::fs::File>,
    dir: PathBuf,
}

/// A failure of the spool file in `dir`: `Io`, naming the directory (the file is anonymous).
fn spool_error(dir: &Path) -> impl Fn(std::io::Error) -> GroveError + '_ {
    move |source| GroveError::Io {
        path: dir.to_path_buf(),
        source,
    }
}

impl Spool {
    /// An anonymous file in `dir` (the system temporary directory when `None`); it is
    /// removed when closed, also by a crash.
    fn new(dir: Option<&Path>) -> Result<Spool> {
        let dir = dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let file = tempfile::tempfile_in(&dir).map_err(spool_error(&dir))?;
        Ok(Spool {
            file: std::io::BufWriter::with_capacity(1 << 20, file),
            dir,
        })
    }

    fn push(&mut self, line: &[u8]) -> Result<()> {
        use std::io::Write;
        let len = line.len() as u64;
        self.file
            .write_all(&len.to_le_bytes())
            .map_err(spool_error(&self.dir))?;
        self.file.write_all(line).map_err(spool_error(&self.dir))
    }

    fn rewind(self) -> Result<SpoolReader> {
        use std::io::Seek;
        let dir = self.dir;
        let mut file = self
            .file
            .into_inner()
            .map_err(|e| spool_error(&dir)(e.into_error()))?;
        file.rewind().map_err(spool_error(&dir))?;
        Ok(SpoolReader {
            file: std::io::BufReader::with_capacity(1 << 20, file),
            dir,
        })
    }
}

impl SpoolReader {
    fn next_line(&mut self) -> Result<Vec<u8>> {
        use std::io::Read;
        let mut len = [0u8; 8];
        self.file
            .read_exact(&mut len)
            .map_err(spool_error(&self.dir))?;
        let len = usize::try_from(u64::from_le_bytes(len)).map_err(|_| {
            spool_error(&self.dir)(std::io::Error::other("spooled line length overflows"))
        })?;
        let mut line = vec![0u8; len];
        self.file
            .read_exact(&mut line)
            .map_err(spool_error(&self.dir))?;
        Ok(line)
    }
}
