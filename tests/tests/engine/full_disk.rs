//! A full disk (issue 16, §1), on a small tmpfs mounted by the test (CI runs as root): every
//! write fails promptly with `DiskFull` and writes nothing, reads go on, and writing resumes
//! once space is freed, on sled and on redb; a writer killed at random moments while the disk
//! is full leaves a store that verifies.
//!
//! Before the free-space guard, sled hung forever in the flush after its first ENOSPC (a fork
//! on an 8 MB tmpfs), which the timeouts here report as a hang.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use grove::{
    ForkOptions, GroveError, ImportOptions, NavigateOptions, Navigator, Store, StoreConfig,
};

use grove_tests::tmpfs::Tmpfs;

use super::{assistant, user};

fn config(dir: &Path, redb: bool) -> StoreConfig {
    super::sync_config(dir, redb).cache_bytes(8 << 20)
}

/// Runs `op` on another thread and fails the test when it takes longer than `limit` (a
/// hang); a panic of `op` is the test's.
fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    op: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(op());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => panic!("{what} ended without an answer"),
        },
        Err(RecvTimeoutError::Timeout) => panic!("{what} hung on a full disk"),
    }
}

/// [`within`] a minute: one operation.
fn promptly<T: Send + 'static>(what: &str, op: impl FnOnce() -> T + Send + 'static) -> T {
    within(what, Duration::from_secs(60), op)
}

/// Fills the file system of `fs` with the file `filler` up to 3 MiB: less than the store's
/// reserve (4 MiB), so grove refuses every write and a writer's open, but room for sled's own
/// background work, which the reserve is for (sled that runs out of space in its own flusher
/// must be reopened before it writes again).
fn fill(fs: &Tmpfs) -> PathBuf {
    let filler = fs.path().join("filler");
    let free = fs2::available_space(fs.path()).unwrap();
    std::fs::write(&filler, vec![7u8; free.saturating_sub(3 << 20) as usize]).unwrap();
    // The guard trusts an answer of the file system for 250 ms.
    std::thread::sleep(Duration::from_millis(300));
    filler
}

/// Drops `store` (closing the backend, which flushes), failing the test if that hangs.
fn close(store: Store) {
    promptly("closing the store", move || drop(store));
}

/// A pi session file of `n` messages of about 4 KiB each.
fn session_file(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("input.jsonl");
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"full-disk-source","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    text.push('\n');
    let mut parent = "null".to_owned();
    for i in 0..n {
        let id = format!("{i:08x}");
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let body = format!("message {i} {}", "x".repeat(4000));
        text.push_str(&format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"{role}","content":[{{"type":"text","text":"{body}"}}],"timestamp":1}}}}"#
        ));
        text.push('\n');
        parent = format!("\"{id}\"");
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn is_disk_full(e: &GroveError) -> bool {
    matches!(e, GroveError::DiskFull { .. })
}

/// Every kind of write, once; each must succeed or be refused as `DiskFull`. Returns how
/// many were refused.
fn every_write(store: &Store, input: &Path, n: usize) -> usize {
    let mut refused = 0;
    let mut outcome = |what: &str, r: Result<(), GroveError>| match r {
        Ok(()) => {}
        Err(e) if is_disk_full(&e) => refused += 1,
        Err(e) => panic!("{what} on a full disk: {e}"),
    };
    let s = store.session("full-disk-source").unwrap();
    let leaf = s.leaf().unwrap().unwrap();
    let st = store.clone();
    let r = promptly("append", move || {
        st.session("full-disk-source")
            .unwrap()
            .append(user(&"a".repeat(3000)))
            .map(drop)
    });
    outcome("append", r);
    let st = store.clone();
    let r = promptly("append_many", move || {
        let many: Vec<_> = (0..50)
            .map(|i| assistant(&format!("{i} {}", "b".repeat(3000))))
            .collect();
        st.session("full-disk-source")
            .unwrap()
            .append_many(&many)
            .map(drop)
    });
    outcome("append_many", r);
    let (st, file) = (store.clone(), input.to_owned());
    let r = promptly("import", move || {
        let text = std::fs::read_to_string(&file).unwrap();
        let renamed = text.replacen("full-disk-source", &format!("copy-{n}"), 1);
        st.import_reader(renamed.as_bytes(), ImportOptions::default())
            .map(drop)
    });
    outcome("import", r);
    let st = store.clone();
    let r = promptly("fork", move || {
        let source = st.session("full-disk-source").unwrap();
        st.fork(
            &source,
            ForkOptions {
                id: Some(format!("fork-{n}")),
                ..ForkOptions::default()
            },
        )
        .map(drop)
    });
    outcome("fork", r);
    let (st, target) = (store.clone(), "00000001".to_owned());
    let r = promptly("navigate", move || {
        st.session("full-disk-source")
            .unwrap()
            .navigate(&target, &NavigateOptions::default(), &Navigator::default())
            .map(drop)
    });
    outcome("navigate", r);
    let (st, l) = (store.clone(), leaf.clone());
    let r = promptly("label", move || {
        st.session("full-disk-source")
            .unwrap()
            .set_label(&l, Some("mark"))
            .map(drop)
    });
    outcome("label", r);
    let st = store.clone();
    let r = promptly("name", move || {
        st.session("full-disk-source")
            .unwrap()
            .set_name("full")
            .map(drop)
    });
    outcome("name", r);
    refused
}

