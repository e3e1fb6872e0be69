//! The crash harness: real processes killed with SIGKILL at random moments.
//!
//! Each cycle starts `grove-crash-child` on the same store directory (state accumulates
//! across cycles), lets it append, move leaves, fork, import and delete from several threads
//! with sync durability, and kills it after a random delay — sometimes within a few
//! milliseconds (during process start-up), often while it is still opening the store (sled's
//! recovery and grove's clean-up of interrupted imports), otherwise while it works. The
//! child reports every operation before it starts and after it returned (see
//! [`protocol`]); after the kill the driver reopens the store and [`check`]s it against
//! those reports: every acknowledged operation is there, every interrupted one is there
//! whole or not at all, nothing else appeared, and the structure verifies.
//!
//! Some cycles skip the check on purpose, so that the *next child* is the first process to
//! open the store after a kill and runs the recovery itself, and can be killed during it.
//!
//! A failure keeps the store: it is copied to `/tmp/grove-crash-evidence-N` with a
//! `failure.txt` (the problems, the cycle, the seed and the children's output).

pub mod check;
pub mod protocol;

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use grove::{Durability, Store, StoreConfig};

use check::{Baseline, CheckStats, ImportBody};
use protocol::{Event, Rng};

/// What the children do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// Cycle through the four below, one per cycle.
    All,
    /// Appends from four threads to shared sessions (and deletions of retired ones).
    Append,
    /// Appends and leaf moves, one thread per session.
    Move,
    /// Atomic batches, forks in every mode, deletions of forks.
    Fork,
    /// Imports of a generated several-thousand-line pi file, deletions of imports.
    Import,
}

impl Mode {
    /// The name used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            Mode::All => "all",
            Mode::Append => "append",
            Mode::Move => "move",
            Mode::Fork => "fork",
            Mode::Import => "import",
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Result<Mode, String> {
        Ok(match name {
            "all" => Mode::All,
            "append" => Mode::Append,
            "move" => Mode::Move,
            "fork" => Mode::Fork,
            "import" => Mode::Import,
            _ => return Err(format!("unknown mode {name} (all|append|move|fork|import)")),
        })
    }

    const WORK: [Mode; 4] = [Mode::Append, Mode::Move, Mode::Fork, Mode::Import];
}

/// How to run the harness.
#[derive(Debug, Clone)]
pub struct Config {
    /// The store directory, kept across cycles (created when missing).
    pub store_dir: PathBuf,
    /// Kill cycles to run.
    pub cycles: u32,
    /// Seed of every random choice (the children get seeds derived from it).
    pub seed: u64,
    /// What the children do.
    pub mode: Mode,
    /// The `grove-crash-child` executable.
    pub child: PathBuf,
    /// Entry lines of the generated import file.
    pub import_lines: usize,
    /// Percentage of cycles (never the last) after which the driver does not reopen the
    /// store, so that the next child recovers it and may be killed while doing so (doubled
    /// when the kill interrupted an import, fork or deletion, halved otherwise).
    pub skip_check_percent: u64,
    /// Every how many checks all sessions are read in full and `Store::verify` and the
    /// orphan-row scan run (the last check always does).
    pub full_check_every: u32,
    /// Where failures are kept (`<dir>/grove-crash-evidence-N`).
    pub evidence_dir: PathBuf,
    /// Print one line per cycle to stderr.
    pub progress: bool,
    /// The key-value backend of the store: `sled` or `redb`.
    pub backend: String,
}

impl Config {
    /// Defaults: 6,000-line import file, 25 % unchecked cycles, a full check every 10.
    pub fn new(store_dir: &Path, cycles: u32, seed: u64, mode: Mode, child: PathBuf) -> Config {
        Config {
            store_dir: store_dir.to_owned(),
            cycles,
            seed,
            mode,
            child,
            import_lines: 6000,
            skip_check_percent: 25,
            full_check_every: 10,
            evidence_dir: std::env::temp_dir(),
            progress: false,
            backend: "sled".to_owned(),
        }
    }
}

