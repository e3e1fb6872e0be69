//! The checker: after a kill, the reopened store against what the children reported.
//!
//! Two sources of truth meet here. The *baseline* is the store as the previous check read
//! it (per session: log length, [`LogHash`] of the log, entry count, leaf). The *events* are
//! what the children printed since: intents (an operation started) and acks (it returned).
//! From them the checker derives, per session, what must be there (acknowledged), what may
//! be there (started, not acknowledged: the kill may have landed before or after its batch)
//! and what must not (never started). Then it reads the store through the public API and
//! checks the session's structure (digest chains, indexes against the log, the leaf, paths,
//! contexts) and `Store::verify`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use grove::codec::digest::{self, ROOT_PARENT};
use grove::codec::record::Parent;
use grove::{ContextOptions, Entry, Session, Store};

use super::protocol::{Event, Family, LogHash};

/// What a check remembers of a session for the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionState {
    /// Log records (entries and leaf records).
    pub len: u64,
    /// Hash of the whole log.
    pub hash: LogHash,
    /// Tree entries.
    pub entries: u64,
    /// The active leaf.
    pub leaf: Option<String>,
}

/// The store as a check found it: every session by id.
pub type Baseline = BTreeMap<String, SessionState>;

/// What an imported session must hold: the generated file's entry lines.
#[derive(Debug, Clone)]
pub struct ImportBody {
    /// Their hash.
    pub hash: LogHash,
    /// The last line's id (the imported leaf: the file has no leaf lines).
    pub leaf: Option<String>,
}

impl ImportBody {
    /// The expectation for these entry lines.
    pub fn new(lines: &[String]) -> ImportBody {
        ImportBody {
            hash: LogHash::of(lines.iter().map(String::as_str)),
            leaf: lines.last().and_then(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .ok()
                    .and_then(|v| v["id"].as_str().map(str::to_owned))
            }),
        }
    }
}

/// Counters of one check.
#[derive(Debug, Clone, Default)]
pub struct CheckStats {
    /// Sessions in the store.
    pub sessions: u64,
    /// Sessions read in full (touched since the last check, new, or a full check).
    pub inspected: u64,
    /// Log records read.
    pub records: u64,
    /// Acknowledged entries found with their exact line.
    pub acked_entries: u64,
    /// Acknowledged atomic batches found whole.
    pub acked_batches: u64,
    /// Acknowledged leaf moves, forks, imports, creations and deletions confirmed.
    pub acked_other: u64,
    /// Operations a kill interrupted (started, not acknowledged) that turned out applied.
    pub interrupted_applied: BTreeMap<&'static str, u64>,
    /// Operations a kill interrupted that left no trace.
    pub interrupted_absent: BTreeMap<&'static str, u64>,
}

/// The outcome of a check.
#[derive(Debug)]
pub struct CheckOutcome {
    /// The store as found, the next check's baseline.
    pub baseline: Baseline,
    /// Counters.
    pub stats: CheckStats,
    /// Everything that is wrong; empty when the store is as expected.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    /// Creation started, not acknowledged.
    MayExist,
    /// Created (acknowledged, or found by an earlier check).
    MustExist,
    /// Deletion started, not acknowledged.
    MayBeGone,
    /// Deletion acknowledged.
    MustBeGone,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum LeafExpect {
    /// The leaf is this entry (or the root position).
    Known(Option<String>),
    /// The leaf is the log's last record (after a batch whose ids were not yet known).
    LastRecord,
}

/// A possible state of a single-writer session: log length and leaf, and whether it is the
/// state after an interrupted operation.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Candidate {
    len: u64,
    leaf: LeafExpect,
    interrupted: Option<&'static str>,
}

#[derive(Debug, Clone)]
struct ForkExpect {
    source: String,
    count: u64,
    hash: String,
    leaf: Option<String>,
}

/// What the events since the last check require.
#[derive(Debug, Default)]
struct Expect {
    stage: HashMap<String, Stage>,
    /// Sessions whose creation was interrupted: (session, kind).
    created_interrupted: HashMap<String, &'static str>,
    /// Sessions whose deletion was interrupted.
    deleted_interrupted: HashSet<String>,
    /// Entry ids the children announced, per session.
    intended_ids: HashMap<String, HashSet<String>>,
    /// Appends announced but never acknowledged: (session, id).
    appends_interrupted: Vec<(String, String)>,
    acked_appends: Vec<(String, String, String)>,
    acked_batches: Vec<(String, Vec<String>, String)>,
    acked_other: u64,
    candidates: HashMap<String, Vec<Candidate>>,
    forks: HashMap<String, ForkExpect>,
    imports: HashSet<String>,
    touched: HashSet<String>,
}

