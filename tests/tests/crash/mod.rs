//! Crash safety with real processes: `grove-crash-child` works on a store and is killed
//! with SIGKILL at random moments, 50 times on the same directory; after each kill the
//! store must reopen with every acknowledged write, interrupted forks, imports and
//! deletions whole or absent, and every index and digest chain sound
//! (`grove_tests::crash`). The checker's own tests below show that it does report a
//! missing acknowledged entry and the other failures it exists for.
//!
//! `GROVE_CRASH_CYCLES` and `GROVE_CRASH_SEED` override the cycle count and the seed;
//! `cargo run -p grove-tests --release --bin grove-crash-harness -- --cycles 1000` runs more.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use grove::{AppendOptions, CreateSession, Durability, ForkOptions, NewEntry, Store, StoreConfig};
use grove_tests::crash::check::{check_store, orphan_rows, Baseline, ImportBody};
use grove_tests::crash::protocol::{user_message, Event, LogHash};
use grove_tests::crash::{run_cycles_with, Config, Mode};

/// The child binary. Cargo builds a package's binaries, with the test's own profile, before
/// the package's integration tests and tells them where (`CARGO_BIN_EXE_<name>`), so no
/// nested `cargo build` is needed (the grove binary of `cli/` lives in another package).
fn child_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_grove-crash-child"));
        assert!(bin.is_file(), "{} was not built", bin.display());
        bin
    })
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn crash_cycles(backend: &str, default_cycles: u64) {
    let cycles = env_u64("GROVE_CRASH_CYCLES").unwrap_or(default_cycles) as u32;
    let seed = env_u64("GROVE_CRASH_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(
        &dir.path().join("store"),
        cycles,
        seed,
        Mode::All,
        child_bin().to_owned(),
    );
    config.backend = backend.to_owned();
    // Debug builds import slower; a smaller file still spans several write batches.
    config.import_lines = 4000;
    match run_cycles_with(&config) {
        Ok(report) => {
            println!("{backend}: {report}\nseed {seed}");
            assert_eq!(report.cycles, cycles);
            assert!(report.checks >= 1);
            assert_eq!(report.per_mode.len(), 4.min(cycles as usize));
        }
        Err(e) => panic!(
            "crash harness on {backend} failed (seed {seed}, GROVE_CRASH_SEED reruns it):\n{e}"
        ),
    }
}

/// sled, the default backend: 50 kill cycles across appends, moves, forks and imports.
#[test]
fn crash_cycles_across_modes_keep_every_acknowledged_write() {
    crash_cycles("sled", 50);
}

/// The same harness on the redb backend.
#[test]
fn crash_cycles_on_redb_keep_every_acknowledged_write() {
    crash_cycles("redb", 50);
}

/// A store with one append-family session and what a child would have printed for it.
struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    events: Vec<Event>,
}

fn user(text: &str) -> NewEntry {
    NewEntry::Message {
        message: user_message(text).unwrap(),
    }
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open_with(StoreConfig::new(dir.path().join("store")).durability(Durability::Sync))
            .unwrap();
    let sid = "ap-c000000-n0";
    let mut events = vec![Event::CreateIntent {
        session: sid.into(),
    }];
    let s = store
        .create_session(CreateSession {
            id: Some(sid.into()),
            cwd: "/crash".into(),
            ..CreateSession::default()
        })
        .unwrap();
    events.push(Event::CreateAck {
        session: sid.into(),
    });
    for k in 0..5 {
        let id = format!("c000000t0n{k}");
        events.push(Event::AppendIntent {
            session: sid.into(),
            id: id.clone(),
        });
        s.append_with(
            user(&format!("message {k}")),
            AppendOptions {
                id: Some(id.clone()),
                ..AppendOptions::default()
            },
        )
        .unwrap();
        events.push(Event::AppendAck {
            session: sid.into(),
            id: id.clone(),
            len: s.head().unwrap().next_seq,
            line: s.entry(&id).unwrap().line,
        });
    }
    Fixture {
        _dir: dir,
        store,
        events,
    }
}

