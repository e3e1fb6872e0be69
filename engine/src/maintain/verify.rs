//! Verification: recompute every digest chain and every index from the log, and report each
//! disagreement with its session and entry. Every stored record carries a checksum, every
//! line a content hash in its node (and, from store layout 9, the CRC-32 reads check: both
//! are checked here), and every node is re-derived with the same fold as append, so a
//! changed byte anywhere in a session's values is found.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use grove_codec::digest;
use grove_codec::entry::Envelope;
use grove_codec::header::Header;
use grove_codec::pack::{IdFilter, IdPack, IdRunMeta, LogPack};
use grove_codec::record::{
    self, HeadRecord, LabelRecord, LeafTarget, NodeRecord, Parent, SessionRecord, ViewRecord,
    ViewRowsRecord,
};
use grove_codec::EntryKind;

use crate::context::build;
use crate::core::error::Result;
use crate::core::keys;
use crate::log::fold;
use crate::log::handle::Handle;
use crate::log::index_packs;
use crate::log::shared::Logs;
use crate::maintain::report::{
    compare_set, head_agrees, pack_rows, Checker, Problem, VerifyReport,
};

/// Verifies every session of the store.
pub(crate) fn verify_store(logs: &Arc<Logs>) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    if let Some(lost) = logs.inner.lost.as_ref() {
        report.problems.push(Problem {
            session: "(store)".to_owned(),
            entry: None,
            what: lost.to_string(),
        });
    }
    let start = vec![keys::T_SESSION_ID];
    let end = keys::prefix_end(&start);
    let mut ids = Vec::new();
    for pair in logs.inner.kv.scan(&start, &end) {
        let (k, v) = pair?;
        let id = keys::string_suffix(&k, 1).unwrap_or_default();
        match keys::u64_value(&v) {
            Some(sid) => ids.push((id, sid)),
            None => report.problems.push(Problem {
                session: id,
                entry: None,
                what: "session id index value is not a session number".into(),
            }),
        }
    }
    for (id, sid) in ids {
        match logs.inner.get::<SessionRecord>(&keys::session(sid)) {
            Ok(Some(rec)) => {
                let session = match Handle::open(logs.clone(), sid, rec.clone()) {
                    Ok(s) => s,
                    Err(e) => {
                        report.problems.push(Problem {
                            session: id.clone(),
                            entry: None,
                            what: format!("completing an interrupted commit: {e}"),
                        });
                        Handle::new(logs.clone(), sid, rec)
                    }
                };
                verify_session(&session, &id, &mut report)?;
            }
            Ok(None) => report.problems.push(Problem {
                session: id,
                entry: None,
                what: format!("session id index points at sid {sid}, which has no session record"),
            }),
            Err(e) => report.problems.push(Problem {
                session: id,
                entry: None,
                what: e.to_string(),
            }),
        }
        report.sessions += 1;
    }
    Ok(report)
}

/// Verifies this session.
pub(crate) fn verify(s: &Handle) -> Result<VerifyReport> {
    let mut report = VerifyReport {
        sessions: 1,
        ..VerifyReport::default()
    };
    verify_session(s, s.id(), &mut report)?;
    Ok(report)
}

/// A record of the log as read back, with its parsed envelope.
struct Row {
    node: NodeRecord,
    line: String,
    env: Option<Envelope>,
}

