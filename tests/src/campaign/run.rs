//! Running the `grove` binary as a child process with a time limit: a child still running
//! when the limit passes is killed and reported as hung; one that exited with Rust's panic
//! status (101) or whose stderr shows the panic hook's "panicked at" is reported as having
//! panicked.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of the binary did.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// The exit code (`None`: killed by a signal, or by the time limit).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
    /// The time limit passed and the child was killed.
    pub timed_out: bool,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Run {
    /// Whether it exited with status 0.
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// Whether it panicked: exit status 101, or the panic hook's "panicked at" on stderr (a
    /// panic caught inside the process still prints it, unless it became an error: grove
    /// turns a backend's panics into `Storage` errors without printing them).
    pub fn panicked(&self) -> bool {
        self.code == Some(101) || String::from_utf8_lossy(&self.stderr).contains("panicked at")
    }

    /// The first lines of stderr, for reports.
    pub fn stderr_head(&self) -> String {
        let text = String::from_utf8_lossy(&self.stderr);
        let lines: Vec<&str> = text.lines().take(4).collect();
        lines.join(" | ")
    }
}

/// Runs `grove --store STORE --backend BACKEND ARGS…` with no `GROVE_*` variables from the
/// environment, killing it after `limit`.
pub fn grove(bin: &Path, store: &Path, backend: &str, args: &[&str], limit: Duration) -> Run {
    let mut cmd = Command::new(bin);
    cmd.arg("--store")
        .arg(store)
        .args(["--backend", backend])
        .args(args);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GROVE_") {
            cmd.env_remove(key);
        }
    }
    run(cmd, limit)
}

/// Runs `cmd` with its output captured, killing it after `limit`.
pub fn run(mut cmd: Command, limit: Duration) -> Run {
    let start = Instant::now();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Run {
                stderr: format!("spawning {cmd:?}: {e}").into_bytes(),
                ..Run::default()
            }
        }
    };
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= limit => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => break None,
        }
    };
    Run {
        code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
        elapsed: start.elapsed(),
    }
}
