//! Workload generators and comparison harnesses for grove (see docs/benchmarks.md).
//!
//! - [`gen`]: the seeded generator of pi v3 JSONL sessions — linear or bushy, small or
//!   realistic payloads, optional periodic compactions — deterministic for a seed; it lives in
//!   grove-codec (feature `gen`, which `grove gen` uses too) and is re-exported here, with the
//!   append calls of a generated session.
//! - [`load`]: loading a generated session into grove by import or through the API.
//! - [`baseline`]: the two stores grove is compared with: SQLite with a recursive path
//!   query, and a JSONL store that re-parses the whole file the way pi's session manager
//!   does.
//! - [`compare`]: the comparison harness behind `cargo run --release -p grove-benches --bin
//!   compare`, which writes docs/benchmarks.md.
//!
//! The baselines and the harness need SQLite (bundled) and sit behind the default feature
//! `baselines`.
#![forbid(unsafe_code)]

#[cfg(feature = "baselines")]
pub mod baseline;
#[cfg(feature = "baselines")]
pub mod compare;
pub mod gen;
pub mod load;

pub use gen::{generate, generate_to, GenSpec, GeneratedSession, Generator, Payload, Record};
pub use load::{build_via_api, import, import_report};

/// A boxed error for harness code.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Harness results.
pub type Result<T> = std::result::Result<T, BoxError>;

/// `n` times the `GROVE_BENCH_SCALE` environment variable (a positive number, default 1):
/// how the criterion benchmarks scale their session sizes.
pub fn scaled(n: usize) -> usize {
    let factor = std::env::var("GROVE_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|f| *f > 0.0)
        .unwrap_or(1.0);
    ((n as f64 * factor).round() as usize).max(1)
}

/// The entries of a generated session, without ids (for `append` / `append_many`).
pub fn entries_of(spec: &GenSpec) -> Vec<grove::NewEntry> {
    Generator::new(spec)
        .filter_map(|r| match r {
            Record::Entry { entry, .. } => Some(entry),
            Record::Leaf { .. } => None,
        })
        .collect()
}

/// Reads the active branch of `session` `runs` times (every line decoded and joined): its
/// entries, their lines' bytes, and the times of the reads, sorted (the probes' loop).
pub fn branch_reads(
    session: &grove::Session,
    runs: usize,
) -> grove::Result<(usize, usize, Vec<std::time::Duration>)> {
    let (mut entries, mut bytes) = (0, 0);
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        (entries, bytes) = (0, 0);
        let t = std::time::Instant::now();
        session.for_each_on_branch(None, &mut |e| {
            entries += 1;
            bytes += e.line.len();
            Ok(())
        })?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok((entries, bytes, times))
}
