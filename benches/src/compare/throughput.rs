//! Append throughput: grove `append` against raw sled inserts of the same bytes (and the
//! baselines), and `append_many` in batches.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use grove::{AppendOptions, CreateSession, NewEntry};

use super::measure::{fmt_count, fmt_rate, fmt_ratio, measure, wait_for_release, Stats};
use super::ops::{grove_writer, remove_sqlite};
use super::report::{Table, Target};
use super::{progress, Ctx};
use crate::baseline::jsonl::JsonlStore;
use crate::baseline::sqlite::SqliteStore;
use crate::gen::Payload;
use crate::gen::{AppendCalls, GenSpec, CWD};
use crate::Result;

/// The records of a linear spec as API entries and as lines.
struct Workload {
    label: String,
    session_id: String,
    header: String,
    entries: Vec<(NewEntry, AppendOptions)>,
    lines: Vec<String>,
    bytes: u64,
}

impl Workload {
    fn new(label: &str, spec: &GenSpec) -> Workload {
        let AppendCalls {
            session_id,
            header,
            entries,
            lines,
        } = AppendCalls::new(spec);
        let bytes = lines.iter().map(|l| l.len() as u64).sum();
        Workload {
            label: label.to_owned(),
            session_id,
            header,
            entries,
            lines,
            bytes,
        }
    }

    fn rate(&self, s: &Stats) -> String {
        format!(
            "{} ({:.1} MB/s)",
            fmt_rate(self.lines.len() as f64 / s.secs()),
            self.bytes as f64 / 1e6 / s.secs()
        )
    }
}

/// Which grove store a throughput run writes to.
#[derive(Debug, Clone, Copy)]
enum Flavor {
    /// sled, the default.
    Sled,
    /// The redb backend.
    Redb,
    /// sled with zstd page compression (opt-in).
    Zstd,
}

/// Fresh paths for each run.
struct Scratch {
    base: PathBuf,
    n: usize,
}

impl Scratch {
    fn next(&mut self, what: &str) -> PathBuf {
        self.n += 1;
        self.base.join(format!("{what}-{}", self.n))
    }
}

fn create(store: &grove::Store, w: &Workload) -> Result<grove::Session> {
    Ok(store.create_session(CreateSession {
        id: Some(w.session_id.clone()),
        cwd: CWD.to_owned(),
        ..CreateSession::default()
    })?)
}

/// Runs `body` against a fresh grove store, SQLite file, JSONL file and raw sled tree per
/// run; each returns its own measured time.
struct Runner<'a> {
    w: &'a Workload,
    scratch: Scratch,
    runs: usize,
}