fn raise(stage: &mut HashMap<String, Stage>, session: &str, to: Stage) {
    let s = stage.entry(session.to_owned()).or_insert(to);
    if *s < to {
        *s = to;
    }
}

impl Expect {
    fn build(baseline: &Baseline, cycles: &[Vec<Event>]) -> Result<Expect, String> {
        let mut x = Expect::default();
        for id in baseline.keys() {
            x.stage.insert(id.clone(), Stage::MustExist);
        }
        for events in cycles {
            // The operation each single-writer session has in flight: (delta, leaf, kind).
            let mut inflight: HashMap<String, (u64, LeafExpect, &'static str)> = HashMap::new();
            let mut open_creates: HashMap<String, &'static str> = HashMap::new();
            let mut open_deletes: HashSet<String> = HashSet::new();
            let mut open_appends: HashMap<(String, String), ()> = HashMap::new();
            for e in events {
                match e {
                    Event::CreateIntent { session } => {
                        x.begin_create(session, "create", &mut open_creates);
                        x.candidates.insert(
                            session.clone(),
                            vec![Candidate {
                                len: 0,
                                leaf: LeafExpect::Known(None),
                                interrupted: None,
                            }],
                        );
                    }
                    Event::ForkIntent {
                        session,
                        source,
                        count,
                        hash,
                        leaf,
                    } => {
                        x.begin_create(session, "fork", &mut open_creates);
                        x.forks.insert(
                            session.clone(),
                            ForkExpect {
                                source: source.clone(),
                                count: *count,
                                hash: hash.clone(),
                                leaf: leaf.clone(),
                            },
                        );
                    }
                    Event::ImportIntent { session } => {
                        x.begin_create(session, "import", &mut open_creates);
                        x.imports.insert(session.clone());
                    }
                    Event::CreateAck { session }
                    | Event::ForkAck { session }
                    | Event::ImportAck { session, .. } => {
                        if open_creates.remove(session).is_none() {
                            return Err(format!("ack of {session} without its intent"));
                        }
                        raise(&mut x.stage, session, Stage::MustExist);
                        x.acked_other += 1;
                    }
                    Event::DeleteIntent { session } => {
                        // A deletion the kill interrupted may leave the session as it was.
                        x.touch(session, baseline);
                        raise(&mut x.stage, session, Stage::MayBeGone);
                        open_deletes.insert(session.clone());
                    }
                    Event::DeleteAck { session } => {
                        if !open_deletes.remove(session) {
                            return Err(format!("delete ack of {session} without its intent"));
                        }
                        raise(&mut x.stage, session, Stage::MustBeGone);
                        x.acked_other += 1;
                    }
                    Event::AppendIntent { session, id } => {
                        x.touch(session, baseline);
                        x.intended_ids
                            .entry(session.clone())
                            .or_default()
                            .insert(id.clone());
                        open_appends.insert((session.clone(), id.clone()), ());
                        inflight.insert(
                            session.clone(),
                            (1, LeafExpect::Known(Some(id.clone())), "append"),
                        );
                    }
                    Event::AppendAck {
                        session,
                        id,
                        len,
                        line,
                    } => {
                        if open_appends
                            .remove(&(session.clone(), id.clone()))
                            .is_none()
                        {
                            return Err(format!("append ack of {session}/{id} without its intent"));
                        }
                        x.acked_appends
                            .push((session.clone(), id.clone(), line.clone()));
                        x.settle(
                            session,
                            &mut inflight,
                            *len,
                            LeafExpect::Known(Some(id.clone())),
                        );
                    }
                    Event::BatchIntent { session, n } => {
                        x.touch(session, baseline);
                        inflight.insert(session.clone(), (*n, LeafExpect::LastRecord, "batch"));
                    }
                    Event::BatchAck {
                        session,
                        len,
                        hash,
                        ids,
                    } => {
                        x.acked_batches
                            .push((session.clone(), ids.clone(), hash.clone()));
                        x.settle(
                            session,
                            &mut inflight,
                            *len,
                            LeafExpect::Known(ids.last().cloned()),
                        );
                    }
                    Event::MoveIntent { session, target } => {
                        x.touch(session, baseline);
                        inflight.insert(
                            session.clone(),
                            (1, LeafExpect::Known(target.clone()), "move"),
                        );
                    }
                    Event::MoveAck {
                        session,
                        target,
                        len,
                    } => {
                        x.acked_other += 1;
                        x.settle(
                            session,
                            &mut inflight,
                            *len,
                            LeafExpect::Known(target.clone()),
                        );
                    }
                    Event::Starting | Event::Opened { .. } | Event::End | Event::Error { .. } => {}
                }
            }
            // What the kill interrupted may or may not have been applied.
            for (session, (delta, leaf, kind)) in inflight {
                if let Some(c) = x.candidates.get_mut(&session) {
                    let extended: Vec<Candidate> = c
                        .iter()
                        .map(|c| Candidate {
                            len: c.len + delta,
                            leaf: leaf.clone(),
                            interrupted: Some(kind),
                        })
                        .collect();
                    for e in extended {
                        if !c.contains(&e) {
                            c.push(e);
                        }
                    }
                }
            }
            for (session, kind) in open_creates {
                x.created_interrupted.insert(session, kind);
            }
            x.deleted_interrupted.extend(open_deletes);
            x.appends_interrupted.extend(open_appends.into_keys());
        }
        Ok(x)
    }

    fn begin_create(
        &mut self,
        session: &str,
        kind: &'static str,
        open: &mut HashMap<String, &'static str>,
    ) {
        self.touched.insert(session.to_owned());
        raise(&mut self.stage, session, Stage::MayExist);
        open.insert(session.to_owned(), kind);
    }

    /// Marks a session written; single-writer sessions start from their baseline state.
    fn touch(&mut self, session: &str, baseline: &Baseline) {
        self.touched.insert(session.to_owned());
        if Family::of(session).is_some_and(Family::single_writer)
            && !self.candidates.contains_key(session)
        {
            // A session the children found in the store: the baseline, or (created by an
            // unchecked cycle whose ack was lost) empty.
            let c = match baseline.get(session) {
                Some(b) => Candidate {
                    len: b.len,
                    leaf: LeafExpect::Known(b.leaf.clone()),
                    interrupted: None,
                },
                None => Candidate {
                    len: 0,
                    leaf: LeafExpect::Known(None),
                    interrupted: None,
                },
            };
            self.candidates.insert(session.to_owned(), vec![c]);
        }
    }

    /// An acknowledged operation: the session's state is now exactly this.
    fn settle(
        &mut self,
        session: &str,
        inflight: &mut HashMap<String, (u64, LeafExpect, &'static str)>,
        len: u64,
        leaf: LeafExpect,
    ) {
        inflight.remove(session);
        if Family::of(session).is_some_and(Family::single_writer) {
            self.candidates.insert(
                session.to_owned(),
                vec![Candidate {
                    len,
                    leaf,
                    interrupted: None,
                }],
            );
        }
    }
}

/// One session as read back.
struct Inspected {
    log: Vec<Entry>,
    state: SessionState,
}

fn count(map: &mut BTreeMap<&'static str, u64>, kind: &'static str) {
    *map.entry(kind).or_default() += 1;
}

/// Checks the reopened store against the baseline and the events of every cycle since.
/// `full` reads every session, not only those touched since the last check.
pub fn check_store(
    store: &Store,
    baseline: &Baseline,
    cycles: &[Vec<Event>],
    import_body: &ImportBody,
    full: bool,
) -> CheckOutcome {
    let mut stats = CheckStats::default();
    let mut problems = Vec::new();
    let mut next = Baseline::new();
    let expect = match Expect::build(baseline, cycles) {
        Ok(x) => x,
        Err(e) => {
            problems.push(format!("protocol: {e}"));
            return CheckOutcome {
                baseline: baseline.clone(),
                stats,
                problems,
            };
        }
    };
    let summaries = match store.sessions() {
        Ok(s) => s,
        Err(e) => {
            problems.push(format!("Store::sessions failed: {e}"));
            return CheckOutcome {
                baseline: baseline.clone(),
                stats,
                problems,
            };
        }
    };
    let present: BTreeMap<String, u64> = summaries
        .iter()
        .map(|s| (s.id.clone(), s.entries))
        .collect();
    stats.sessions = present.len() as u64;

    // Sessions: acknowledged ones exist, deleted ones are gone, nothing else appeared.
    for (id, stage) in &expect.stage {
        let exists = present.contains_key(id);
        match stage {
            Stage::MustExist if !exists => problems.push(format!(
                "session {id} is missing: it was acknowledged{}",
                if baseline.contains_key(id) {
                    " (and seen by an earlier check)"
                } else {
                    ""
                }
            )),
            Stage::MustBeGone if exists => problems.push(format!(
                "session {id} still exists after its deletion was acknowledged"
            )),
            _ => {}
        }
    }
    for (id, kind) in &expect.created_interrupted {
        if present.contains_key(id) {
            count(&mut stats.interrupted_applied, kind);
        } else {
            count(&mut stats.interrupted_absent, kind);
        }
    }
    for id in &expect.deleted_interrupted {
        if present.contains_key(id) {
            count(&mut stats.interrupted_absent, "delete");
        } else {
            count(&mut stats.interrupted_applied, "delete");
        }
    }
    for id in present.keys() {
        if !expect.stage.contains_key(id) {
            problems.push(format!(
                "session {id} appeared although no child announced it (phantom session)"
            ));
        }
        if Family::of(id).is_none() {
            problems.push(format!("session {id} is not one of the harness's families"));
        }
    }

    // Each session: structure, then what its family and the events require.
    let mut logs: HashMap<String, Vec<Entry>> = HashMap::new();
    for (id, entries) in &present {
        let session = match store.session(id) {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("session {id} is listed but does not open: {e}"));
                continue;
            }
        };
        let base = baseline.get(id);
        let touched = expect.touched.contains(id) || base.is_none();
        if !touched && !full {
            // Untouched since the last check: the head must not have moved.
            let Some(base) = base else { continue };
            match session.head() {
                Ok(h) => {
                    let leaf = session.leaf().ok().flatten();
                    if h.next_seq != base.len || h.entries != base.entries || leaf != base.leaf {
                        problems.push(format!(
                            "session {id} changed although no child touched it: len {} entries {} leaf {:?}, was len {} entries {} leaf {:?}",
                            h.next_seq, h.entries, leaf, base.len, base.entries, base.leaf
                        ));
                    }
                }
                Err(e) => problems.push(format!("session {id}: head: {e}")),
            }
            next.insert(id.clone(), base.clone());
            continue;
        }
        let from = if full { 0 } else { base.map_or(0, |b| b.len) };
        let before = problems.len();
        let Some(found) = inspect(&session, from, &mut problems) else {
            continue;
        };
        stats.inspected += 1;
        stats.records += found.log.len() as u64;
        if *entries != found.state.entries {
            problems.push(format!(
                "session {id}: Store::sessions lists {entries} entries, the head {}",
                found.state.entries
            ));
        }
        if let Some(base) = base {
            check_prefix(id, base, &found, &mut problems);
            if !touched && found.state != *base {
                problems.push(format!(
                    "session {id} changed although no child touched it: {:?}, was {base:?}",
                    found.state
                ));
            }
        }
        check_family(
            id,
            &session,
            &found,
            base,
            &expect,
            import_body,
            &mut stats,
            &mut problems,
        );
        if problems.len() == before {
            match session.verify() {
                Ok(r) if r.is_ok() => {}
                Ok(r) => {
                    problems.extend(r.problems.iter().map(|p| format!("Session::verify: {p}")))
                }
                Err(e) => problems.push(format!("session {id}: Session::verify failed: {e}")),
            }
        }
        next.insert(id.clone(), found.state.clone());
        logs.insert(id.clone(), found.log);
    }

