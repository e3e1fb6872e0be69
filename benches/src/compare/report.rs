//! The report: tables of medians and ratios, the targets with met / not met, the machine,
//! written as Markdown (docs/benchmarks.md).

use std::fmt::Write;
use std::time::Duration;

use super::machine::Machine;
use super::measure::fmt_duration;
use super::Sizes;

/// One results table.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Heading.
    pub title: String,
    /// What was measured and how (a paragraph under the heading).
    pub note: String,
    /// Column names.
    pub header: Vec<String>,
    /// Cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these columns.
    pub fn new(title: &str, note: &str, header: &[&str]) -> Table {
        Table {
            title: title.to_owned(),
            note: note.to_owned(),
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn markdown(&self, out: &mut String) {
        let _ = writeln!(out, "### {}\n", self.title);
        if !self.note.is_empty() {
            let _ = writeln!(out, "{}\n", self.note);
        }
        let _ = writeln!(out, "| {} |", self.header.join(" | "));
        let _ = writeln!(
            out,
            "|{}",
            self.header.iter().map(|_| "---|").collect::<String>()
        );
        for r in &self.rows {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        out.push('\n');
    }
}

/// One target of the issue and whether this run met it.
#[derive(Debug, Clone)]
pub struct Target {
    /// What is measured.
    pub measurement: String,
    /// The target, in words.
    pub target: String,
    /// The measured value.
    pub result: String,
    /// Met or not.
    pub met: bool,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Report {
    /// Reduced sizes.
    pub quick: bool,
    /// Where it ran.
    pub machine: Machine,
    /// The sizes used.
    pub sizes: Sizes,
    /// Result tables.
    pub tables: Vec<Table>,
    /// Targets.
    pub targets: Vec<Target>,
    /// Disagreements between stores, if any.
    pub notes: Vec<String>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

/// The command that regenerates docs/benchmarks.md.
pub const COMMAND: &str = "cargo run --release -p grove-benches --bin compare";

impl Report {
    /// The Markdown document.
    pub fn markdown(&self) -> String {
        let m = &self.machine;
        let s = &self.sizes;
        let mut out = String::new();
        let _ = writeln!(out, "# grove benchmarks\n");
        let _ = writeln!(
            out,
            "Written by the comparison harness (`benches/src/bin/compare.rs`). Regenerate with\n\n\
             ```sh\n{COMMAND}\n```\n\n\
             (`-- --quick` runs reduced sizes as a smoke test and writes \
             `target/benchmarks-quick.md` instead; the criterion micro-benchmarks are \
             `cargo bench -p grove-benches`.)\n"
        );
        let _ = writeln!(
            out,
            "| run | {} |\n|---|---|\n| date (UTC) | {} |\n| sizes | {} |\n| wall time | {} |\n\
             | commit | {} |\n| CPU | {} |\n| cores | {} |\n| memory | {} |\n| rustc | {} |\n\
             | load average at the end (1, 5, 15 min) | {} |\n",
            if self.quick { "quick" } else { "full" },
            m.date,
            if self.quick {
                "reduced (`--quick`)"
            } else {
                "full targets"
            },
            fmt_duration(self.elapsed),
            m.commit,
            m.cpu,
            m.cores,
            m.memory,
            m.rustc,
            m.load
        );
        let _ = writeln!(out, "## Targets\n");
        let _ = writeln!(
            out,
            "| measurement | target | result | met |\n|---|---|---|---|"
        );
        for t in &self.targets {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                t.measurement,
                t.target,
                t.result,
                if t.met { "met" } else { "**not met**" }
            );
        }
        out.push('\n');
        if !self.notes.is_empty() {
            let _ = writeln!(out, "Disagreements between stores:\n");
            for n in &self.notes {
                let _ = writeln!(out, "- {n}");
            }
            out.push('\n');
        }
        let _ = writeln!(out, "## Results\n");
        for t in &self.tables {
            t.markdown(&mut out);
        }
        let _ = writeln!(
            out,
            "## Method\n\n\
             - Sessions come from the seeded generator (`grove_benches::gen`): pi v3 JSONL, \
             user → assistant → tool result turns, branch points as `leaf` lines that move the \
             leaf to a random earlier entry; *small* payloads are 40–400 B texts, *realistic* \
             ones 200 B–4 KB user messages, 200 B–20 KB assistant texts, 200 B–100 KB tool \
             results (log-uniform) and a 1.5 % chance of an 8–100 KB base64 image; linear and \
             deep sessions have a compaction every {} entries keeping 2–6 entries before it.\n\
             - Times are medians: of {} measured runs after {} warm-up run(s) for resume, of {} \
             runs (each on a fresh store, no warm-up) for throughput, of {} operations after {} \
             warm-up for append + build_context in grove ({} after {} in SQLite and JSONL, \
             where one operation at depth takes seconds), and of {} moves after 10 warm-up \
             moves; min and max are shown where useful.\n\
             - *Cold* (resume) means a newly opened store or file in the same process: sled is \
             reopened, SQLite reconnects, the JSONL file is read and parsed again; the OS page \
             cache stays warm. Before the resumes of a session the harness runs `sync`, so that the \
             writeback of the fixtures it has just written does not fall into the fsync sled does \
             when it opens. grove on sled is measured on {} imports of the same file (the \
             fixture's and fresh ones), the median taken over all their runs: every sled open \
             re-reads the blobs its last log segment points to, which differ from one import \
             to the next (docs/design.md, \"Backends\"); each import's median is shown in \
             brackets. The two bushy sessions' runs alternate (one of each, then the next), so \
             that a change in the machine's speed falls on both.\n\
             - grove runs with `Durability::None` for writes (applied in commit order, flushed at the \
             end), like the raw sled loop it is compared with (inserts without flush, one flush \
             at the end); SQLite uses WAL with `synchronous = NORMAL` and one transaction per \
             operation; the JSONL store writes each line with one `write` call and never \
             fsyncs.\n\
             - The SQLite baseline keeps `entries(session, id, parent_id, seq, type, json)` with \
             primary key (session, id) and an index on (session, parent_id), the leaf in \
             `sessions`, and reads a path with `WITH RECURSIVE`; the JSONL baseline re-parses \
             the whole file into `serde_json::Value`s and walks parent links through an id \
             map, as pi's session manager does. Both select and project the context as pi \
             does; the harness checks that all three stores return the same number of \
             messages.\n\
             - Bytes on disk: the sum of the file sizes of grove's store directory after a \
             flush, and of SQLite's database after a WAL checkpoint, against the JSONL file.\n",
            s.compaction_every,
            s.runs,
            s.warmup,
            s.runs.min(3),
            s.grove_op_runs,
            s.grove_op_warmup,
            s.op_runs,
            s.warmup,
            s.moves,
            s.resume_imports
        );
        out
    }
}