/// Reads every session completely: listing, context, export, verification.
fn read_everything(store: &Store) {
    let st = store.clone();
    promptly("reading", move || {
        for summary in st.sessions().unwrap() {
            let s = st.session(&summary.id).unwrap();
            s.build_context().unwrap();
            let mut out = Vec::new();
            s.export(grove::Flavor::default(), &mut out).unwrap();
        }
        let report = st.verify().unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
    });
}

fn full_disk(redb: bool) {
    let fs = Tmpfs::mount(32);
    let input = session_file(fs.path(), 150);
    // Ballast, removed with the filler to free space.
    let ballast = fs.path().join("ballast");
    std::fs::write(&ballast, vec![7u8; 12 << 20]).unwrap();
    let dir = fs.path().join("store");
    let store = Store::open_with(config(&dir, redb)).unwrap();
    store.import_file(&input, ImportOptions::default()).unwrap();
    eprintln!("filling the disk with forks");
    let mut forks = 0;
    let err = loop {
        let source = store.session("full-disk-source").unwrap();
        let st = store.clone();
        let r = promptly("fork", move || {
            st.fork(&source, ForkOptions::default()).map(drop)
        });
        match r {
            Ok(()) => forks += 1,
            Err(e) => break e,
        }
        assert!(forks < 100, "the disk never filled");
    };
    assert!(is_disk_full(&err), "{err}");
    assert!(forks >= 1, "not even one fork fit");
    assert_eq!(store.sessions().unwrap().len(), forks + 1);
    read_everything(&store);

    eprintln!("a filler takes what is left: every write is refused, reads go on");
    let filler = fill(&fs);
    let before = store.sessions().unwrap();
    assert_eq!(every_write(&store, &input, 1), 7, "every write is refused");
    assert_eq!(
        store.sessions().unwrap(),
        before,
        "a refused write changed nothing"
    );
    read_everything(&store);

    eprintln!("space freed: the same store writes again, without a restart");
    std::fs::remove_file(&filler).unwrap();
    std::fs::remove_file(&ballast).unwrap();
    assert_eq!(
        every_write(&store, &input, 2),
        0,
        "writing resumes once space is freed"
    );
    read_everything(&store);
    let after = store.sessions().unwrap();

    eprintln!("the disk full again: a reader opens, a writer is refused at open");
    let filler = fill(&fs);
    close(store);
    let reader = promptly("opening to read", {
        let dir = dir.clone();
        move || Store::open_with(config(&dir, redb).read_only(true)).unwrap()
    });
    assert_eq!(reader.sessions().unwrap(), after);
    read_everything(&reader);
    close(reader);
    let refused = promptly("opening to write", {
        let dir = dir.clone();
        move || Store::open_with(config(&dir, redb)).map(drop)
    });
    assert!(matches!(&refused, Err(e) if is_disk_full(e)), "{refused:?}");

    eprintln!("space freed: the store opens, writes and verifies");
    std::fs::remove_file(&filler).unwrap();
    let store = Store::open_with(config(&dir, redb)).unwrap();
    assert_eq!(every_write(&store, &input, 3), 0);
    read_everything(&store);
    close(store);
    let store = Store::open_with(config(&dir, redb)).unwrap();
    read_everything(&store);
    close(store);
}

#[test]
fn a_full_disk_refuses_writes_promptly_and_recovers_on_sled() {
    within(
        "the full-disk test on sled",
        Duration::from_secs(300),
        || full_disk(false),
    );
}

#[test]
fn a_full_disk_refuses_writes_promptly_and_recovers_on_redb() {
    within(
        "the full-disk test on redb",
        Duration::from_secs(300),
        || full_disk(true),
    );
}

/// A `grove fork` loop on a full disk, killed with SIGKILL at random moments: the store
/// always reopens, verifies, and holds only whole sessions.
#[test]
fn writers_killed_on_a_full_disk_leave_a_store_that_verifies() {
    within(
        "the killed-writers test",
        Duration::from_secs(300),
        writers_killed,
    );
}