impl Runner<'_> {
    fn grove(&mut self, body: impl Fn(&grove::Session) -> Result<()>) -> Result<Stats> {
        self.grove_on(Flavor::Sled, body)
    }

    /// The same on another backend or configuration.
    fn grove_on(
        &mut self,
        flavor: Flavor,
        body: impl Fn(&grove::Session) -> Result<()>,
    ) -> Result<Stats> {
        let (w, scratch) = (self.w, &mut self.scratch);
        measure(0, self.runs, || {
            let dir = scratch.next(match flavor {
                Flavor::Sled => "grove",
                Flavor::Redb => "grove-redb",
                Flavor::Zstd => "grove-zstd",
            });
            let d = {
                let none = grove::StoreConfig::new(&dir).durability(grove::Durability::None);
                let store = match flavor {
                    Flavor::Sled => grove_writer(&dir)?,
                    Flavor::Redb => {
                        grove::Store::open_with(none.backend(grove::Backend::Redb(dir.clone())))?
                    }
                    Flavor::Zstd => grove::Store::open_with(none.compress(true))?,
                };
                let session = create(&store, w)?;
                let t = Instant::now();
                body(&session)?;
                store.flush()?;
                t.elapsed()
            };
            wait_for_release(&dir)?;
            let _ = std::fs::remove_dir_all(&dir);
            Ok(d)
        })
    }

    fn sled(&mut self, body: impl Fn(&sled::Db) -> Result<()>) -> Result<Stats> {
        let scratch = &mut self.scratch;
        measure(0, self.runs, || {
            let dir = scratch.next("sled");
            let d = {
                let db = sled::open(&dir)?;
                let t = Instant::now();
                body(&db)?;
                db.flush()?;
                t.elapsed()
            };
            wait_for_release(&dir)?;
            let _ = std::fs::remove_dir_all(&dir);
            Ok(d)
        })
    }

    fn sqlite(&mut self, body: impl Fn(&mut SqliteStore) -> Result<()>) -> Result<Stats> {
        let (w, scratch) = (self.w, &mut self.scratch);
        measure(0, self.runs, || {
            let path = scratch.next("sqlite");
            let d = {
                let mut db = SqliteStore::open(&path)?;
                db.create_session(&w.session_id, &w.header)?;
                let t = Instant::now();
                body(&mut db)?;
                t.elapsed()
            };
            remove_sqlite(&path);
            Ok(d)
        })
    }

    fn jsonl(&mut self, body: impl Fn(&mut JsonlStore) -> Result<()>) -> Result<Stats> {
        let (w, scratch) = (self.w, &mut self.scratch);
        measure(0, self.runs, || {
            let path = scratch.next("jsonl");
            std::fs::write(&path, format!("{}\n", w.header))?;
            let d: Duration = {
                let mut store = JsonlStore::open(&path)?;
                let t = Instant::now();
                body(&mut store)?;
                t.elapsed()
            };
            let _ = std::fs::remove_file(&path);
            Ok(d)
        })
    }
}

fn runner<'a>(cx: &Ctx, w: &'a Workload) -> Runner<'a> {
    Runner {
        w,
        scratch: Scratch {
            base: cx.work.clone(),
            n: 0,
        },
        runs: cx.sizes.runs.min(3),
    }
}

/// Single appends against raw sled inserts of the same bytes.
pub(crate) fn append_throughput(cx: &mut Ctx) -> Result<()> {
    let s = cx.sizes.clone();
    let mut table = Table::new(
        "Append throughput",
        "Entries appended one call at a time to a new session, until a final flush. grove: \
         `append_with` (the generated id and timestamp, so the stored lines are the \
         generated bytes), `Durability::None`; raw sled: `insert(seq, line)` of the same \
         lines, no flush per insert; SQLite: one transaction per append; JSONL: one `write` \
         per line.",
        &[
            "payload",
            "entries",
            "grove append",
            "grove (redb)",
            "grove (zstd)",
            "raw sled insert",
            "SQLite",
            "pi JSONL",
            "grove / raw sled",
        ],
    );
    let workloads = [
        Workload::new("small", &GenSpec::linear(s.appends, 31)),
        Workload::new(
            "realistic",
            &GenSpec::linear(s.appends_realistic, 32).payload(Payload::Realistic),
        ),
    ];
    for w in &workloads {
        progress(&format!("append throughput, {} payload", w.label));
        let mut r = runner(cx, w);
        let append_all = |session: &grove::Session| -> Result<()> {
            for (entry, options) in &w.entries {
                session.append_with(entry.clone(), options.clone())?;
            }
            Ok(())
        };
        let grove = r.grove(append_all)?;
        let grove_redb = r.grove_on(Flavor::Redb, append_all)?;
        let grove_zstd = r.grove_on(Flavor::Zstd, append_all)?;
        let raw = r.sled(|db| {
            for (i, line) in w.lines.iter().enumerate() {
                db.insert((i as u64).to_be_bytes(), line.as_bytes())?;
            }
            Ok(())
        })?;
        let sqlite = r.sqlite(|db| {
            for line in &w.lines {
                db.append_line(&w.session_id, line)?;
            }
            Ok(())
        })?;
        let jsonl = r.jsonl(|store| {
            for line in &w.lines {
                store.append_line(line)?;
            }
            Ok(())
        })?;
        let ratio = raw.secs() / grove.secs();
        table.row(vec![
            w.label.clone(),
            fmt_count(w.lines.len() as u64),
            w.rate(&grove),
            w.rate(&grove_redb),
            w.rate(&grove_zstd),
            w.rate(&raw),
            w.rate(&sqlite),
            w.rate(&jsonl),
            fmt_ratio(ratio),
        ]);
        cx.targets.push(Target {
            measurement: format!("append throughput, {} payload", w.label),
            target: "≥ 0.5× raw sled inserts of the same bytes".to_owned(),
            result: format!("{} ({})", fmt_ratio(ratio), w.rate(&grove)),
            met: ratio >= 0.5,
        });
    }
    cx.tables.push(table);
    Ok(())
}

