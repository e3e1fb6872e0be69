//! How commands open a store (issue 16, §4 and §5): reads never create a store and work on a
//! read-only mount; one process owns a store at a time, and a second one fails at once naming
//! the holder, or waits for `--lock-wait`; the owner's files are never touched by the other.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{fixture, grove_bin, Grove};

const READS: [&[&str]; 5] = [
    &["ls"],
    &["verify"],
    &["context", "seed-harness"],
    &["tree", "seed-harness"],
    &["export", "seed-harness"],
];

/// Before: `grove --store /tmp/x/a/b ls` made the directories and printed "no sessions";
/// `grove --store / ls` wrote /db, /conf and /blobs.
#[test]
fn reads_on_a_path_without_a_store_create_nothing() {
    for backend in ["sled", "redb"] {
        let g = Grove::new();
        let missing = g.store_dir().join("a/b");
        for args in READS {
            let out = Command::new(grove_bin())
                .arg("--store")
                .arg(&missing)
                .args(["--backend", backend])
                .args(args)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("no grove store at"), "{args:?}: {stderr}");
            assert!(
                !g.store_dir().exists(),
                "{args:?} created {}",
                missing.display()
            );
        }
        // An existing directory that holds no store is not made into one either.
        let empty = g.store_dir();
        std::fs::create_dir_all(&empty).unwrap();
        let (code, stderr) = g.fail(&["--backend", backend, "ls"]);
        assert_eq!(code, 1, "{stderr}");
        assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
        // A write creates it.
        g.ok(&[
            "--backend",
            backend,
            "import",
            fixture("edge-seed-harness.jsonl").to_str().unwrap(),
        ]);
        assert!(g.ok(&["--backend", backend, "ls"]).contains("seed-harness"));
    }
}

/// A read-only bind mount of `dir` at a new directory, unmounted when dropped.
struct ReadOnlyMount {
    at: tempfile::TempDir,
}

impl ReadOnlyMount {
    fn of(dir: &Path) -> ReadOnlyMount {
        let at = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let status = Command::new("mount")
                .args(args)
                .arg(at.path())
                .status()
                .unwrap();
            assert!(
                status.success(),
                "mount {args:?}: this test needs root (CI runs as root)"
            );
        };
        let status = Command::new("mount")
            .arg("--bind")
            .arg(dir)
            .arg(at.path())
            .status()
            .unwrap();
        assert!(
            status.success(),
            "bind mount: this test needs root (CI runs as root)"
        );
        run(&["-o", "remount,ro,bind"]);
        ReadOnlyMount { at }
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.at.path()).status();
    }
}

/// Before: a store on a read-only mount could not even be listed.
#[test]
fn a_store_on_a_read_only_mount_reads_and_refuses_writes() {
    for backend in ["sled", "redb"] {
        protected_store_reads_and_refuses_writes(backend, |dir| {
            let mount = ReadOnlyMount::of(dir);
            let at = mount.at.path().to_owned();
            (at, Box::new(mount))
        });
    }
}

/// Before: a store with immutable files could not even be listed.
#[test]
fn a_store_with_immutable_files_reads_and_refuses_writes() {
    for backend in ["sled", "redb"] {
        protected_store_reads_and_refuses_writes(backend, |dir| {
            let immutable = Immutable::of(dir);
            (dir.to_owned(), Box::new(immutable))
        });
    }
}

/// The store's files and directory made immutable (`chattr +i`), made mutable again when
/// dropped.
struct Immutable {
    paths: Vec<PathBuf>,
}

impl Immutable {
    fn of(dir: &Path) -> Immutable {
        let mut paths: Vec<PathBuf> = walk(dir);
        paths.push(dir.to_owned());
        let status = Command::new("chattr")
            .arg("+i")
            .args(&paths)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "chattr +i: this test needs root and a file system with the immutable flag"
        );
        Immutable { paths }
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").args(&self.paths).status();
    }
}

/// Every file and directory under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

/// A store made unwritable by `protect` (which returns where to reach it and a guard that
/// undoes the protection when dropped): every read answers as before, a write fails naming
/// the cause, and no file changes.
fn protected_store_reads_and_refuses_writes(
    backend: &str,
    protect: impl Fn(&Path) -> (PathBuf, Box<dyn std::any::Any>),
) {
    let g = Grove::new();
    let seed = fixture("edge-seed-harness.jsonl");
    g.ok(&["--backend", backend, "import", seed.to_str().unwrap()]);
    let expected: Vec<String> = READS
        .iter()
        .map(|args| {
            let mut all = vec!["--backend", backend];
            all.extend_from_slice(args);
            g.ok(&all)
        })
        .collect();
    let files_before = listing(&g.store_dir());
    let (at, guard) = protect(&g.store_dir());
    for (args, expected) in READS.iter().zip(&expected) {
        let out = Command::new(grove_bin())
            .arg("--store")
            .arg(&at)
            .args(["--backend", backend])
            .args(*args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{backend} {args:?}: {stderr}");
        assert_eq!(&String::from_utf8_lossy(&out.stdout), expected, "{args:?}");
    }
    let mut child = Command::new(grove_bin())
        .arg("--store")
        .arg(&at)
        .args(["--backend", backend, "append", "seed-harness"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"role":"user","content":"refused","timestamp":0}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("read-only"), "{backend}: {stderr}");
    drop(guard);
    assert_eq!(listing(&g.store_dir()), files_before);
}

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let len = e.metadata().unwrap().len();
            (e.file_name().to_string_lossy().into_owned(), len)
        })
        .filter(|(name, _)| name != "grove.lock")
        .collect();
    out.sort();
    out
}