/// The `grove-crash-child` next to the running executable (`target/<profile>/`, also from
/// `target/<profile>/deps/`), or `$GROVE_CRASH_CHILD`.
pub fn child_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("GROVE_CRASH_CHILD") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let name = format!("grove-crash-child{}", std::env::consts::EXE_SUFFIX);
    let mut dir = exe.parent();
    for _ in 0..2 {
        let Some(d) = dir else { break };
        let candidate = d.join(&name);
        if candidate.is_file() {
            return Ok(candidate);
        }
        dir = d.parent();
    }
    Err(format!(
        "{name} not found next to {} (cargo build -p grove-tests --bin grove-crash-child)",
        exe.display()
    ))
}

/// Runs `cycles` kill cycles on `store_dir` with the child found by [`child_binary`].
pub fn run_cycles(store_dir: &Path, cycles: u32, seed: u64, mode: Mode) -> Result<Report, String> {
    run_cycles_with(&Config::new(store_dir, cycles, seed, mode, child_binary()?))
}

/// Where a kill landed, judged from what the child had printed.
const PHASES: [&str; 6] = [
    "exec (before main)",
    "open (sled recovery, grove clean-up)",
    "open, right after an unchecked kill interrupted an import/fork/delete",
    "mid-operation",
    "between operations",
    "child had exited",
];

const DELAY_BUCKETS: [(u64, &str); 8] = [
    (5, "<5ms"),
    (20, "5-20ms"),
    (50, "20-50ms"),
    (100, "50-100ms"),
    (250, "100-250ms"),
    (500, "250-500ms"),
    (1000, "500ms-1s"),
    (u64::MAX, ">=1s"),
];

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Cycles run.
    pub cycles: u32,
    /// Cycles per mode.
    pub per_mode: BTreeMap<&'static str, u32>,
    /// Children ended by SIGKILL (checked: `ExitStatus::signal() == Some(9)`).
    pub sigkills: u32,
    /// Kills per phase (see [`Report`]'s display).
    pub phases: BTreeMap<&'static str, u32>,
    /// Kills per operation in flight (several threads may each have one).
    pub in_flight: BTreeMap<&'static str, u32>,
    /// Kill delays (from spawn) per bucket.
    pub delays: BTreeMap<&'static str, u32>,
    /// Smallest, median and largest delay.
    pub delay_min_median_max: (Duration, Duration, Duration),
    /// Cycles after which the store was reopened and checked.
    pub checks: u32,
    /// Of them, full checks (every session, `Store::verify`, orphan rows).
    pub full_checks: u32,
    /// Cycles whose check was skipped, so that the next child recovered the store.
    pub skipped_checks: u32,
    /// Acknowledgements per kind, as printed by the children.
    pub acks: BTreeMap<&'static str, u64>,
    /// Acknowledged entries found with their exact line, summed over checks.
    pub verified_entries: u64,
    /// Acknowledged batches found whole.
    pub verified_batches: u64,
    /// Interrupted operations found applied whole, per kind.
    pub interrupted_applied: BTreeMap<&'static str, u64>,
    /// Interrupted operations found absent, per kind.
    pub interrupted_absent: BTreeMap<&'static str, u64>,
    /// Sessions and records in the store at the end.
    pub final_sessions: u64,
    /// Largest store directory size seen, in bytes.
    pub max_store_bytes: u64,
    /// Mean time to open the store in a child, in milliseconds.
    pub mean_open_ms: f64,
    /// Wall-clock time of the run.
    pub duration: Duration,
}

