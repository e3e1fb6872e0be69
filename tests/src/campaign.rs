//! The corruption campaign: a multi-session store of one backend ([`pristine`]) is copied and
//! damaged at one random place per case ([`damage`]: a flipped bit, a zeroed range, a
//! truncation or a deleted file), and the real `grove` binary then reads the copy as a
//! child process with a time limit ([`run`]): `ls --json`, `export SESSION -o FILE` and
//! `context SESSION --json` for every session, `verify`, and `salvage SRC DEST`.
//!
//! Each case checks:
//! - no command panics (exit status 101, or the panic hook's "panicked at" on stderr) and
//!   none hangs (killed after the time limit);
//! - every read either fails with an error or prints exactly what it printed for the
//!   pristine store (the exported file byte for byte);
//! - when any read failed or printed something else, `verify` exits non-zero: it reports the
//!   damage (equivalently: when verify reports nothing, every read was exact);
//! - every session whose export and context were both exact is in salvage's DEST, and
//!   exports there exactly as in the pristine store;
//! - when salvage exits 0 (everything recovered), DEST holds every session of the pristine
//!   store, exactly.
//!
//! Cases are seeded: case `n` of seed `s` draws its damage from [`case_seed`]`(s, backend, n)`, so
//! `--seed s --first-case n --cases 1` (or `GROVE_CAMPAIGN_SEED`) replays it on a pristine
//! store built the same way. With an evidence directory, each failing case's damaged store
//! is kept there with a `failure.txt`.

pub mod damage;
pub mod pristine;
pub mod run;
pub mod sled_log;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use grove::{Backend, Flavor, Store, StoreConfig};

use crate::crash::protocol::Rng;
use damage::Damage;
use pristine::Pristine;
use run::Run;

/// How to run a campaign.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `grove` binary.
    pub grove: PathBuf,
    /// The backend: "sled" or "redb".
    pub backend: String,
    /// Cases to run.
    pub cases: u64,
    /// The number of the first case (to replay one case: that number and `cases = 1`).
    pub first_case: u64,
    /// The campaign's seed.
    pub seed: u64,
    /// How long one command may run before it counts as hung.
    pub timeout: Duration,
    /// Where the pristine store and the cases' copies live (created; cases are removed).
    pub work_dir: PathBuf,
    /// Where the damaged store of each failing case is kept, if anywhere.
    pub evidence_dir: Option<PathBuf>,
    /// Print one line per case on stderr.
    pub progress: bool,
}

impl Config {
    /// A campaign of `cases` cases with a 60-second limit per command, no evidence kept.
    pub fn new(grove: &Path, backend: &str, cases: u64, seed: u64, work_dir: &Path) -> Config {
        Config {
            grove: grove.to_owned(),
            backend: backend.to_owned(),
            cases,
            first_case: 0,
            seed,
            timeout: Duration::from_secs(60),
            work_dir: work_dir.to_owned(),
            evidence_dir: None,
            progress: false,
        }
    }
}

/// The seed of case `case` of a campaign seeded `seed` on `backend`.
pub fn case_seed(seed: u64, backend: &str, case: u64) -> u64 {
    let salt = backend
        .bytes()
        .fold(0u64, |h, b| h.rotate_left(8) ^ u64::from(b));
    seed ^ salt ^ case.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// What went wrong in a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailureKind {
    /// A command panicked.
    Panic,
    /// A command ran past the time limit.
    Hang,
    /// A read exited 0 but printed something other than the pristine store's output.
    WrongOutput,
    /// A read failed or was wrong, and `verify` exited 0.
    VerifySilent,
    /// A session that read exactly is missing from salvage's DEST, or differs there.
    SalvageMissed,
    /// salvage exited 0, but DEST lacks a session of the pristine store or holds it changed.
    SalvageOverclaimed,
    /// A read that was exact before `verify` and `salvage` ran is not after them: the
    /// diagnostic made the store harder to open.
    Degraded,
    /// A session of the pristine store is neither in salvage's DEST, exactly, nor reported
    /// lost by it ([`sled_log`]'s cases).
    SalvageUnreported,
    /// `verify` fails on salvage's DEST ([`sled_log`]'s cases).
    DestUnsound,
}

