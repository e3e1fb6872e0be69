//! Fenced commits (docs/design.md, "Fenced commits"): several stores — each what one process
//! would hold — writing the sessions of one shared backend. Here on the in-memory backend
//! playing a shared database ([`MemoryKv::new_shared`]); tests/tests/engine/postgres.rs runs
//! the same writers on PostgreSQL.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use grove::kv::{Guard, Kv, KvError, MemoryKv, WriteBatch};
use grove::{AppendOutcome, CreateSession, Durability, GroveError, Store};

use super::{texts, user};

/// A store on `kv` (another process's handle on the shared map).
fn store_on(kv: &MemoryKv) -> Store {
    Store::from_kv(Box::new(kv.handle()), Durability::None).unwrap()
}

/// The texts of the session's branch from its leaf, root first.
fn branch_texts(store: &Store, id: &str) -> Vec<String> {
    texts(&store.session(id).unwrap())
}

/// `writers` stores append `each` entries to one session at once, with `append` (`cas`:
/// with `append_if` on the leaf they read, rereading on a conflict); returns the texts every
/// writer's appends should leave, and the session's id.
pub fn concurrent_appends(
    stores: Vec<Store>,
    each: usize,
    cas: bool,
) -> (Vec<Vec<String>>, String) {
    let id = stores[0]
        .create_session(CreateSession::default())
        .unwrap()
        .id()
        .to_owned();
    let threads: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(w, store)| {
            let id = id.clone();
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for i in 0..each {
                    let text = format!("writer {w} turn {i}");
                    // A fresh handle each time, as a server opens one per request.
                    let s = store.session(&id).unwrap();
                    if cas {
                        loop {
                            let leaf = s.leaf().unwrap();
                            match s.append_if(leaf.as_deref(), user(&text)) {
                                Ok(AppendOutcome::Appended(_)) => break,
                                Ok(AppendOutcome::Conflict { .. }) => continue,
                                // Outrun FENCE_TRIES times: the caller retries.
                                Err(GroveError::Busy(_)) => continue,
                                Err(e) => panic!("{e}"),
                            }
                        }
                    } else {
                        loop {
                            match s.append(user(&text)) {
                                Ok(_) => break,
                                // Outrun FENCE_TRIES times: the caller retries.
                                Err(GroveError::Busy(_)) => continue,
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                    mine.push(text);
                }
                mine
            })
        })
        .collect();
    let written = threads.into_iter().map(|t| t.join().unwrap()).collect();
    (written, id)
}

