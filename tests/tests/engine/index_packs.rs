//! Index packs (docs/format.md, "Index packs"; tables `0x1D`, `0x1E`): an import stores its
//! children index and leaf history 1,024 rows to a value, an append one key per row. The same
//! session, built by appends and then exported and imported, must answer `children` and
//! `leaf_history` identically; verify must catch a pack that disagrees with the log.

use grove::keys;
use grove::kv::{MemoryKv, WriteBatch};
use grove::{CreateSession, Durability, Session, Store};
use grove_codec::record::{self, ChildPackRecord, LeafPackRecord};

use super::user;

/// A session of appends whose children index and leaf history each need several packs: 1,500
/// answers to one question (so that its children straddle a pack boundary), branches hanging
/// off a long trunk, and root entries. Each `move_to` writes a leaf record.
fn branching(store: &Store) -> Session {
    let s = store.create_session(CreateSession::default()).unwrap();
    let question = s.append(user("question")).unwrap();
    for i in 0..1500 {
        s.move_to(Some(&question)).unwrap();
        s.append(user(&format!("answer {i}"))).unwrap();
    }
    let mut trunk = Vec::new();
    s.move_to(Some(&question)).unwrap();
    for i in 0..600 {
        trunk.push(s.append(user(&format!("trunk {i}"))).unwrap());
    }
    for (i, at) in trunk.iter().enumerate().step_by(7) {
        s.move_to(Some(at)).unwrap();
        s.append(user(&format!("branch {i}"))).unwrap();
        s.append(user(&format!("branch {i} continued"))).unwrap();
    }
    for i in 0..3 {
        s.move_to(None).unwrap();
        s.append(user(&format!("another root {i}"))).unwrap();
    }
    s
}

fn export(s: &Session) -> Vec<u8> {
    let mut out = Vec::new();
    s.export(grove::Flavor::Harness, &mut out).unwrap();
    out
}

fn import(store: &Store, jsonl: &[u8]) -> Session {
    let report = store
        .import_reader(std::io::Cursor::new(jsonl), grove::ImportOptions::default())
        .unwrap();
    store.session(&report.session).unwrap()
}

fn keys_in(store: &Store, table: u8, s: &Session) -> Vec<(Vec<u8>, Vec<u8>)> {
    let sid = store
        .kv()
        .get(&keys::session_id(s.id()))
        .unwrap()
        .map(|v| u64::from_be_bytes(v[..8].try_into().unwrap()))
        .unwrap();
    let start = keys::session_prefix(table, sid);
    store
        .kv()
        .scan(&start, &keys::prefix_end(&start))
        .map(Result::unwrap)
        .collect()
}

fn children_ids(s: &Session, parent: Option<&str>) -> Vec<String> {
    s.children(parent)
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect()
}

/// Every entry's children, and the roots', in both sessions (same ids: an import keeps them).
fn assert_same_index(a: &Session, b: &Session) {
    assert_eq!(children_ids(a, None), children_ids(b, None), "roots");
    let ids: Vec<String> = a.entries().map(|e| e.unwrap().id().to_owned()).collect();
    for id in &ids {
        assert_eq!(
            children_ids(a, Some(id)),
            children_ids(b, Some(id)),
            "children of {id}"
        );
    }
    assert_eq!(a.leaf_history().unwrap(), b.leaf_history().unwrap());
}

