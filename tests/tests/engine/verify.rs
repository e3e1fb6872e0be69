//! Verification finds every changed byte, and passes on sound stores.

use grove::kv::WriteBatch;
use grove::{CreateSession, NewEntry, Store};

use super::{seed, user};

/// A small session that uses every table: moves, a label, a name, a compaction, a view.
fn small_store() -> (Store, String) {
    let store = Store::in_memory().unwrap();
    let s = store
        .create_session(CreateSession {
            cwd: "/w".into(),
            ..Default::default()
        })
        .unwrap();
    let ids = seed(&s);
    s.set_label(&ids[1], Some("base")).unwrap();
    s.set_name("flip test").unwrap();
    s.append(NewEntry::Compaction {
        summary: "s".into(),
        first_kept_entry_id: ids[4].clone(),
        tokens_before: 3,
        retained_tail: None,
        details: None,
        usage: None,
        from_hook: None,
    })
    .unwrap();
    s.append(user("after")).unwrap();
    s.build_context().unwrap(); // persists the view
    (store, s.id().to_owned())
}

#[test]
fn sound_stores_verify_clean() {
    let (store, _) = small_store();
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.sessions, 1);
    assert!(report.records > 10);
    // Every accepted pi-oracle fixture verifies after import.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi-oracle");
    let store = Store::in_memory().unwrap();
    let mut imported = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl")
            && store.import_file(&path, Default::default()).is_ok()
        {
            imported += 1;
        }
    }
    assert!(imported > 140);
    let report = store.verify().unwrap();
    assert!(
        report.is_ok(),
        "{:?}",
        &report.problems[..report.problems.len().min(5)]
    );
}

/// The same session imported into a fresh store (its records in log packs, its ids in id
/// packs), with one entry and a leaf move appended after the import (single rows).
fn imported_store() -> (Store, String) {
    let (source, id) = small_store();
    let mut jsonl = Vec::new();
    source
        .session(&id)
        .unwrap()
        .export(grove::export::Flavor::Harness, &mut jsonl)
        .unwrap();
    let store = Store::in_memory().unwrap();
    store
        .import_reader(jsonl.as_slice(), Default::default())
        .unwrap();
    let s = store.session(&id).unwrap();
    let first = s.entries().next().unwrap().unwrap().id().to_owned();
    s.append(user("after the import")).unwrap();
    s.move_to(Some(&first)).unwrap();
    s.build_context().unwrap();
    (store, id)
}

#[test]
fn every_flipped_byte_of_a_session_is_detected() {
    let (store, id) = small_store();
    let tables = every_flipped_byte_is_detected(&store, &id, None);
    assert!(!tables.contains(&grove::keys::T_ID_PACK));
    let (store, id) = imported_store();
    let tables = every_flipped_byte_is_detected(&store, &id, None);
    for table in [
        grove::keys::T_PACKED,
        grove::keys::T_ID_PACK,
        grove::keys::T_LOG_PACK,
        grove::keys::T_LOG,
    ] {
        assert!(tables.contains(&table), "no row of table {table:#04x}");
    }
}

/// A session of `n` appended entries (its early ids in id runs) and its internal number.
fn appended_store(n: usize) -> (Store, String, u64) {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    for i in 0..n {
        s.append(user(&format!("entry {i}"))).unwrap();
    }
    let sid = super::sid_of(&store, s.id());
    (store, s.id().to_owned(), sid)
}

#[test]
fn every_flipped_byte_of_an_id_run_is_detected() {
    use grove::keys::{T_ID_RUN, T_ID_RUN_PACK};
    let (store, id, _) = appended_store(300);
    let tables = every_flipped_byte_is_detected(&store, &id, Some(&[T_ID_RUN, T_ID_RUN_PACK]));
    assert!(tables.contains(&T_ID_RUN) && tables.contains(&T_ID_RUN_PACK));
}