/// Every writer's appends are on the session's one chain, each once and in the writer's
/// order: no append overwrote another, none was lost.
pub fn assert_no_lost_update(store: &Store, id: &str, written: &[Vec<String>]) {
    let chain = branch_texts(store, id);
    let total: usize = written.iter().map(Vec::len).sum();
    assert_eq!(chain.len(), total, "the chain holds every append");
    for mine in written {
        let on_chain: Vec<&String> = chain.iter().filter(|t| mine.contains(t)).collect();
        assert_eq!(on_chain.len(), mine.len());
        assert!(on_chain.iter().zip(mine).all(|(a, b)| *a == b), "in order");
    }
    let s = store.session(id).unwrap();
    assert_eq!(s.head().unwrap().entries, total as u64);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn appends_of_several_stores_land_on_one_chain() {
    let kv = MemoryKv::new_shared();
    for cas in [false, true] {
        let stores = (0..4).map(|_| store_on(&kv)).collect();
        let (written, id) = concurrent_appends(stores, 60, cas);
        assert_no_lost_update(&store_on(&kv), &id, &written);
    }
}

#[test]
fn a_store_sees_what_another_appended() {
    let kv = MemoryKv::new_shared();
    let (a, b) = (store_on(&kv), store_on(&kv));
    let sa = a.create_session(CreateSession::default()).unwrap();
    let id = sa.id().to_owned();
    let first = sa.append(user("from a")).unwrap();
    // B loads the session, then A goes on: B's reads see it.
    let sb = b.session(&id).unwrap();
    assert_eq!(sb.leaf().unwrap(), Some(first.clone()));
    let second = sa.append(user("a again")).unwrap();
    assert_eq!(sb.leaf().unwrap(), Some(second.clone()));
    assert_eq!(sb.entry(&second).unwrap().id(), second);
    // B appends on the leaf as it is, not as it last read it; A's next append, on its own
    // stale picture, is refused, reruns, and follows B's.
    let third = sb.append(user("from b")).unwrap();
    let fourth = sa.append(user("a last")).unwrap();
    assert_eq!(texts(&sa), ["from a", "a again", "from b", "a last"]);
    assert_eq!(
        sa.entry(&fourth).unwrap().parent_id().as_deref(),
        Some(third.as_str())
    );
    // An optimistic append naming the leaf another store wrote is not a conflict; naming an
    // older leaf is, and reports the real one.
    let fifth = match sb.append_if(Some(&fourth), user("b checks")).unwrap() {
        AppendOutcome::Appended(id) => id,
        other => panic!("{other:?}"),
    };
    match sa.append_if(Some(&fourth), user("stale")).unwrap() {
        AppendOutcome::Conflict { actual_leaf } => assert_eq!(actual_leaf, Some(fifth.clone())),
        other => panic!("{other:?}"),
    }
    // An exact append whose parent another store wrote.
    let line = format!(
        r#"{{"type":"message","id":"exact01","parentId":"{fifth}","timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
    );
    sa.append_exact(&line, None).unwrap();
    assert_eq!(sb.leaf().unwrap().as_deref(), Some("exact01"));
    let report = a.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// `a` and `b` append `n` entries to one session, taking turns every `stint` appends (past
/// ID_RUN_FLUSH × ID_RUN_FANOUT: runs flushed and merged inside the fenced commits of whichever
/// store appended); `fresh`, a third store, then finds every entry by its id.
pub fn alternate_and_find_every_id(a: &Store, b: &Store, fresh: &Store, n: usize, stint: usize) {
    let id = a
        .create_session(CreateSession::default())
        .unwrap()
        .id()
        .to_owned();
    let (sa, sb) = (a.session(&id).unwrap(), b.session(&id).unwrap());
    let mut ids = Vec::new();
    for i in 0..n {
        let s = if (i / stint).is_multiple_of(2) {
            &sa
        } else {
            &sb
        };
        ids.push(s.append(user(&format!("turn {i}"))).unwrap());
    }
    let s = fresh.session(&id).unwrap();
    assert_eq!(s.leaf().unwrap().as_ref(), ids.last());
    for (i, want) in ids.iter().enumerate() {
        assert_eq!(s.entry(want).unwrap().id(), want, "entry {i}");
    }
    assert_eq!(s.head().unwrap().entries, n as u64);
    let report = fresh.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn id_runs_written_by_alternating_stores_find_every_id() {
    let kv = MemoryKv::new_shared();
    alternate_and_find_every_id(&store_on(&kv), &store_on(&kv), &store_on(&kv), 1400, 37);
}

#[test]
fn sessions_created_at_once_by_several_stores_get_their_own_numbers() {
    let kv = MemoryKv::new_shared();
    // Each step starts at once in every store.
    let together = Arc::new(std::sync::Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|w| {
            let store = store_on(&kv);
            let together = together.clone();
            std::thread::spawn(move || {
                let mut made = Vec::new();
                for i in 0..50 {
                    together.wait();
                    let s = store
                        .create_session(CreateSession {
                            cwd: format!("/w{w}/{i}"),
                            ..CreateSession::default()
                        })
                        .unwrap();
                    s.append(user(&format!("{w} {i}"))).unwrap();
                    made.push((s.id().to_owned(), format!("/w{w}/{i}")));
                }
                // One id, created by every store: one of them has it.
                together.wait();
                let twice = store.create_session(CreateSession {
                    id: Some("the-same-id".into()),
                    ..CreateSession::default()
                });
                (made, twice.is_ok())
            })
        })
        .collect();
    let mut made = Vec::new();
    let mut winners = 0;
    for t in threads {
        let (m, won) = t.join().unwrap();
        made.extend(m);
        winners += usize::from(won);
    }
    assert_eq!(winners, 1, "one store created the-same-id");
    let store = store_on(&kv);
    let listed = store.sessions().unwrap();
    assert_eq!(listed.len(), made.len() + 1);
    for (id, cwd) in &made {
        let s = store.session(id).unwrap();
        assert_eq!(&s.record().cwd, cwd, "session {id} is its creator's");
        assert_eq!(s.head().unwrap().entries, 1);
    }
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// A shared map whose conditional batches are always refused, as if another process always
/// appended first.
struct Outrun {
    kv: MemoryKv,
    refused: Arc<AtomicUsize>,
}

impl Kv for Outrun {
    grove_tests::forward_reads!(kv);
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.kv.apply(batch)
    }
    fn apply_if_all(&self, _: &[Guard<'_>], _: WriteBatch) -> Result<bool, KvError> {
        self.refused.fetch_add(1, Ordering::Relaxed);
        Ok(false)
    }
    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }
    fn name(&self) -> &'static str {
        "outrun"
    }
    fn shared(&self) -> bool {
        true
    }
}

#[test]
fn a_writer_outrun_every_time_gives_up_with_busy_and_writes_nothing() {
    let kv = MemoryKv::new_shared();
    let id = {
        let store = store_on(&kv);
        let s = store.create_session(CreateSession::default()).unwrap();
        s.append(user("before")).unwrap();
        s.id().to_owned()
    };
    let refused = Arc::new(AtomicUsize::new(0));
    let outrun = Store::from_kv(
        Box::new(Outrun {
            kv: kv.handle(),
            refused: refused.clone(),
        }),
        Durability::None,
    )
    .unwrap();
    let s = outrun.session(&id).unwrap();
    match s.append(user("never")) {
        Err(GroveError::Busy(message)) => assert!(message.contains("8 times"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(refused.load(Ordering::Relaxed), 8, "tries");
    assert!(matches!(
        outrun.create_session(CreateSession::default()),
        Err(GroveError::Busy(_))
    ));
    assert_eq!(branch_texts(&store_on(&kv), &id), ["before"]);
}

#[test]
fn a_turn_taken_through_one_store_holds_the_session_for_every_store() {
    let kv = MemoryKv::new_shared();
    let (a, b) = (store_on(&kv), store_on(&kv));
    let sa = a.create_session(CreateSession::default()).unwrap();
    let first = sa.append(user("one")).unwrap();
    sa.append(user("two")).unwrap();
    let sb = b.session(sa.id()).unwrap();
    let turn = sa
        .begin_turn_for(std::time::Duration::from_secs(600))
        .unwrap();
    let lease = turn.lease().to_owned();
    // Another process: busy to move, to navigate, to take a turn; its reads and appends go on.
    assert!(sb.is_busy());
    assert!(matches!(sb.move_to(Some(&first)), Err(GroveError::Busy(_))));
    assert!(matches!(sb.begin_turn(), Err(GroveError::Busy(_))));
    assert!(matches!(
        sb.navigate(
            &first,
            &grove::NavigateOptions::default(),
            &grove::Navigator::default()
        ),
        Err(GroveError::Busy(_))
    ));
    sb.append(user("three")).unwrap();
    // The lease's token works from the other process: a holder's move, a renewal, the end.
    assert!(matches!(
        sb.move_in_turn("not-the-lease", Some(&first)),
        Err(GroveError::InvalidState(_))
    ));
    sb.move_in_turn(&lease, Some(&first)).unwrap();
    assert_eq!(sa.leaf().unwrap(), Some(first.clone()));
    assert!(sb.renew_turn(&lease).unwrap());
    assert!(sb.end_turn(&lease).unwrap());
    assert!(!sa.is_busy());
    assert!(!sb.end_turn(&lease).unwrap(), "ended once");
    drop(turn);
    sb.move_to(None).unwrap();
    // A turn whose holder stopped renewing it expires, and the session is free again.
    let short = sa
        .begin_turn_for(std::time::Duration::from_millis(50))
        .unwrap();
    assert!(sb.is_busy());
    std::thread::sleep(std::time::Duration::from_millis(120));
    assert!(!sb.is_busy());
    assert!(!sb.renew_turn(short.lease()).unwrap(), "expired");
    let taken = sb.begin_turn().unwrap();
    drop(short);
    assert!(
        sa.is_busy(),
        "the expired guard's drop leaves the new turn alone"
    );
    drop(taken);
    assert!(!sa.is_busy());
}

#[test]
fn of_stores_taking_a_turn_at_once_one_gets_it() {
    let kv = MemoryKv::new_shared();
    let id = store_on(&kv)
        .create_session(CreateSession::default())
        .unwrap()
        .id()
        .to_owned();
    for _ in 0..20 {
        let together = Arc::new(std::sync::Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let s = store_on(&kv).session(&id).unwrap();
                let together = together.clone();
                std::thread::spawn(move || {
                    together.wait();
                    s.begin_turn().ok().map(|guard| guard.detach())
                })
            })
            .collect();
        let won: Vec<String> = threads
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(won.len(), 1, "one turn");
        assert!(store_on(&kv)
            .session(&id)
            .unwrap()
            .end_turn(&won[0])
            .unwrap());
    }
}