fn verify_session(s: &Handle, listed_as: &str, report: &mut VerifyReport) -> Result<()> {
    let mut c = Checker {
        session: listed_as.to_owned(),
        report,
    };
    let rec = s.record();
    if rec.id != listed_as {
        c.fail(
            None,
            format!("session record id {} differs from its index key", rec.id),
        );
    }
    match Header::parse(&rec.header) {
        Ok(h) => {
            if h.id != rec.id
                || h.timestamp != rec.created
                || h.cwd != rec.cwd
                || h.parent_session != rec.parent_session
            {
                c.fail(None, "session record disagrees with its header line");
            }
        }
        Err(e) => c.fail(None, format!("header line: {e}")),
    }
    // The stored head is a checkpoint; the session's head is it folded over the records
    // after it.
    let checkpoint = match s.inner.get::<HeadRecord>(&keys::head(s.sid)) {
        Ok(Some(h)) => h,
        Ok(None) => {
            c.fail(None, "missing head");
            return Ok(());
        }
        Err(e) => {
            c.fail(None, e.to_string());
            return Ok(());
        }
    };
    let head = match s.head() {
        Ok(h) => h,
        Err(e) => {
            c.fail(None, e.to_string());
            return Ok(());
        }
    };
    if s.inner.kv.get(&keys::pending(s.sid))?.is_some() {
        c.fail(None, "pending marker present on a published session");
    }
    // The log's layout: log packs tile 0..packed, single rows follow.
    let packed = s.packed;
    if packed > head.next_seq {
        c.fail(
            None,
            format!("packed count {packed} exceeds next_seq {}", head.next_seq),
        );
        return Ok(());
    }
    let singles = keys::session_prefix(keys::T_LOG, s.sid);
    if let Some(pair) = s.inner.kv.scan(&singles, &keys::log(s.sid, packed)).next() {
        let seq = keys::last_u64(&pair?.0).unwrap_or(u64::MAX);
        c.fail(
            None,
            format!("log row {seq} below the packed count {packed}"),
        );
    }
    let start = keys::session_prefix(keys::T_LOG_PACK, s.sid);
    let mut tiled = 0u64;
    for pair in s.inner.kv.scan(&start, &keys::prefix_end(&start)) {
        let (key, value) = pair?;
        let first = keys::last_u64(&key).unwrap_or(u64::MAX);
        match LogPack::parse(&value) {
            Ok(pack) if first == tiled && first + pack.len() as u64 <= packed => {
                tiled = first + pack.len() as u64;
            }
            Ok(_) => {
                c.fail(
                    None,
                    format!("log pack at {first} does not follow record {tiled}"),
                );
                return Ok(());
            }
            Err(e) => {
                c.fail(None, format!("log pack at {first}: {e}"));
                return Ok(());
            }
        }
    }
    if tiled != packed {
        c.fail(
            None,
            format!("log packs end at {tiled}, the packed count is {packed}"),
        );
        return Ok(());
    }
    // The log: one row (node record and line) for each of 0..next_seq.
    let mut rows: Vec<Row> = Vec::with_capacity(head.next_seq as usize);
    let mut redactions: Option<crate::log::redactions::Redactions> = None;
    let mut log = s.log_range(0, u64::MAX);
    for seq in 0..head.next_seq {
        let value = match log.next() {
            None => {
                c.fail(
                    None,
                    format!("log ends at {seq}, head says {}", head.next_seq),
                );
                return Ok(());
            }
            Some(Err(e)) => {
                c.fail(None, e.to_string());
                return Ok(());
            }
            Some(Ok((_, value))) => value,
        };
        let (nv, lv) = match record::split_log(&value) {
            Ok(parts) => parts,
            Err(e) => {
                c.fail(None, format!("log record {seq}: {e}"));
                return Ok(());
            }
        };
        let (node, line_crc) = match record::decode_node(nv) {
            Ok(n) => n,
            Err(e) => {
                c.fail(None, format!("node {seq}: {e}"));
                return Ok(());
            }
        };
        // The CRC-32 covers the line as stored; a line stored cut is joined with its payloads
        // (each checked against its hash) before its content hash is.
        let stored = lv;
        let joined = match crate::core::payloads::expand(s.inner.kv.as_ref(), stored) {
            Ok(joined) => joined,
            Err(e) => {
                c.fail(Some(&node.id), format!("line {seq}: {e}"));
                std::borrow::Cow::Borrowed(stored)
            }
        };
        let lv: &[u8] = &joined;
        let line = String::from_utf8_lossy(lv).into_owned();
        // Both checks: the content hash (the chain's input) and the CRC-32 that reads check.
        let now = digest::content_hash(lv);
        if now != node.content {
            // A redacted line: the session's redactions lead from the content digest to it.
            let redactions = redactions.get_or_insert_with(|| s.redactions().unwrap_or_default());
            if redactions
                .explains(seq, &node.content, &now, head.next_seq)
                .is_some()
            {
                c.report.redacted += 1;
            } else {
                c.fail(
                    Some(&node.id),
                    format!("line {seq} does not match its content hash"),
                );
            }
        }
        if line_crc.is_some_and(|crc| crc != record::line_crc(stored)) {
            c.fail(
                Some(&node.id),
                format!("line {seq} does not match its CRC-32"),
            );
        }
        let env = Envelope::parse(&line).ok();
        match &env {
            None => c.fail(Some(&node.id), format!("line {seq} is not a valid entry")),
            Some(e) if e.id != node.id || e.kind.tag() != node.kind => c.fail(
                Some(&node.id),
                format!("node {seq} disagrees with its line (id or type)"),
            ),
            Some(_) => {}
        }
        rows.push(Row { node, line, env });
    }
    if log.next().is_some() {
        c.fail(None, format!("records beyond next_seq {}", head.next_seq));
    }
    c.report.records += rows.len() as u64;
    // Ids resolve to their last occurrence.
    let mut last: HashMap<&str, u64> = HashMap::new();
    for (seq, r) in rows.iter().enumerate() {
        last.insert(r.node.id.as_str(), seq as u64);
    }
    // The checkpoint is the fold of the log up to its next_seq — except its leaf where an
    // import with pi-CLI's leaf rule (`LeafRule::LastLine`) ended on a leaf line: that rule
    // resumes at the entry the line's `parentId` names, not at its target.
    let last_line_leaf = checkpoint
        .next_seq
        .checked_sub(1)
        .and_then(|seq| rows.get(seq as usize))
        .and_then(|r| r.env.as_ref())
        .filter(|env| env.kind == EntryKind::Leaf)
        .map(|env| {
            env.parent_id
                .as_deref()
                .and_then(|p| last.get(p).copied())
                .filter(|&p| rows[p as usize].node.kind != EntryKind::Leaf.tag())
        });
    let mut replay = HeadRecord {
        next_seq: 0,
        leaf: None,
        entries: 0,
        name_at: None,
        last_timestamp: None,
    };
    let mut checkpoint_sound = checkpoint.next_seq == 0 && head_agrees(&checkpoint, &replay);
    for (seq, r) in rows.iter().enumerate() {
        if let Some(env) = &r.env {
            crate::log::write::advance_head(&mut replay, seq as u64, &r.node, Some(&env.timestamp));
        }
        if seq as u64 + 1 == checkpoint.next_seq {
            checkpoint_sound = head_agrees(&checkpoint, &replay)
                || last_line_leaf.is_some_and(|leaf| {
                    head_agrees(
                        &checkpoint,
                        &HeadRecord {
                            leaf,
                            ..replay.clone()
                        },
                    )
                });
        }
    }
    if !checkpoint_sound {
        c.fail(
            None,
            format!(
                "stored head (next_seq {}) is not the log's head at that record",
                checkpoint.next_seq
            ),
        );
    }
    // The id index (docs/format.md, "Id runs"): the ids of packed records in id packs, those
    // of appended records up to the tail in id runs, the tail's in none.
    let kv = &s.inner.kv;
    let id_rows = keys::session_prefix(keys::T_ENTRY_ID, s.sid);
    if let Some(pair) = kv.scan(&id_rows, &keys::prefix_end(&id_rows)).next() {
        let id = keys::string_suffix(&pair?.0, 9).unwrap_or_default();
        c.fail(
            Some(&id),
            "id row of store layout 3 (later layouts keep ids in id runs)",
        );
    }
    let mut runs: Vec<(u64, IdRunMeta)> = Vec::new();
    let start = keys::session_prefix(keys::T_ID_RUN, s.sid);
    for pair in kv.scan(&start, &keys::prefix_end(&start)) {
        let (k, v) = pair?;
        let first = keys::last_u64(&k).unwrap_or(u64::MAX);
        let expected = runs.last().map_or(packed, |(_, m)| m.end);
        match IdRunMeta::decode(&v) {
            Ok(meta) if first == expected && meta.end > first && meta.end <= head.next_seq => {
                runs.push((first, meta));
            }
            Ok(meta) => {
                c.fail(
                    None,
                    format!(
                        "id run at {first} covers {first} .. {} where the runs go on from \
                         {expected} and the log ends at {}",
                        meta.end, head.next_seq
                    ),
                );
                return Ok(());
            }
            Err(e) => {
                c.fail(None, format!("id run at {first}: {e}"));
                return Ok(());
            }
        }
    }
    let tail_from = runs.last().map_or(packed, |(_, m)| m.end);
    let mut indexed = 0usize;
    let mut seen: HashSet<String> = HashSet::new();
    let mut check_id = |c: &mut Checker, id: &str, seq: u64, place: std::ops::Range<u64>| {
        indexed += 1;
        if Some(seq) != last.get(id).copied() {
            c.fail(Some(id), "id index disagrees with the log");
        } else if !place.contains(&seq) {
            c.fail(
                Some(id),
                "id indexed in the wrong place (id packs or a run)",
            );
        }
        if !seen.insert(id.to_owned()) {
            c.fail(Some(id), "id indexed twice");
        }
    };
    // Sorted id packs under `table` (keyed by their first id); every id checked against
    // `place`. Returns the ids.
    let mut read_packs = |c: &mut Checker, table: &[u8], what: &str, place| -> Result<_> {
        let mut previous: Option<String> = None;
        let mut ids: Vec<String> = Vec::new();
        for pair in kv.scan(table, &keys::prefix_end(table)) {
            let (k, v) = pair?;
            let key_id = keys::string_suffix(&k, table.len()).unwrap_or_default();
            let pack = match IdPack::parse(&v).and_then(|p| p.check().map(|()| p)) {
                Ok(p) => p,
                Err(e) => {
                    c.fail(None, format!("{what} id pack {key_id}: {e}"));
                    continue;
                }
            };
            if pack.first() != key_id {
                c.fail(
                    None,
                    format!("{what} id pack {key_id} starts with {}", pack.first()),
                );
            }
            if previous.as_deref().is_some_and(|p| p >= pack.first()) {
                c.fail(
                    None,
                    format!("{what} id pack {key_id} overlaps the one before"),
                );
            }
            for (id, seq) in pack.iter() {
                check_id(c, id, seq, std::ops::Range::clone(&place));
                previous = Some(id.to_owned());
                ids.push(id.to_owned());
            }
        }
        Ok(ids)
    };
    let table = keys::session_prefix(keys::T_ID_PACK, s.sid);
    let packed_ids = read_packs(&mut c, &table, "imported", 0..packed)?;
    // The id filter: exactly the filter of the packed ids, present when there are packs.
    let stored = kv.get(&keys::id_filter(s.sid))?;
    match (stored, packed) {
        (None, 0) => {}
        (Some(_), 0) => c.fail(None, "id filter on a session without packs"),
        (None, _) => c.fail(None, "missing id filter"),
        (Some(bytes), _) => {
            let expected = IdFilter::build(packed_ids.len(), packed_ids.iter().map(String::as_str));
            if bytes != expected.encode() {
                c.fail(None, "id filter disagrees with the id packs");
            }
        }
    }
    for (first, meta) in &runs {
        let table = keys::id_run_packs(s.sid, *first);
        let ids = read_packs(&mut c, &table, &format!("run {first}"), *first..meta.end)?;
        if ids.len() as u64 != meta.count {
            c.fail(
                None,
                format!(
                    "id run at {first} holds {} ids, its description says {}",
                    ids.len(),
                    meta.count
                ),
            );
        }
        if IdFilter::build(ids.len(), ids.iter().map(String::as_str)) != meta.filter {
            c.fail(
                None,
                format!("id run at {first}: filter disagrees with its ids"),
            );
        }
    }
    let table = keys::session_prefix(keys::T_ID_RUN_PACK, s.sid);
    for pair in kv.scan(&table, &keys::prefix_end(&table)) {
        let (k, _) = pair?;
        let run = k.get(9..17).and_then(keys::last_u64).unwrap_or(u64::MAX);
        if !runs.iter().any(|(first, _)| *first == run) {
            c.fail(
                None,
                format!("id pack of a run at {run}, which does not exist"),
            );
        }
    }
    let expected = last.values().filter(|&&seq| seq < tail_from).count();
    if indexed != expected {
        c.fail(
            None,
            format!(
                "id index has {indexed} ids, the log {expected} before its tail (records \
                 {tail_from} ..)"
            ),
        );
    }
    let is_leaf = |seq: u64| rows[seq as usize].node.kind == EntryKind::Leaf.tag();
    // Every node against the fold of its parent.
    let mut children: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut leaf_records = BTreeSet::new();
    let mut compactions = BTreeSet::new();
    let mut labels: BTreeMap<String, LabelRecord> = BTreeMap::new();
    let mut name_at = None;
    let mut leaf: Option<u64> = None;
    for (seq, r) in rows.iter().enumerate() {
        let seq = seq as u64;
        let Some(env) = &r.env else { continue };
        let id = r.node.id.as_str();
        if env.kind == EntryKind::Leaf {
            leaf_records.insert(seq);
            let target = match &env.target_id {
                None => LeafTarget::Null,
                Some(t) => last
                    .get(t.as_str())
                    .filter(|&&t| !is_leaf(t))
                    .map_or(LeafTarget::Missing, |&t| LeafTarget::Seq(t)),
            };
            let previous = r.node.parent.seq();
            let expected_prev = env.parent_id.as_deref().and_then(|p| last.get(p).copied());
            if previous != expected_prev {
                c.fail(
                    Some(id),
                    "leaf record's previous leaf disagrees with its line",
                );
            }
            if fold::leaf_node(id, previous, target, r.node.content) != r.node {
                c.fail(Some(id), "leaf record disagrees with its line");
            }
            leaf = match target {
                LeafTarget::Seq(t) => Some(t),
                _ => None,
            };
            continue;
        }
        leaf = last.get(id).copied();
        let expected_parent = match &env.parent_id {
            None => Parent::Root,
            Some(p) if p == id => Parent::SelfRef,
            Some(p) => match last.get(p.as_str()) {
                None => Parent::Missing,
                Some(&ps) => Parent::Seq(ps),
            },
        };
        let parent_ok = match (expected_parent, r.node.parent) {
            (Parent::Seq(a), Parent::Cycle(b)) => a == b,
            (a, b) => a == b,
        };
        if !parent_ok {
            c.fail(
                Some(id),
                format!(
                    "parent {:?} disagrees with parentId (expected {expected_parent:?})",
                    r.node.parent
                ),
            );
        }
        let parent_node = match r.node.parent {
            Parent::Seq(p) if p < rows.len() as u64 => Some(&rows[p as usize].node),
            _ => None,
        };
        let jump_node = parent_node
            .and_then(|p| p.jump)
            .and_then(|j| rows.get(j.seq as usize))
            .map(|r| &r.node);
        let kind = EntryKind::from_tag(r.node.kind).unwrap_or(EntryKind::Unknown);
        let mut expected = fold::derive_node(
            seq,
            id,
            kind,
            r.node.parent,
            parent_node,
            jump_node,
            r.node.content,
        );
        expected.shadowed = last.get(id) != Some(&seq);
        fold::set_message_span(&mut expected, &r.line);
        if expected != r.node {
            c.fail(
                Some(id),
                "node disagrees with the fold of its parent (digest chain or derived fields)",
            );
        }
        if let Some(pseq) = keys::child_row(&expected, seq) {
            children.insert((pseq, seq));
        }
        match kind {
            EntryKind::Compaction => {
                compactions.insert(seq);
            }
            EntryKind::SessionInfo => name_at = Some(seq),
            EntryKind::Label => {
                if let Some(t) = &env.target_id {
                    let mut batch = crate::kv::WriteBatch::new();
                    s.label_update(&mut batch, &r.line, t, seq);
                    let key = keys::label(s.sid, t);
                    for (_, v) in batch.into_ops().into_iter().filter(|(k, _)| *k == key) {
                        match v.and_then(|v| record::decode::<LabelRecord>(&v).ok()) {
                            Some(l) => {
                                labels.insert(t.clone(), l);
                            }
                            None => {
                                labels.remove(t);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let child_key = |k: &[u8]| {
        let p = u64::from_be_bytes(k.get(9..17)?.try_into().ok()?);
        Some((p, keys::last_u64(k)?))
    };
    let packed_children = pack_rows(
        &mut c,
        s,
        keys::T_CHILD_PACK,
        "children-index pack",
        child_key,
        |k, v| Ok(index_packs::decode_child_pack(k, v)?.rows),
        |&(_, child)| child < packed,
    )?;
    compare_set(
        &mut c,
        s,
        keys::T_CHILD,
        "children index",
        child_key,
        &children,
        packed_children,
    )?;
    let packed_leaves = pack_rows(
        &mut c,
        s,
        keys::T_LEAF_PACK,
        "leaf-history pack",
        keys::last_u64,
        |k, v| Ok(index_packs::decode_leaf_pack(k, v)?.seqs),
        |&seq| seq < packed,
    )?;
    compare_set(
        &mut c,
        s,
        keys::T_LEAF_HISTORY,
        "leaf history",
        keys::last_u64,
        &leaf_records,
        packed_leaves,
    )?;
    compare_set(
        &mut c,
        s,
        keys::T_COMPACTION,
        "compaction index",
        keys::last_u64,
        &compactions,
        BTreeSet::new(),
    )?;
    let lstart = keys::session_prefix(keys::T_LABEL, s.sid);
    let mut stored = BTreeMap::new();
    for pair in s.inner.kv.scan(&lstart, &keys::prefix_end(&lstart)) {
        let (k, v) = pair?;
        let target = keys::string_suffix(&k, 9).unwrap_or_default();
        match record::decode::<LabelRecord>(&v) {
            Ok(l) => {
                stored.insert(target, l);
            }
            Err(e) => c.fail(None, format!("label of {target}: {e}")),
        }
    }
    if stored != labels {
        c.fail(None, "label index disagrees with the label entries");
    }
    // The catalogue indexes a filtered listing reads: the session's cwd and creation rows,
    // and a row for each current label.
    if s.inner.catalogue_indexed {
        let last = head.last_timestamp.as_deref();
        let mut wanted = crate::log::catalogue::index_keys(s.sid, rec, last);
        for l in labels.values() {
            let text = crate::log::labels::label_text(&l.label);
            wanted.push(keys::by_label(&text, &rec.id, s.sid, l.set_by));
        }
        for key in wanted {
            if s.inner.kv.get(&key)?.is_none() {
                let which = match key.first() {
                    Some(&keys::T_BY_CWD) => "working directory",
                    Some(&keys::T_BY_CREATED) => "creation time",
                    Some(&keys::T_BY_UPDATED) => "last activity",
                    _ => "label",
                };
                c.fail(
                    None,
                    format!("the catalogue's {which} index does not list the session"),
                );
            }
        }
    }
    let entries = rows
        .iter()
        .filter(|r| r.node.kind != EntryKind::Leaf.tag())
        .count() as u64;
    let last_ts = rows
        .last()
        .and_then(|r| r.env.as_ref())
        .map(|e| e.timestamp.clone());
    if head.entries != entries
        || head.name_at != name_at
        || (head.leaf != leaf
            && !(head.next_seq == checkpoint.next_seq
                && checkpoint_sound
                && last_line_leaf == Some(head.leaf)))
        || head
            .last_timestamp
            .as_ref()
            .is_some_and(|t| Some(t) != last_ts.as_ref())
    {
        c.fail(
            None,
            "head disagrees with the log (entry count, name, leaf or timestamp)",
        );
    }
    if let Some(t) = head.leaf {
        if t >= head.next_seq || is_leaf(t) {
            c.fail(None, "the leaf is not an entry");
        }
    }
    match s.inner.get::<ViewRecord>(&keys::view(s.sid)) {
        Ok(None) => {}
        Ok(Some(v)) => {
            let sound = v.leaf < head.next_seq && !is_leaf(v.leaf) && {
                let marks: Vec<u64> =
                    build::fold_context(s, v.leaf, crate::ContextOptions::grove())
                        .map(|(_, m, _)| m.into_iter().map(|(seq, _)| seq).collect())
                        .unwrap_or_default();
                let listed: Vec<u64> = v.segments.iter().flat_map(|&(lo, hi)| lo..=hi).collect();
                marks == listed && rows[v.leaf as usize].node.checkpoint == v.checkpoint
            };
            if !sound {
                c.fail(None, "persisted view disagrees with the log");
            }
        }
        Err(e) => c.fail(None, format!("persisted view: {e}")),
    }
    // Materialized view rows: copies of log rows, in ascending seq.
    let (start, end) = keys::view_rows_range(s.sid);
    let mut previous: Option<u64> = None;
    for pair in s.inner.kv.scan(&start, &end) {
        let (_, v) = pair?;
        let chunk = match record::decode::<ViewRowsRecord>(&v) {
            Ok(chunk) => chunk,
            Err(e) => {
                c.fail(None, format!("materialized view rows: {e}"));
                continue;
            }
        };
        for (seq, row) in chunk.rows {
            let same = match (record::decode_log(&row), rows.get(seq as usize)) {
                (Ok(copy), Some(r)) => copy.node == r.node && copy.line == r.line.as_bytes(),
                _ => false,
            };
            if !same || previous.is_some_and(|p| p >= seq) {
                c.fail(
                    None,
                    format!("materialized view row {seq} is not a copy of the log's, in order"),
                );
            }
            previous = Some(seq);
        }
    }
    Ok(())
}
