//! Appends `n` user messages to the first session of an existing store, each followed by a
//! `build_context`, and prints the median of each part. Run it on a deep and a shallow store
//! (`grove gen --entries 1000000 --compaction-every 100 --import --store DIR`) to split the
//! depth ratio of docs/benchmarks.md; docs/design.md ("Open questions") cites its output.
//!
//! `cargo run --release -p grove-benches --example depth_probe -- STORE_DIR [n]`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use grove::{NewEntry, Store};
use grove_benches::compare::measure::Stats;
use std::time::{Duration, Instant};

fn median(times: Vec<Duration>) -> Duration {
    Stats::of(times).median
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("store dir"));
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let store = Store::open_with(grove::StoreConfig::new(&dir).durability(grove::Durability::None))
        .unwrap();
    let id = store.sessions().unwrap()[0].id.clone();
    let session = store.session(&id).unwrap();
    let (mut append, mut build) = (vec![], vec![]);
    let mut messages = 0;
    for i in 0..n {
        let t = Instant::now();
        session
            .append(NewEntry::Message {
                message: format!(r#"{{"role":"user","content":"q{i}","timestamp":1}}"#),
            })
            .unwrap();
        let t2 = Instant::now();
        messages = session.build_context().unwrap().messages.len();
        build.push(t2.elapsed());
        append.push(t2 - t);
    }
    println!(
        "append {:?}  build_context {:?}  ({messages} messages in the last context)",
        median(append),
        median(build)
    );
}
