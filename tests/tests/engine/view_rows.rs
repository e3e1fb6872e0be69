//! Materialized view rows (docs/design.md, "Incremental views"; docs/format.md, table `0x06`):
//! the persisted view keeps copies of the log rows of every selected range but the last, and
//! of its settings' entries, so that a cold resume of a path scattered over the log reads
//! those copies instead of the log values the path passes through.

use std::sync::{Arc, Mutex};

use grove::keys;
use grove::kv::{Kv, KvError, MemoryKv, Scan, WriteBatch};
use grove::{ContextOptions, CreateSession, Durability, Session, Store};
use grove_codec::record::{self, ViewRowsRecord};

/// A backend that records the log keys (tables `0x10` and `0x19`) it hands out.
#[derive(Clone, Default)]
struct Watched {
    kv: Arc<MemoryKv>,
    log_keys: Arc<Mutex<Vec<Vec<u8>>>>,
    /// The tables of the ranges asked for.
    ranges: Arc<Mutex<Vec<u8>>>,
}

impl Watched {
    fn saw(&self, key: &[u8]) {
        if matches!(key.first(), Some(&keys::T_LOG | &keys::T_LOG_PACK)) {
            self.log_keys.lock().unwrap().push(key.to_vec());
        }
    }

    /// The seqs of the log keys read since the last call.
    fn take_log_seqs(&self) -> Vec<u64> {
        let mut seen = self.log_keys.lock().unwrap();
        let seqs = seen.iter().filter_map(|k| keys::last_u64(k)).collect();
        seen.clear();
        seqs
    }
}

impl Kv for Watched {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        let v = self.kv.get(key)?;
        if v.is_some() {
            self.saw(key);
        }
        Ok(v)
    }
    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.ranges.lock().unwrap().extend(start.first());
        Box::new(self.kv.scan(start, end).inspect(|p| {
            if let Ok((k, _)) = p {
                self.saw(k);
            }
        }))
    }
    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.ranges.lock().unwrap().extend(start.first());
        Box::new(self.kv.scan_rev(start, end).inspect(|p| {
            if let Ok((k, _)) = p {
                self.saw(k);
            }
        }))
    }
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.kv.apply(batch)
    }
    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }
    fn name(&self) -> &'static str {
        "watched"
    }
}

/// A session whose active path runs through three branches: its selection is three ranges
/// of seqs, the first two far (in the log) from the last. Returns the session id and the seq
/// where the last range starts.
fn branching_session(store: &Store) -> (String, u64) {
    let s = store.create_session(CreateSession::default()).unwrap();
    let mut trunk = Vec::new();
    for i in 0..6 {
        trunk.push(match i {
            1 => s
                .append(super::assistant("the model, set on the trunk"))
                .unwrap(),
            _ => s.append(super::user(&format!("trunk {i}"))).unwrap(),
        });
    }
    for i in 0..20 {
        s.append(super::user(&format!("abandoned {i}"))).unwrap();
    }
    s.move_to(Some(&trunk[3])).unwrap();
    let mut side = Vec::new();
    for i in 0..5 {
        side.push(s.append(super::user(&format!("side {i}"))).unwrap());
    }
    for i in 0..20 {
        s.append(super::user(&format!("abandoned side {i}")))
            .unwrap();
    }
    s.move_to(Some(&side[2])).unwrap();
    let last = s.append(super::user("last range 0")).unwrap();
    for i in 1..4 {
        s.append(super::user(&format!("last range {i}"))).unwrap();
    }
    let last_start = s.entry(&last).unwrap().seq;
    (s.id().to_owned(), last_start)
}

fn stored_rows(kv: &dyn Kv, session: &Session) -> Vec<u64> {
    let _ = session;
    kv.scan(&[keys::T_VIEW], &[keys::T_VIEW + 1])
        .map(Result::unwrap)
        // The view records' keys are [tag][sid]; the chunks' carry a chunk number.
        .filter(|(k, _)| k.len() == 17)
        .flat_map(|(_, v)| {
            record::decode::<ViewRowsRecord>(&v)
                .unwrap()
                .rows
                .into_iter()
                .map(|(seq, _)| seq)
        })
        .collect()
}

fn scratch(s: &Session) -> grove::Context {
    s.build_context_from_scratch(None, ContextOptions::grove())
        .unwrap()
}