impl FailureKind {
    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Panic => "panic",
            FailureKind::Hang => "hang",
            FailureKind::WrongOutput => "wrong output",
            FailureKind::VerifySilent => "verify silent",
            FailureKind::SalvageMissed => "salvage missed",
            FailureKind::SalvageOverclaimed => "salvage overclaimed",
            FailureKind::Degraded => "degraded by verify or salvage",
            FailureKind::SalvageUnreported => "salvage unreported",
            FailureKind::DestUnsound => "salvage's DEST unsound",
        }
    }
}

/// One failed check.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The case number.
    pub case: u64,
    /// The damage of the case.
    pub damage: String,
    /// What went wrong.
    pub kind: FailureKind,
    /// The command (or session) concerned.
    pub command: String,
    /// Details: the exit code and the head of stderr, or what differed.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "case {} [{}]: {} in `{}`: {}",
            self.case,
            self.damage,
            self.kind.name(),
            self.command,
            self.detail
        )
    }
}

/// How a read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    Exact,
    Failed,
    Wrong,
    Broken,
}

/// What a campaign did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The backend.
    pub backend: String,
    /// The seed.
    pub seed: u64,
    /// Cases run.
    pub cases: u64,
    /// Cases per kind of damage.
    pub by_damage: BTreeMap<&'static str, u64>,
    /// Reads (ls, exports, contexts) that printed exactly the pristine output.
    pub reads_exact: u64,
    /// Reads that failed with an error.
    pub reads_failed: u64,
    /// Reads that exited 0 with other output.
    pub reads_wrong: u64,
    /// Cases where verify exited non-zero.
    pub verify_reported: u64,
    /// Cases where every read was exact and verify found nothing (damage without effect).
    pub no_effect: u64,
    /// Sessions salvage recovered, summed over cases.
    pub salvaged: u64,
    /// Sessions whose export and context were exact, summed over cases.
    pub intact: u64,
    /// Cases where salvage exited 0.
    pub salvage_complete: u64,
    /// The longest command run.
    pub slowest: Duration,
    /// The wall time of the campaign.
    pub elapsed: Duration,
    /// Every failed check.
    pub failures: Vec<Failure>,
}

impl Report {
    /// Failures per kind.
    pub fn failures_by_kind(&self) -> BTreeMap<FailureKind, u64> {
        let mut out = BTreeMap::new();
        for f in &self.failures {
            *out.entry(f.kind).or_insert(0) += 1;
        }
        out
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let damage: Vec<String> = self
            .by_damage
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(
            f,
            "{}: {} cases, seed {} ({}), {:.0?}; slowest command {:.1?}",
            self.backend,
            self.cases,
            self.seed,
            damage.join(", "),
            self.elapsed,
            self.slowest
        )?;
        writeln!(
            f,
            "  reads: {} exact, {} failed with an error, {} wrong; verify reported damage in {} \
             cases; {} cases without visible effect",
            self.reads_exact,
            self.reads_failed,
            self.reads_wrong,
            self.verify_reported,
            self.no_effect
        )?;
        writeln!(
            f,
            "  salvage: {} sessions recovered, {} sessions read intact; complete in {} cases",
            self.salvaged, self.intact, self.salvage_complete
        )?;
        let kinds: Vec<String> = self
            .failures_by_kind()
            .iter()
            .map(|(k, n)| format!("{} {n}", k.name()))
            .collect();
        write!(f, "  failures: {}", self.failures.len())?;
        if !kinds.is_empty() {
            write!(f, " ({})", kinds.join(", "))?;
        }
        for failure in self.failures.iter().take(60) {
            write!(f, "\n    {failure}")?;
        }
        if self.failures.len() > 60 {
            write!(f, "\n    … and {} more", self.failures.len() - 60)?;
        }
        Ok(())
    }
}

