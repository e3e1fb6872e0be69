//! The ids of appended records live in the tail (in memory, rebuilt from the log), in id runs
//! (written as the tail fills, merged as they pile up) and, for an imported session, in id
//! packs. Every lookup, duplicate check and prefix resolution must agree with a plain map
//! through flushes, merges, batches that cross a flush, and reopens.

use std::io::Write;

use grove::{AppendOptions, GroveError, ImportOptions, Session, Store, StoreConfig};
use grove_codec::pack::IdRunMeta;

use super::packs::{check, line, Oracle};
use super::user;

/// Distinct hex ids of varied length (some prefixes of others).
fn appended_id(i: usize) -> String {
    format!("{:x}", (i * 7919) % 100_003)
}

/// The id runs of the only session of `store` with records, as `(first, meta)`.
fn runs(store: &Store) -> Vec<(u64, IdRunMeta)> {
    use grove::keys::T_ID_RUN;
    store
        .kv()
        .scan(&[T_ID_RUN], &[T_ID_RUN + 1])
        .map(|pair| {
            let (k, v) = pair.unwrap();
            let first = u64::from_be_bytes(k[9..17].try_into().unwrap());
            (first, IdRunMeta::decode(&v).unwrap())
        })
        .collect()
}

/// Appends an entry with id `id` (which must be new), and adds it to `oracle`.
fn append_as(s: &Session, id: &str, oracle: &mut Oracle) {
    assert!(!taken(s, id), "{id} was taken");
    oracle.insert(id.to_owned(), s.entry(id).unwrap().line);
}

/// Whether `id` is refused as a duplicate (when it is not, an entry with it is appended).
/// Each try's text is new: the same entry again would be a retry, answered with the stored
/// one.
fn taken(s: &Session, id: &str) -> bool {
    static TRIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = TRIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let again = s.append_with(
        user(&format!("try {n}")),
        AppendOptions {
            id: Some(id.to_owned()),
            ..Default::default()
        },
    );
    match again {
        Err(GroveError::DuplicateId(_)) => true,
        other => {
            other.unwrap();
            false
        }
    }
}

/// Appends `n` entries (explicit ids, every 7th batch by `append_many` with generated ids,
/// every 300th record a leaf move), checking against `oracle` at the flush and merge
/// boundaries and reopening the store at some of them.
fn exercise(dir: &std::path::Path, session: &str, n: usize, oracle: &mut Oracle) -> Store {
    let open = || Store::open_with(StoreConfig::new(dir)).unwrap();
    let mut store = open();
    let mut s = store.session(session).unwrap();
    let checkpoints = [
        1, 255, 256, 257, 300, 1023, 1024, 1025, 1400, 4096, 4097, 4500,
    ];
    let mut i = 0;
    let mut appended = 0;
    let mut done = 0;
    while appended < n {
        if i % 7 == 6 {
            let batch: Vec<_> = (0..90).map(|k| user(&format!("batch {i}.{k}"))).collect();
            for id in s.append_many(&batch).unwrap() {
                oracle.insert(id.clone(), s.entry(&id).unwrap().line);
            }
            appended += 90;
        } else {
            append_as(&s, &appended_id(i), oracle);
            appended += 1;
        }
        if i % 300 == 299 {
            let back = appended_id(i - 100);
            s.move_to(Some(&back)).unwrap();
            appended += 1;
        }
        if done < checkpoints.len() && checkpoints[done] <= appended {
            done += 1;
            check(&s, oracle);
            for id in oracle.keys().step_by(97) {
                assert!(taken(&s, id), "{id} could be appended twice");
            }
            // A new id is free.
            append_as(&s, &format!("fresh-{i}"), oracle);
            if done % 2 == 0 {
                drop(s);
                drop(store);
                store = open();
                s = store.session(session).unwrap();
                check(&s, oracle);
            }
            // A second root.
            s.move_to(None).unwrap();
            append_as(&s, &format!("root-{i}"), oracle);
            appended += 3;
        }
        i += 1;
    }
    check(&s, oracle);
    store
}

#[test]
fn appended_ids_resolve_through_flushes_merges_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let s = store
        .create_session(grove::CreateSession {
            id: Some("runs".into()),
            ..Default::default()
        })
        .unwrap();
    drop(s);
    drop(store);
    let mut oracle = Oracle::new();
    let store = exercise(dir.path(), "runs", 6_000, &mut oracle);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    // The runs tile the log from its start and were merged twice over: the first (four runs
    // of four runs of ~290 ids each) covers more than 4096 records, and only a few are left.
    let runs = runs(&store);
    assert_eq!(runs[0].0, 0);
    assert!(
        runs[0].1.end >= 4096,
        "{:?}",
        runs.iter().map(|r| (r.0, r.1.end)).collect::<Vec<_>>()
    );
    assert!(runs.len() <= 6, "{} runs", runs.len());
    for pair in runs.windows(2) {
        assert_eq!(pair[0].1.end, pair[1].0);
    }
}