#[test]
fn an_imported_session_answers_from_packs_as_the_appended_one_does_from_rows() {
    let source = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
    let appended = branching(&source);
    let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
    let imported = import(&store, &export(&appended));

    // The appended session: rows. The imported one: packs only, several of each.
    assert!(keys_in(&source, keys::T_CHILD, &appended).len() > 1500);
    assert!(keys_in(&source, keys::T_CHILD_PACK, &appended).is_empty());
    assert!(keys_in(&store, keys::T_CHILD, &imported).is_empty());
    assert!(keys_in(&store, keys::T_LEAF_HISTORY, &imported).is_empty());
    let child_packs = keys_in(&store, keys::T_CHILD_PACK, &imported);
    let leaf_packs = keys_in(&store, keys::T_LEAF_PACK, &imported);
    assert!(child_packs.len() >= 2, "{} child packs", child_packs.len());
    assert!(leaf_packs.len() >= 2, "{} leaf packs", leaf_packs.len());
    // The question's answers straddle the first pack boundary.
    let first: ChildPackRecord = record::decode(&child_packs[0].1).unwrap();
    let second: ChildPackRecord = record::decode(&child_packs[1].1).unwrap();
    assert_eq!(first.rows.last().unwrap().0, second.rows[0].0);

    assert_same_index(&appended, &imported);
    let question = imported.entries().next().unwrap().unwrap().id().to_owned();
    assert_eq!(children_ids(&imported, Some(&question)).len(), 1500 + 1);
    assert_eq!(children_ids(&imported, None).len(), 4);
    assert!(store.verify().unwrap().is_ok());
    assert!(source.verify().unwrap().is_ok());

    // Appends after the import: rows next to the packs, merged in log order.
    for s in [&appended, &imported] {
        s.move_to(Some(&question)).unwrap();
        s.append(user("one more answer")).unwrap();
        s.move_to(None).unwrap();
        s.append(user("one more root")).unwrap();
    }
    assert_eq!(keys_in(&store, keys::T_CHILD, &imported).len(), 2);
    assert_eq!(keys_in(&store, keys::T_LEAF_HISTORY, &imported).len(), 2);
    let answers = children_ids(&imported, Some(&question));
    assert_eq!(answers.len(), 1500 + 2);
    let last = imported.entry(answers.last().unwrap()).unwrap();
    assert!(last.line.contains("one more answer"), "{}", last.line);
    // Ids of the appended entries differ (generated); compare positions instead.
    let seqs = |s: &Session, p: Option<&str>| -> Vec<u64> {
        s.children(p).unwrap().iter().map(|e| e.seq).collect()
    };
    assert_eq!(
        seqs(&appended, Some(&question)),
        seqs(&imported, Some(&question))
    );
    assert_eq!(seqs(&appended, None), seqs(&imported, None));
    let history = |s: &Session| s.leaf_history().unwrap().len();
    assert_eq!(history(&appended), history(&imported));
    assert!(store.verify().unwrap().is_ok());
    assert!(source.verify().unwrap().is_ok());

    // Deleting the session removes its packs.
    store.delete_session(imported.id()).unwrap();
    let all = |t: u8| store.kv().scan(&[t], &[t + 1]).count();
    assert_eq!(all(keys::T_CHILD_PACK), 0);
    assert_eq!(all(keys::T_LEAF_PACK), 0);
}

/// Writes one key as it is, behind the store's back.
fn tamper(store: &Store, key: Vec<u8>, value: Vec<u8>) {
    let mut b = WriteBatch::new();
    b.put(key, value);
    store.kv().apply(b).unwrap();
}

fn problems(store: &Store) -> String {
    let report = store.verify().unwrap();
    assert!(!report.is_ok(), "verify found nothing");
    format!("{report:?}")
}