/// Builds the pristine store in the work directory and runs every case.
pub fn run_campaign(config: &Config) -> Result<Report, String> {
    let _ = std::fs::remove_dir_all(&config.work_dir);
    std::fs::create_dir_all(&config.work_dir)
        .map_err(|e| format!("{}: {e}", config.work_dir.display()))?;
    let pristine = pristine::build(
        &config.grove,
        &config.work_dir.join("pristine"),
        &config.backend,
        config.timeout,
    )?;
    let mut report = run_cases(config, &pristine)?;
    if config.backend == "sled" {
        let start = Instant::now();
        sled_log::run_fixed_cases(config, &pristine, &mut report)?;
        report.elapsed += start.elapsed();
    }
    Ok(report)
}

/// Runs every case on copies of `pristine` (built for the same backend).
pub fn run_cases(config: &Config, pristine: &Pristine) -> Result<Report, String> {
    let start = Instant::now();
    std::fs::create_dir_all(&config.work_dir)
        .map_err(|e| format!("{}: {e}", config.work_dir.display()))?;
    let mut report = Report {
        backend: config.backend.clone(),
        seed: config.seed,
        ..Report::default()
    };
    for case in config.first_case..config.first_case + config.cases {
        run_case(config, pristine, case, &mut report)?;
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

/// One case: copy, damage, read, verify, salvage, check. Adds to `report`.
pub fn run_case(
    config: &Config,
    pristine: &Pristine,
    case: u64,
    report: &mut Report,
) -> Result<(), String> {
    let mut rng = Rng::new(case_seed(config.seed, &config.backend, case));
    let work = config.work_dir.join(format!("case-{case}"));
    let _ = std::fs::remove_dir_all(&work);
    let src = work.join("src");
    damage::copy_tree(&pristine.dir, &src)?;
    let damage = damage::plan(&mut rng, &src, &config.backend)?;
    damage::apply(&src, &damage)?;
    let failures_before = report.failures.len();
    let mut case_run = Case::new(config, case, damage.to_string(), src.clone(), report);
    let outcome = case_run.check(pristine, &work)?;
    report.cases += 1;
    *report.by_damage.entry(damage.kind.name()).or_insert(0) += 1;
    if config.progress {
        eprintln!(
            "case {case} [{damage}]: {outcome}{}",
            match report.failures.len() - failures_before {
                0 => String::new(),
                n => format!(" — {n} FAILURE(S)"),
            }
        );
    }
    let failed = report.failures.len() > failures_before;
    match (&config.evidence_dir, failed) {
        (Some(dir), true) => keep_evidence(dir, config, pristine, case, &damage, report)?,
        _ => {
            let _ = std::fs::remove_dir_all(&work);
        }
    }
    Ok(())
}

/// Keeps a fresh copy of case `case`'s damaged store under `dir`, with a `failure.txt`.
fn keep_evidence(
    dir: &Path,
    config: &Config,
    pristine: &Pristine,
    case: u64,
    damage: &Damage,
    report: &Report,
) -> Result<(), String> {
    let target = dir.join(format!(
        "grove-campaign-{}-{}-{case}",
        config.backend, config.seed
    ));
    let _ = std::fs::remove_dir_all(&target);
    damage::copy_tree(&pristine.dir, &target.join("store"))?;
    damage::apply(&target.join("store"), damage)?;
    let failures: Vec<String> = report
        .failures
        .iter()
        .filter(|f| f.case == case)
        .map(ToString::to_string)
        .collect();
    let text = format!(
        "backend {}, seed {}, case {case}\ndamage: {damage}\n{}\n",
        config.backend,
        config.seed,
        failures.join("\n")
    );
    std::fs::write(target.join("failure.txt"), text).map_err(|e| format!("evidence: {e}"))?;
    let _ = std::fs::remove_dir_all(config.work_dir.join(format!("case-{case}")));
    Ok(())
}

/// The checks of one case.
struct Case<'a> {
    config: &'a Config,
    case: u64,
    damage: String,
    src: PathBuf,
    report: &'a mut Report,
    /// After [`Case::check`]: the sessions whose export and context were exact.
    intact: Vec<String>,
    /// After [`Case::check`]: salvage's run, unless it panicked or hung.
    salvage: Option<Run>,
}

impl<'a> Case<'a> {
    fn new(
        config: &'a Config,
        case: u64,
        damage: String,
        src: PathBuf,
        report: &'a mut Report,
    ) -> Case<'a> {
        Case {
            config,
            case,
            damage,
            src,
            report,
            intact: Vec::new(),
            salvage: None,
        }
    }

    fn fail(&mut self, kind: FailureKind, command: &str, detail: String) {
        self.report.failures.push(Failure {
            case: self.case,
            damage: self.damage.clone(),
            kind,
            command: command.to_owned(),
            detail,
        });
    }

    fn grove(&mut self, args: &[&str]) -> Run {
        let run = run::grove(
            &self.config.grove,
            &self.src,
            &self.config.backend,
            args,
            self.config.timeout,
        );
        self.report.slowest = self.report.slowest.max(run.elapsed);
        run
    }

    /// Records a panic or a hang of `run`; whether there was one.
    fn broken(&mut self, command: &str, run: &Run) -> bool {
        if run.timed_out {
            let limit = self.config.timeout;
            self.fail(
                FailureKind::Hang,
                command,
                format!("killed after {limit:?}"),
            );
            true
        } else if run.panicked() {
            let detail = format!("exit {:?}: {}", run.code, run.stderr_head());
            self.fail(FailureKind::Panic, command, detail);
            true
        } else {
            false
        }
    }

    /// Judges a read: `output` is what it printed (or wrote) when it exited 0.
    fn read(&mut self, command: &str, run: &Run, output: Option<&[u8]>, expected: &[u8]) -> Read {
        let read = if self.broken(command, run) {
            Read::Broken
        } else if !run.ok() {
            Read::Failed
        } else if output == Some(expected) {
            Read::Exact
        } else {
            let got =
                output.map_or_else(|| "no output".to_owned(), |o| format!("{} bytes", o.len()));
            let detail = format!(
                "exit 0 with {got}, expected {} bytes; stderr: {}",
                expected.len(),
                run.stderr_head()
            );
            self.fail(FailureKind::WrongOutput, command, detail);
            Read::Wrong
        };
        match read {
            Read::Exact => self.report.reads_exact += 1,
            Read::Failed => self.report.reads_failed += 1,
            Read::Wrong => self.report.reads_wrong += 1,
            Read::Broken => {}
        }
        read
    }

    /// Runs the commands and checks them; returns a one-line summary.
    fn check(&mut self, pristine: &Pristine, work: &Path) -> Result<String, String> {
        let mut all_exact = true;
        let ls = self.grove(&["ls", "--json"]);
        let ls_exact = self.read("ls --json", &ls, Some(&ls.stdout), &pristine.ls) == Read::Exact;
        all_exact &= ls_exact;
        let out_file = work.join("export.jsonl");
        let out = out_file.to_string_lossy().into_owned();
        let mut intact = Vec::new();
        for id in &pristine.sessions {
            let _ = std::fs::remove_file(&out_file);
            let export = self.grove(&["export", id, "-o", &out]);
            let bytes = std::fs::read(&out_file).ok();
            let command = format!("export {id}");
            let exported = self.read(&command, &export, bytes.as_deref(), &pristine.exports[id]);
            let context = self.grove(&["context", id, "--json"]);
            let command = format!("context {id} --json");
            let built = self.read(
                &command,
                &context,
                Some(&context.stdout),
                &pristine.contexts[id],
            );
            all_exact &= exported == Read::Exact && built == Read::Exact;
            if exported == Read::Exact && built == Read::Exact {
                intact.push(id.clone());
            }
        }
        self.report.intact += intact.len() as u64;
        self.intact.clone_from(&intact);
        let verify = self.grove(&["verify"]);
        self.broken("verify", &verify);
        if !verify.ok() {
            self.report.verify_reported += 1;
        } else if !all_exact {
            let detail = format!(
                "verify exited 0 although a read failed or was wrong; it printed: {}",
                String::from_utf8_lossy(&verify.stdout).trim()
            );
            self.fail(FailureKind::VerifySilent, "verify", detail);
        } else {
            self.report.no_effect += 1;
        }
        let dest = work.join("dest");
        let (src, dest_text) = (
            self.src.to_string_lossy().into_owned(),
            dest.to_string_lossy().into_owned(),
        );
        let salvage = self.grove(&["salvage", &src, &dest_text, "--json"]);
        let mut summary = format!(
            "{} intact, verify {}, salvage {}",
            intact.len(),
            exit_text(&verify),
            exit_text(&salvage)
        );
        if self.broken("salvage", &salvage) {
            return Ok(summary);
        }
        let copies = dest_exports(&dest, &self.config.backend)?;
        self.report.salvaged += copies.len() as u64;
        summary.push_str(&format!(" ({} recovered)", copies.len()));
        for id in &intact {
            if copies.get(id) != Some(&pristine.exports[id]) {
                let detail = format!(
                    "read exactly, but {} in DEST; salvage printed: {}",
                    if copies.contains_key(id) {
                        "differs"
                    } else {
                        "missing"
                    },
                    lost_reason(&salvage, id)
                );
                self.fail(
                    FailureKind::SalvageMissed,
                    &format!("salvage ({id})"),
                    detail,
                );
            }
        }
        // Neither verify nor salvage may make the store harder to open than it was: what read
        // exactly before them still does.
        let ls = self.grove(&["ls", "--json"]);
        if ls_exact && !(ls.ok() && ls.stdout == pristine.ls) {
            let detail = format!("exact before, now: {}", exit_text(&ls));
            self.fail(FailureKind::Degraded, "ls --json", detail);
        }
        for id in &intact {
            let _ = std::fs::remove_file(&out_file);
            let export = self.grove(&["export", id, "-o", &out]);
            let bytes = std::fs::read(&out_file).ok();
            if !(export.ok() && bytes.as_ref() == Some(&pristine.exports[id])) {
                let detail = format!("exact before, now: {}", exit_text(&export));
                self.fail(FailureKind::Degraded, &format!("export {id}"), detail);
            }
        }
        let complete = salvage.ok();
        self.salvage = Some(salvage);
        if complete {
            self.report.salvage_complete += 1;
            let wrong: Vec<&String> = pristine
                .sessions
                .iter()
                .filter(|id| copies.get(*id) != Some(&pristine.exports[*id]))
                .collect();
            if !wrong.is_empty() {
                let detail = format!("exit 0, but DEST lacks or changed {wrong:?}");
                self.fail(FailureKind::SalvageOverclaimed, "salvage", detail);
            }
        }
        Ok(summary)
    }
}