#[test]
fn ids_appended_after_an_import_go_to_runs_after_the_packs() {
    const N: usize = 1_500;
    let dir = tempfile::tempdir().unwrap();
    let mut text = Vec::new();
    writeln!(text, r#"{{"type":"session","version":3,"id":"imported","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}}"#).unwrap();
    let mut oracle = Oracle::new();
    let mut parent: Option<String> = None;
    for i in 0..N {
        let id = format!("imp{i:x}");
        let l = line(&id, parent.as_deref());
        writeln!(text, "{l}").unwrap();
        oracle.insert(id.clone(), l);
        parent = Some(id);
    }
    {
        let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
        store
            .import_reader(std::io::Cursor::new(text), ImportOptions::default())
            .unwrap();
    }
    let store = exercise(dir.path(), "imported", 1_400, &mut oracle);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let runs = runs(&store);
    assert_eq!(
        runs[0].0, N as u64,
        "the runs start after the packed records"
    );
    let s = store.session("imported").unwrap();
    for i in (0..N).step_by(101) {
        assert!(taken(&s, &format!("imp{i:x}")));
    }
}

/// The stored head of `session` (its checkpoint), decoded.
fn stored_head(store: &Store, session: &str) -> grove_codec::record::HeadRecord {
    let kv = store.kv();
    let sid = kv.get(&grove::keys::session_id(session)).unwrap().unwrap();
    let sid = u64::from_be_bytes(sid.as_slice().try_into().unwrap());
    grove_codec::record::decode(&kv.get(&grove::keys::head(sid)).unwrap().unwrap()).unwrap()
}

#[test]
fn single_appends_leave_the_stored_head_a_checkpoint_written_with_each_run() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let store = open();
    let s = store
        .create_session(grove::CreateSession {
            id: Some("cp".into()),
            ..Default::default()
        })
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..100 {
        ids.push(s.append(user(&format!("entry {i}"))).unwrap());
    }
    // No run yet: the checkpoint is still the empty head of the new session.
    assert_eq!(stored_head(&store, "cp").next_seq, 0);
    assert_eq!(s.head().unwrap().next_seq, 100);
    s.move_to(Some(&ids[40])).unwrap();
    s.set_name("checkpointed").unwrap();
    let expected = s.head().unwrap();
    drop(s);
    drop(store);
    // A new process folds the checkpoint over the log; its listing counts the entries
    // without loading the session (leaf records excluded).
    let store = open();
    assert_eq!(store.sessions().unwrap()[0].entries, expected.entries);
    assert_eq!(expected.entries, 101);
    let s = store.session("cp").unwrap();
    assert_eq!(s.head().unwrap(), expected);
    assert_eq!(
        s.leaf().unwrap(),
        s.head()
            .unwrap()
            .leaf
            .map(|q| { s.entry_at(q).unwrap().id().to_owned() })
    );
    for i in 0..300 {
        s.append(user(&format!("more {i}"))).unwrap();
    }
    // The run written at the 256th tail record carried the head of that moment.
    let checkpoint = stored_head(&store, "cp");
    assert!(checkpoint.next_seq >= 256, "{checkpoint:?}");
    assert!(checkpoint.next_seq < s.head().unwrap().next_seq);
    assert!(store.verify().unwrap().is_ok());
    s.move_to(Some(&ids[3])).unwrap();
    let head = s.head().unwrap();
    drop(s);
    drop(store);
    let store = open();
    assert_eq!(store.sessions().unwrap()[0].entries, head.entries);
    assert_eq!(store.session("cp").unwrap().head().unwrap(), head);
}

#[test]
fn loading_a_session_reads_no_id_filter_until_an_id_lookup_needs_it() {
    // Filters take 10 bits per id: reading them when a session opens would make a resume
    // O(session). A damaged filter shows which reads happen.
    let dir = tempfile::tempdir().unwrap();
    let mut text = Vec::new();
    writeln!(text, r#"{{"type":"session","version":3,"id":"lazy","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}}"#).unwrap();
    let mut parent: Option<String> = None;
    for i in 0..600 {
        let id = format!("lazy{i}");
        writeln!(text, "{}", line(&id, parent.as_deref())).unwrap();
        parent = Some(id);
    }
    {
        let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
        store
            .import_reader(std::io::Cursor::new(text), ImportOptions::default())
            .unwrap();
        let kv = store.kv();
        let sid = kv.get(&grove::keys::session_id("lazy")).unwrap().unwrap();
        let sid = u64::from_be_bytes(sid.as_slice().try_into().unwrap());
        let key = grove::keys::id_filter(sid);
        let mut filter = kv.get(&key).unwrap().unwrap();
        filter[1] ^= 0xFF;
        let mut b = grove::kv::WriteBatch::new();
        b.put(key, filter);
        kv.apply(b).unwrap();
        store.flush().unwrap();
    }
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let s = store.session("lazy").unwrap();
    assert_eq!(s.head().unwrap().next_seq, 600);
    assert_eq!(s.build_context().unwrap().messages.len(), 600);
    assert_eq!(s.leaf().unwrap().as_deref(), Some("lazy599"));
    // Finding an id that exists does not need the filter either.
    assert_eq!(s.entry("lazy5").unwrap().id(), "lazy5");
    // A duplicate check consults the filter, and finds it damaged.
    let again = s.append_with(
        user("x"),
        AppendOptions {
            id: Some("new-id".into()),
            ..Default::default()
        },
    );
    assert!(matches!(again, Err(GroveError::Corrupt(_))), "{again:?}");
}