/// Flips every byte of every value of the session (of the given tables only, if any); returns
/// the tables it found rows in.
fn every_flipped_byte_is_detected(store: &Store, id: &str, only: Option<&[u8]>) -> Vec<u8> {
    // The keys as the backend holds them: the write buffer coalesces log rows when it hands
    // them over, so its keys are read after it has.
    store.flush().unwrap();
    let kv = store.kv();
    // Every value stored for the session: catalogue row, record, head, and each table.
    let sid = {
        let v = kv.get(&grove::keys::session_id(id)).unwrap().unwrap();
        u64::from_be_bytes(v.as_slice().try_into().unwrap())
    };
    let mut keys = vec![grove::keys::session_id(id), grove::keys::session(sid)];
    if only.is_some() {
        keys.clear();
    }
    for table in grove::keys::SESSION_TABLES {
        if only.is_some_and(|only| !only.contains(&table)) {
            continue;
        }
        let start = grove::keys::session_prefix(table, sid);
        for pair in kv.scan(&start, &grove::keys::prefix_end(&start)) {
            keys.push(pair.unwrap().0);
        }
    }
    let tables: Vec<u8> = keys.iter().map(|k| k[0]).collect();
    let mut flips = 0;
    for key in keys {
        let original = kv.get(&key).unwrap().unwrap();
        for i in 0..original.len() {
            let mut bad = original.clone();
            bad[i] ^= 0xFF;
            let mut b = WriteBatch::new();
            b.put(key.clone(), bad);
            kv.apply(b).unwrap();
            let report = store.verify().unwrap();
            assert!(
                !report.is_ok(),
                "flip of byte {i} of key {key:02x?} went unnoticed"
            );
            flips += 1;
            let mut b = WriteBatch::new();
            b.put(key.clone(), original.clone());
            kv.apply(b).unwrap();
        }
    }
    assert!(flips > 400, "only {flips} bytes flipped");
    assert!(store.verify().unwrap().is_ok());
    tables
}

#[test]
fn a_missing_index_row_is_reported_with_its_session() {
    use grove::keys;
    // The run's description; then one of its id packs.
    for which in ["description", "id pack"] {
        let (store, id, sid) = appended_store(300);
        assert!(store.verify().unwrap().is_ok());
        let key = match which {
            "description" => keys::id_run(sid, 0),
            _ => {
                let packs = keys::id_run_packs(sid, 0);
                let end = keys::prefix_end(&packs);
                store.kv().scan(&packs, &end).next().unwrap().unwrap().0
            }
        };
        let mut b = WriteBatch::new();
        b.delete(key);
        assert_reported(&store, &id, "id", b, which);
    }
}

/// Applies `damage`, then asserts that verify reports a problem of session `id` mentioning
/// `what`.
fn assert_reported(store: &Store, id: &str, what: &str, damage: WriteBatch, case: &str) {
    store.kv().apply(damage).unwrap();
    let report = store.verify().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.session == id && p.to_string().contains(what)),
        "{case}: {:?}",
        report.problems
    );
}

#[test]
fn a_stored_head_that_is_no_checkpoint_of_the_log_is_reported() {
    use grove_codec::record::{self, HeadRecord};
    let (store, id, sid) = appended_store(300);
    let key = grove::keys::head(sid);
    let stored: HeadRecord = record::decode(&store.kv().get(&key).unwrap().unwrap()).unwrap();
    for wrong in [
        HeadRecord {
            entries: stored.entries + 1,
            ..stored.clone()
        },
        HeadRecord {
            leaf: Some(0),
            ..stored.clone()
        },
        HeadRecord {
            next_seq: stored.next_seq + 1000,
            ..stored.clone()
        },
    ] {
        let mut b = WriteBatch::new();
        b.put(key.clone(), record::encode(&wrong));
        assert_reported(&store, &id, "stored head", b, &format!("{wrong:?}"));
    }
}

/// An import with pi-CLI's leaf rule that ends on a leaf line resumes at the line's
/// `parentId`, not at its target: verification accepts that head, and still reports any
/// other leaf. (Caught by salvage: such sessions were reported damaged.)
#[test]
fn a_last_line_import_ending_on_a_leaf_line_verifies() {
    use grove_codec::record::{self, HeadRecord};
    let import = || {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/pi-oracle/edge-leaf-last.jsonl");
        let store = Store::in_memory().unwrap();
        let options = grove::ImportOptions {
            leaf_rule: grove::LeafRule::LastLine,
            ..Default::default()
        };
        store.import_file(&path, options).unwrap();
        store
    };
    let store = import();
    // The leaf line targets the first entry (seq 0); its parentId is the last one (seq 3).
    let s = store.session("leaf-last").unwrap();
    assert_eq!(s.leaf().unwrap().as_deref(), Some("8cd07f47"));
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    for leaf in [Some(1), None] {
        let store = import();
        let key = grove::keys::head(super::sid_of(&store, "leaf-last"));
        let stored: HeadRecord = record::decode(&store.kv().get(&key).unwrap().unwrap()).unwrap();
        let mut b = WriteBatch::new();
        b.put(key, record::encode(&HeadRecord { leaf, ..stored }));
        assert_reported(&store, "leaf-last", "stored head", b, &format!("{leaf:?}"));
    }
}
