//! The sled start-up guard: a half-written `snap.*.generating` file left by a kill during
//! sled's start-up must not brick the store (sled issues #1527, #1533).

use grove::{CreateSession, Store};

fn plant(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("snap.FFFFFFFFFFFFFFF0.generating");
    // Longer than sled's 12-byte trailer, with a checksum that cannot match.
    std::fs::write(&path, vec![0xA5u8; 64]).unwrap();
    path
}

#[test]
fn stale_generating_snapshot_bricks_raw_sled() {
    // Shows that the planted file reproduces the failure the guard exists for.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = sled::open(dir.path()).unwrap();
        db.insert(b"k", b"v".as_slice()).unwrap();
        db.flush().unwrap();
    }
    plant(dir.path());
    assert!(
        sled::open(dir.path()).is_err(),
        "raw sled should refuse this directory"
    );
}

#[test]
fn store_opens_with_all_data_despite_a_stale_generating_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (id, ids) = {
        let store = Store::open(dir.path()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        let ids = super::seed(&s);
        store.flush().unwrap();
        (s.id().to_owned(), ids)
    };
    let planted = plant(dir.path());
    let store = Store::open(dir.path()).unwrap();
    assert!(!planted.exists(), "the stale file is removed");
    let s = store.session(&id).unwrap();
    assert_eq!(s.leaf().unwrap().as_deref(), Some(ids[5].as_str()));
    assert_eq!(s.entries().count(), 6);
    assert_eq!(
        super::texts(&s),
        ["user 1", "assistant 1", "plan B", "assistant B"]
    );
}