fn fmt_map<V: fmt::Display>(m: &BTreeMap<&'static str, V>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (min, med, max) = self.delay_min_median_max;
        writeln!(
            f,
            "crash harness: {} cycles in {:.1}s ({})",
            self.cycles,
            self.duration.as_secs_f64(),
            fmt_map(&self.per_mode)
        )?;
        writeln!(
            f,
            "  SIGKILLs: {} (others: child had exited by itself)",
            self.sigkills
        )?;
        writeln!(
            f,
            "  kill delays: min {}ms, median {}ms, max {}ms; {}",
            min.as_millis(),
            med.as_millis(),
            max.as_millis(),
            DELAY_BUCKETS
                .iter()
                .map(|(_, b)| format!("{b}: {}", self.delays.get(b).copied().unwrap_or(0)))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        writeln!(f, "  kill phases:")?;
        for p in PHASES {
            writeln!(f, "    {p}: {}", self.phases.get(p).copied().unwrap_or(0))?;
        }
        writeln!(
            f,
            "  operations in flight at the kill: {}",
            fmt_map(&self.in_flight)
        )?;
        writeln!(f, "  acknowledged: {}", fmt_map(&self.acks))?;
        writeln!(
            f,
            "  checks: {} ({} full), skipped on purpose: {}; acknowledged entries verified: {}, batches: {}",
            self.checks,
            self.full_checks,
            self.skipped_checks,
            self.verified_entries,
            self.verified_batches
        )?;
        writeln!(
            f,
            "  interrupted operations found applied: {}",
            fmt_map(&self.interrupted_applied)
        )?;
        writeln!(
            f,
            "  interrupted operations found absent: {}",
            fmt_map(&self.interrupted_absent)
        )?;
        write!(
            f,
            "  final sessions: {}, largest store: {:.1} MiB, mean child open: {:.1}ms",
            self.final_sessions,
            self.max_store_bytes as f64 / (1024.0 * 1024.0),
            self.mean_open_ms
        )
    }
}

/// One child's life.
struct ChildRun {
    /// Complete lines, with when the driver read them (from spawn).
    lines: Vec<(Duration, String)>,
    /// An unterminated last line (cut by the kill).
    partial: Option<String>,
    stderr: String,
    status: ExitStatus,
    /// Whether the driver killed it (false: it had exited by itself).
    killed: bool,
}

fn spawn_and_kill(
    config: &Config,
    mode: Mode,
    cycle: u32,
    seed: u64,
    import_file: &Path,
    delay: Duration,
) -> Result<ChildRun, String> {
    let mut cmd = Command::new(&config.child);
    cmd.arg("--store")
        .arg(&config.store_dir)
        .args(["--backend", &config.backend])
        .args(["--mode", mode.name()])
        .args(["--cycle", &cycle.to_string()])
        .args(["--seed", &seed.to_string()])
        .arg("--import-file")
        .arg(import_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", config.child.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let stderr = child.stderr.take().ok_or("no stderr pipe")?;
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut lines = Vec::new();
        let mut partial = None;
        loop {
            let mut buf = Vec::new();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let at = start.elapsed();
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                        lines.push((at, String::from_utf8_lossy(&buf).into_owned()));
                    } else {
                        partial = Some(String::from_utf8_lossy(&buf).into_owned());
                    }
                }
            }
        }
        (lines, partial)
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut s);
        s
    });
    let deadline = start + delay;
    let mut exited = false;
    loop {
        if child
            .try_wait()
            .map_err(|e| format!("try_wait: {e}"))?
            .is_some()
        {
            exited = true;
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(2)));
    }
    if !exited {
        // std's Child::kill sends SIGKILL on Unix; the status below confirms it.
        child.kill().map_err(|e| format!("kill: {e}"))?;
    }
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    let (lines, partial) = reader
        .join()
        .map_err(|_| "stdout reader panicked".to_owned())?;
    let stderr = err_reader
        .join()
        .map_err(|_| "stderr reader panicked".to_owned())?;
    Ok(ChildRun {
        lines,
        partial,
        stderr,
        status,
        killed: !exited,
    })
}

#[cfg(unix)]
fn killed_by_sigkill(status: &ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(9)
}

#[cfg(not(unix))]
fn killed_by_sigkill(_status: &ExitStatus) -> bool {
    false
}

