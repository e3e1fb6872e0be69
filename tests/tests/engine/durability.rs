//! Durability modes, poisoning after a failed flush, optimistic appends and concurrent
//! writers.

use std::sync::atomic::Ordering;

use grove::{AppendOutcome, CreateSession, Durability, GroveError, Store, StoreConfig};

use super::faulty::Faulty;
use super::user;

#[test]
fn a_failed_flush_poisons_writes_but_not_reads() {
    let kv = Faulty::default();
    let fail = kv.fail_flush.clone();
    let store = Store::from_kv(Box::new(kv), Durability::Sync).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let first = s.append(user("kept")).unwrap();
    fail.store(true, Ordering::SeqCst);
    let err = s.append(user("lost?")).unwrap_err();
    assert!(matches!(err, GroveError::Poisoned(_)), "{err:?}");
    fail.store(false, Ordering::SeqCst);
    // Even with a healthy disk again, the store refuses writes until reopened.
    assert!(matches!(
        s.append(user("after")),
        Err(GroveError::Poisoned(_))
    ));
    assert!(matches!(
        s.move_to(Some(&first)),
        Err(GroveError::Poisoned(_))
    ));
    assert!(store.poisoned().is_some());
    assert_eq!(s.entry(&first).unwrap().id(), first, "reads still work");
    assert!(!s.build_context().unwrap().messages.is_empty());
}

#[test]
fn group_commit_acknowledges_after_a_shared_flush() {
    let kv = Faulty::default();
    let flushes = kv.flushes.clone();
    // A flush takes time, as a disk's does: appends made meanwhile share the next one.
    kv.flush_micros.store(500, Ordering::SeqCst);
    let store = Store::from_kv(Box::new(kv), Durability::Group).unwrap();
    let sessions: Vec<_> = (0..8)
        .map(|_| store.create_session(CreateSession::default()).unwrap())
        .collect();
    let before = flushes.load(Ordering::SeqCst);
    std::thread::scope(|scope| {
        for s in &sessions {
            scope.spawn(move || {
                for i in 0..25 {
                    s.append(user(&format!("m{i}"))).unwrap();
                }
            });
        }
    });
    let used = flushes.load(Ordering::SeqCst) - before;
    assert_eq!(
        sessions.iter().map(|s| s.entries().count()).sum::<usize>(),
        200
    );
    assert!(
        (1..200).contains(&used),
        "{used} flushes for 200 group-committed appends"
    );
}

#[test]
fn append_if_reports_a_moved_leaf_as_a_conflict() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let a = s.append(user("a")).unwrap();
    let AppendOutcome::Appended(b) = s.append_if(Some(&a), user("b")).unwrap() else {
        panic!()
    };
    // Another writer moves the leaf back to a.
    store.session(s.id()).unwrap().move_to(Some(&a)).unwrap();
    let out = s.append_if(Some(&b), user("c")).unwrap();
    assert_eq!(
        out,
        AppendOutcome::Conflict {
            actual_leaf: Some(a.clone())
        }
    );
    assert_eq!(s.entries().count(), 2, "nothing was written");
    assert!(matches!(
        s.append_if(None, user("d")).unwrap(),
        AppendOutcome::Conflict { .. }
    ));
}

#[test]
fn concurrent_appends_to_one_session_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open_with(StoreConfig::new(dir.path()).durability(Durability::None)).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let ids: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let s = store.session(s.id()).unwrap();
                scope.spawn(move || {
                    (0..50)
                        .map(|i| s.append(user(&format!("{t}-{i}"))).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(ids.len(), 400);
    // Serialized: one linear chain of 400 entries, every acknowledged id on it.
    let path: Vec<String> = s
        .path_to_root(None)
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(path.len(), 400);
    let on_path: std::collections::HashSet<&String> = path.iter().collect();
    assert!(ids.iter().all(|id| on_path.contains(id)));
    assert!(store.verify().unwrap().is_ok());
}
