//! Appends of generated small entries to one new session: single `append_with` calls (the
//! generated ids and timestamps) or `append_many` in batches of 100 (`many`) or N (`many:N`)
//! entries (fresh ids), on sled or in memory (grove's own work without a backend's), on sled
//! without the write buffer (`sled-direct`: `StoreConfig::write_buffer(false)`), on redb, or on
//! PostgreSQL (`postgres`: the database at `GROVE_PG`, a table of its own dropped after); small
//! or realistic payloads. On PostgreSQL it also prints the round trips per call
//! (`Store::round_trips`). docs/design.md ("Id index", "Write buffer", "Open questions") and
//! docs/benchmarks.md ("PostgreSQL") cite its output.
//!
//! `cargo run --release -p grove-benches --example append_probe -- [entries] [single|many|many:N] [sled|memory|sled-direct|redb|postgres] [small|realistic] [none|group|sync]`
//! (the durability of every append, default none).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::time::Instant;

use grove::CreateSession;
use grove_benches::gen::AppendCalls;
use grove_benches::GenSpec;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let mode = args.next().unwrap_or_default();
    let batch: Option<usize> = match mode.strip_prefix("many") {
        Some("") => Some(100),
        Some(n) => Some(n.trim_start_matches(':').parse().unwrap()),
        None => None,
    };
    let many = batch.is_some();
    let backend = args.next().unwrap_or_default();
    let payload: grove_benches::Payload = args
        .next()
        .map_or(grove_benches::Payload::Small, |p| p.parse().unwrap());
    let durability = match args.next().as_deref() {
        Some("sync") => grove::Durability::Sync,
        Some("group") => grove::Durability::Group,
        _ => grove::Durability::None,
    };
    let calls = AppendCalls::new(&GenSpec::linear(n, 31).payload(payload));
    let (session_id, entries) = (calls.session_id, calls.entries);
    let dir = tempfile::tempdir().unwrap();
    let mut config = grove::StoreConfig::new(dir.path()).durability(durability);
    let table = format!("probe_{}", std::process::id());
    let pg = std::env::var("GROVE_PG").ok();
    match backend.as_str() {
        "memory" => config = config.backend(grove::Backend::Memory),
        "sled-direct" => config = config.write_buffer(false),
        "redb" => config = config.backend(grove::Backend::Redb(dir.path().join("redb"))),
        "postgres" => {
            let url = pg.clone().expect("GROVE_PG names the database");
            config = config.backend(grove::Backend::Postgres {
                url,
                table: table.clone(),
            });
        }
        _ => {}
    }
    // GROVE_FLUSH_TIMEOUT=0 measures without the flush bound (seconds otherwise).
    if let Some(secs) = std::env::var("GROVE_FLUSH_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        config = config.flush_timeout(std::time::Duration::from_secs(secs));
    }
    let store = grove::Store::open_with(config).unwrap();
    let session = store
        .create_session(CreateSession {
            id: Some(session_id),
            cwd: "/w".into(),
            ..Default::default()
        })
        .unwrap();
    // Each call's time too: the slowest show what a run flush or merge costs the caller.
    let mut calls = Vec::new();
    let trips = store.round_trips();
    let t = Instant::now();
    if many {
        let plain: Vec<_> = entries.into_iter().map(|(e, _)| e).collect();
        for chunk in plain.chunks(batch.unwrap_or(100)) {
            let call = Instant::now();
            session.append_many(chunk).unwrap();
            calls.push(call.elapsed());
        }
    } else {
        for (entry, options) in entries {
            let call = Instant::now();
            session.append_with(entry, options).unwrap();
            calls.push(call.elapsed());
        }
    }
    store.flush().unwrap();
    let d = t.elapsed();
    calls.sort_unstable();
    let at = |q: f64| calls[((calls.len() - 1) as f64 * q) as usize];
    println!(
        "{} {} on {}: {:.0} entries/s ({d:?}); per call median {:?}, p99 {:?}, p99.99 {:?}, max {:?}",
        n,
        match batch {
            Some(b) => format!("append_many ({b})"),
            None => "appends".to_owned(),
        },
        store.backend_name(),
        n as f64 / d.as_secs_f64(),
        at(0.5),
        at(0.99),
        at(0.9999),
        at(1.0)
    );
    if let (Some(before), Some(after)) = (trips, store.round_trips()) {
        let calls = calls.len() as f64;
        println!(
            "round trips: {} for {calls} calls ({:.3} per call)",
            after - before,
            (after - before) as f64 / calls
        );
    }
    drop(session);
    drop(store);
    if let (Some(url), "postgres") = (pg, backend.as_str()) {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("DROP TABLE IF EXISTS {table}"))
            .unwrap();
    }
}
