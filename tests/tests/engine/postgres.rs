//! The PostgreSQL backend against a real server (`GROVE_TEST_PG`, see `grove_tests::pg`):
//! the key-value interface against the in-memory one on random batches, the engine's model
//! test, and every pi-oracle fixture imported, exported and reopened byte for byte.

use grove::kv::{Kv, KvError, MemoryKv, PostgresKv, WriteBatch, PAGE_ROWS};
use grove::{Durability, Flavor, ImportOptions, Store, StoreConfig};
use grove_tests::pg::Table;
use proptest::prelude::*;

use super::redb::all;

#[test]
fn the_kv_matches_memory_on_random_batches_and_long_scans() {
    let Some(table) = Table::new("kv") else {
        return;
    };
    let pg = PostgresKv::open(&table.url, &table.name).unwrap();
    super::redb::check_against_memory(&pg);
    // Ranges longer than a scan page, both ways, and floor lookups, on a table of their own.
    let Some(table) = Table::new("pages") else {
        return;
    };
    let pg = PostgresKv::open(&table.url, &table.name).unwrap();
    let memory = MemoryKv::new();
    let mut batch = WriteBatch::new();
    for i in 0..(PAGE_ROWS as u32 * 2 + 7) {
        batch.put(
            [b"bulk".as_slice(), &i.to_be_bytes()].concat(),
            vec![(i % 251) as u8; 3],
        );
    }
    pg.apply(batch.clone()).unwrap();
    memory.apply(batch).unwrap();
    for rev in [false, true] {
        let got = all(&pg, b"bulk", b"bulk\xff", rev);
        assert_eq!(got.len(), PAGE_ROWS as usize * 2 + 7);
        assert_eq!(got, all(&memory, b"bulk", b"bulk\xff", rev), "rev {rev}");
    }
    let mut rng = super::redb::Rng(7);
    for _ in 0..50 {
        let (a, b) = (rng.key(), rng.key());
        let last = |kv: &dyn Kv| {
            let mut found = None;
            kv.read_last(&a, &b, &mut |k, v| found = Some((k.to_vec(), v.to_vec())))
                .unwrap();
            found
        };
        assert_eq!(last(&pg), last(&memory), "[{a:?}, {b:?})");
    }
    // A second connection (another process would use one) sees every batch.
    let again = PostgresKv::open(&table.url, &table.name).unwrap();
    assert_eq!(
        all(&again, &[], &[0xff; 8], false),
        all(&memory, &[], &[0xff; 8], false)
    );
}