/// The heaviest operation each child thread had in flight, by kind.
fn in_flight(events: &[Event]) -> Vec<&'static str> {
    let mut open: BTreeMap<(char, String), &'static str> = BTreeMap::new();
    for e in events {
        let (key, kind) = match e {
            Event::CreateIntent { session } | Event::CreateAck { session } => {
                (('c', session.clone()), "create")
            }
            Event::AppendIntent { session, id } | Event::AppendAck { session, id, .. } => {
                (('a', format!("{session}/{id}")), "append")
            }
            Event::BatchIntent { session, .. } | Event::BatchAck { session, .. } => {
                (('b', session.clone()), "batch")
            }
            Event::MoveIntent { session, .. } | Event::MoveAck { session, .. } => {
                (('m', session.clone()), "move")
            }
            Event::ForkIntent { session, .. } | Event::ForkAck { session } => {
                (('f', session.clone()), "fork")
            }
            Event::ImportIntent { session } | Event::ImportAck { session, .. } => {
                (('i', session.clone()), "import")
            }
            Event::DeleteIntent { session } | Event::DeleteAck { session } => {
                (('x', session.clone()), "delete")
            }
            _ => continue,
        };
        if e.is_intent() {
            open.insert(key, kind);
        } else {
            open.remove(&key);
        }
    }
    open.into_values().collect()
}

fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let rd = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for e in rd {
        let e = e.map_err(|e| format!("{}: {e}", from.display()))?;
        let target = to.join(e.file_name());
        let ty = e.file_type().map_err(|e| format!("{e}"))?;
        if ty.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)
                .map_err(|err| format!("copy {}: {err}", e.path().display()))?;
        }
    }
    Ok(())
}

/// Keeps the store and what led to the failure; returns the evidence directory.
fn keep_evidence(
    config: &Config,
    import_file: &Path,
    text: &str,
    outputs: &[String],
) -> Result<PathBuf, String> {
    let mut n = 1;
    let dir = loop {
        let d = config
            .evidence_dir
            .join(format!("grove-crash-evidence-{n}"));
        if !d.exists() {
            break d;
        }
        n += 1;
    };
    copy_dir(&config.store_dir, &dir.join("store"))?;
    let _ = std::fs::copy(import_file, dir.join("import.jsonl"));
    let mut report = format!(
        "grove crash harness failure\nstore: {}\nseed: {}\nmode: {}\n\n{text}\n\n",
        config.store_dir.display(),
        config.seed,
        config.mode.name()
    );
    for o in outputs {
        report.push_str(o);
        report.push('\n');
    }
    std::fs::write(dir.join("failure.txt"), report)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn ema(old: f64, sample: f64) -> f64 {
    0.7 * old + 0.3 * sample
}

/// The kill-delay policy: aims at process start-up, at the store's open, or at the work,
/// adapting to how long opens and operations take on this machine.
struct Timing {
    open_ms: f64,
    opens: Vec<f64>,
    op_ms: BTreeMap<Mode, f64>,
}

impl Timing {
    fn new() -> Timing {
        Timing {
            open_ms: 60.0,
            opens: Vec::new(),
            op_ms: BTreeMap::new(),
        }
    }

    fn delay(&self, rng: &mut Rng, mode: Mode, aim_at_open: bool) -> Duration {
        let open = self.open_ms.max(5.0);
        let ms = if aim_at_open {
            rng.unit() * open * 1.5
        } else {
            let r = rng.unit();
            if r < 0.12 {
                rng.unit() * 3.0
            } else if r < 0.35 {
                rng.unit() * open * 1.3
            } else {
                let window = match mode {
                    Mode::Fork | Mode::Import => {
                        (self.op_ms.get(&mode).copied().unwrap_or(300.0) * 3.0).clamp(300.0, 5000.0)
                    }
                    _ => 800.0,
                };
                open + rng.unit() * window
            }
        };
        Duration::from_micros((ms * 1000.0) as u64)
    }

    fn learn(&mut self, mode: Mode, lines: &[(Duration, String)], events: &[Event]) {
        let mut intents: BTreeMap<String, Duration> = BTreeMap::new();
        for ((at, _), e) in lines.iter().zip(events) {
            match e {
                Event::Opened { .. } => {
                    let ms = at.as_secs_f64() * 1000.0;
                    self.open_ms = if self.opens.is_empty() {
                        ms
                    } else {
                        ema(self.open_ms, ms)
                    };
                    self.opens.push(ms);
                }
                Event::ForkIntent { session, .. } | Event::ImportIntent { session } => {
                    intents.insert(session.clone(), *at);
                }
                Event::ForkAck { session } | Event::ImportAck { session, .. } => {
                    if let Some(t0) = intents.remove(session) {
                        let ms = (*at - t0).as_secs_f64() * 1000.0;
                        let e = self.op_ms.entry(mode).or_insert(ms);
                        *e = ema(*e, ms);
                    }
                }
                _ => {}
            }
        }
    }
}

fn ack_kind(e: &Event) -> Option<&'static str> {
    Some(match e {
        Event::CreateAck { .. } => "create",
        Event::AppendAck { .. } => "append",
        Event::BatchAck { .. } => "batch",
        Event::MoveAck { .. } => "move",
        Event::ForkAck { .. } => "fork",
        Event::ImportAck { .. } => "import",
        Event::DeleteAck { .. } => "delete",
        _ => return None,
    })
}