    // Every acknowledged entry is there with its exact line.
    for (session, id, line) in &expect.acked_appends {
        if gone(&expect, &present, session) {
            continue;
        }
        let Some(log) = logs.get(session) else {
            problems.push(format!(
                "acknowledged entry {session}/{id}: its session is missing"
            ));
            continue;
        };
        match log
            .iter()
            .rev()
            .find(|e| e.id() == id && !e.is_leaf_record())
        {
            None => problems.push(format!(
                "acknowledged entry {session}/{id} is missing (line {line})"
            )),
            Some(e) if e.line != *line => problems.push(format!(
                "acknowledged entry {session}/{id} has line {} instead of {line}",
                e.line
            )),
            Some(_) => stats.acked_entries += 1,
        }
    }
    for (session, id) in &expect.appends_interrupted {
        if gone(&expect, &present, session) {
            continue;
        }
        let found = logs
            .get(session)
            .is_some_and(|log| log.iter().any(|e| e.id() == id));
        count(
            if found {
                &mut stats.interrupted_applied
            } else {
                &mut stats.interrupted_absent
            },
            "append",
        );
    }
    for (session, ids, hash) in &expect.acked_batches {
        if gone(&expect, &present, session) {
            continue;
        }
        let Some(log) = logs.get(session) else {
            problems.push(format!(
                "acknowledged batch of {session}: its session is missing"
            ));
            continue;
        };
        let by_id: HashMap<&str, &Entry> = log.iter().map(|e| (e.id(), e)).collect();
        let lines: Option<Vec<&str>> = ids
            .iter()
            .map(|i| by_id.get(i.as_str()).map(|e| e.line.as_str()))
            .collect();
        match lines {
            None => problems.push(format!(
                "acknowledged batch of {} entries in {session} is not all there (first id {})",
                ids.len(),
                ids.first().map_or("-", String::as_str)
            )),
            Some(lines) if LogHash::of(lines.iter().copied()).hex() != *hash => {
                problems.push(format!(
                "acknowledged batch in {session} (first id {}) has other lines than acknowledged",
                ids.first().map_or("-", String::as_str)
            ))
            }
            Some(_) => stats.acked_batches += 1,
        }
    }
    stats.acked_other = expect.acked_other;
    CheckOutcome {
        baseline: next,
        stats,
        problems,
    }
}

