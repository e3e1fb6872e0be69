//! The `grove` command-line tool, run as a real process against a temporary store; its
//! `--json` outputs are compared with what the library computes from the same input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod backend;
mod campaign;
mod errors;
mod escape;
mod export_target;
mod foreign;
mod fork;
mod gen;
mod hints;
mod html;
mod label;
mod limits;
mod listing;
mod navigate;
mod oplog;
mod payloads;
mod permissions;
mod read;
mod read_checks;
mod redact;
mod retain;
mod salvage;
mod search;
mod store_access;
mod summary_preview;
mod tree;
mod tutorial;
mod verify;
mod write;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use grove::Store;
use serde_json::Value;

/// The `grove` binary, built once per test run. (`CARGO_BIN_EXE_grove` exists only for
/// tests of the grove-tools package itself.)
pub(crate) fn grove_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut build = Command::new(cargo);
        build.current_dir(workspace).args([
            "build",
            "--quiet",
            "-p",
            "grove-tools",
            "--bin",
            "grove",
        ]);
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build");
        assert!(status.success(), "cargo build -p grove-tools failed");
        // The test binary is target/<profile>/deps/runner-…; grove is in target/<profile>.
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap();
        let bin = profile_dir.join(format!("grove{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.exists(), "{} was not built", bin.display());
        bin
    })
}

/// A fixture file of the pi oracle.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pi-oracle")
        .join(name)
}

/// How long a test waits for a store's lock after it closed the store itself.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A temporary store and the commands run against it.
pub struct Grove {
    dir: tempfile::TempDir,
}

impl Grove {
    pub fn new() -> Grove {
        Grove {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The store directory.
    pub fn store_dir(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// Runs `grove --store DIR ARGS…` with `stdin` as its input.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new(grove_bin())
            .arg("--store")
            .arg(self.store_dir())
            .args(args)
            .env_remove("GROVE_STORE")
            .current_dir(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs `grove --store DIR ARGS…`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, "")
    }

    /// Runs a command that must succeed; returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_success(args, &out);
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs a command that must succeed and print JSON; returns the value.
    pub fn json(&self, args: &[&str]) -> Value {
        let text = self.ok(args);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"))
    }

    /// Runs a command that must fail; returns (exit code, stderr).
    pub fn fail(&self, args: &[&str]) -> (i32, String) {
        let out = self.run(args);
        assert!(!out.status.success(), "{args:?} succeeded unexpectedly");
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// Opens the store in this process (no grove process may be running). It waits for the
    /// store's lock ([`LOCK_WAIT`]): a grove process that just exited may not have released
    /// it yet, and a child that another test thread is starting may hold a copy of it until
    /// its exec.
    pub fn open(&self) -> Store {
        Store::open_with(grove::StoreConfig::new(self.store_dir()).lock_wait(LOCK_WAIT)).unwrap()
    }
}

pub fn assert_success(args: &[&str], out: &Output) {
    assert!(
        out.status.success(),
        "{args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A store in memory holding the given fixtures, the library's side of each comparison.
pub fn library(fixtures: &[&str]) -> Store {
    let store = Store::in_memory().unwrap();
    for f in fixtures {
        store
            .import_file(&fixture(f), grove::ImportOptions::default())
            .unwrap();
    }
    store
}

/// The stored lines of `entries` as one JSON array text, as `branch`/`path --json` print it.
pub fn lines_json(entries: &[grove::Entry]) -> String {
    let lines: Vec<&str> = entries.iter().map(|e| e.line.as_str()).collect();
    format!("[{}]\n", lines.join(","))
}