fn open_store(dir: &Path, backend: &str) -> Result<Store, String> {
    open_backend(dir, backend).map_err(|e| format!("the store does not reopen: {e}"))
}

/// Opens the store in `dir` with sync durability on the named backend (`sled` or `redb`).
pub fn open_backend(dir: &Path, backend: &str) -> Result<Store, String> {
    open_backend_with(dir, backend, Durability::Sync)
}

/// Opens the store in `dir` with `durability` on the named backend (`sled` or `redb`). The harness
/// and its child take turns with the store: one that the other has just closed may be held for a
/// moment after its last handle is dropped (its backend's threads end on their own), so the open
/// waits for it (up to 30 s) instead of failing with `Locked` (a flake on a loaded machine:
/// "cycle 7 (move): ... is in use by process ... (runner)"). A store a SIGKILLed child held is
/// free at once: the kernel drops its lock with the process.
pub fn open_backend_with(
    dir: &Path,
    backend: &str,
    durability: Durability,
) -> Result<Store, String> {
    let b = match backend {
        "sled" => grove::Backend::Sled(dir.to_owned()),
        "redb" => grove::Backend::Redb(dir.to_owned()),
        other => return Err(format!("unknown backend {other} (sled or redb)")),
    };
    Store::open_with(
        StoreConfig::new(dir)
            .backend(b)
            .durability(durability)
            .lock_wait(Duration::from_secs(30)),
    )
    .map_err(|e| e.to_string())
}