/// Whether a session may legitimately be absent because it was (being) deleted.
fn gone(expect: &Expect, present: &BTreeMap<String, u64>, session: &str) -> bool {
    !present.contains_key(session)
        && expect
            .stage
            .get(session)
            .is_some_and(|s| *s >= Stage::MayBeGone)
}

/// The log of a session that existed at the last check still starts with that log.
fn check_prefix(id: &str, base: &SessionState, found: &Inspected, problems: &mut Vec<String>) {
    if found.state.len < base.len {
        problems.push(format!(
            "session {id} lost records: {} now, {} at the last check",
            found.state.len, base.len
        ));
        return;
    }
    let prefix = LogHash::of(
        found
            .log
            .iter()
            .take(base.len as usize)
            .map(|e| e.line.as_str()),
    );
    if prefix != base.hash {
        problems.push(format!(
            "session {id}: its first {} records differ from the last check's (the log is not append-only)",
            base.len
        ));
    }
}

#[allow(clippy::too_many_arguments)]
fn check_family(
    id: &str,
    session: &Session,
    found: &Inspected,
    base: Option<&SessionState>,
    expect: &Expect,
    import_body: &ImportBody,
    stats: &mut CheckStats,
    problems: &mut Vec<String>,
) {
    let Some(family) = Family::of(id) else { return };
    let last_id = found.log.last().map(|e| e.id().to_owned());
    let from = base.map_or(0, |b| b.len) as usize;
    let empty = HashSet::new();
    let intended = expect.intended_ids.get(id).unwrap_or(&empty);
    match family {
        Family::Appends | Family::Moves => {
            for e in found.log.iter().skip(from) {
                if !e.is_leaf_record() && !intended.contains(e.id()) {
                    problems.push(format!(
                        "session {id}: entry {} (seq {}) was never announced by a child (phantom entry)",
                        e.id(),
                        e.seq
                    ));
                }
            }
        }
        _ => {}
    }
    match family {
        Family::Appends => {
            if found.state.leaf != last_id {
                problems.push(format!(
                    "session {id}: leaf {:?} is not the last appended entry {last_id:?}",
                    found.state.leaf
                ));
            }
            if found.state.entries != found.state.len {
                problems.push(format!(
                    "session {id}: has leaf records although only appends touched it"
                ));
            }
        }
        Family::Moves | Family::ForkSource => {
            let Some(candidates) = expect.candidates.get(id) else {
                if expect.touched.contains(id) {
                    problems.push(format!("session {id}: written but no state expected"));
                }
                return;
            };
            let matched = candidates.iter().find(|c| {
                c.len == found.state.len
                    && match &c.leaf {
                        LeafExpect::Known(l) => *l == found.state.leaf,
                        LeafExpect::LastRecord => {
                            found.state.leaf == last_id
                                && found.log.last().is_some_and(|e| !e.is_leaf_record())
                        }
                    }
            });
            match matched {
                None => problems.push(format!(
                    "session {id}: log length {} and leaf {:?} match no acknowledged state nor the interrupted operation: {candidates:?}",
                    found.state.len, found.state.leaf
                )),
                Some(c) => {
                    if let Some(kind) = c.interrupted {
                        count(&mut stats.interrupted_applied, kind);
                    } else if candidates.iter().any(|c| c.interrupted.is_some()) {
                        let kind = candidates
                            .iter()
                            .find_map(|c| c.interrupted)
                            .unwrap_or("op");
                        count(&mut stats.interrupted_absent, kind);
                    }
                }
            }
        }
        Family::Fork => {
            let Some(f) = expect.forks.get(id) else {
                return;
            };
            let hash = LogHash::of(found.log.iter().map(|e| e.line.as_str()));
            if found.state.len != f.count || hash.hex() != f.hash {
                problems.push(format!(
                    "fork {id} of {} is incomplete or wrong: {} records (hash {}), expected {} (hash {})",
                    f.source,
                    found.state.len,
                    hash.hex(),
                    f.count,
                    f.hash
                ));
            }
            if found.state.leaf != f.leaf {
                problems.push(format!(
                    "fork {id}: leaf {:?}, expected {:?}",
                    found.state.leaf, f.leaf
                ));
            }
            if session.record().parent_session_id.as_deref() != Some(f.source.as_str()) {
                problems.push(format!(
                    "fork {id}: parent session {:?}, expected {}",
                    session.record().parent_session_id,
                    f.source
                ));
            }
        }
        Family::Import => {
            if !expect.imports.contains(id) && base.is_none() {
                return;
            }
            if found.state.hash != import_body.hash {
                problems.push(format!(
                    "import {id} is incomplete or wrong: {} records, the file has {}",
                    found.state.len, import_body.hash.count
                ));
            }
            if found.state.leaf != import_body.leaf {
                problems.push(format!(
                    "import {id}: leaf {:?}, expected {:?}",
                    found.state.leaf, import_body.leaf
                ));
            }
        }
    }
}