#[test]
fn a_cold_resume_reads_the_materialized_rows_instead_of_the_log_before_the_last_range() {
    let watched = Watched::default();
    let (id, last_start, expected_rows) = {
        let store = Store::from_kv(Box::new(watched.clone()), Durability::None).unwrap();
        let (id, last_start) = branching_session(&store);
        let s = store.session(&id).unwrap();
        // The first build at the leaf persists the view and materializes its rows.
        let ctx = s.build_context().unwrap();
        // A read writes nothing; a flush writes the view the read built.
        store.flush().unwrap();
        assert_eq!(ctx.messages.len(), 4 + 3 + 4);
        let rows = stored_rows(store.kv(), &s);
        // Every selected entry before the last range (4 trunk entries, the model's assistant
        // message among them, and 3 side entries).
        let expected: Vec<u64> = s
            .branch(None)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .filter(|&q| q < last_start)
            .collect::<std::collections::BTreeSet<u64>>()
            .into_iter()
            .collect();
        let model_at = s.entry_at(last_start).unwrap().node.model_at.unwrap();
        assert!(expected.contains(&model_at));
        assert_eq!(rows, expected);
        assert!(store.verify().unwrap().is_ok());
        (id, last_start, expected)
    };
    assert_eq!(expected_rows.len(), 7);

    // A cold process: the log is read from the last range on only.
    let store = Store::from_kv(Box::new(watched.clone()), Durability::None).unwrap();
    let s = store.session(&id).unwrap();
    // The session's state (its head and the ids of its last records: the tail of the log
    // up to one id run) loads first; then only the context is read.
    s.leaf().unwrap();
    watched.take_log_seqs();
    let ctx = s.build_context().unwrap();
    let read = watched.take_log_seqs();
    assert!(!read.is_empty());
    assert!(
        read.iter().all(|&q| q >= last_start),
        "log keys read below the last range ({last_start}): {read:?}"
    );
    assert_eq!(ctx, scratch(&s));
    let model = ctx
        .model
        .clone()
        .expect("the model of the trunk's assistant message");
    assert_eq!(model.model_id.as_deref(), Some("\"m\""));

    // Without its rows the same resume reads the log of the earlier ranges (what the rows
    // save), serves the same context and writes the rows again.
    let mut batch = WriteBatch::new();
    let (start, end) = keys::view_rows_range(0);
    for p in store.kv().scan(&start, &end) {
        batch.delete(p.unwrap().0);
    }
    store.kv().apply(batch).unwrap();
    drop(s);
    drop(store);
    let store = Store::from_kv(Box::new(watched.clone()), Durability::None).unwrap();
    let s = store.session(&id).unwrap();
    // The session's state (its head and the ids of its last records: the tail of the log
    // up to one id run) loads first; then only the context is read.
    s.leaf().unwrap();
    watched.take_log_seqs();
    let again = s.build_context().unwrap();
    assert!(watched.take_log_seqs().iter().any(|&q| q < last_start));
    assert_eq!(again, ctx);
    store.flush().unwrap();
    assert_eq!(stored_rows(store.kv(), &s), expected_rows);
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn a_linear_session_materializes_nothing() {
    let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    s.append(super::assistant("model")).unwrap();
    for i in 0..50 {
        s.append(super::user(&format!("u {i}"))).unwrap();
    }
    s.build_context().unwrap();
    // A read writes nothing; a flush writes the view the read built.
    store.flush().unwrap();
    assert!(store.kv().get(&keys::view(0)).unwrap().is_some());
    assert_eq!(stored_rows(store.kv(), &s), Vec::<u64>::new());
}

#[test]
fn a_long_range_stays_in_the_log() {
    // A long conversation retried from its second-to-last entry: a 200-entry range, then
    // the new branch. The long range is read from the log, where it is consecutive.
    let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let mut ids = Vec::new();
    for i in 0..200 {
        ids.push(s.append(super::user(&format!("u {i}"))).unwrap());
    }
    s.move_to(Some(&ids[198])).unwrap();
    s.append(super::user("retry")).unwrap();
    let ctx = s.build_context().unwrap();
    assert_eq!(ctx.messages.len(), 200);
    assert_eq!(stored_rows(store.kv(), &s), Vec::<u64>::new());
    assert_eq!(ctx, scratch(&s));
}

#[test]
fn verify_reports_a_materialized_row_that_is_not_the_logs() {
    let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
    let (id, _) = branching_session(&store);
    let s = store.session(&id).unwrap();
    s.build_context().unwrap();
    // A read writes nothing; a flush writes the view the read built.
    store.flush().unwrap();
    let (start, end) = keys::view_rows_range(0);
    let (key, value) = store.kv().scan(&start, &end).next().unwrap().unwrap();
    let mut chunk: ViewRowsRecord = record::decode(&value).unwrap();
    // A well-formed row whose line says something else.
    let (seq, row) = chunk.rows[0].clone();
    let node_len = u32::from_be_bytes(row[..4].try_into().unwrap()) as usize;
    let line = String::from_utf8(row[4 + node_len..].to_vec()).unwrap();
    let mut forged = row[..4 + node_len].to_vec();
    forged.extend(line.replace("trunk 0", "trunk X").as_bytes());
    assert_ne!(forged, row);
    chunk.rows[0] = (seq, forged);
    let mut batch = WriteBatch::new();
    batch.put(key, record::encode(&chunk));
    store.kv().apply(batch).unwrap();
    let report = store.verify().unwrap();
    assert!(!report.is_ok());
    assert!(
        format!("{report:?}").contains(&format!("materialized view row {seq}")),
        "{report:?}"
    );
}

#[test]
fn a_layout_6_store_opens_as_layout_9() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let store = Store::open(dir.path()).unwrap();
        let (id, _) = branching_session(&store);
        // A layout-6 store keeps its persisted view under 0x17 (here one that is not even a
        // view record: it is removed unread).
        let mut b = WriteBatch::new();
        let mut old_view = vec![keys::T_VIEW_OLD];
        old_view.extend(0u64.to_be_bytes());
        b.put(old_view, b"stale".to_vec());
        b.put(keys::meta(keys::META_FORMAT), b"grove\x00\x06".to_vec());
        store.kv().apply(b).unwrap();
        store.flush().unwrap();
        id
    };
    let store = Store::open(dir.path()).unwrap();
    let marker = store.kv().get(&keys::meta(keys::META_FORMAT)).unwrap();
    assert_eq!(marker, Some(b"grove\x00\x0f".to_vec()));
    let old_views = [keys::T_VIEW_OLD];
    assert_eq!(
        store.kv().scan(&old_views, &[keys::T_VIEW_OLD + 1]).count(),
        0
    );
    let s = store.session(&id).unwrap();
    assert_eq!(s.build_context().unwrap(), scratch(&s));
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn an_imported_branching_path_resumes_without_reading_its_log_packs() {
    // The same branching session, exported and imported: its records are in log packs.
    let jsonl = {
        let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
        let (id, _) = branching_session(&store);
        let mut out = Vec::new();
        let s = store.session(&id).unwrap();
        s.export(grove::Flavor::Harness, &mut out).unwrap();
        out
    };
    let watched = Watched::default();
    let id = {
        let store = Store::from_kv(Box::new(watched.clone()), Durability::None).unwrap();
        let report = store
            .import_reader(
                std::io::Cursor::new(&jsonl),
                grove::ImportOptions::default(),
            )
            .unwrap();
        let s = store.session(&report.session).unwrap();
        let ctx = s.build_context().unwrap();
        // A read writes nothing; a flush writes the view the read built.
        store.flush().unwrap();
        assert_eq!(ctx, scratch(&s));
        // The last range too: it is short and lies in an import pack.
        let selected = ctx.entry_ids.len() as u64;
        assert_eq!(stored_rows(store.kv(), &s).len() as u64, selected);
        report.session
    };
    let store = Store::from_kv(Box::new(watched.clone()), Durability::None).unwrap();
    let s = store.session(&id).unwrap();
    watched.take_log_seqs();
    watched.ranges.lock().unwrap().clear();
    let ctx = s.build_context().unwrap();
    // Nothing of the log, and not the id index either: the stored head covers the log, so
    // the leaf comes from it (no id runs or filter read).
    assert_eq!(watched.take_log_seqs(), Vec::<u64>::new());
    let ranges = watched.ranges.lock().unwrap().clone();
    assert!(
        !ranges
            .iter()
            .any(|t| matches!(*t, keys::T_ID_RUN | keys::T_ID_FILTER)),
        "{ranges:x?}"
    );
    assert_eq!(ctx, scratch(&s));
    assert!(store.verify().unwrap().is_ok());
}