/// Runs the harness as configured.
pub fn run_cycles_with(config: &Config) -> Result<Report, String> {
    let started = Instant::now();
    if !config.child.is_file() {
        return Err(format!("child binary {} not found", config.child.display()));
    }
    std::fs::create_dir_all(&config.store_dir)
        .map_err(|e| format!("{}: {e}", config.store_dir.display()))?;
    let import_file = {
        let name = config
            .store_dir
            .file_name()
            .map_or("store".into(), |n| n.to_string_lossy().into_owned());
        config
            .store_dir
            .with_file_name(format!("{name}.import.jsonl"))
    };
    let body = if import_file.is_file() {
        protocol::read_body(&import_file)?
    } else {
        protocol::write_import_file(&import_file, config.seed, config.import_lines)?
    };
    let import_body = ImportBody::new(&body);
    drop(body);

    let mut rng = Rng::new(config.seed);
    let mut report = Report {
        cycles: config.cycles,
        ..Report::default()
    };
    // What is there before the first kill (a reused directory may hold earlier runs).
    let mut baseline: Baseline = {
        let store = open_store(&config.store_dir, &config.backend)?;
        let outcome = check::check_store(&store, &Baseline::new(), &[], &import_body, true);
        if !outcome.problems.is_empty() {
            return Err(format!(
                "the store is already inconsistent before the first kill:\n{}",
                outcome.problems.join("\n")
            ));
        }
        outcome.baseline
    };
    let mut timing = Timing::new();
    let mut pending: Vec<Vec<Event>> = Vec::new();
    let mut outputs: Vec<String> = Vec::new();
    let mut delays: Vec<Duration> = Vec::new();
    let mut unchecked_in_a_row = 0;
    let mut recovering_heavy = false;
    let offset = rng.below(4) as usize;
    let mut checks_done = 0u32;

    for cycle in 0..config.cycles {
        let mode = match config.mode {
            Mode::All => Mode::WORK[(cycle as usize + offset) % 4],
            m => m,
        };
        *report.per_mode.entry(mode.name()).or_default() += 1;
        let aim_at_open = unchecked_in_a_row > 0;
        let delay = timing.delay(&mut rng, mode, aim_at_open);
        delays.push(delay);
        let child_seed = rng.next_u64();
        let run = spawn_and_kill(config, mode, cycle, child_seed, &import_file, delay)?;

        let mut events = Vec::with_capacity(run.lines.len());
        let mut failure: Option<String> = None;
        for (_, line) in &run.lines {
            match Event::parse(line) {
                Ok(Event::Error { text }) => {
                    failure = Some(format!("the child reported an error: {text}"));
                }
                Ok(e) => events.push(e),
                Err(e) => failure = Some(e),
            }
        }
        let sigkilled = killed_by_sigkill(&run.status);
        if run.killed && !sigkilled && failure.is_none() {
            failure = Some(format!(
                "the child was killed but its status is {:?}, not SIGKILL",
                run.status
            ));
        }
        if !run.killed && !run.status.success() && failure.is_none() {
            failure = Some(format!("the child failed: {:?}", run.status));
        }
        outputs.push(format!(
            "--- cycle {cycle} mode {} delay {:?} status {:?} ---\n{}{}\n--- stderr ---\n{}",
            mode.name(),
            delay,
            run.status,
            run.lines
                .iter()
                .map(|(at, l)| format!("{:>8.1}ms {l}\n", at.as_secs_f64() * 1000.0))
                .collect::<String>(),
            run.partial
                .as_deref()
                .map(|p| format!("(cut) {p}"))
                .unwrap_or_default(),
            run.stderr
        ));
        if outputs.len() > 8 {
            outputs.remove(0);
        }
        if let Some(text) = failure {
            let dir = keep_evidence(config, &import_file, &text, &outputs)?;
            return Err(format!(
                "cycle {cycle} ({}): {text}\nstderr: {}\nevidence kept in {}",
                mode.name(),
                run.stderr.trim(),
                dir.display()
            ));
        }
        if sigkilled {
            report.sigkills += 1;
        }

        // Where the kill landed.
        let has = |f: fn(&Event) -> bool| events.iter().any(f);
        let flying = in_flight(&events);
        let phase = if !run.killed {
            PHASES[5]
        } else if !has(|e| matches!(e, Event::Starting)) {
            PHASES[0]
        } else if !has(|e| matches!(e, Event::Opened { .. })) {
            if recovering_heavy {
                PHASES[2]
            } else {
                PHASES[1]
            }
        } else if !flying.is_empty() {
            PHASES[3]
        } else {
            PHASES[4]
        };
        *report.phases.entry(phase).or_default() += 1;
        for k in &flying {
            *report.in_flight.entry(k).or_default() += 1;
        }
        for e in &events {
            if let Some(k) = ack_kind(e) {
                *report.acks.entry(k).or_default() += 1;
            }
        }
        let bucket = DELAY_BUCKETS
            .iter()
            .find(|(limit, _)| (delay.as_millis() as u64) < *limit)
            .map_or(">=1s", |(_, b)| b);
        *report.delays.entry(bucket).or_default() += 1;
        timing.learn(mode, &run.lines, &events);
        let heavy = flying
            .iter()
            .any(|k| matches!(*k, "import" | "fork" | "delete"));
        pending.push(events);

        let last = cycle + 1 == config.cycles;
        // Skipping is likelier when the kill interrupted an import, fork or deletion: the
        // next child's open then has rows to clean up, and the kill may land in it.
        let percent = if heavy {
            (config.skip_check_percent * 2).min(100)
        } else {
            config.skip_check_percent / 2
        };
        let skip = !last && unchecked_in_a_row < 2 && rng.chance(percent);
        if skip {
            unchecked_in_a_row += 1;
            report.skipped_checks += 1;
            // The next child recovers the store; did this kill leave it work to do?
            recovering_heavy = recovering_heavy || heavy;
            if config.progress {
                eprintln!(
                    "cycle {cycle:>5} {:<6} kill at {:>7.1}ms: {phase}; check skipped",
                    mode.name(),
                    delay.as_secs_f64() * 1000.0
                );
            }
            continue;
        }
        unchecked_in_a_row = 0;
        recovering_heavy = false;
        checks_done += 1;
        let full = last || checks_done.is_multiple_of(config.full_check_every.max(1));
        let check_started = Instant::now();
        let (problems, stats, next) = {
            let store = match open_store(&config.store_dir, &config.backend) {
                Ok(s) => s,
                Err(e) => {
                    let dir = keep_evidence(config, &import_file, &e, &outputs)?;
                    return Err(format!(
                        "cycle {cycle} ({}): {e}\nevidence kept in {}",
                        mode.name(),
                        dir.display()
                    ));
                }
            };
            let outcome = check::check_store(&store, &baseline, &pending, &import_body, full);
            let mut problems = outcome.problems;
            if full {
                match store.verify() {
                    Ok(r) => {
                        problems.extend(r.problems.iter().map(|p| format!("Store::verify: {p}")))
                    }
                    Err(e) => problems.push(format!("Store::verify failed: {e}")),
                }
                problems.extend(check::orphan_rows(&store));
            }
            (problems, outcome.stats, outcome.baseline)
        };
        if !problems.is_empty() {
            let text = format!(
                "{} problem(s) after the kill of cycle {cycle} ({}):\n{}",
                problems.len(),
                mode.name(),
                problems.join("\n")
            );
            let dir = keep_evidence(config, &import_file, &text, &outputs)?;
            return Err(format!("{text}\nevidence kept in {}", dir.display()));
        }
        absorb(&mut report, &stats);
        report.checks += 1;
        if full {
            report.full_checks += 1;
        }
        report.final_sessions = stats.sessions;
        baseline = next;
        pending.clear();
        let size = dir_size(&config.store_dir);
        report.max_store_bytes = report.max_store_bytes.max(size);
        if config.progress {
            eprintln!(
                "cycle {cycle:>5} {:<6} kill at {:>7.1}ms: {phase}; {} check ok in {:.0}ms ({} sessions, {} inspected, {} records, store {:.0} MiB)",
                mode.name(),
                delay.as_secs_f64() * 1000.0,
                if full { "full" } else { "incremental" },
                check_started.elapsed().as_secs_f64() * 1000.0,
                stats.sessions,
                stats.inspected,
                stats.records,
                size as f64 / (1024.0 * 1024.0)
            );
        }
    }
    delays.sort();
    if let (Some(min), Some(max)) = (delays.first(), delays.last()) {
        report.delay_min_median_max = (*min, delays[delays.len() / 2], *max);
    }
    if !timing.opens.is_empty() {
        report.mean_open_ms = timing.opens.iter().sum::<f64>() / timing.opens.len() as f64;
    }
    report.duration = started.elapsed();
    Ok(report)
}

fn absorb(report: &mut Report, stats: &CheckStats) {
    report.verified_entries += stats.acked_entries;
    report.verified_batches += stats.acked_batches;
    for (k, v) in &stats.interrupted_applied {
        *report.interrupted_applied.entry(k).or_default() += v;
    }
    for (k, v) in &stats.interrupted_absent {
        *report.interrupted_absent.entry(k).or_default() += v;
    }
}