#[test]
fn verify_names_an_index_pack_that_disagrees_with_the_log() {
    let fresh = || {
        let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
        let jsonl = export(&branching(&store));
        let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
        let s = import(&store, &jsonl);
        assert!(store.verify().unwrap().is_ok());
        (store, s)
    };

    // A row dropped from a pack.
    let (store, s) = fresh();
    let (key, value) = keys_in(&store, keys::T_CHILD_PACK, &s).remove(0);
    let mut pack: ChildPackRecord = record::decode(&value).unwrap();
    pack.rows.remove(5);
    tamper(&store, key, record::encode(&pack));
    assert!(problems(&store).contains("children index: 1 rows missing"));

    // A row kept both in a pack and as a key.
    let (store, s) = fresh();
    let (_, value) = keys_in(&store, keys::T_CHILD_PACK, &s).remove(0);
    let pack: ChildPackRecord = record::decode(&value).unwrap();
    let sid = u64::from_be_bytes(
        keys_in(&store, keys::T_CHILD_PACK, &s)[0].0[1..9]
            .try_into()
            .unwrap(),
    );
    let (p, c) = pack.rows[3];
    tamper(&store, keys::child(sid, p, c), Vec::new());
    assert!(problems(&store).contains("is both a key and in a pack"));

    // Leaf records out of order, and a pack keyed by another row than its first.
    let (store, s) = fresh();
    let (key, value) = keys_in(&store, keys::T_LEAF_PACK, &s).remove(0);
    let mut pack: LeafPackRecord = record::decode(&value).unwrap();
    pack.seqs.swap(1, 2);
    tamper(&store, key, record::encode(&pack));
    assert!(problems(&store).contains("out of order"));
    let (store, s) = fresh();
    let (key, value) = keys_in(&store, keys::T_LEAF_PACK, &s).remove(1);
    let mut pack: LeafPackRecord = record::decode(&value).unwrap();
    pack.seqs.remove(0);
    tamper(&store, key, record::encode(&pack));
    let found = problems(&store);
    assert!(found.contains("its key is not its first row"), "{found}");
    assert!(found.contains("leaf history: 1 rows missing"), "{found}");

    // An undecodable pack: verify names it; reading the children is an error, not a wrong
    // answer.
    let (store, s) = fresh();
    let (key, _) = keys_in(&store, keys::T_CHILD_PACK, &s).remove(0);
    tamper(&store, key, b"not a pack".to_vec());
    assert!(problems(&store).contains("children-index pack"));
    let question = s.entries().next().unwrap().unwrap().id().to_owned();
    assert!(matches!(
        s.children(Some(&question)),
        Err(grove::GroveError::Corrupt(m)) if m.contains("children-index pack")
    ));
}

#[test]
fn a_layout_7_store_opens_as_layout_9_with_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (id, roots, history) = {
        let store = Store::open(dir.path()).unwrap();
        let s = branching(&store);
        let mut b = WriteBatch::new();
        b.put(keys::meta(keys::META_FORMAT), b"grove\x00\x07".to_vec());
        store.kv().apply(b).unwrap();
        store.flush().unwrap();
        (
            s.id().to_owned(),
            children_ids(&s, None),
            s.leaf_history().unwrap(),
        )
    };
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.kv().get(&keys::meta(keys::META_FORMAT)).unwrap(),
        Some(b"grove\x00\x0f".to_vec())
    );
    let s = store.session(&id).unwrap();
    assert_eq!(children_ids(&s, None), roots);
    assert_eq!(s.leaf_history().unwrap(), history);
    assert!(store.verify().unwrap().is_ok());
}

use proptest::prelude::*;

/// Sessions of random shape, large enough for several packs: appends at the leaf, answers to
/// earlier entries (a move, then an append), new roots, and moves alone (leaf records only).
fn random_session(ops: &[(u8, u16)]) -> Session {
    let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let mut ids: Vec<String> = Vec::new();
    for (i, &(kind, pick)) in ops.iter().enumerate() {
        let target = (!ids.is_empty()).then(|| ids[pick as usize % ids.len()].clone());
        match kind {
            0..=2 => {}
            3..=7 => s.move_to(target.as_deref()).unwrap(),
            8 => s.move_to(None).unwrap(),
            _ => {
                s.move_to(target.as_deref()).unwrap();
                continue;
            }
        }
        ids.push(s.append(user(&format!("entry {i}"))).unwrap());
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Whatever the tree, its import (packs) answers as the appended session (rows) does.
    #[test]
    fn any_tree_reads_the_same_from_packs(ops in proptest::collection::vec((0u8..10, any::<u16>()), 1200..2600)) {
        let appended = random_session(&ops);
        let store = Store::from_kv(Box::new(MemoryKv::new()), Durability::None).unwrap();
        let imported = import(&store, &export(&appended));
        prop_assert!(!keys_in(&store, keys::T_CHILD_PACK, &imported).is_empty());
        assert_same_index(&appended, &imported);
        prop_assert!(store.verify().unwrap().is_ok());
    }
}