/// A backend that counts the writes and flushes it is asked for.
#[derive(Clone, Default)]
struct Counted {
    kv: Arc<MemoryKv>,
    writes: Arc<std::sync::atomic::AtomicUsize>,
    flushes: Arc<std::sync::atomic::AtomicUsize>,
}

impl Counted {
    fn counts(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::SeqCst;
        (self.writes.load(SeqCst), self.flushes.load(SeqCst))
    }
}

impl Kv for Counted {
    grove_tests::forward_reads!(kv);
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.kv.apply(batch)
    }
    fn flush(&self) -> Result<(), KvError> {
        self.flushes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
    fn name(&self) -> &'static str {
        "counted"
    }
}

/// Issue 17: building a context, reading paths and listing sessions write and flush nothing;
/// the view the reads built goes out with the session's next write.
#[test]
fn a_read_writes_nothing_and_the_next_write_takes_the_view_along() {
    let counted = Counted::default();
    let store = Store::from_kv(Box::new(counted.clone()), Durability::Sync).unwrap();
    let (id, _) = branching_session(&store);
    let before = counted.counts();
    for _ in 0..3 {
        let store = store.clone();
        let s = store.session(&id).unwrap();
        // grove's preset last: its view is the one persisted.
        for preset in [
            ContextOptions::pi_harness(),
            ContextOptions::pi_cli(),
            ContextOptions::grove(),
        ] {
            s.build_context_with(None, preset).unwrap();
        }
        s.branch(None).unwrap();
        s.path_to_root(None).unwrap();
        s.tree().unwrap();
        s.labels().unwrap();
        store.sessions().unwrap();
        s.log().for_each(drop);
    }
    assert_eq!(counted.counts(), before, "reads wrote or flushed");
    let s = store.session(&id).unwrap();
    assert!(
        stored_rows(store.kv(), &s).is_empty(),
        "no view was written"
    );
    s.append(super::user("next")).unwrap();
    assert!(
        store.kv().get(&keys::view(0)).unwrap().is_some(),
        "the write took the view along"
    );
    assert_eq!(s.build_context().unwrap(), scratch(&s));
}
