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
    let tables = every_flipped_byte_is_detected(&store, &id);
    assert!(!tables.contains(&grove::keys::T_ID_PACK));
    let (store, id) = imported_store();
    let tables = every_flipped_byte_is_detected(&store, &id);
    for table in [
        grove::keys::T_PACKED,
        grove::keys::T_ID_PACK,
        grove::keys::T_LOG_PACK,
        grove::keys::T_LOG,
        grove::keys::T_ENTRY_ID,
    ] {
        assert!(tables.contains(&table), "no row of table {table:#04x}");
    }
}

/// Flips every byte of every value of the session; returns the tables it found rows in.
fn every_flipped_byte_is_detected(store: &Store, id: &str) -> Vec<u8> {
    let kv = store.kv();
    // Every value stored for the session: catalogue row, record, head, and each table.
    let sid = {
        let v = kv.get(&grove::keys::session_id(id)).unwrap().unwrap();
        u64::from_be_bytes(v.as_slice().try_into().unwrap())
    };
    let mut keys = vec![grove::keys::session_id(id), grove::keys::session(sid)];
    for table in grove::keys::SESSION_TABLES {
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
    assert!(flips > 1000, "only {flips} bytes flipped");
    assert!(store.verify().unwrap().is_ok());
    tables
}

#[test]
fn a_missing_index_row_is_reported_with_its_session() {
    let (store, id) = small_store();
    let s = store.session(&id).unwrap();
    let leaf = s.leaf().unwrap().unwrap();
    let sid = u64::from_be_bytes(
        store
            .kv()
            .get(&grove::keys::session_id(&id))
            .unwrap()
            .unwrap()
            .as_slice()
            .try_into()
            .unwrap(),
    );
    let mut b = WriteBatch::new();
    b.delete(grove::keys::entry_id(sid, &leaf));
    store.kv().apply(b).unwrap();
    let report = store.verify().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.session == id && p.to_string().contains("id index")),
        "{:?}",
        report.problems
    );
}
