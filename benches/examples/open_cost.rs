//! Splits a resume into its parts on an existing sled store directory: raw `sled::open`
//! alone, `Store::open`, `Store::session` (of the first session listed), `build_context`;
//! medians of `runs` opens, each in a fresh handle. With `RAW_ONLY=1` it only opens sled
//! (for `perf`). docs/design.md ("Backends") cites its output.
//!
//! `cargo run --release -p grove-benches --example open_cost -- STORE_DIR [runs]`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use grove_benches::compare::measure::Stats;
use std::time::{Duration, Instant};

fn median(times: Vec<Duration>) -> Duration {
    Stats::of(times).median
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("store dir"));
    let runs: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(9);
    if std::env::var_os("RAW_ONLY").is_some() {
        for _ in 0..runs {
            let t = Instant::now();
            let db = sled::Config::new().path(&dir).open().unwrap();
            println!("sled::open {:?}", t.elapsed());
            drop(db);
        }
        return;
    }
    let (mut raw, mut open, mut session, mut build) = (vec![], vec![], vec![], vec![]);
    let mut messages = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let db = sled::Config::new()
            .path(&dir)
            .cache_capacity(256 << 20)
            .open()
            .unwrap();
        raw.push(t.elapsed());
        drop(db);
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        let store = grove::Store::open(&dir).unwrap();
        open.push(t.elapsed());
        let id = store.sessions().unwrap()[0].id.clone();
        let t = Instant::now();
        let s = store.session(&id).unwrap();
        session.push(t.elapsed());
        let t = Instant::now();
        let ctx = s.build_context().unwrap();
        build.push(t.elapsed());
        messages = ctx.messages.len();
        drop(s);
        drop(store);
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "sled::open {:?}  Store::open {:?}  session {:?}  build_context {:?} ({messages} messages)",
        median(raw),
        median(open),
        median(session),
        median(build)
    );
}
