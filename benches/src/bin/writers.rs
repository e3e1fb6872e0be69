//! Concurrent writers over many sessions: append throughput with 1, 2 and 8 writer threads
//! spread over 1,000 sessions, for each durability. Writers on different sessions do not
//! wait on each other (one lock per session), so throughput should not collapse as threads
//! are added, and group commit should pay off under sync-level durability.
//!
//! `cargo run --release -p grove-benches --bin writers [-- --quick]`

use std::time::Instant;

use grove::{CreateSession, Durability, NewEntry, Store, StoreConfig};

fn message(i: usize) -> NewEntry {
    NewEntry::Message {
        message: format!(
            r#"{{"role":"user","content":[{{"type":"text","text":"message {i} {}"}}],"timestamp":{i}}}"#,
            "x".repeat(400)
        ),
    }
}

fn run(
    threads: usize,
    sessions: usize,
    appends: usize,
    durability: Durability,
) -> Result<f64, grove::GroveError> {
    let dir = tempfile::tempdir().map_err(|e| grove::GroveError::Io {
        path: "tempdir".into(),
        source: e,
    })?;
    let store = Store::open_with(StoreConfig::new(dir.path()).durability(durability))?;
    let ids: Vec<String> = (0..sessions)
        .map(|_| {
            store
                .create_session(CreateSession {
                    cwd: "/bench".into(),
                    ..Default::default()
                })
                .map(|s| s.id().to_owned())
        })
        .collect::<Result<_, _>>()?;
    let per_thread = appends / threads;
    let started = Instant::now();
    std::thread::scope(|scope| -> Result<(), grove::GroveError> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let store = store.clone();
                let ids = &ids;
                scope.spawn(move || -> Result<(), grove::GroveError> {
                    // Each thread writes to its own share of the sessions, round robin.
                    let mine: Vec<grove::Session> = ids
                        .iter()
                        .skip(t)
                        .step_by(threads)
                        .map(|id| store.session(id))
                        .collect::<Result<_, _>>()?;
                    for i in 0..per_thread {
                        mine[i % mine.len()].append(message(i))?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| grove::GroveError::InvalidState("writer thread panicked".into()))??;
        }
        Ok(())
    })?;
    store.flush()?;
    Ok((per_thread * threads) as f64 / started.elapsed().as_secs_f64())
}

fn main() -> Result<(), grove::GroveError> {
    let quick = std::env::args().any(|a| a == "--quick");
    let sessions = 1000;
    println!("| durability | threads | appends/s | vs 1 thread |");
    println!("|---|---|---|---|");
    for (name, durability, appends) in [
        ("none", Durability::None, if quick { 4_000 } else { 40_000 }),
        ("group", Durability::Group, if quick { 400 } else { 4_000 }),
        ("sync", Durability::Sync, if quick { 400 } else { 4_000 }),
    ] {
        let mut base = 0.0;
        for threads in [1, 2, 8] {
            let rate = run(threads, sessions, appends, durability)?;
            if threads == 1 {
                base = rate;
            }
            println!("| {name} | {threads} | {rate:.0} | {:.2}x |", rate / base);
        }
    }
    Ok(())
}
