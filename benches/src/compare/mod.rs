//! The comparison harness: the same generated sessions through grove, SQLite and a
//! pi-style JSONL store, in one run, written up as docs/benchmarks.md.
//!
//! Scenarios (each a function in `resume`, `ops` or `throughput`): resume of a long linear session;
//! resume of a huge bushy session versus a small one with the same active path;
//! `move_to` + `build_context` on the huge bushy session; `build_context` after an append at
//! a great and a small depth; append throughput versus raw sled inserts of the same bytes;
//! `append_many` throughput; bytes on disk versus the JSONL file.

pub mod machine;
pub mod measure;
mod ops;
pub mod report;
mod resume;
mod throughput;

use std::path::PathBuf;
use std::time::Instant;

use machine::Machine;
use report::{Report, Table, Target};

use crate::Result;

/// Command-line options of the harness.
#[derive(Debug, Clone)]
pub struct Options {
    /// Reduced sizes (CI smoke run).
    pub quick: bool,
    /// Where the report goes.
    pub out: PathBuf,
    /// Where stores and files are made (a fresh temporary directory inside it).
    pub workdir: Option<PathBuf>,
    /// Measured runs for whole-store measurements (resume, throughput); `None`: the sizes'.
    pub runs: Option<usize>,
    /// Only these scenarios (names as in [`SCENARIOS`]); empty: all.
    pub only: Vec<String>,
}

/// The scenario names, in run order.
pub const SCENARIOS: [&str; 5] = ["resume", "bushy", "depth", "append", "append_many"];

/// Sizes of one run.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Entries of the linear resume session (realistic payload).
    pub linear: usize,
    /// A compaction every this many entries in the linear and deep sessions.
    pub compaction_every: usize,
    /// Entries of the huge bushy session (small payload).
    pub bushy: usize,
    /// Its branch points.
    pub bushy_branches: usize,
    /// The active path the huge bushy session is aimed at.
    pub active_path: usize,
    /// Entries of the small session with the same active path.
    pub small: usize,
    /// Depth of the deep linear session (small payload).
    pub deep: usize,
    /// Depth of the shallow one.
    pub shallow: usize,
    /// Appends per throughput run, small payload.
    pub appends: usize,
    /// Appends per throughput run, realistic payload.
    pub appends_realistic: usize,
    /// Entries per `append_many` call.
    pub batch: usize,
    /// Random moves measured.
    pub moves: usize,
    /// Measured operations of append + `build_context` in SQLite and JSONL (slow at depth).
    pub op_runs: usize,
    /// Measured operations of append + `build_context` in grove, after `grove_op_warmup`.
    pub grove_op_runs: usize,
    /// Warm-up operations before them.
    pub grove_op_warmup: usize,
    /// Imports of each resume session measured on sled (the fixture's and fresh ones): two
    /// imports of one file leave sled's log in different states, which its open feels.
    pub resume_imports: usize,
    /// Measured runs of whole-store measurements.
    pub runs: usize,
    /// Warm-up runs before them.
    pub warmup: usize,
}

impl Sizes {
    /// The full targets.
    pub fn full() -> Sizes {
        Sizes {
            linear: 100_000,
            compaction_every: 100,
            bushy: 1_000_000,
            bushy_branches: 10_000,
            active_path: 1_000,
            small: 10_000,
            deep: 1_000_000,
            shallow: 1_000,
            appends: 100_000,
            appends_realistic: 10_000,
            batch: 100,
            moves: 200,
            op_runs: 15,
            grove_op_runs: 201,
            grove_op_warmup: 20,
            resume_imports: 3,
            runs: 5,
            warmup: 1,
        }
    }

    /// Reduced sizes for a smoke run.
    pub fn quick() -> Sizes {
        Sizes {
            linear: 10_000,
            compaction_every: 100,
            bushy: 50_000,
            bushy_branches: 500,
            active_path: 300,
            small: 2_000,
            deep: 50_000,
            shallow: 1_000,
            appends: 10_000,
            appends_realistic: 1_000,
            batch: 100,
            moves: 50,
            op_runs: 10,
            grove_op_runs: 51,
            grove_op_warmup: 5,
            resume_imports: 2,
            runs: 3,
            warmup: 1,
        }
    }
}

/// Shared state of a run.
pub(crate) struct Ctx {
    pub sizes: Sizes,
    pub work: PathBuf,
    pub tables: Vec<Table>,
    pub targets: Vec<Target>,
    pub notes: Vec<String>,
    pub fixtures: Vec<resume::FixtureStats>,
}

impl Ctx {
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.work.join(name)
    }

    /// Records a disagreement between stores (shown in the report, never fatal).
    pub(crate) fn check(&mut self, what: &str, grove: usize, sqlite: usize, jsonl: usize) {
        if grove != sqlite || grove != jsonl {
            self.notes.push(format!(
                "{what}: message counts differ (grove {grove}, SQLite {sqlite}, JSONL {jsonl})"
            ));
        }
    }
}

/// Progress on stderr.
pub(crate) fn progress(msg: &str) {
    eprintln!("[compare] {msg}");
}

/// Runs the scenarios and returns the report (not yet written).
pub fn run(options: &Options) -> Result<Report> {
    let started = Instant::now();
    let mut sizes = if options.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    if let Some(r) = options.runs {
        sizes.runs = r;
    }
    let base = options.workdir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base)?;
    let work = tempfile::Builder::new()
        .prefix("grove-compare-")
        .tempdir_in(&base)?;
    progress(&format!("working in {}", work.path().display()));
    let mut cx = Ctx {
        sizes,
        work: work.path().to_path_buf(),
        tables: Vec::new(),
        targets: Vec::new(),
        notes: Vec::new(),
        fixtures: Vec::new(),
    };
    let wanted = |name: &str| options.only.is_empty() || options.only.iter().any(|o| o == name);
    if wanted("resume") {
        resume::resume_linear(&mut cx)?;
    }
    if wanted("bushy") {
        resume::resume_bushy(&mut cx)?;
    }
    if wanted("depth") {
        ops::context_after_append(&mut cx)?;
    }
    if wanted("append") {
        throughput::append_throughput(&mut cx)?;
    }
    if wanted("append_many") {
        throughput::append_many(&mut cx)?;
    }
    if !cx.fixtures.is_empty() {
        let (bytes, import) = resume::storage_tables(&cx.fixtures);
        cx.tables.push(bytes);
        cx.tables.push(import);
    }
    Ok(Report {
        quick: options.quick,
        machine: Machine::detect(),
        sizes: cx.sizes,
        tables: cx.tables,
        targets: cx.targets,
        notes: cx.notes,
        elapsed: started.elapsed(),
    })
}