fn problems(f: &Fixture, events: Vec<Event>) -> Vec<String> {
    check_store(
        &f.store,
        &Baseline::new(),
        &[events],
        &ImportBody::new(&[]),
        true,
    )
    .problems
}

fn assert_reported(problems: &[String], needles: &[&str]) {
    assert!(
        problems
            .iter()
            .any(|p| needles.iter().all(|n| p.contains(n))),
        "expected a problem mentioning {needles:?}, got {problems:#?}"
    );
}

#[test]
fn crash_checker_accepts_a_store_that_matches_the_acknowledgements() {
    let f = fixture();
    let outcome = check_store(
        &f.store,
        &Baseline::new(),
        std::slice::from_ref(&f.events),
        &ImportBody::new(&[]),
        true,
    );
    assert_eq!(outcome.problems, Vec::<String>::new());
    assert_eq!(outcome.stats.acked_entries, 5);
    assert_eq!(outcome.baseline["ap-c000000-n0"].len, 5);
    assert_eq!(orphan_rows(&f.store), Vec::<String>::new());
}

#[test]
fn crash_checker_reports_an_acknowledged_entry_that_was_never_written() {
    let f = fixture();
    let mut events = f.events.clone();
    let Some(Event::AppendAck { line, .. }) = events.last().cloned() else {
        panic!("fixture ends with an ack");
    };
    events.push(Event::AppendIntent {
        session: "ap-c000000-n0".into(),
        id: "ghost".into(),
    });
    events.push(Event::AppendAck {
        session: "ap-c000000-n0".into(),
        id: "ghost".into(),
        len: 6,
        line: line.replace("c000000t0n4", "ghost"),
    });
    assert_reported(&problems(&f, events), &["ghost", "missing"]);
}

#[test]
fn crash_checker_reports_an_acknowledged_entry_with_other_bytes() {
    let f = fixture();
    let mut events = f.events.clone();
    if let Some(Event::AppendAck { line, .. }) = events.last_mut() {
        *line = line.replace("message 4", "message four");
    }
    assert_reported(&problems(&f, events), &["c000000t0n4", "has line"]);
}

#[test]
fn crash_checker_reports_entries_and_sessions_no_child_announced() {
    let f = fixture();
    let s = f.store.session("ap-c000000-n0").unwrap();
    s.append(user("nobody announced me")).unwrap();
    f.store
        .create_session(CreateSession {
            id: Some("ap-c999999-n0".into()),
            ..CreateSession::default()
        })
        .unwrap();
    let p = problems(&f, f.events.clone());
    assert_reported(&p, &["phantom entry"]);
    assert_reported(&p, &["ap-c999999-n0", "phantom session"]);
}

#[test]
fn crash_checker_reports_a_missing_acknowledged_session() {
    let f = fixture();
    let mut events = f.events.clone();
    events.push(Event::CreateIntent {
        session: "ap-c000000-n1".into(),
    });
    events.push(Event::CreateAck {
        session: "ap-c000000-n1".into(),
    });
    assert_reported(&problems(&f, events), &["ap-c000000-n1", "missing"]);
}

#[test]
fn crash_checker_reports_a_leaf_that_no_acknowledged_move_explains() {
    let f = fixture();
    let s = f
        .store
        .create_session(CreateSession {
            id: Some("mv-t0-c000000".into()),
            ..CreateSession::default()
        })
        .unwrap();
    let a = s.append(user("a")).unwrap();
    let b = s.append(user("b")).unwrap();
    s.move_to(Some(&a)).unwrap();
    let mut events = f.events.clone();
    events.push(Event::CreateIntent {
        session: "mv-t0-c000000".into(),
    });
    events.push(Event::CreateAck {
        session: "mv-t0-c000000".into(),
    });
    // The child says it moved to b (and the store has the move to a).
    events.push(Event::MoveIntent {
        session: "mv-t0-c000000".into(),
        target: Some(b.clone()),
    });
    events.push(Event::MoveAck {
        session: "mv-t0-c000000".into(),
        target: Some(b),
        len: 3,
    });
    assert_reported(
        &problems(&f, events),
        &["mv-t0-c000000", "match no acknowledged state"],
    );
}

