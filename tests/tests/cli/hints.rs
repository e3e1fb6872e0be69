//! Hints of storage errors, end to end: each says what happened. (Issue 16 §5: every storage
//! error suggested "is another grove process using the store? (sled allows one process at a
//! time)", redb errors included.)

use super::{fixture, Grove};

/// The `hint:` line of an error report.
fn hint_of(stderr: &str) -> &str {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("hint: "))
        .unwrap_or_else(|| panic!("no hint in {stderr}"))
}

#[test]
fn a_file_that_is_not_a_redb_database_is_called_that() {
    let g = Grove::new();
    let seed = fixture("edge-seed-harness.jsonl");
    g.ok(&["--backend", "redb", "import", seed.to_str().unwrap()]);
    let db = g.store_dir().join("grove.redb");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[..64].fill(0x5a);
    std::fs::write(&db, bytes).unwrap();

    let (code, err) = g.fail(&["--backend", "redb", "ls"]);
    assert_eq!(code, 3, "{err}");
    let hint = hint_of(&err);
    assert!(hint.contains("not a redb database"), "{err}");
    assert!(
        !hint.contains("sled") && !hint.contains("another process"),
        "{err}"
    );
}

#[test]
fn a_store_path_that_is_a_file_is_called_that() {
    let g = Grove::new();
    std::fs::write(g.store_dir(), b"not a directory").unwrap();
    let seed = fixture("edge-seed-harness.jsonl");
    let (code, err) = g.fail(&["import", seed.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    let hint = hint_of(&err);
    assert!(hint.contains("is a file: name a directory"), "{err}");
    assert!(!hint.contains("another process"), "{err}");
}

#[test]
fn a_missing_store_is_called_that() {
    let g = Grove::new();
    let (code, err) = g.fail(&["ls"]);
    assert_eq!(code, 1, "{err}");
    assert!(hint_of(&err).contains("check --store"), "{err}");
}

#[test]
fn a_store_held_by_another_process_names_the_way_to_wait() {
    let g = Grove::new();
    let seed = fixture("edge-seed-harness.jsonl");
    g.ok(&["import", seed.to_str().unwrap()]);
    let _held = g.open();
    let (code, err) = g.fail(&["ls"]);
    assert_eq!(code, 3, "{err}");
    let hint = hint_of(&err);
    assert!(hint.contains("--lock-wait"), "{err}");
    assert!(!hint.contains("sled"), "{err}");
}

/// Issue 28, point 4: a redb file redb refuses to open cannot be salvaged either (salvage reads
/// redb's file only through redb), so its hint names a copy or a backup, not `grove salvage`.
/// Checked against salvage itself: it fails on the same file.
#[test]
fn a_redb_file_redb_refuses_is_not_sent_to_salvage() {
    let g = Grove::new();
    let seed = fixture("edge-seed-harness.jsonl");
    g.ok(&["--backend", "redb", "import", seed.to_str().unwrap()]);
    let db = g.store_dir().join("grove.redb");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[0] ^= 0x10;
    std::fs::write(&db, bytes).unwrap();

    let (code, err) = g.fail(&["--backend", "redb", "ls"]);
    assert_eq!(code, 3, "{err}");
    let hint = hint_of(&err);
    assert!(
        !hint.contains("grove salvage SRC DEST") && hint.contains("from a copy or a backup"),
        "{err}"
    );
    let src = g.store_dir().to_str().unwrap().to_owned();
    let dest = g.store_dir().with_extension("dest");
    let (code, err) = g.fail(&["--backend", "redb", "salvage", &src, dest.to_str().unwrap()]);
    assert_eq!(code, 3, "salvage read a file redb refuses: {err}");
}
