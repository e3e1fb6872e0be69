//! Search at scale (docs/benchmarks.md, "Search"): SESSIONS sessions of ENTRIES_EACH messages
//! of generated prose (a vocabulary of 5,000 words drawn Zipf-like, so `w0` is in most
//! entries, and one word, `needleword`, in one entry of every 1,000 sessions), on sled at
//! durability none. Prints:
//!
//! - the first search's catch-up: the whole index built from the log (entries per second), and
//!   the bytes of the store and of its `search/` folder;
//! - query time, p50 and p99 of 200 searches (limit 20) for a common word, a rare one, a
//!   two-word query and a phrase;
//! - the cost the index adds to an append: single appends to one session, alternately on a
//!   store whose index is open (each commit notes the session it touched) and on one that was
//!   never searched, then the catch-up the next search pays per appended entry;
//! - `grep -c` over the same sessions exported as pi JSONL files, for the rare and the common
//!   word.
//!
//! `cargo run --release -p grove-benches --example search_probe -- [SESSIONS] [ENTRIES_EACH]`
//! (default 10000 100: one million entries).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::time::{Duration, Instant};

use grove::{CreateSession, Durability, NewEntry, SearchOptions, Store, StoreConfig};

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A word index, Zipf-like over 5,000 words: the square of a uniform draw.
    fn word(&mut self) -> u64 {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        (u * u * u * 5_000.0) as u64
    }
}

fn message(rng: &mut Rng, words: usize, extra: Option<&str>) -> NewEntry {
    let mut text: Vec<String> = (0..words).map(|_| format!("w{}", rng.word())).collect();
    if let Some(extra) = extra {
        text.push(extra.to_owned());
    }
    let text = text.join(" ");
    NewEntry::Message {
        message: serde_json::json!({
            "role": if rng.next().is_multiple_of(2) { "user" } else { "assistant" },
            "content": [{"type": "text", "text": text}],
            "timestamp": 1
        })
        .to_string(),
    }
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    let mut total = 0;
    if let Ok(read) = std::fs::read_dir(path) {
        for entry in read.flatten() {
            let meta = entry.metadata().unwrap();
            total += if meta.is_dir() {
                dir_bytes(&entry.path())
            } else {
                meta.len()
            };
        }
    }
    total
}

fn percentiles(mut xs: Vec<Duration>) -> (f64, f64) {
    xs.sort();
    let at = |p: f64| xs[((xs.len() as f64 * p) as usize).min(xs.len() - 1)].as_secs_f64() * 1e3;
    (at(0.5), at(0.99))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sessions: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let each: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let config = StoreConfig::new(&store_dir).durability(Durability::None);
    let store = Store::open_with(config).unwrap();
    let mut rng = Rng(42);
    let t = Instant::now();
    let mut ids = Vec::new();
    for s in 0..sessions {
        let session = store.create_session(CreateSession::default()).unwrap();
        let entries: Vec<NewEntry> = (0..each)
            .map(|i| {
                let rare = (s.is_multiple_of(1000) && i == each / 2).then_some("needleword");
                message(&mut rng, 30, rare)
            })
            .collect();
        session.append_many(&entries).unwrap();
        ids.push(session.id().to_owned());
    }
    store.flush().unwrap();
    let written = t.elapsed();
    let total = sessions * each;
    println!(
        "wrote {total} entries in {sessions} sessions in {:.1} s",
        written.as_secs_f64()
    );

    let t = Instant::now();
    let report = store.search_catch_up().unwrap();
    let built = t.elapsed();
    store.flush().unwrap();
    let index_bytes = dir_bytes(&store_dir.join("search"));
    let all_bytes = dir_bytes(&store_dir);
    println!(
        "index built: {} entries in {:.1} s ({:.0} entries/s); store {:.1} MiB of which search/ {:.1} MiB ({:.0}% added)",
        report.indexed,
        built.as_secs_f64(),
        report.indexed as f64 / built.as_secs_f64(),
        all_bytes as f64 / 1048576.0,
        index_bytes as f64 / 1048576.0,
        100.0 * index_bytes as f64 / (all_bytes - index_bytes) as f64
    );

    for (label, query) in [
        ("common (w0)", "w0"),
        ("rare (needleword)", "needleword"),
        ("two words (w1 w2)", "w1 w2"),
        ("phrase (\"w1 w2\")", "\"w1 w2\""),
    ] {
        let mut times = Vec::new();
        let mut total_hits = 0;
        for _ in 0..200 {
            let t = Instant::now();
            let found = store.search(query, &SearchOptions::default()).unwrap();
            times.push(t.elapsed());
            total_hits = found.total;
        }
        let (p50, p99) = percentiles(times);
        println!("query {label}: {total_hits} matches, p50 {p50:.2} ms, p99 {p99:.2} ms");
    }

    // An append's cost, with and without an open index, alternating in rounds.
    let plain_dir = dir.path().join("plain");
    let plain =
        Store::open_with(StoreConfig::new(&plain_dir).durability(Durability::None)).unwrap();
    let indexed_session = store.create_session(CreateSession::default()).unwrap();
    let plain_session = plain.create_session(CreateSession::default()).unwrap();
    let (mut with, mut without) = (Duration::ZERO, Duration::ZERO);
    let rounds = 20;
    let per_round = 1_000;
    let mut catch_up = Duration::ZERO;
    for _ in 0..rounds {
        let batch: Vec<NewEntry> = (0..per_round)
            .map(|_| message(&mut rng, 30, None))
            .collect();
        let t = Instant::now();
        for e in &batch {
            plain_session.append(e.clone()).unwrap();
        }
        without += t.elapsed();
        let t = Instant::now();
        for e in &batch {
            indexed_session.append(e.clone()).unwrap();
        }
        with += t.elapsed();
        let t = Instant::now();
        store.search_catch_up().unwrap();
        catch_up += t.elapsed();
    }
    let n = (rounds * per_round) as f64;
    let (w, wo, c) = (
        with.as_secs_f64() * 1e6 / n,
        without.as_secs_f64() * 1e6 / n,
        catch_up.as_secs_f64() * 1e6 / n,
    );
    println!(
        "append (durability none): {w:.2} µs with an open index, {wo:.2} µs without ({:+.1}%); the catch-up of each appended entry {c:.2} µs more, paid by the next search ({:+.0}% if counted with the append)",
        100.0 * (w - wo) / wo,
        100.0 * (w + c - wo) / wo
    );

    // grep over the same sessions as pi JSONL files.
    let files = dir.path().join("jsonl");
    std::fs::create_dir_all(&files).unwrap();
    for id in &ids {
        let mut out = Vec::new();
        store
            .session(id)
            .unwrap()
            .export(grove::Flavor::Cli, &mut out)
            .unwrap();
        std::fs::write(files.join(format!("{id}.jsonl")), out).unwrap();
    }
    for word in ["needleword", "w0"] {
        let mut times = Vec::new();
        let mut counted = String::new();
        for _ in 0..3 {
            let t = Instant::now();
            let out = std::process::Command::new("grep")
                .args(["-r", "-c", "-w", word])
                .arg(&files)
                .output()
                .unwrap();
            times.push(t.elapsed());
            let matched: u64 = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.rsplit(':').next()?.parse::<u64>().ok())
                .sum();
            counted = format!("{matched} lines");
        }
        times.sort();
        println!(
            "grep -rcw {word} over {} files ({:.1} MiB): {counted}, median of 3 {:.0} ms",
            ids.len(),
            dir_bytes(&files) as f64 / 1048576.0,
            times[1].as_secs_f64() * 1e3
        );
    }
}