#[test]
fn the_last_operation_on_a_key_wins_within_a_batch() {
    let Some(table) = Table::new("last") else {
        return;
    };
    let pg = PostgresKv::open(&table.url, &table.name).unwrap();
    let mut batch = WriteBatch::new();
    batch.put(b"a".to_vec(), b"1".to_vec());
    batch.delete(b"a".to_vec());
    batch.put(b"b".to_vec(), b"1".to_vec());
    batch.put(b"b".to_vec(), b"2".to_vec());
    batch.delete(b"c".to_vec());
    batch.put(b"c".to_vec(), b"3".to_vec());
    pg.apply(batch).unwrap();
    assert_eq!(pg.get(b"a").unwrap(), None);
    assert_eq!(pg.get(b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(pg.get(b"c").unwrap(), Some(b"3".to_vec()));
}

#[test]
fn a_bad_table_name_or_server_is_an_error_not_a_panic() {
    let Some(table) = Table::new("bad") else {
        return;
    };
    for name in ["x;drop table t", "Upper", "", "1abc"] {
        let err = PostgresKv::open(&table.url, name).err().expect("refused");
        assert!(err.to_string().contains("table name"), "{err}");
    }
    // No server: worth trying again later.
    let err = PostgresKv::open("postgres://postgres@127.0.0.1:1/none", "t")
        .err()
        .expect("refused");
    assert!(matches!(err, KvError::Unavailable(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("postgres unavailable: error connecting"),
        "{err}"
    );
    // A server that refuses the database: trying again does not help.
    let url = match table.url.rsplit_once('/') {
        Some((server, _)) => format!("{server}/grove_no_such_database"),
        None => panic!("{}: no database in the url", table.url),
    };
    let err = PostgresKv::open(&url, "t").err().expect("refused");
    assert!(matches!(err, KvError::Postgres(_)), "{err:?}");
    assert!(err.to_string().contains("grove_no_such_database"), "{err}");
    let err = grove::GroveError::from(err);
    assert_eq!((err.code(), err.name()), ("storage", "Storage"));
    let err = grove::GroveError::from(KvError::Unavailable("gone".into()));
    assert_eq!((err.code(), err.name()), ("unavailable", "Unavailable"));
}

#[test]
fn every_fixture_round_trips_and_survives_a_reopen() {
    let Some(table) = Table::new("fixtures") else {
        return;
    };
    let config = || {
        StoreConfig::new("")
            .backend(table.backend())
            .durability(Durability::Sync)
    };
    let memory = Store::in_memory().unwrap();
    let mut exported = Vec::new();
    {
        let store = Store::open_with(config()).unwrap();
        assert_eq!(store.backend_name(), "postgres");
        let dir = grove_tests::oracle::fixtures_dir();
        for case in grove_tests::oracle::discover(&dir).unwrap() {
            let options = || ImportOptions {
                strictness: grove::Strictness::Lenient,
                ..ImportOptions::default()
            };
            let (Ok(got), Ok(want)) = (
                store.import_file(&case.jsonl, options()),
                memory.import_file(&case.jsonl, options()),
            ) else {
                continue;
            };
            let (s, m) = (
                store.session(&got.session).unwrap(),
                memory.session(&want.session).unwrap(),
            );
            let export = |s: &grove::Session| {
                let mut out = Vec::new();
                s.export(Flavor::Harness, &mut out).unwrap();
                out
            };
            // Legacy files get ids at import (random): byte equality holds for the others.
            if export(&m) == std::fs::read(&case.jsonl).unwrap() {
                assert_eq!(
                    String::from_utf8_lossy(&export(&s)),
                    String::from_utf8_lossy(&export(&m)),
                    "{}",
                    case.name
                );
            }
            assert_eq!(s.log().count(), m.log().count(), "{}", case.name);
            assert_eq!(
                s.build_context().map(|c| c.to_json()).ok(),
                m.build_context().map(|c| c.to_json()).ok(),
                "{}",
                case.name
            );
            exported.push((got.session.clone(), export(&s)));
        }
        assert!(exported.len() >= 20, "{} fixtures", exported.len());
    }
    let store = Store::open_with(config()).unwrap();
    for (id, bytes) in &exported {
        let mut out = Vec::new();
        store
            .session(id)
            .unwrap()
            .export(Flavor::Harness, &mut out)
            .unwrap();
        assert!(&out == bytes, "{id} changed after reopening");
    }
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn writes_at_no_durability_reach_the_database_when_the_store_closes() {
    let Some(table) = Table::new("buffered") else {
        return;
    };
    let config = |durability| {
        StoreConfig::new("")
            .backend(table.backend())
            .durability(durability)
    };
    let id = {
        let store = Store::open_with(config(Durability::None)).unwrap();
        let s = store
            .create_session(grove::CreateSession::default())
            .unwrap();
        super::seed(&s);
        s.id().to_owned()
    };
    let store = Store::open_with(config(Durability::Group)).unwrap();
    let s = store.session(&id).unwrap();
    assert_eq!(
        super::texts(&s),
        ["user 1", "assistant 1", "plan B", "assistant B"]
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_the_model_on_postgres(ops in proptest::collection::vec(super::model::op(), 1..40)) {
        let Some(table) = Table::new("model") else {
            return Ok(());
        };
        super::model::run_on(ops, || {
            StoreConfig::new("").backend(table.backend()).durability(Durability::None)
        })?;
    }
}

#[test]
fn a_conditional_batch_applies_only_while_its_guard_holds() {
    let Some(table) = Table::new("guard") else {
        return;
    };
    let pg = PostgresKv::open(&table.url, &table.name).unwrap();
    let memory = MemoryKv::new();
    for kv in [&pg as &dyn Kv, &memory] {
        let put = |k: &[u8], v: &[u8]| {
            let mut b = WriteBatch::new();
            b.put(k.to_vec(), v.to_vec());
            b
        };
        // Absent expected, absent found: applied.
        assert!(
            kv.apply_if(b"head", None, put(b"head", b"1")).unwrap(),
            "{}",
            kv.name()
        );
        // Absent expected, present found: refused, nothing written.
        assert!(!kv.apply_if(b"head", None, put(b"x", b"1")).unwrap());
        assert_eq!(kv.get(b"x").unwrap(), None);
        // A stale value: refused.
        assert!(!kv
            .apply_if(b"head", Some(b"0"), put(b"head", b"2"))
            .unwrap());
        assert_eq!(kv.get(b"head").unwrap(), Some(b"1".to_vec()));
        // The current value: applied, deletes included.
        let mut b = put(b"head", b"2");
        b.delete(b"head-old".to_vec());
        b.put(b"y".to_vec(), b"1".to_vec());
        assert!(kv.apply_if(b"head", Some(b"1"), b).unwrap());
        assert_eq!(kv.get(b"head").unwrap(), Some(b"2".to_vec()));
        assert_eq!(kv.get(b"y").unwrap(), Some(b"1".to_vec()));
        // Several guards: applied only when every one holds (a commit's log key and lease).
        let both = |lease: Option<&'static [u8]>| {
            [(b"log-7".as_slice(), None), (b"lease".as_slice(), lease)]
        };
        assert!(!kv
            .apply_if_all(&both(Some(b"t1")), put(b"log-7", b"a"))
            .unwrap());
        assert!(kv.apply_if_all(&both(None), put(b"lease", b"t1")).unwrap());
        assert!(!kv.apply_if_all(&both(None), put(b"log-7", b"a")).unwrap());
        assert_eq!(kv.get(b"log-7").unwrap(), None, "{}", kv.name());
        assert!(kv
            .apply_if_all(&both(Some(b"t1")), put(b"log-7", b"a"))
            .unwrap());
        assert!(!kv
            .apply_if_all(&both(Some(b"t1")), put(b"log-7", b"b"))
            .unwrap());
        assert_eq!(kv.get(b"log-7").unwrap(), Some(b"a".to_vec()));
    }
}

#[test]
fn conditional_batches_fence_writers_of_two_processes() {
    // Two backends on one table stand for two grove processes; each has writers that read
    // a counter and write it plus one, with a record of their own, guarded by the value they
    // read. Every applied batch must be counted once: no update is lost.
    let Some(table) = Table::new("fence") else {
        return;
    };
    let a = std::sync::Arc::new(PostgresKv::open(&table.url, &table.name).unwrap());
    let b = std::sync::Arc::new(PostgresKv::open(&table.url, &table.name).unwrap());
    const WRITERS: usize = 6;
    const EACH: u64 = 25;
    let refused = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for w in 0..WRITERS {
            let kv = if w % 2 == 0 { a.clone() } else { b.clone() };
            let refused = &refused;
            scope.spawn(move || {
                for i in 0..EACH {
                    loop {
                        let seen = kv.get(b"counter").unwrap();
                        let n = seen
                            .as_deref()
                            .map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap()));
                        let mut batch = WriteBatch::new();
                        batch.put(b"counter".to_vec(), (n + 1).to_be_bytes().to_vec());
                        batch.put(format!("w{w}-{i}").into_bytes(), n.to_be_bytes().to_vec());
                        if kv.apply_if(b"counter", seen.as_deref(), batch).unwrap() {
                            break;
                        }
                        refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let total = WRITERS as u64 * EACH;
    let counter = a.get(b"counter").unwrap().unwrap();
    assert_eq!(u64::from_be_bytes(counter.try_into().unwrap()), total);
    // Each record saw a distinct counter value: 0..total, once each.
    let mut seen: Vec<u64> = all(&*b, b"w", b"x", false)
        .into_iter()
        .map(|(_, v)| u64::from_be_bytes(v.try_into().unwrap()))
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..total).collect::<Vec<_>>());
    eprintln!(
        "{total} guarded increments, {} refused and retried",
        refused.load(std::sync::atomic::Ordering::Relaxed)
    );
}

#[test]
fn an_append_costs_one_round_trip() {
    let Some(table) = Table::new("trips") else {
        return;
    };
    let memory = Store::open_with(StoreConfig::new("").backend(grove::Backend::Memory)).unwrap();
    assert_eq!(
        memory.round_trips(),
        None,
        "an embedded backend has no round trips"
    );
    let config = || {
        StoreConfig::new("")
            .backend(table.backend())
            .durability(Durability::Sync)
    };
    let store = Store::open_with(config()).unwrap();
    let s = store
        .create_session(grove::CreateSession::default())
        .unwrap();
    super::seed(&s);
    // Once the session's state is loaded, an append is its one conditional-free batch; so is a
    // leaf move. (Every 256th append also writes its id run: ID_RUN_FLUSH.)
    let mut costs = Vec::new();
    for i in 0..200 {
        let before = store.round_trips().unwrap();
        s.append(super::user(&format!("turn {i}"))).unwrap();
        costs.push(store.round_trips().unwrap() - before);
    }
    assert_eq!(costs, vec![1; 200], "round trips of each append");
    // Opened by id for each append, as a server does: still one with `session_for_write`
    // (the commit checks the catalogue row), two with `session` (which reads it first).
    let id = s.id().to_owned();
    store.session_for_write(&id).unwrap();
    let mut by_id = Vec::new();
    for (i, write) in [true, true, true, false, false].into_iter().enumerate() {
        let before = store.round_trips().unwrap();
        let opened = if write {
            store.session_for_write(&id)
        } else {
            store.session(&id)
        };
        opened
            .unwrap()
            .append(super::user(&format!("by id {i}")))
            .unwrap();
        by_id.push(store.round_trips().unwrap() - before);
    }
    assert_eq!(by_id, [1, 1, 1, 2, 2], "round trips of appends by id");
    // A session this store created is known from the start: its first append is one too.
    let before = store.round_trips().unwrap();
    let created = store
        .create_session(grove::CreateSession::default())
        .unwrap();
    let creation = store.round_trips().unwrap() - before;
    let before = store.round_trips().unwrap();
    store
        .session_for_write(created.id())
        .unwrap()
        .append(super::user("first"))
        .unwrap();
    let first = store.round_trips().unwrap() - before;
    assert_eq!(first, 1, "the first append of a session this store created");
    assert!(
        creation <= 2,
        "creating a session took {creation} round trips"
    );
    let last = s.leaf().unwrap();
    let before = store.round_trips().unwrap();
    s.move_to(None).unwrap();
    s.move_to(last.as_deref()).unwrap();
    assert_eq!(store.round_trips().unwrap() - before, 2, "two leaf moves");
    let long = s.id().to_owned();
    let short = store
        .create_session(grove::CreateSession::default())
        .unwrap();
    super::seed(&short);
    let short = short.id().to_owned();
    drop(s);
    drop(store);

    // Finding where a session goes on, in a fresh process: the same few reads whatever its
    // length.
    let resume = |id: &str| {
        let store = Store::open_with(config()).unwrap();
        let before = store.round_trips().unwrap();
        let leaf = store.session(id).unwrap().leaf().unwrap();
        (store.round_trips().unwrap() - before, leaf)
    };
    let (long_cost, leaf) = resume(&long);
    assert_eq!(leaf, last);
    let (short_cost, _) = resume(&short);
    // (A fold of the records after the stored head checkpoint may take one more page.)
    assert!(
        long_cost <= short_cost + 1,
        "round trips to the leaf: {long_cost} for 206 entries, {short_cost} for 6"
    );
}

#[test]
fn a_broken_connection_fails_one_operation_and_the_store_goes_on() {
    let Some(table) = Table::new("transient") else {
        return;
    };
    // The store's connections carry a name of their own, so that only they are cut.
    let app = format!("grove_transient_{}", std::process::id());
    let sep = if table.url.contains('?') { '&' } else { '?' };
    let backend = grove::Backend::Postgres {
        url: format!("{}{sep}application_name={app}", table.url),
        table: table.name.clone(),
    };
    let config = StoreConfig::new("")
        .backend(backend)
        .durability(Durability::Sync);
    let store = Store::open_with(config).unwrap();
    let s = store
        .create_session(grove::CreateSession::default())
        .unwrap();
    super::seed(&s);
    // The server drops them (as a restart or a failover does).
    let mut admin = postgres::Client::connect(&table.url, postgres::NoTls).unwrap();
    let cut = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .unwrap();
    assert!(cut >= 1, "the store holds a connection");
    for _ in 0..500 {
        let left: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&app],
            )
            .unwrap()
            .get(0);
        if left == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let err = s.append(super::user("refused")).unwrap_err();
    assert!(
        matches!(err, grove::GroveError::Storage(KvError::Unavailable(_))),
        "{err}"
    );
    // Not poisoned: the next operation reconnects, reloads the session and writes.
    s.append(super::user("after")).unwrap();
    assert_eq!(
        super::texts(&s),
        ["user 1", "assistant 1", "plan B", "assistant B", "after"]
    );
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn stores_of_several_processes_append_to_one_session_without_losing_one() {
    // Each store has its own connections, as each process would: their commits are fenced by
    // the database (docs/design.md, "Fenced commits").
    let Some(table) = Table::new("fenced") else {
        return;
    };
    let open = || table.open_sync();
    for cas in [false, true] {
        let stores = (0..3).map(|_| open()).collect();
        let (written, id) = super::fenced::concurrent_appends(stores, 40, cas);
        super::fenced::assert_no_lost_update(&open(), &id, &written);
    }
    // Past an id run's flush and a merge, alternating between two stores.
    super::fenced::alternate_and_find_every_id(&open(), &open(), &open(), 1100, 50);
}

#[test]
fn sessions_appended_at_once_through_one_store_are_not_refused() {
    // Each session has one writer: no commit meets a real conflict, so none may be refused
    // (a serializable check of the guard refused those whose rows shared an index page).
    let Some(table) = Table::new("claims") else {
        return;
    };
    let store = table.open_sync();
    let threads: Vec<_> = (0..24)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                let s = store
                    .create_session(grove::CreateSession::default())
                    .unwrap();
                for i in 0..25 {
                    s.append(super::user(&format!("{w} {i}"))).unwrap();
                }
                s.id().to_owned()
            })
        })
        .collect();
    for t in threads {
        let id = t.join().unwrap();
        assert_eq!(store.session(&id).unwrap().head().unwrap().entries, 25);
    }
}

#[test]
fn processes_opening_a_new_table_at_once_all_open_it() {
    let Some(table) = Table::new("race") else {
        return;
    };
    for round in 0..5 {
        let name = format!("{}_{round}", table.name);
        let together = std::sync::Arc::new(std::sync::Barrier::new(6));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (url, name, together) = (table.url.clone(), name.clone(), together.clone());
                std::thread::spawn(move || {
                    together.wait();
                    PostgresKv::open(&url, &name).map(drop)
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let mut admin = postgres::Client::connect(&table.url, postgres::NoTls).unwrap();
        admin.batch_execute(&format!("DROP TABLE {name}")).unwrap();
    }
}

#[test]
fn sessions_created_at_once_through_several_stores_are_all_created() {
    let Some(table) = Table::new("creators") else {
        return;
    };
    let together = std::sync::Arc::new(std::sync::Barrier::new(3));
    let threads: Vec<_> = (0..3)
        .map(|w| {
            let store = Store::open_with(StoreConfig::new("").backend(table.backend())).unwrap();
            let together = together.clone();
            std::thread::spawn(move || {
                together.wait();
                (0..40)
                    .map(|i| {
                        let s = store
                            .create_session(grove::CreateSession::default())
                            .unwrap();
                        s.append(super::user(&format!("{w} {i}"))).unwrap();
                        s.id().to_owned()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let made: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let store = Store::open_with(StoreConfig::new("").backend(table.backend())).unwrap();
    assert_eq!(store.sessions().unwrap().len(), made.len());
    for id in &made {
        assert_eq!(store.session(id).unwrap().head().unwrap().entries, 1);
    }
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn a_session_deleted_through_another_store_takes_no_more_commits() {
    let Some(table) = Table::new("deleted") else {
        return;
    };
    let open = || table.open_sync();
    let (a, b) = (open(), open());
    let mut sql = postgres::Client::connect(&table.url, postgres::NoTls).unwrap();
    let rows = |sql: &mut postgres::Client| -> i64 {
        sql.query_one(&format!("SELECT count(*) FROM {}", table.name), &[])
            .unwrap()
            .get(0)
    };
    let id = "deleted-elsewhere";
    let created = a
        .create_session(grove::CreateSession {
            id: Some(id.into()),
            ..Default::default()
        })
        .unwrap();
    super::seed(&created);
    // b writes it, and remembers it.
    b.session_for_write(id)
        .unwrap()
        .append(super::user("from b"))
        .unwrap();
    let listed = sql
        .query_one(
            &format!("SELECT v FROM {} WHERE k = $1", table.name),
            &[&grove::keys::session_id(id)],
        )
        .unwrap()
        .get::<_, Vec<u8>>(0);
    let sid = u64::from_be_bytes(listed.try_into().unwrap());
    // b keeps appending while a deletes it: every append b had acknowledged before the
    // deletion is gone with it, and none lands after (no row of the session is left).
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for i in 0..5_000 {
                let appended = b
                    .session_for_write(id)
                    .and_then(|s| s.append(super::user(&format!("{i}"))));
                match appended {
                    Ok(_) => {}
                    Err(grove::GroveError::SessionNotFound(_)) => return i,
                    Err(e) => panic!("append {i}: {e}"),
                }
            }
            panic!("5,000 appends through b acknowledged after a deleted the session");
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        a.delete_session(id).unwrap();
        let acknowledged = writer.join().unwrap();
        eprintln!("{acknowledged} appends through b before it found the session deleted");
    });
    for tag in grove::keys::SESSION_TABLES {
        let start = grove::keys::session_prefix(tag, sid);
        let end = grove::keys::prefix_end(&start);
        let n: i64 = sql
            .query_one(
                &format!(
                    "SELECT count(*) FROM {} WHERE k >= $1 AND k < $2",
                    table.name
                ),
                &[&start, &end],
            )
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "rows of table {tag:#04x} of the deleted session");
    }
    let left = rows(&mut sql);
    // Through b's memory of it, still nothing lands.
    let err = b
        .session_for_write(id)
        .and_then(|s| s.append(super::user("late")))
        .unwrap_err();
    assert!(
        matches!(err, grove::GroveError::SessionNotFound(_)),
        "{err}"
    );
    assert_eq!(rows(&mut sql), left, "a commit landed after the deletion");
    let fresh = open();
    assert!(fresh.sessions().unwrap().is_empty());
    assert!(fresh.verify().unwrap().is_ok());
    // The id made again: b finds the new session and writes it.
    a.create_session(grove::CreateSession {
        id: Some(id.into()),
        ..Default::default()
    })
    .unwrap();
    b.session_for_write(id)
        .unwrap()
        .append(super::user("to the new one"))
        .unwrap();
    assert_eq!(super::texts(&a.session(id).unwrap()), ["to the new one"]);
}

/// Redaction is refused on a store processes share: another process's caches would keep the
/// old line (docs/design.md, "Redaction"); nothing is written.
/// The text of the context another process's store builds (through its view cache).
fn context_text(s: &grove::Session) -> String {
    s.build_context().unwrap().messages.concat()
}

/// The bytes of the table's files (heap and TOAST), read after a checkpoint wrote every
/// page out; `None` when the server's data directory is not readable from here.
fn table_files(table: &Table) -> Option<Vec<u8>> {
    let mut client = postgres::Client::connect(&table.url, postgres::NoTls).ok()?;
    client.batch_execute("CHECKPOINT").ok()?;
    let dir: String = client.query_one("SHOW data_directory", &[]).ok()?.get(0);
    let files: Vec<String> = client
        .query(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.relname = $1 \
             UNION ALL SELECT pg_relation_filepath(c.reltoastrelid) FROM pg_class c \
             WHERE c.relname = $1 AND c.reltoastrelid <> 0",
            &[&table.name],
        )
        .ok()?
        .into_iter()
        .filter_map(|row| row.get::<_, Option<String>>(0))
        .collect();
    let mut bytes = Vec::new();
    for file in files {
        bytes.extend(std::fs::read(std::path::Path::new(&dir).join(file)).ok()?);
    }
    Some(bytes)
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Redaction on a store processes share: another process's cached context and reads show
/// the marker at once, its stale view is neither served nor written back, both verify; the
/// old row version the UPDATE left in the table's files is gone after `gc`, which rewrites
/// the table (VACUUM FULL).
#[test]
fn a_redaction_reaches_other_processes_and_gc_rewrites_the_table() {
    let Some(table) = Table::new("redact") else {
        return;
    };
    let a = table.open_sync().with_actor("auditor");
    let b = table.open_sync();
    let sa = a.create_session(grove::CreateSession::default()).unwrap();
    sa.append(super::user("first")).unwrap();
    let secret = format!("pgsecret{}x", std::process::id());
    let id = sa
        .append(super::user(&format!("the key is {secret}")))
        .unwrap();
    sa.append(super::user("after")).unwrap();
    let seal = sa.seal().unwrap().digest;
    // The other process reads the context (its view is cached) and writes on (its view is
    // due to be persisted with its writes).
    let sb = b.session(sa.id()).unwrap();
    assert!(context_text(&sb).contains(&secret));
    for i in 0..3 {
        sb.append(super::user(&format!("b {i}"))).unwrap();
        assert!(context_text(&sb).contains(&secret));
    }
    sa.redact(&id, None, "leaked key").unwrap();
    // The other process: its cached view is dropped; the context, the entry and the export
    // hold the marker.
    let ctx = context_text(&sb);
    assert!(
        !ctx.contains(&secret) && ctx.contains("[redacted]"),
        "{ctx}"
    );
    assert!(sb.entry(&id).unwrap().line.contains("[redacted]"));
    let mut export = Vec::new();
    sb.export(Flavor::Harness, &mut export).unwrap();
    assert!(!holds(&export, &secret));
    // Its writes go on, and write no stale copy back.
    let mut written = Vec::new();
    for i in 0..70 {
        written.push(sb.append(super::user(&format!("b after {i}"))).unwrap());
        assert!(!context_text(&sb).contains(&secret));
    }
    // It persisted its view again (the redaction deleted the one stored), from the redacted
    // line, and again as it went on writing (every 64 extensions).
    let sid = super::sid_of(&b, sa.id());
    let view = b.kv().get(&grove::keys::view(sid)).unwrap();
    let view: grove::codec::record::ViewRecord =
        grove::codec::record::decode(&view.expect("a persisted view")).unwrap();
    assert!(
        view.leaf >= sb.entry(&written[60]).unwrap().seq,
        "the writer persists its view as it goes on"
    );
    let fresh = table.open_sync();
    let sf = fresh.session(sa.id()).unwrap();
    assert!(!context_text(&sf).contains(&secret));
    // The redaction is an operation; the seal taken before still holds; both verify.
    assert_eq!(sb.redactions().unwrap().len(), 1);
    assert!(
        matches!(
            sb.check_seal(&seal).unwrap(),
            grove::SealCheck::Extends { .. }
        ),
        "the seal taken before holds"
    );
    for store in [&a, &b] {
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
        assert_eq!(report.redacted, 1);
    }
    // The old row version stays in the table's pages until it is vacuumed (unless a page
    // prune happens to overwrite it): gc rewrites the table into new files.
    let filenode = || -> i64 {
        let mut client = postgres::Client::connect(&table.url, postgres::NoTls).unwrap();
        let row = client
            .query_one(
                "SELECT pg_relation_filenode($1::text::regclass)::int8",
                &[&table.name],
            )
            .unwrap();
        row.get(0)
    };
    let before = filenode();
    let report = a.gc().unwrap();
    assert_ne!(filenode(), before, "the table was rewritten into new files");
    assert!(
        report.backend_compacted && !report.rewrite_due,
        "{report:?}"
    );
    assert!(
        !a.gc().unwrap().backend_compacted,
        "not again until a redaction asks"
    );
    if let Some(files) = table_files(&table) {
        assert!(
            !holds(&files, &secret),
            "the table's files still hold the secret"
        );
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs PostgreSQL where it can read it"
        );
    }
    assert!(!context_text(&sb).contains(&secret));
    assert!(b.verify().unwrap().is_ok());
}
