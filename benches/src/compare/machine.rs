//! What machine the numbers come from.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The machine and toolchain of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// Logical cores.
    pub cores: usize,
    /// Total memory, e.g. `23.4 GiB`.
    pub memory: String,
    /// The CPU model from /proc/cpuinfo.
    pub cpu: String,
    /// `rustc --version`.
    pub rustc: String,
    /// The run's start, UTC, ISO.
    pub date: String,
    /// `git rev-parse --short HEAD`, with `+dirty` when the tree has changes.
    pub commit: String,
    /// The 1, 5 and 15 minute load averages when the report was made (other work on the
    /// machine makes numbers noisy).
    pub load: String,
}

fn command(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

impl Machine {
    /// Reads /proc, `rustc` and `git`; what cannot be read is `unknown`.
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or("unknown".to_owned(), |(_, v)| v.trim().to_owned());
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
            .map_or("unknown".to_owned(), |kb| {
                format!("{:.1} GiB", kb / (1024.0 * 1024.0))
            });
        let rustc_bin = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
        let rustc = command(&rustc_bin, &["--version"]).unwrap_or_else(|| "unknown".to_owned());
        let commit = command("git", &["rev-parse", "--short", "HEAD"]).map_or_else(
            || "unknown".to_owned(),
            |c| match command("git", &["status", "--porcelain"]) {
                Some(s) if !s.is_empty() => format!("{c}+dirty"),
                _ => c,
            },
        );
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let load = std::fs::read_to_string("/proc/loadavg").map_or("unknown".to_owned(), |l| {
            l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
        });
        Machine {
            load,
            cores,
            memory,
            cpu,
            rustc,
            date: grove_codec::time::format_ms(now),
            commit,
        }
    }
}