fn writers_killed() {
    let fs = Tmpfs::mount(16);
    let input = session_file(fs.path(), 150);
    let dir = fs.path().join("store");
    let store = Store::open_with(config(&dir, false)).unwrap();
    store.import_file(&input, ImportOptions::default()).unwrap();
    let leaf = store
        .session("full-disk-source")
        .unwrap()
        .leaf()
        .unwrap()
        .unwrap();
    close(store);
    let grove = crate::cli::grove_bin();
    let mut seed: u64 = 0x5eed_f011;
    for round in 0..12 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = Command::new(grove)
            .arg("--store")
            .arg(&dir)
            .arg("--lock-wait")
            .arg("5")
            .args(["fork", "full-disk-source", &leaf, "--at"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(seed % 300));
        let _ = child.kill();
        let _ = child.wait();
        let t = std::time::Instant::now();
        // Read-only: a writer is refused at open once the disk is nearly full.
        let store = promptly("reopening", {
            let dir = dir.clone();
            move || Store::open_with(config(&dir, false).read_only(true))
        })
        .unwrap_or_else(|e| panic!("round {round}: the store does not reopen: {e}"));
        assert!(store.lost_writes().is_none(), "round {round}");
        eprintln!("round {round} opened {:?}", t.elapsed());
        read_everything(&store);
        eprintln!("round {round} read {:?}", t.elapsed());
        close(store);
        eprintln!("round {round} closed {:?}", t.elapsed());
    }
    eprintln!(
        "{} bytes free at the end",
        fs2::available_space(fs.path()).unwrap()
    );
}

/// A backend whose flush never returns (as sled's after a failed log write): the flush
/// stops being waited for after the bound, the write is refused, reads go on, and closing
/// the store returns.
#[test]
fn a_flush_that_never_returns_is_given_up_after_the_bound() {
    use grove::kv::Bounded;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    within("the stalled-flush test", Duration::from_secs(60), || {
        let kv = super::faulty::Faulty::default();
        let stuck = kv.hang_flush.clone();
        let bound = Duration::from_millis(300);
        let store = Store::from_kv(
            Box::new(Bounded::new(kv, bound, Arc::new(AtomicBool::new(false))).unwrap()),
            grove::Durability::Sync,
        )
        .unwrap();
        let s = store
            .create_session(grove::CreateSession::default())
            .unwrap();
        let first = s.append(user("before")).unwrap();
        stuck.store(true, std::sync::atomic::Ordering::SeqCst);
        let started = std::time::Instant::now();
        let err = s.append(user("during")).unwrap_err();
        let waited = started.elapsed();
        assert!(err.to_string().contains("did not finish a flush"), "{err}");
        assert!(waited >= bound, "gave up after {waited:?}");
        // The store refuses writes from then on, at once; reads go on.
        let started = std::time::Instant::now();
        assert!(matches!(
            s.append(user("after")),
            Err(GroveError::Poisoned(_))
        ));
        assert!(started.elapsed() < bound);
        assert_eq!(s.entry(&first).unwrap().id(), first);
        s.build_context().unwrap();
        // Closing waits at most the bound for the stuck worker, then returns.
        drop(s);
        drop(store);
        stuck.store(false, std::sync::atomic::Ordering::SeqCst);
    });
}

/// Another writer takes most of the disk right after the store's guard last looked (within
/// the 250 ms it trusts an answer on a roomy disk): grove's next writes must still be refused
/// as `DiskFull` before the backend runs out of space (before, a fork then failed inside sled
/// with ENOSPC and the store refused every write until it was reopened), and writing goes on
/// once the space is given back.
fn space_taken_by_another_writer(redb: bool) {
    let fs = Tmpfs::mount(32);
    let input = session_file(fs.path(), 150);
    let dir = fs.path().join("store");
    let store = Store::open_with(config(&dir, redb)).unwrap();
    store.import_file(&input, ImportOptions::default()).unwrap();
    // At once, before the guard asks again.
    let other = fs.path().join("other");
    std::fs::write(&other, vec![7u8; 12 << 20]).unwrap();
    let mut forks = 0;
    let err = loop {
        let source = store.session("full-disk-source").unwrap();
        let st = store.clone();
        match promptly("fork", move || {
            st.fork(&source, ForkOptions::default()).map(drop)
        }) {
            Ok(()) => forks += 1,
            Err(e) => break e,
        }
        assert!(forks < 100, "the disk never filled");
    };
    assert!(is_disk_full(&err), "{err}");
    assert_eq!(store.poisoned(), None);
    read_everything(&store);
    std::fs::remove_file(&other).unwrap();
    assert_eq!(every_write(&store, &input, 1), 0, "writing goes on");
    read_everything(&store);
    close(store);
}

#[test]
fn space_taken_by_another_writer_is_seen_at_the_next_write_on_sled() {
    // Each run is one chance for the race; a few runs make a regression show.
    for _ in 0..4 {
        within(
            "the other-writer test on sled",
            Duration::from_secs(120),
            || space_taken_by_another_writer(false),
        );
    }
}

#[test]
fn space_taken_by_another_writer_is_seen_at_the_next_write_on_redb() {
    within(
        "the other-writer test on redb",
        Duration::from_secs(120),
        || space_taken_by_another_writer(true),
    );
}
