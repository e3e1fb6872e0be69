//! Fixtures (one generated session in all three stores) and the resume scenarios:
//! a long linear session, and a huge bushy session against a small one with the same
//! active path, followed by random moves on the huge one.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use grove::{ImportOptions, Store, StoreConfig};

use super::measure::{
    dir_size, file_size, fmt_bytes, fmt_count, fmt_duration, fmt_ratio, measure, wait_for_release,
    Stats,
};
use super::report::{Table, Target};
use super::{ops, progress, Ctx};
use crate::baseline::jsonl::JsonlStore;
use crate::baseline::sqlite::SqliteStore;
use crate::gen::Payload;
use crate::gen::{generate_to, GenSpec, GeneratedSession};
use crate::Result;

/// One generated session in all three stores.
pub(crate) struct Fixture {
    pub label: String,
    pub gen: GeneratedSession,
    pub jsonl: PathBuf,
    pub grove: PathBuf,
    /// The same session in a grove store on the redb backend.
    pub grove_redb: PathBuf,
    pub sqlite: PathBuf,
    pub grove_import: Duration,
    pub sqlite_import: Duration,
    pub grove_bytes: u64,
    pub grove_redb_bytes: u64,
    /// The same session in a sled store created with zstd page compression (opt-in).
    pub grove_zstd_bytes: u64,
    pub grove_zstd_import: Duration,
    pub sqlite_bytes: u64,
}

impl Fixture {
    /// Generates `spec` to a file and imports it into a new grove store and SQLite file.
    pub(crate) fn prepare(cx: &Ctx, name: &str, label: &str, spec: &GenSpec) -> Result<Fixture> {
        progress(&format!("{label}: generating"));
        let jsonl = cx.path(&format!("{name}.jsonl"));
        let gen = generate_to(spec, &mut BufWriter::new(File::create(&jsonl)?))?;
        progress(&format!(
            "{label}: {} entries, {} leaf lines, active path {}, {}; importing",
            fmt_count(gen.ids.len() as u64),
            gen.leaf_records,
            gen.active_path_len,
            fmt_bytes(gen.bytes)
        ));
        let grove = cx.path(&format!("{name}.grove"));
        let t = Instant::now();
        import_sled(&jsonl, &grove)?;
        let grove_import = t.elapsed();
        let grove_redb = cx.path(&format!("{name}.grove-redb"));
        {
            let store = Store::open_with(
                StoreConfig::new(&grove_redb)
                    .backend(grove::Backend::Redb(grove_redb.clone()))
                    .durability(grove::Durability::None),
            )?;
            let report = store.import_file(&jsonl, ImportOptions::default())?;
            store.session(&report.session)?.build_context()?;
            store.flush()?;
        }
        let sqlite = cx.path(&format!("{name}.sqlite"));
        let bytes = std::fs::read(&jsonl)?;
        let t = Instant::now();
        {
            let mut db = SqliteStore::open(&sqlite)?;
            db.import(&bytes)?;
            db.checkpoint()?;
        }
        let sqlite_import = t.elapsed();
        let sqlite_bytes = ["", "-wal", "-shm"]
            .iter()
            .map(|s| file_size(&PathBuf::from(format!("{}{s}", sqlite.display()))))
            .sum();
        // Let the imports' dirty pages reach the disk before anything is timed.
        settle();
        Ok(Fixture {
            label: label.to_owned(),
            grove_bytes: dir_size(&grove)?,
            grove_redb_bytes: dir_size(&grove_redb)?,
            grove_zstd_bytes: 0,
            grove_zstd_import: Duration::ZERO,
            gen,
            jsonl,
            grove,
            grove_redb,
            sqlite,
            grove_import,
            sqlite_import,
            sqlite_bytes,
        })
    }

    /// Imports the JSONL file into a sled store with zstd page compression, for its bytes and
    /// import time — after the timed scenarios, so its writes do not disturb them.
    pub(crate) fn measure_zstd(&mut self, cx: &Ctx) -> Result<()> {
        progress(&format!(
            "{}: importing into a compressed store",
            self.label
        ));
        let zstd = cx.path(&format!(
            "{}.grove-zstd",
            self.label.replace([' ', ','], "_")
        ));
        let t = Instant::now();
        {
            let store = Store::open_with(
                StoreConfig::new(&zstd)
                    .durability(grove::Durability::None)
                    .compress(true),
            )?;
            store.import_file(&self.jsonl, ImportOptions::default())?;
            store.flush()?;
        }
        self.grove_zstd_import = t.elapsed();
        wait_for_release(&zstd)?;
        self.grove_zstd_bytes = dir_size(&zstd)?;
        let _ = std::fs::remove_dir_all(&zstd);
        // Its writeback must not land in the next scenario.
        settle();
        Ok(())
    }