fn exit_text(run: &Run) -> String {
    match (run.timed_out, run.code) {
        (true, _) => "hung".to_owned(),
        (false, Some(code)) => format!("exit {code}"),
        (false, None) => "killed".to_owned(),
    }
}

/// What salvage's JSON report says of session `id`, or its stderr.
fn lost_reason(run: &Run, id: &str) -> String {
    let report: Option<serde_json::Value> = serde_json::from_slice(&run.stdout).ok();
    let lost = report.as_ref().and_then(|r| {
        r["lost"]
            .as_array()?
            .iter()
            .find(|l| l["session"] == id)
            .map(|l| l["reason"].to_string())
    });
    lost.unwrap_or_else(|| format!("exit {:?}: {}", run.code, run.stderr_head()))
}

/// The harness export of every session of the store salvage wrote in `dest` (none when it
/// wrote no store).
fn dest_exports(dest: &Path, backend: &str) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    if grove::kv::existing_backend(dest).is_none() {
        return Ok(out);
    }
    let b = match backend {
        "redb" => Backend::Redb(dest.to_owned()),
        _ => Backend::Sled(dest.to_owned()),
    };
    let e = |e: grove::GroveError| format!("reading salvage's DEST {}: {e}", dest.display());
    let store = Store::open_with(StoreConfig::new(dest).backend(b)).map_err(e)?;
    for summary in store.sessions().map_err(e)? {
        let mut bytes = Vec::new();
        store
            .session(&summary.id)
            .and_then(|s| s.export(Flavor::Harness, &mut bytes))
            .map_err(e)?;
        out.insert(summary.id, bytes);
    }
    Ok(out)
}