/// Reads a session and checks its structure through the public API: a dense log whose head
/// agrees with it, content hashes and digest chains, parent links against the lines, the
/// id and children indexes for records from `from` on, the leaf, `branch`/`path_to_root`,
/// and the served context against one built from scratch.
fn inspect(session: &Session, from: u64, problems: &mut Vec<String>) -> Option<Inspected> {
    let id = session.id().to_owned();
    let mut fail = |what: String| problems.push(format!("session {id}: {what}"));
    let head = match session.head() {
        Ok(h) => h,
        Err(e) => {
            fail(format!("head: {e}"));
            return None;
        }
    };
    let log: Vec<Entry> = match session.log().collect::<Result<Vec<_>, _>>() {
        Ok(l) => l,
        Err(e) => {
            fail(format!("log does not read: {e}"));
            return None;
        }
    };
    if log.len() as u64 != head.next_seq {
        fail(format!(
            "log has {} records, the head says {}",
            log.len(),
            head.next_seq
        ));
    }
    for (i, e) in log.iter().enumerate() {
        if e.seq != i as u64 {
            fail(format!("log record {i} has seq {}", e.seq));
            return None;
        }
    }
    let entry_count = log.iter().filter(|e| !e.is_leaf_record()).count() as u64;
    if entry_count != head.entries {
        fail(format!(
            "the log has {entry_count} entries, the head says {}",
            head.entries
        ));
    }
    match session.entries().collect::<Result<Vec<_>, _>>() {
        Ok(v) if v.len() as u64 == head.entries => {}
        Ok(v) => fail(format!(
            "entries() yields {}, the head says {}",
            v.len(),
            head.entries
        )),
        Err(e) => fail(format!("entries(): {e}")),
    }

    // Content hashes, digest chains and parent links.
    let mut expected_children: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut last_of: HashMap<&str, u64> = HashMap::new();
    for e in &log {
        last_of.insert(e.id(), e.seq);
    }
    for e in &log {
        let content = digest::content_hash(e.line.as_bytes());
        if content != e.node.content {
            fail(format!(
                "record {} ({}): line does not match its content hash",
                e.seq,
                e.id()
            ));
        }
        if e.is_leaf_record() {
            if e.node.digest != e.node.content {
                fail(format!(
                    "leaf record {}: digest is not its content hash",
                    e.seq
                ));
            }
            continue;
        }
        let parent_digest = match e.node.parent {
            Parent::Seq(p) => match log.get(p as usize) {
                Some(pe) if !pe.is_leaf_record() => {
                    if e.parent_id().as_deref() != Some(pe.id()) {
                        fail(format!(
                            "entry {}: parentId {:?} but indexed parent is {} (seq {p})",
                            e.id(),
                            e.parent_id(),
                            pe.id()
                        ));
                    }
                    if e.node.depth != pe.node.depth + 1 {
                        fail(format!(
                            "entry {}: depth {} under depth {}",
                            e.id(),
                            e.node.depth,
                            pe.node.depth
                        ));
                    }
                    pe.node.digest
                }
                _ => {
                    fail(format!("entry {}: parent seq {p} is not an entry", e.id()));
                    continue;
                }
            },
            _ => ROOT_PARENT,
        };
        if digest::chain(&parent_digest, &content) != e.node.digest {
            fail(format!(
                "entry {} (seq {}): digest chain does not verify",
                e.id(),
                e.seq
            ));
        }
        if !e.node.shadowed {
            let key = match e.node.parent {
                Parent::Seq(p) => p,
                _ => u64::MAX,
            };
            expected_children.entry(key).or_default().insert(e.seq);
        }
        if e.node.shadowed == (last_of.get(e.id()) == Some(&e.seq)) {
            fail(format!(
                "entry {}: shadowed flag disagrees with the log",
                e.id()
            ));
        }
    }

    // The indexes, for the records written since the last check (all of them when full).
    let mut parents_to_check: BTreeSet<u64> = BTreeSet::new();
    for e in log.iter().skip(from as usize) {
        if e.is_leaf_record() {
            continue;
        }
        match session.entry(e.id()) {
            Ok(found) if found.seq == *last_of.get(e.id()).unwrap_or(&e.seq) => {}
            Ok(found) => fail(format!(
                "entry({}) resolves to seq {}, the log has it at {}",
                e.id(),
                found.seq,
                e.seq
            )),
            Err(err) => fail(format!("entry({}) fails: {err}", e.id())),
        }
        parents_to_check.insert(e.seq);
        parents_to_check.insert(match e.node.parent {
            Parent::Seq(p) => p,
            _ => u64::MAX,
        });
    }
    for p in parents_to_check {
        let listed = if p == u64::MAX {
            session.children(None)
        } else {
            match log.get(p as usize) {
                Some(pe) if !pe.node.shadowed => session.children(Some(pe.id())),
                _ => continue,
            }
        };
        let want = expected_children.get(&p).cloned().unwrap_or_default();
        match listed {
            Ok(children) => {
                let got: BTreeSet<u64> = children.iter().map(|c| c.seq).collect();
                if got != want || children.len() != got.len() {
                    fail(format!(
                        "children of seq {p}: index lists {got:?}, the log says {want:?}"
                    ));
                }
            }
            Err(err) => fail(format!("children of seq {p}: {err}")),
        }
    }
    if from == 0 {
        let leaf_records = log.iter().filter(|e| e.is_leaf_record()).count();
        match session.leaf_history() {
            Ok(h) if h.len() == leaf_records => {}
            Ok(h) => fail(format!(
                "leaf history has {} moves, the log {leaf_records}",
                h.len()
            )),
            Err(err) => fail(format!("leaf_history: {err}")),
        }
    }

    // The leaf is a real entry, and the paths to it work.
    let leaf = match session.leaf() {
        Ok(l) => l,
        Err(err) => {
            fail(format!("leaf() fails: {err}"));
            None
        }
    };
    if let Some(seq) = head.leaf {
        match log.get(seq as usize) {
            Some(e) if !e.is_leaf_record() && leaf.as_deref() == Some(e.id()) => {}
            _ => fail(format!("head leaf seq {seq} is not the entry {leaf:?}")),
        }
    }
    let mut leaf_depth = None;
    if let Some(l) = &leaf {
        match session.entry(l) {
            Ok(e) => leaf_depth = Some(e.node.depth),
            Err(err) => fail(format!("the leaf {l} does not resolve: {err}")),
        }
    }
    match session.branch(None) {
        Ok(b) => {
            if b.last().map(|e| e.id().to_owned()) != leaf {
                fail(format!(
                    "branch(None) ends at {:?}, not at the leaf {leaf:?}",
                    b.last().map(Entry::id)
                ));
            }
        }
        Err(err) => fail(format!("branch(None) fails: {err}")),
    }
    match session.path_to_root(None) {
        Ok(p) => {
            if p.last().map(|e| e.id().to_owned()) != leaf
                || leaf_depth.map_or(!p.is_empty(), |d| p.len() as u64 != d + 1)
            {
                fail(format!(
                    "path_to_root(None) has {} entries ending at {:?}; leaf {leaf:?} at depth {leaf_depth:?}",
                    p.len(),
                    p.last().map(Entry::id)
                ));
            }
            for w in p.windows(2) {
                if w[1].parent_id().as_deref() != Some(w[0].id()) {
                    fail(format!(
                        "path_to_root(None) is not a chain at {}",
                        w[1].id()
                    ));
                    break;
                }
            }
        }
        Err(err) => fail(format!("path_to_root(None) fails: {err}")),
    }
    match (
        session.build_context(),
        session.build_context_from_scratch(None, ContextOptions::grove()),
    ) {
        (Ok(a), Ok(b)) if a == b => {}
        (Ok(_), Ok(_)) => fail("the served context differs from the one built from scratch".into()),
        (Err(err), _) | (_, Err(err)) => fail(format!("build_context fails: {err}")),
    }
    let hash = LogHash::of(log.iter().map(|e| e.line.as_str()));
    Some(Inspected {
        state: SessionState {
            len: log.len() as u64,
            hash,
            entries: head.entries,
            leaf,
        },
        log,
    })
}