#[test]
fn crash_checker_reports_an_incomplete_fork() {
    let f = fixture();
    let source = f.store.session("ap-c000000-n0").unwrap();
    let lines: Vec<String> = source.log().map(|e| e.unwrap().line).collect();
    f.store
        .fork(
            &source,
            ForkOptions {
                id: Some("fk-t0-c000000-n0000".into()),
                ..ForkOptions::default()
            },
        )
        .unwrap();
    // Announced with one more line than the fork holds.
    let mut expected = lines.clone();
    expected.push(lines[0].clone());
    let hash = LogHash::of(expected.iter().map(String::as_str));
    let mut events = f.events.clone();
    events.push(Event::ForkIntent {
        session: "fk-t0-c000000-n0000".into(),
        source: "ap-c000000-n0".into(),
        count: hash.count,
        hash: hash.hex(),
        leaf: Some("c000000t0n4".into()),
    });
    assert_reported(
        &problems(&f, events),
        &["fk-t0-c000000-n0000", "incomplete"],
    );
}

#[test]
fn crash_checker_reports_rows_left_by_an_unfinished_import() {
    let f = fixture();
    let mut batch = grove::kv::WriteBatch::new();
    batch.put(grove::keys::pending(4242), Vec::new());
    batch.put(grove::keys::log(4242, 0), b"{}".to_vec());
    f.store.kv().apply(batch).unwrap();
    let p = orphan_rows(&f.store);
    assert_reported(&p, &["pending marker of sid 4242"]);
    assert_reported(&p, &["sid 4242", "orphan rows"]);
}

/// The write buffer under SIGKILL: a child appends with `Durability::None` (single appends,
/// and an `append_many` of 3 at every tenth entry) and is killed at random moments, 12 times
/// on the same store. Each time the store reopens and verifies clean, and the session holds
/// exactly entries 0 .. k for some k — a prefix of what was written, with no `append_many`
/// cut — and k never goes back.
#[test]
fn buffered_appends_survive_a_kill_as_a_prefix() {
    use std::process::{Command, Stdio};
    let seed = env_u64("GROVE_CRASH_SEED").unwrap_or(20261130);
    let mut rng = grove_tests::crash::protocol::Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let mut kept = 0;
    for cycle in 0..12u64 {
        let mut child = Command::new(child_bin())
            .arg("--store")
            .arg(&store_dir)
            .args(["--mode", "buffered", "--cycle", &cycle.to_string()])
            .args(["--seed", &seed.to_string(), "--max-seconds", "20"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100 + rng.below(400)));
        // SIGKILL on Unix.
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "cycle {cycle}: the child ended by itself"
        );
        let store = Store::open(&store_dir).unwrap();
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "cycle {cycle} (seed {seed}): {report:?}");
        let Ok(s) = store.session("buffered") else {
            continue;
        };
        let texts: Vec<String> = s
            .entries()
            .map(|e| {
                let v: serde_json::Value = serde_json::from_str(&e.unwrap().line).unwrap();
                v["message"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        let k = texts.len() as u64;
        for (i, text) in texts.iter().enumerate() {
            assert_eq!(text, &format!("entry {i}"), "cycle {cycle} (seed {seed})");
        }
        assert!(
            !matches!(k % 10, 1 | 2),
            "cycle {cycle} (seed {seed}): {k} entries cut an append_many"
        );
        assert!(
            k >= kept,
            "cycle {cycle} (seed {seed}): {k} entries after {kept}"
        );
        kept = k;
    }
    assert!(kept > 0, "the children never got an entry written");
}
