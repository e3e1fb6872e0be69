//! Acknowledged writes a backend lost (issue 16, §2): the durable-commit record beside the
//! backend (`grove.commit`) makes the loss an error that names what is missing, never a
//! healthy-looking store.
//!
//! Before the record, one flipped bit in the log sled wrote after its last snapshot made sled
//! drop that write and every later one at the next open, with `verify` clean; and a store
//! whose file was truncated to 0 bytes opened as a new, empty store.

use std::path::Path;

use grove::{CreateSession, Durability, GroveError, Store, StoreConfig};

use super::user;

fn config(dir: &Path, redb: bool) -> StoreConfig {
    super::sync_config(dir, redb)
}

/// A store of two sessions whose last write, a sync append to `victim`, holds `marker`.
fn build(dir: &Path, redb: bool, marker: &str) {
    let store = Store::open_with(config(dir, redb)).unwrap();
    let other = store
        .create_session(CreateSession {
            id: Some("other".into()),
            ..Default::default()
        })
        .unwrap();
    other.append(user("kept elsewhere")).unwrap();
    let victim = store
        .create_session(CreateSession {
            id: Some("victim".into()),
            ..Default::default()
        })
        .unwrap();
    victim.append(user("first")).unwrap();
    victim.append(user(marker)).unwrap();
}

fn victim_texts(store: &Store) -> Option<Vec<String>> {
    let s = store.session("victim").ok()?;
    let ctx = s.build_context().ok()?;
    Some(ctx.messages.iter().map(|m| m.to_string()).collect())
}

/// One bit flipped at every offset of the last sync append's bytes in sled's log: the store
/// either still holds the append (sled read past the flip, or the read checks refuse the
/// damaged line) or refuses to open as if nothing happened — never a silent loss.
#[test]
fn a_flipped_bit_in_sleds_last_append_is_never_a_silent_loss() {
    let marker = "the last acknowledged append, 0123456789";
    let pristine = tempfile::tempdir().unwrap();
    build(pristine.path(), false, marker);
    let db = std::fs::read(pristine.path().join("db")).unwrap();
    let at = db
        .windows(marker.len())
        .rposition(|w| w == marker.as_bytes())
        .expect("the append is in sled's log file");
    let (mut lost, mut kept) = (0, 0);
    // Every offset of the marker and 64 bytes around it (the record's frame and node).
    let range = at.saturating_sub(64)..(at + marker.len() + 16).min(db.len());
    for offset in range {
        let case = tempfile::tempdir().unwrap();
        grove_tests::copy_dir(pristine.path(), case.path());
        let mut bytes = db.clone();
        bytes[offset] ^= 0x10;
        std::fs::write(case.path().join("db"), &bytes).unwrap();
        match Store::open_with(config(case.path(), false)) {
            Err(GroveError::LostWrites(l)) => {
                lost += 1;
                assert!(l.acknowledged > l.held, "offset {offset}: {l}");
                // Read-only, the store opens, says what it lost, and verify reports it.
                let ro = Store::open_with(config(case.path(), false).read_only(true)).unwrap();
                assert_eq!(ro.lost_writes(), Some(&l));
                assert!(!ro.verify().unwrap().is_ok(), "offset {offset}");
                // Sled may have dropped the append's row or only the commit's epoch after it:
                // a session that lost records is named.
                let kept_append = ro.session("victim").is_ok_and(|s| s.entries().count() == 2);
                if !kept_append {
                    assert!(
                        l.sessions.iter().any(|(s, _)| s == "victim"),
                        "offset {offset}: the loss names the session: {l}"
                    );
                }
            }
            Ok(store) => {
                kept += 1;
                // Whatever sled kept is whole: the append is there (or a read names the
                // damage), and nothing acknowledged is missing.
                let head = store.session("victim").unwrap().entries().count();
                assert_eq!(head, 2, "offset {offset}: an acknowledged append vanished");
                if let Some(texts) = victim_texts(&store) {
                    assert!(texts.last().unwrap().contains(marker), "offset {offset}");
                }
            }
            // sled itself may refuse the damaged file: an error, not a silent loss.
            Err(e) => {
                kept += 1;
                assert!(!matches!(e, GroveError::NoStore(_)), "offset {offset}: {e}");
            }
        }
    }
    assert!(
        lost > 0,
        "no flip made sled drop the append: the test did not test the loss"
    );
    assert!(lost + kept > 0);
}