    /// Removes the fixture's files.
    pub(crate) fn remove(self) {
        let _ = std::fs::remove_file(&self.jsonl);
        let _ = std::fs::remove_dir_all(&self.grove);
        let _ = std::fs::remove_dir_all(&self.grove_redb);
        for s in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{s}", self.sqlite.display()));
        }
    }
}

/// Imports `jsonl` into a new sled store at `dir`, flushed and released.
fn import_sled(jsonl: &Path, dir: &Path) -> Result<()> {
    {
        let store = Store::open_with(StoreConfig::new(dir).durability(grove::Durability::None))?;
        let report = store.import_file(jsonl, ImportOptions::default())?;
        // A session in use: its context was built once, and the flush writes that view (a
        // read writes nothing itself), as a platform's next write would.
        store.session(&report.session)?.build_context()?;
        store.flush()?;
    }
    wait_for_release(dir)
}

/// Asks the OS to write out dirty pages (`sync`), so that the writeback of an import does
/// not land in the middle of a timed scenario. Best effort.
pub(crate) fn settle() {
    let _ = std::process::Command::new("sync").status();
}

/// Cold resume timings of one fixture in the three stores.
pub(crate) struct Resume {
    /// Over the runs on every import of the session.
    pub grove: Stats,
    /// The median of each import's runs.
    pub grove_by_import: Vec<Duration>,
    /// Median of the `Store::open` + `session` part of the grove runs.
    pub grove_open: Duration,
    /// grove on the redb backend (open + session + build_context).
    pub redb: Stats,
    pub sqlite: Stats,
    pub jsonl: Stats,
    pub messages: usize,
}

/// grove's cold resumes of one fixture on sled.
#[derive(Default)]
pub(crate) struct GroveResume {
    /// Every measured run, on every import.
    all: Vec<Duration>,
    /// The `Store::open` + `session` part of each measured run.
    opens: Vec<Duration>,
    /// The median of each import's runs.
    by_import: Vec<Duration>,
    messages: usize,
}

/// One cold resume of session `id` in the sled store `dir`: (open + session, total, messages).
fn resume_once(dir: &Path, id: &str) -> Result<(Duration, Duration, usize)> {
    let t = Instant::now();
    let store = Store::open(dir)?;
    let session = store.session(id)?;
    let open = t.elapsed();
    let ctx = session.build_context()?;
    let total = t.elapsed();
    drop(session);
    drop(store);
    wait_for_release(dir)?;
    Ok((open, total, ctx.messages.len()))
}