/// Entries of one agent turn written by one `append_many` in the comparison.
const TURN: usize = 4;

/// `append_many` in batches: of a turn's few entries, and of the target's size.
pub(crate) fn append_many(cx: &mut Ctx) -> Result<()> {
    let s = cx.sizes.clone();
    let w = Workload::new("small", &GenSpec::linear(s.appends, 33));
    let target_batch = s.batch.max(1);
    let entries: Vec<NewEntry> = w.entries.iter().map(|(e, _)| e.clone()).collect();
    let mut table = Table::new(
        "append_many throughput",
        &format!(
            "grove: `append_many` of each batch (records that fit one log value — up to 256 \
             records, 128 KiB — as ordered single writes, more as one atomic batch; \
             `Durability::None`); raw sled: one `apply_batch` per batch; SQLite: one \
             transaction per batch; JSONL: one `write` per batch. Small payload. Batches of \
             {TURN} entries are a turn (user, assistant, tool result, assistant); the target \
             is stated for batches of {target_batch}."
        ),
        &[
            "batch",
            "entries",
            "grove append_many",
            "grove (redb)",
            "raw sled batch",
            "SQLite",
            "pi JSONL",
            "grove / raw sled",
        ],
    );
    for batch in [TURN, target_batch] {
        progress(&format!("append_many, batches of {batch}"));
        let mut r = runner(cx, &w);
        let many = |session: &grove::Session| -> Result<()> {
            for chunk in entries.chunks(batch) {
                session.append_many(chunk)?;
            }
            Ok(())
        };
        let grove = r.grove(many)?;
        let grove_redb = r.grove_on(Flavor::Redb, many)?;
        let raw = r.sled(|db| {
            for (c, chunk) in w.lines.chunks(batch).enumerate() {
                let mut b = sled::Batch::default();
                for (i, line) in chunk.iter().enumerate() {
                    b.insert(&((c * batch + i) as u64).to_be_bytes(), line.as_bytes());
                }
                db.apply_batch(b)?;
            }
            Ok(())
        })?;
        let sqlite = r.sqlite(|db| {
            for chunk in w.lines.chunks(batch) {
                db.append_lines(&w.session_id, chunk)?;
            }
            Ok(())
        })?;
        let jsonl = r.jsonl(|store| {
            for chunk in w.lines.chunks(batch) {
                store.append_lines(chunk)?;
            }
            Ok(())
        })?;
        table.row(vec![
            batch.to_string(),
            fmt_count(w.lines.len() as u64),
            w.rate(&grove),
            w.rate(&grove_redb),
            w.rate(&raw),
            w.rate(&sqlite),
            w.rate(&jsonl),
            fmt_ratio(raw.secs() / grove.secs()),
        ]);
        if batch != target_batch {
            continue;
        }
        let rate = w.lines.len() as f64 / grove.secs();
        cx.targets.push(Target {
            measurement: format!("append_many entries/s (batches of {batch}, small payload)"),
            target: "≥ 200,000 entries/s".to_owned(),
            result: fmt_rate(rate),
            met: rate >= 200_000.0,
        });
        let redb_rate = w.lines.len() as f64 / grove_redb.secs();
        cx.targets.push(Target {
            measurement: format!(
                "append_many entries/s (batches of {batch}, small payload), redb backend"
            ),
            target: "≥ 200,000 entries/s".to_owned(),
            result: fmt_rate(redb_rate),
            met: redb_rate >= 200_000.0,
        });
    }
    cx.tables.push(table);
    Ok(())
}
