//! What reading a branch costs in the engine alone: `Session::for_each_on_branch` from the
//! active leaf of every session of a store, repeated; the median wall time and the entries;
//! and of it, the plan alone (`Session::plan_branch`: the walk up the tree, nothing read).
//!
//! ```sh
//! cargo run --release -p grove-benches --example branch_probe -- STORE [runs]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::path::PathBuf;

use grove::{Durability, Store, StoreConfig};

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: branch_probe STORE [runs]"),
    );
    let runs: usize = std::env::args()
        .nth(2)
        .map_or(200, |r| r.parse().expect("runs"));
    let store = Store::open_with(StoreConfig::new(&dir).durability(Durability::None)).unwrap();
    for info in store.sessions().unwrap() {
        let session = store.session(&info.id).unwrap();
        let (entries, _, times) = grove_benches::branch_reads(&session, runs).unwrap();
        let median = times[runs / 2];
        let mut plans: Vec<_> = (0..runs)
            .map(|_| {
                let t = std::time::Instant::now();
                let walk = session.plan_branch(None).unwrap();
                (t.elapsed(), walk.len())
            })
            .collect();
        plans.sort();
        println!(
            "{}: {entries} entries, median {:?} ({:.2} µs per entry), min {:?}; the plan alone: median {:?} ({} entries)",
            info.id,
            median,
            median.as_secs_f64() * 1e6 / entries.max(1) as f64,
            times[0],
            plans[runs / 2].0,
            plans[runs / 2].1,
        );
    }
}
