//! Listing at scale (docs/benchmarks.md, "Listing"): a page of the catalogue costs the page,
//! not the store. Stores of 1,000 and of SESSIONS sessions (two messages each, sled, durability
//! none, closed and reopened), then p50 and p99 of 200 listings of one page of 20 sessions —
//! from the start, after a cursor in the middle, and newest first — and of the whole listing
//! (5 runs), per store size. Then filtered pages of 20 (one cwd in 100, one label in 1,000,
//! the first and the last second of creations, a name in 1,000): read from the catalogue indexes, and again
//! on the same store as layout 14 left it (no index rows, opened read-only: every filtered page
//! weighs the catalogue from its cursor).
//!
//! `cargo run --release -p grove-benches --example list_probe -- [SESSIONS]` (default 100000).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::time::{Duration, Instant};

use grove::{keys, CreateSession, Durability, NewEntry, SessionFilter, Store, StoreConfig};

fn message(role: &str, text: &str) -> NewEntry {
    NewEntry::Message {
        message: serde_json::json!({"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1})
            .to_string(),
    }
}

fn quantiles(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort_unstable();
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn probe(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let config = || StoreConfig::new(dir.path()).durability(Durability::None);
    let started = Instant::now();
    {
        let store = Store::open_with(config()).unwrap();
        for i in 0..n {
            let s = store
                .create_session(CreateSession {
                    id: Some(format!("s{i:08}")),
                    cwd: format!("/p/{}", i % 100),
                    ..CreateSession::default()
                })
                .unwrap();
            let first = s.append(message("user", "a question")).unwrap();
            s.append(message("assistant", "an answer")).unwrap();
            if i % 1000 == 7 {
                s.set_label(&first, Some("rare")).unwrap();
                s.set_name("a rare one").unwrap();
            }
        }
        store.flush().unwrap();
    }
    let made = started.elapsed();
    let store = Store::open_with(config()).unwrap();
    let middle = format!("s{:08}", n / 2);
    let row = |label: &str, runs: usize, f: &dyn Fn() -> usize| {
        let mut times = Vec::with_capacity(runs);
        let mut listed = 0;
        for _ in 0..runs {
            let t = Instant::now();
            listed = f();
            times.push(t.elapsed());
        }
        let (p50, p99) = quantiles(times);
        println!(
            "{n:>7} sessions  {label:<36} {listed:>7} listed  p50 {:>9.3} ms  p99 {:>9.3} ms",
            ms(p50),
            ms(p99)
        );
    };
    row("page of 20, first", 200, &|| {
        store.sessions_page(None, 20, false).unwrap().len()
    });
    row("page of 20, after the middle", 200, &|| {
        store.sessions_page(Some(&middle), 20, false).unwrap().len()
    });
    row("page of 20, newest first", 200, &|| {
        store.sessions_page(None, 20, true).unwrap().len()
    });
    row("whole listing", 5, &|| store.sessions().unwrap().len());
    println!("{n:>7} sessions  made in {:.1} s", made.as_secs_f64());
    let first =
        grove::codec::time::parse_ms(&store.sessions_page(None, 1, false).unwrap()[0].created)
            .unwrap();
    let newest =
        grove::codec::time::parse_ms(&store.sessions_page(None, 1, true).unwrap()[0].created)
            .unwrap();
    let filters = [
        (
            "cwd (1 in 100)",
            SessionFilter {
                cwd: Some("/p/42".into()),
                ..SessionFilter::default()
            },
        ),
        (
            "label (1 in 1,000)",
            SessionFilter {
                label: Some("rare".into()),
                ..SessionFilter::default()
            },
        ),
        (
            "created, first second",
            SessionFilter {
                created_until: Some(first + 1000),
                ..SessionFilter::default()
            },
        ),
        (
            "created, last second",
            SessionFilter {
                created_from: Some(newest - 1000),
                ..SessionFilter::default()
            },
        ),
        (
            "name (1 in 1,000)",
            SessionFilter {
                name: Some("RARE".into()),
                ..SessionFilter::default()
            },
        ),
    ];
    let filtered = |store: &Store, how: &str| {
        for (label, filter) in &filters {
            let runs = if how == "indexed" { 50 } else { 5 };
            row(&format!("{how}: {label}"), runs, &|| {
                store
                    .sessions_page_where(None, 20, false, filter)
                    .unwrap()
                    .len()
            });
        }
    };
    filtered(&store, "indexed");
    // As layout 14 left it: no index rows; read-only, it keeps its layout and scans.
    let mut batch = grove::kv::WriteBatch::new();
    for pair in store.kv().scan(&[keys::T_BY_CWD], &[keys::T_BY_LABEL + 1]) {
        batch.delete(pair.unwrap().0);
    }
    batch.put(keys::meta(keys::META_FORMAT), b"grove\x00\x0e".to_vec());
    store.kv().apply(batch).unwrap();
    store.flush().unwrap();
    drop(store);
    let old = Store::open_with(config().read_only(true)).unwrap();
    filtered(&old, "scanned");
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("SESSIONS is a number"))
        .unwrap_or(100_000);
    probe(1_000);
    probe(n);
}