/// Starts `grove import /dev/stdin` reading from a pipe it holds open: a process that owns the store
/// until the pipe is closed.
fn holder(g: &Grove, backend: &str) -> std::process::Child {
    let mut child = Command::new(grove_bin())
        .arg("--store")
        .arg(g.store_dir())
        .args(["--backend", backend, "import", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it holds the store.
    let lock = g.store_dir().join("grove.lock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.contains(&child.id().to_string())) {
        assert!(Instant::now() < deadline, "the holder never took the store");
        std::thread::sleep(Duration::from_millis(20));
    }
    // And has finished opening its backend: its main thread is blocked reading the pipe. Until
    // then it may still remove snapshot files itself (grove's start-up guard, and sled, which
    // writes a snapshot while it opens and then deletes every other `snap.*` file).
    let deadline = Instant::now() + Duration::from_secs(30);
    while !reads_a_pipe(child.id()) {
        assert!(
            Instant::now() < deadline,
            "the holder never opened the store"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.stdin.as_mut().unwrap().write_all(b"");
    child
}

/// Whether process `pid`'s main thread is blocked in `read` on a pipe (from /proc/PID/syscall:
/// the syscall number, then its arguments, the first of which is the file descriptor).
fn reads_a_pipe(pid: u32) -> bool {
    const READ: &str = if cfg!(target_arch = "aarch64") {
        "63"
    } else {
        "0"
    };
    let Ok(call) = std::fs::read_to_string(format!("/proc/{pid}/syscall")) else {
        return false;
    };
    let mut fields = call.split_whitespace();
    if fields.next() != Some(READ) {
        return false;
    }
    let Some(fd) = fields
        .next()
        .and_then(|fd| u64::from_str_radix(fd.trim_start_matches("0x"), 16).ok())
    else {
        return false;
    };
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .is_ok_and(|target| target.to_string_lossy().starts_with("pipe:"))
}

/// Before: a second process on a sled store retried silently for 10 s and failed; on redb it
/// failed at once with a hint naming sled.
#[test]
fn a_second_process_fails_at_once_naming_the_holder_or_waits_when_asked() {
    for backend in ["sled", "redb"] {
        let g = Grove::new();
        let seed = fixture("edge-seed-harness.jsonl");
        g.ok(&["--backend", backend, "import", seed.to_str().unwrap()]);
        let mut child = holder(&g, backend);
        // A snapshot file of the holder's (sled writes them while it runs) is not touched.
        let snap = g.store_dir().join("snap.00000000DEADBEEF.generating");
        std::fs::write(&snap, b"in progress").unwrap();
        let started = Instant::now();
        let (code, stderr) = g.fail(&["--backend", backend, "ls"]);
        assert!(started.elapsed() < Duration::from_secs(5), "it waited");
        assert_eq!(code, 3, "{stderr}");
        assert!(stderr.contains("Locked"), "{stderr}");
        assert!(
            stderr.contains(&format!("process {}", child.id())) && stderr.contains("import"),
            "the message names the holder: {stderr}"
        );
        assert!(snap.exists(), "another process's snapshot file was removed");
        std::fs::remove_file(&snap).unwrap();
        // With --lock-wait, the second process waits for the holder to finish.
        let waiter = Command::new(grove_bin())
            .arg("--store")
            .arg(g.store_dir())
            .args(["--backend", backend, "--lock-wait", "30", "ls"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        drop(child.stdin.take());
        let _ = child.wait();
        let out = waiter.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("seed-harness"));
    }
}

/// Before: concurrent `grove append` loops lost appends to `IO error: No such file or
/// directory` (one process removed another's live snapshot file before sled's lock).
#[test]
fn concurrent_append_loops_lose_nothing() {
    let g = Grove::new();
    let seed = fixture("edge-seed-harness.jsonl");
    g.ok(&["import", seed.to_str().unwrap()]);
    let loops: Vec<_> = (0..3)
        .map(|w| {
            let dir = g.store_dir();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let mut child = Command::new(grove_bin())
                        .arg("--store")
                        .arg(&dir)
                        .args(["--lock-wait", "60", "append", "seed-harness"])
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap();
                    let text = format!(
                        r#"{{"role":"user","content":"writer {w} message {i}","timestamp":0}}"#
                    );
                    child
                        .stdin
                        .take()
                        .unwrap()
                        .write_all(text.as_bytes())
                        .unwrap();
                    let out = child.wait_with_output().unwrap();
                    assert!(
                        out.status.success(),
                        "writer {w} append {i}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for l in loops {
        l.join().unwrap();
    }
    let store = g.open();
    let s = store.session("seed-harness").unwrap();
    assert_eq!(s.entries().count(), 6 + 75);
    assert!(store.verify().unwrap().is_ok());
}