fn truncated_store_says_what_it_lost(redb: bool) {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), redb, "last");
    let file = if redb { "grove.redb" } else { "db" };
    std::fs::write(dir.path().join(file), b"").unwrap();
    let err = Store::open_with(config(dir.path(), redb))
        .err()
        .expect("a store that lost its data does not open as a new one");
    let GroveError::LostWrites(lost) = &err else {
        panic!("{err}");
    };
    assert!(lost.held == 0 && lost.acknowledged > 0, "{lost}");
    assert!(
        lost.sessions
            .iter()
            .any(|(s, what)| s == "victim" && what.contains("missing")),
        "{lost}"
    );
    // Reads open it and report the loss; verify fails.
    let ro = Store::open_with(config(dir.path(), redb).read_only(true)).unwrap();
    assert_eq!(ro.lost_writes(), Some(lost));
    let report = ro.verify().unwrap();
    assert!(!report.is_ok());
    assert!(report.problems[0].what.contains("lost acknowledged writes"));
    drop(ro);
    // Deleting the data file is the same loss.
    std::fs::remove_file(dir.path().join(file)).unwrap();
    assert!(matches!(
        Store::open_with(config(dir.path(), redb)),
        Err(GroveError::LostWrites(_))
    ));
    // Accepting the loss opens the store as what it holds now (nothing), for writing.
    let store = Store::open_with(config(dir.path(), redb).accept_lost_writes(true)).unwrap();
    assert!(store.sessions().unwrap().is_empty());
    store
        .create_session(CreateSession {
            id: Some("again".into()),
            ..Default::default()
        })
        .unwrap()
        .append(user("after the loss"))
        .unwrap();
    drop(store);
    let store = Store::open_with(config(dir.path(), redb)).unwrap();
    assert_eq!(store.sessions().unwrap().len(), 1);
}

#[test]
fn a_truncated_sled_store_says_what_it_lost() {
    truncated_store_says_what_it_lost(false);
}

#[test]
fn a_truncated_redb_store_says_what_it_lost() {
    truncated_store_says_what_it_lost(true);
}

/// The record never runs ahead of the backend: a store closed after any mix of durability
/// levels, or killed before its buffered writes reached the backend, reopens clean.
#[test]
fn the_record_follows_every_durability_level() {
    for redb in [false, true] {
        for durability in [Durability::None, Durability::Group, Durability::Sync] {
            let dir = tempfile::tempdir().unwrap();
            {
                let store =
                    Store::open_with(config(dir.path(), redb).durability(durability)).unwrap();
                let s = store.create_session(CreateSession::default()).unwrap();
                for i in 0..20 {
                    s.append(user(&format!("m{i}"))).unwrap();
                }
                store.flush().unwrap();
                s.append(user("after the flush")).unwrap();
            }
            let store = Store::open_with(config(dir.path(), redb)).unwrap();
            assert!(store.lost_writes().is_none());
            assert!(store.verify().unwrap().is_ok());
        }
    }
}

/// The record is rewritten in place and cut after: a process killed between the two leaves the
/// tail of a longer record behind its checksum. The store opens (a SIGKILL of `grove serve`
/// left one that did not), and the record still tells a loss from no loss.
#[test]
fn a_record_followed_by_the_tail_of_a_longer_one_still_reads() {
    for redb in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        build(dir.path(), redb, "last");
        let record = dir.path().join("grove.commit");
        let mut bytes = std::fs::read(&record).unwrap();
        bytes.extend_from_slice(b"\x00\x00\x00\x07victim-of-an-older-record\x12\x34\x56\x78");
        std::fs::write(&record, &bytes).unwrap();
        let store = Store::open_with(config(dir.path(), redb)).unwrap();
        assert!(victim_texts(&store)
            .unwrap()
            .last()
            .unwrap()
            .contains("\"last\""));
        store
            .session("victim")
            .unwrap()
            .append(user("after"))
            .unwrap();
        drop(store);
        // With the tail, a loss is still a loss.
        let mut bytes = std::fs::read(&record).unwrap();
        bytes.extend_from_slice(b"tail of an older record");
        std::fs::write(&record, &bytes).unwrap();
        let file = if redb { "grove.redb" } else { "db" };
        std::fs::write(dir.path().join(file), b"").unwrap();
        assert!(
            matches!(
                Store::open_with(config(dir.path(), redb)),
                Err(GroveError::LostWrites(_))
            ),
            "redb: {redb}"
        );
    }
}
