//! What reading lines costs: cold resume (`Store::open` + `session` + `build_context`), a
//! context built from scratch (the whole selection read from the log, no view), and a
//! harness export to a sink, on sled and redb stores of the comparison's bushy session
//! (1,000,000 small entries, 10,000 branches, active path 1000) and of a linear realistic
//! one. docs/benchmarks.md ("Read checks") cites its output, run alternately by two builds
//! on the same stores.
//!
//! ```sh
//! cargo run --release -p grove-benches --example read_cost -- prepare DIR [bushy] [linear]
//! cargo run --release -p grove-benches --example read_cost -- measure DIR [runs]
//! ```
//!
//! Each measurement prints the median wall time of its runs and the CPU time per run of the
//! measuring thread (`/proc/thread-self/schedstat`), which a loaded machine disturbs less.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use grove::{
    Backend, ContextOptions, CreateSession, Durability, Flavor, ImportOptions, NewEntry, Store,
    StoreConfig,
};
use grove_benches::compare::measure::{wait_for_release, Stats};
use grove_benches::gen::Payload;
use grove_benches::gen::{generate_to, GenSpec};
use grove_codec::record::ViewRowsRecord;

fn config(dir: &Path) -> StoreConfig {
    let backend = if dir.extension().is_some_and(|e| e == "redb") {
        Backend::Redb(dir.to_owned())
    } else {
        Backend::Sled(dir.to_owned())
    };
    StoreConfig::new(dir)
        .backend(backend)
        .durability(Durability::None)
}

fn open(dir: &Path) -> Store {
    Store::open_with(config(dir)).unwrap()
}

fn prepare(dir: &Path, bushy: usize, linear: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let specs = [
        (
            "bushy",
            GenSpec::bushy(bushy, bushy / 100, 12).active_path(1000),
        ),
        (
            "linear",
            GenSpec::linear(linear, 11)
                .payload(Payload::Realistic)
                .compaction_every(100),
        ),
    ];
    for (name, spec) in specs {
        let jsonl = dir.join(format!("{name}.jsonl"));
        let gen = generate_to(&spec, &mut BufWriter::new(File::create(&jsonl).unwrap())).unwrap();
        std::fs::write(dir.join(format!("{name}.id")), &gen.session_id).unwrap();
        for ext in ["sled", "redb"] {
            let store_dir = dir.join(format!("{name}.{ext}"));
            let store = open(&store_dir);
            store.import_file(&jsonl, ImportOptions::default()).unwrap();
            // The first build persists the view and its materialized rows.
            store
                .session(&gen.session_id)
                .unwrap()
                .build_context()
                .unwrap();
            store.flush().unwrap();
            drop(store);
            wait_for_release(&store_dir).unwrap();
        }
        std::fs::remove_file(&jsonl).unwrap();
    }
}

fn median(times: Vec<Duration>) -> Duration {
    Stats::of(times).median
}

/// CPU time this thread has run, from `/proc/thread-self/schedstat` (nanoseconds; the kernel
/// brings it up to date at ticks and switches, so it is read over many operations). Unlike
/// wall time it leaves out the time other processes of a shared machine take.
fn cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

/// Wall-time median and CPU time per run of `op`, run `runs` times after one warm-up.
fn time(runs: usize, mut op: impl FnMut()) -> (Duration, Duration) {
    op();
    let mut wall = Vec::with_capacity(runs);
    let start = cpu();
    for _ in 0..runs {
        let t = Instant::now();
        op();
        wall.push(t.elapsed());
    }
    let per_run = (cpu() - start) / u32::try_from(runs).unwrap();
    (median(wall), per_run)
}

fn measure(dir: &Path, runs: usize) {
    let _ = std::process::Command::new("sync").status();
    for name in ["bushy", "linear"] {
        let id = std::fs::read_to_string(dir.join(format!("{name}.id"))).unwrap();
        for ext in ["sled", "redb"] {
            let store_dir: PathBuf = dir.join(format!("{name}.{ext}"));
            // Cold resume: a new store each run.
            let mut messages = 0;
            let resume = time(runs, || {
                let store = open(&store_dir);
                let session = store.session(&id).unwrap();
                messages = session.build_context().unwrap().messages.len();
                drop(session);
                drop(store);
                wait_for_release(&store_dir).unwrap();
            });
            // Warm: the selection from the log (no view), and a whole export.
            let store = open(&store_dir);
            let session = store.session(&id).unwrap();
            let scratch = time(runs * 10, || {
                session
                    .build_context_from_scratch(None, ContextOptions::grove())
                    .unwrap();
            });
            let mut lines = 0;
            let export = time(runs.div_ceil(3), || {
                lines = session
                    .export(Flavor::Harness, &mut std::io::sink())
                    .unwrap()
                    .lines;
            });
            println!(
                "{name}.{ext}: resume {:?} cpu {:?} ({messages} messages) | from scratch {:?} \
                 cpu {:?} | export {:?} cpu {:?} ({lines} lines)",
                resume.0, resume.1, scratch.0, scratch.1, export.0, export.1,
            );
        }
    }
    // Append + build_context in memory: the view reads the appended line back.
    let store = Store::in_memory().unwrap();
    let session = store.create_session(CreateSession::default()).unwrap();
    let message = NewEntry::Message {
        message: "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Continue \
                  with the next step.\"}],\"timestamp\":1798761600000}"
            .to_owned(),
    };
    let append = time(runs * 5_000, || {
        session.append(message.clone()).unwrap();
        session.build_context().unwrap();
    });
    println!(
        "memory: append + build_context {:?} cpu {:?}",
        append.0, append.1
    );
}

/// How many of the selected entries of each session's persisted view a cold resume reads
/// from materialized copies (not hashed again) rather than from the log (hashed).
fn copies(dir: &Path) {
    for name in ["bushy", "linear"] {
        let id = std::fs::read_to_string(dir.join(format!("{name}.id"))).unwrap();
        for ext in ["sled", "redb"] {
            let store = open(&dir.join(format!("{name}.{ext}")));
            let sid = store
                .kv()
                .get(&grove::keys::session_id(&id))
                .unwrap()
                .unwrap();
            let sid = u64::from_be_bytes(sid.try_into().unwrap());
            let (start, end) = grove::keys::view_rows_range(sid);
            let copied: std::collections::HashSet<u64> = store
                .kv()
                .scan(&start, &end)
                .map(Result::unwrap)
                .filter_map(|(_, v)| grove_codec::record::decode::<ViewRowsRecord>(&v).ok())
                .flat_map(|chunk| chunk.rows.into_iter().map(|(seq, _)| seq))
                .collect();
            let session = store.session(&id).unwrap();
            let ctx = session.build_context().unwrap();
            let selected: Vec<u64> = ctx
                .entry_ids
                .iter()
                .map(|e| session.entry(e).unwrap().seq)
                .collect();
            let from_copies = selected.iter().filter(|s| copied.contains(s)).count();
            println!(
                "{name}.{ext}: {} selected entries, {from_copies} from copies, {} from the log",
                selected.len(),
                selected.len() - from_copies
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(args.get(1).expect("DIR"));
    let arg =
        |i: usize, default: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default);
    match args.first().map(String::as_str) {
        Some("prepare") => prepare(&dir, arg(2, 1_000_000), arg(3, 20_000)),
        Some("measure") => measure(&dir, arg(2, 9)),
        Some("copies") => copies(&dir),
        _ => eprintln!(
            "usage: read_cost prepare DIR [bushy] [linear] | measure DIR [runs] | copies DIR"
        ),
    }
}