/// Measures grove's cold resume on sled for each of `fixtures`.
///
/// sled's open re-reads every blob its last log segment points to (docs/design.md,
/// "Backends"), and which blobs those are depends on how an import's writes fell into
/// segments: two imports of the same file opened 1 ms apart. So each fixture's store and
/// `resume_imports - 1` fresh imports of the same file are measured, and the median taken over
/// all their runs. The runs of the fixtures alternate (a run of each, then the next run of
/// each), so that a change in the machine's speed during the measurement falls on all of them
/// alike: their ratio is the target of "resume, bushy".
pub(crate) fn grove_resumes(cx: &Ctx, fixtures: &[&Fixture]) -> Result<Vec<GroveResume>> {
    let (runs, warmup) = (cx.sizes.runs.max(1), cx.sizes.warmup);
    let imports = cx.sizes.resume_imports.max(1);
    // stores[k][i]: the k-th import of fixture i.
    let mut stores: Vec<Vec<PathBuf>> = vec![fixtures.iter().map(|f| f.grove.clone()).collect()];
    for k in 1..imports {
        let mut dirs = Vec::new();
        for f in fixtures {
            progress(&format!("{}: import {} of {imports}", f.label, k + 1));
            let dir = PathBuf::from(format!("{}-{k}", f.grove.display()));
            import_sled(&f.jsonl, &dir)?;
            dirs.push(dir);
        }
        stores.push(dirs);
    }
    settle();
    let labels: Vec<&str> = fixtures.iter().map(|f| f.label.as_str()).collect();
    progress(&format!("{}: resume grove", labels.join(" / ")));
    let mut out: Vec<GroveResume> = fixtures.iter().map(|_| GroveResume::default()).collect();
    for dirs in &stores {
        let mut times = vec![Vec::new(); fixtures.len()];
        for round in 0..warmup + runs {
            for (i, f) in fixtures.iter().enumerate() {
                let (open, total, messages) = resume_once(&dirs[i], &f.gen.session_id)?;
                out[i].messages = messages;
                if round >= warmup {
                    times[i].push(total);
                    out[i].opens.push(open);
                }
            }
        }
        for (i, t) in times.into_iter().enumerate() {
            out[i].by_import.push(Stats::of(t.clone()).median);
            out[i].all.extend(t);
        }
    }
    for dir in stores.iter().skip(1).flatten() {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(out)
}

/// The cold resume of `f` in every store, grove on sled measured beforehand (`grove`).
pub(crate) fn resume(cx: &mut Ctx, f: &Fixture, grove: GroveResume) -> Result<Resume> {
    let (runs, warmup) = (cx.sizes.runs, cx.sizes.warmup);
    let id = f.gen.session_id.clone();
    let (g, mut s, mut j) = (grove.messages, 0, 0);
    let GroveResume {
        all,
        opens,
        by_import: grove_by_import,
        ..
    } = grove;
    let grove = Stats::of(all);
    settle();
    progress(&format!("{}: resume grove (redb)", f.label));
    let mut r = 0;
    let redb = measure(warmup, runs, || {
        let t = Instant::now();
        let store = Store::open_with(
            StoreConfig::new(&f.grove_redb).backend(grove::Backend::Redb(f.grove_redb.clone())),
        )?;
        let session = store.session(&id)?;
        let ctx = session.build_context()?;
        let d = t.elapsed();
        r = ctx.messages.len();
        Ok(d)
    })?;
    cx.check(&format!("resume {} (redb)", f.label), g, r, g);
    progress(&format!("{}: resume SQLite", f.label));
    let sqlite = measure(warmup, runs, || {
        let t = Instant::now();
        let db = SqliteStore::open(&f.sqlite)?;
        let ctx = db.build_context(&id)?;
        let d = t.elapsed();
        s = ctx.len();
        Ok(d)
    })?;
    progress(&format!("{}: resume JSONL", f.label));
    let jsonl = measure(warmup, runs, || {
        let t = Instant::now();
        let store = JsonlStore::open(&f.jsonl)?;
        let n = store.build_context()?.len();
        let d = t.elapsed();
        j = n;
        Ok(d)
    })?;
    cx.check(&format!("resume {}", f.label), g, s, j);
    let mut measured = opens;
    measured.sort();
    Ok(Resume {
        grove_by_import,
        grove_open: measured
            .get(measured.len() / 2)
            .copied()
            .unwrap_or_default(),
        grove,
        redb,
        sqlite,
        jsonl,
        messages: g,
    })
}

fn resume_table(title: &str) -> Table {
    Table::new(
        title,
        "A newly opened store or file each run: grove `Store::open` + `session` + \
         `build_context` (*of which open*: `Store::open` + `session`); SQLite connect + leaf + recursive path + selection; JSONL read + \
         parse every line + id map + walk + selection.",
        &[
            "session",
            "JSONL size",
            "active path",
            "messages",
            "grove",
            "of which open",
            "grove (redb)",
            "SQLite",
            "pi JSONL",
            "grove / SQLite",
            "grove / JSONL",
        ],
    )
}

fn resume_row(t: &mut Table, f: &Fixture, r: &Resume) {
    t.row(vec![
        f.label.clone(),
        fmt_bytes(f.gen.bytes),
        fmt_count(f.gen.active_path_len as u64),
        fmt_count(r.messages as u64),
        format!(
            "{} ({})",
            fmt_duration(r.grove.median),
            r.grove_by_import
                .iter()
                .map(|d| fmt_duration(*d))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        fmt_duration(r.grove_open),
        fmt_duration(r.redb.median),
        fmt_duration(r.sqlite.median),
        fmt_duration(r.jsonl.median),
        fmt_ratio(r.grove.secs() / r.sqlite.secs()),
        fmt_ratio(r.grove.secs() / r.jsonl.secs()),
    ]);
}

/// What a fixture cost to import and weighs on disk.
#[derive(Debug, Clone)]
pub(crate) struct FixtureStats {
    label: String,
    jsonl_bytes: u64,
    grove_bytes: u64,
    grove_redb_bytes: u64,
    grove_zstd_bytes: u64,
    sqlite_bytes: u64,
    grove_import: Duration,
    grove_zstd_import: Duration,
    sqlite_import: Duration,
}

impl Fixture {
    pub(crate) fn stats(&self) -> FixtureStats {
        FixtureStats {
            label: self.label.clone(),
            jsonl_bytes: self.gen.bytes,
            grove_bytes: self.grove_bytes,
            grove_redb_bytes: self.grove_redb_bytes,
            grove_zstd_bytes: self.grove_zstd_bytes,
            sqlite_bytes: self.sqlite_bytes,
            grove_import: self.grove_import,
            grove_zstd_import: self.grove_zstd_import,
            sqlite_import: self.sqlite_import,
        }
    }
}

/// The bytes-on-disk and import tables of every fixture of the run.
pub(crate) fn storage_tables(fixtures: &[FixtureStats]) -> (Table, Table) {
    let mut bytes = Table::new(
        "Bytes on disk",
        "After import and flush (grove) or WAL checkpoint (SQLite). *grove (zstd)*: a sled \
         store created with `StoreConfig::compress(true)` (`grove --compress`), sled's zstd \
         page compression at level 3 — opt-in, for archive and audit stores.",
        &[
            "session",
            "pi JSONL",
            "grove",
            "grove (redb)",
            "grove (zstd)",
            "SQLite",
            "grove / JSONL",
            "redb / JSONL",
            "zstd / JSONL",
            "SQLite / JSONL",
        ],
    );
    let mut import = Table::new(
        "Import (informative)",
        "Import of the JSONL file: grove `import_file` (streaming, flushed); SQLite one \
         transaction of inserts.",
        &[
            "session",
            "grove",
            "grove (zstd)",
            "SQLite",
            "grove MB/s",
            "SQLite MB/s",
        ],
    );
    for f in fixtures {
        let mb = f.jsonl_bytes as f64 / 1e6;
        bytes.row(vec![
            f.label.clone(),
            fmt_bytes(f.jsonl_bytes),
            fmt_bytes(f.grove_bytes),
            fmt_bytes(f.grove_redb_bytes),
            fmt_bytes(f.grove_zstd_bytes),
            fmt_bytes(f.sqlite_bytes),
            fmt_ratio(f.grove_bytes as f64 / f.jsonl_bytes as f64),
            fmt_ratio(f.grove_redb_bytes as f64 / f.jsonl_bytes as f64),
            fmt_ratio(f.grove_zstd_bytes as f64 / f.jsonl_bytes as f64),
            fmt_ratio(f.sqlite_bytes as f64 / f.jsonl_bytes as f64),
        ]);
        import.row(vec![
            f.label.clone(),
            fmt_duration(f.grove_import),
            fmt_duration(f.grove_zstd_import),
            fmt_duration(f.sqlite_import),
            format!("{:.0}", mb / f.grove_import.as_secs_f64()),
            format!("{:.0}", mb / f.sqlite_import.as_secs_f64()),
        ]);
    }
    (bytes, import)
}

fn bytes_targets(f: &Fixture) -> [Target; 2] {
    let target = |what: String, bytes: u64| {
        let r = bytes as f64 / f.gen.bytes as f64;
        Target {
            measurement: what,
            target: "≤ 1.5× the pi JSONL size".to_owned(),
            result: format!("{} ({})", fmt_ratio(r), fmt_bytes(bytes)),
            met: r <= 1.5,
        }
    };
    [
        target(format!("bytes on disk, {}", f.label), f.grove_bytes),
        target(
            format!(
                "bytes on disk, {}, sled with zstd page compression (opt-in)",
                f.label
            ),
            f.grove_zstd_bytes,
        ),
    ]
}

/// Resume of a long linear session with realistic payloads and compactions.
pub(crate) fn resume_linear(cx: &mut Ctx) -> Result<()> {
    let s = &cx.sizes;
    let spec = GenSpec::linear(s.linear, 11)
        .payload(Payload::Realistic)
        .compaction_every(s.compaction_every);
    let label = format!("linear {}, realistic", fmt_count(s.linear as u64));
    let f = Fixture::prepare(cx, "linear", &label, &spec)?;
    let g = grove_resumes(cx, &[&f])?.remove(0);
    let r = resume(cx, &f, g)?;
    let mut t = resume_table("Resume a long linear session: open + build_context (cold)");
    resume_row(&mut t, &f, &r);
    cx.tables.push(t);
    let ratio = r.grove.secs() / r.jsonl.secs();
    cx.targets.push(Target {
        measurement: format!("resume, {label}"),
        target: "≥ 50× faster than the pi JSONL store (grove / JSONL ≤ 0.02)".to_owned(),
        result: format!(
            "{} vs {}",
            fmt_duration(r.grove.median),
            fmt_duration(r.jsonl.median)
        ),
        met: ratio <= 0.02,
    });
    let redb_ratio = r.redb.secs() / r.jsonl.secs();
    cx.targets.push(Target {
        measurement: format!("resume, {label}, redb backend"),
        target: "≥ 50× faster than the pi JSONL store (grove / JSONL ≤ 0.02)".to_owned(),
        result: format!(
            "{} vs {}",
            fmt_duration(r.redb.median),
            fmt_duration(r.jsonl.median)
        ),
        met: redb_ratio <= 0.02,
    });
    let mut f = f;
    f.measure_zstd(cx)?;
    cx.fixtures.push(f.stats());
    cx.targets.extend(bytes_targets(&f));
    f.remove();
    Ok(())
}

/// Resume of a huge bushy session against a small one with the same active path, then
/// random moves on the huge one.
pub(crate) fn resume_bushy(cx: &mut Ctx) -> Result<()> {
    let s = cx.sizes.clone();
    let big_spec = GenSpec::bushy(s.bushy, s.bushy_branches, 12).active_path(s.active_path);
    let big_label = format!(
        "bushy {}, {} branches",
        fmt_count(s.bushy as u64),
        fmt_count(s.bushy_branches as u64)
    );
    let big = Fixture::prepare(cx, "bushy", &big_label, &big_spec)?;
    let path = big.gen.active_path_len.max(1);
    let small_spec = GenSpec::bushy(s.small, (2 * s.small / path).max(1), 13).active_path(path);
    let small_label = format!("bushy {}, same path", fmt_count(s.small as u64));
    let small = Fixture::prepare(cx, "small", &small_label, &small_spec)?;
    let mut g = grove_resumes(cx, &[&big, &small])?;
    let (gs, gb) = (g.remove(1), g.remove(0));
    let rb = resume(cx, &big, gb)?;
    let rs = resume(cx, &small, gs)?;
    let mut t =
        resume_table("Resume a huge bushy session vs a small one with the same active path (cold)");
    resume_row(&mut t, &big, &rb);
    resume_row(&mut t, &small, &rs);
    let ratio = |a: &Stats, b: &Stats| a.secs() / b.secs();
    t.row(vec![
        "big / small".to_owned(),
        String::new(),
        String::new(),
        String::new(),
        fmt_ratio(ratio(&rb.grove, &rs.grove)),
        fmt_ratio(rb.grove_open.as_secs_f64() / rs.grove_open.as_secs_f64()),
        fmt_ratio(ratio(&rb.redb, &rs.redb)),
        fmt_ratio(ratio(&rb.sqlite, &rs.sqlite)),
        fmt_ratio(ratio(&rb.jsonl, &rs.jsonl)),
        String::new(),
        String::new(),
    ]);
    cx.tables.push(t);
    let r = ratio(&rb.grove, &rs.grove);
    cx.targets.push(Target {
        measurement: format!(
            "resume, {big_label} (active path {}) vs {small_label} ({})",
            big.gen.active_path_len, small.gen.active_path_len
        ),
        target: "≤ 2× (cost follows the path, not the session)".to_owned(),
        result: format!(
            "{} ({} vs {})",
            fmt_ratio(r),
            fmt_duration(rb.grove.median),
            fmt_duration(rs.grove.median)
        ),
        met: r <= 2.0,
    });
    let rr = ratio(&rb.redb, &rs.redb);
    cx.targets.push(Target {
        measurement: format!("resume, {big_label} vs {small_label}, redb backend"),
        target: "≤ 2× (cost follows the path, not the session)".to_owned(),
        result: format!(
            "{} ({} vs {})",
            fmt_ratio(rr),
            fmt_duration(rb.redb.median),
            fmt_duration(rs.redb.median)
        ),
        met: rr <= 2.0,
    });
    ops::moves(cx, &big)?;
    let (mut big, mut small) = (big, small);
    big.measure_zstd(cx)?;
    small.measure_zstd(cx)?;
    cx.fixtures.push(big.stats());
    cx.fixtures.push(small.stats());
    cx.targets.extend(bytes_targets(&big));
    big.remove();
    small.remove();
    Ok(())
}
