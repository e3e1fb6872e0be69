//! `Session::proof`: an entry's digest and path digest, recomputed from the stored bytes with
//! blake3 directly (not through grove's codec), chained root to leaf, on an imported session
//! (log packs) and on appended entries (rows); a stored node whose content or chain digest no
//! longer follows from the bytes is refused.

use grove::codec::record;
use grove::{CreateSession, GroveError, ImportOptions, Store};
use grove_tests::rows;

use super::{assistant, sid_of, user};
use crate::cli::fixture;

const CHAIN_CONTEXT: &str = "grove 2026-11 entry chain v1";

fn chained(parent: &[u8; 32], content: &[u8; 32]) -> [u8; 32] {
    let mut both = parent.to_vec();
    both.extend_from_slice(content);
    blake3::derive_key(CHAIN_CONTEXT, &both)
}

/// Every entry on the session's path proves itself and its parent's path digest.
fn check_path(store: &Store, id: &str) -> usize {
    let s = store.session(id).unwrap();
    let mut parent_digest = [0u8; 32];
    let path = s.path_to_root(s.leaf().unwrap().as_deref()).unwrap();
    assert!(!path.is_empty());
    for (i, entry) in path.iter().enumerate() {
        let proof = s.proof(entry.id()).unwrap();
        assert_eq!(proof.entry.line, entry.line);
        let content = *blake3::hash(entry.line.as_bytes()).as_bytes();
        assert_eq!(proof.content(), content, "entry {i}");
        if i == 0 {
            assert_eq!(proof.parent_digest, [0u8; 32], "a root's parent is zeros");
        } else {
            assert_eq!(
                proof.parent_digest, parent_digest,
                "entry {i}: the parent's path digest"
            );
        }
        assert_eq!(
            proof.digest(),
            chained(&proof.parent_digest, &content),
            "entry {i}"
        );
        parent_digest = proof.digest();
    }
    path.len()
}

#[test]
fn every_entry_proves_its_path_root_to_leaf() {
    let store = Store::in_memory().unwrap();
    let report = store
        .import_file(&fixture("r000-harness.jsonl"), ImportOptions::default())
        .unwrap();
    let imported = check_path(&store, &report.session);
    assert!(imported > 10);
    // Appended on top of the import: rows after packs.
    let s = store.session(&report.session).unwrap();
    s.append(user("one more")).unwrap();
    s.append(assistant("and its answer")).unwrap();
    assert_eq!(check_path(&store, &report.session), imported + 2);
    // A new session of appends only.
    let fresh = store.create_session(CreateSession::default()).unwrap();
    fresh.append(user("first")).unwrap();
    fresh.append(assistant("second")).unwrap();
    assert_eq!(check_path(&store, fresh.id()), 2);
    // Leaf records and unknown ids are not entries.
    assert!(matches!(
        fresh.proof("nope"),
        Err(GroveError::EntryNotFound(id)) if id == "nope"
    ));
}

#[test]
fn a_node_whose_digests_do_not_follow_from_the_bytes_is_refused() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let a = s.append(user("alpha")).unwrap();
    let b = s.append(assistant("beta")).unwrap();
    let c = s.append(user("gamma")).unwrap();
    assert!(s.proof(&c).is_ok());
    // The rows out of the write buffer first: `rewrite_rows` edits what the backend holds.
    store.flush().unwrap();
    let sid = sid_of(&store, s.id());
    // alpha: a content digest that is not blake3 of the line; gamma: a chain digest that does
    // not follow from its parent's (the line and its CRC right in both).
    let edited = rows::rewrite_rows(&store, sid, |row| {
        let row = record::decode_log(row).unwrap();
        let mut node = row.node;
        if node.id == a {
            node.content[0] ^= 1;
        } else if node.id == c {
            node.digest[31] ^= 0x80;
        } else {
            return None;
        }
        Some(record::encode_log(&node, row.line))
    })
    .unwrap();
    assert_eq!(edited, 2);
    let s = store.session(s.id()).unwrap();
    match s.proof(&a) {
        Err(GroveError::Corrupt(m)) => assert!(
            m.contains(&format!("entry {a}")) && m.contains("hashes to"),
            "{m}"
        ),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    match s.proof(&c) {
        Err(GroveError::Corrupt(m)) => assert!(
            m.contains(&format!("entry {c}")) && m.contains("does not follow from its parent"),
            "{m}"
        ),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // beta's own bytes and digests still agree (its parent's stored digest is untouched).
    assert!(s.proof(&b).is_ok());
}