/// Rows that no published session owns, and pending markers: after an open, the store's
/// own recovery must have removed every trace of interrupted imports, forks and deletions.
/// Reads the key space through [`Store::kv`], one seek per session and table.
pub fn orphan_rows(store: &Store) -> Vec<String> {
    use grove::keys;
    let kv = store.kv();
    let mut problems = Vec::new();
    let mut live: BTreeSet<u64> = BTreeSet::new();
    let start = vec![keys::T_SESSION_ID];
    for pair in kv.scan(&start, &keys::prefix_end(&start)) {
        match pair {
            Ok((_, v)) => match keys::u64_value(&v) {
                Some(sid) => {
                    live.insert(sid);
                }
                None => problems.push("session id index value is not a u64".to_owned()),
            },
            Err(e) => problems.push(format!("scan of the session index: {e}")),
        }
    }
    let tables: BTreeSet<u8> = [keys::T_SESSION]
        .into_iter()
        .chain(keys::SESSION_TABLES)
        .collect();
    for tag in tables {
        let mut cursor = vec![tag];
        let end = keys::prefix_end(&[tag]);
        loop {
            let first = kv.scan(&cursor, &end).next();
            let key = match first {
                None => break,
                Some(Err(e)) => {
                    problems.push(format!("scan of table {tag:#04x}: {e}"));
                    break;
                }
                Some(Ok((k, _))) => k,
            };
            let Some(sid) = key
                .get(1..9)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_be_bytes)
            else {
                problems.push(format!("table {tag:#04x}: short key"));
                break;
            };
            if tag == keys::T_PENDING {
                problems.push(format!(
                    "pending marker of sid {sid} survived the open (unfinished import or deletion not cleaned up)"
                ));
            } else if !live.contains(&sid) {
                problems.push(format!(
                    "table {tag:#04x} has rows of sid {sid}, which no session id maps to (orphan rows)"
                ));
            }
            cursor = keys::prefix_end(&keys::session_prefix(tag, sid));
            if cursor >= end {
                break;
            }
        }
    }
    problems
}
