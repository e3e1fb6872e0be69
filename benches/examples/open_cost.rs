//! Splits a resume into its parts on an existing sled store directory: raw `sled::open`
//! alone, `Store::open`, `Store::session` (of the first session listed), `build_context`;
//! medians of `runs` opens, each in a fresh handle. With `RAW_ONLY=1` it only opens sled
//! (for `perf`). It also counts the free segments of sled's file (segments that hold one
//! repeated byte: sled zeroes free segments on every open). docs/design.md ("Backends")
//! cites its output.
//!
//! `cargo run --release -p grove-benches --example open_cost -- STORE_DIR [runs]`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use grove_benches::compare::measure::Stats;
use std::time::{Duration, Instant};

fn median(times: Vec<Duration>) -> Duration {
    Stats::of(times).median
}

/// (segments, free segments) of the sled file in `dir`, with the segment size of its `conf`.
fn segments(dir: &std::path::Path) -> (usize, usize) {
    use std::io::Read;
    let conf = std::fs::read(dir.join("conf")).unwrap();
    let size: usize = String::from_utf8_lossy(&conf)
        .lines()
        .find_map(|l| l.strip_prefix("segment_size: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("segment_size in conf");
    let mut file = std::io::BufReader::new(std::fs::File::open(dir.join("db")).unwrap());
    let (mut all, mut free) = (0, 0);
    let mut segment = vec![0u8; size];
    loop {
        let mut got = 0;
        while got < size {
            match file.read(&mut segment[got..]).unwrap() {
                0 => break,
                n => got += n,
            }
        }
        if got == 0 {
            return (all, free);
        }
        all += 1;
        if segment[..got].iter().all(|&b| b == segment[0]) {
            free += 1;
        }
    }
}

/// sled opened on `dir` as grove opens it (page cache size, stored compression setting).
fn open_sled(dir: &std::path::Path) -> sled::Db {
    let compress = grove::kv::stored_compression(dir).unwrap().unwrap_or(false);
    sled::Config::new()
        .path(dir)
        .cache_capacity(grove::store::DEFAULT_CACHE_BYTES)
        .use_compression(compress)
        .open()
        .unwrap()
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("store dir"));
    let runs: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(9);
    let (all, free) = segments(&dir);
    println!("sled file: {all} segments, {free} free");
    if std::env::var_os("RAW_ONLY").is_some() {
        for _ in 0..runs {
            let t = Instant::now();
            let db = open_sled(&dir);
            println!("sled::open {:?}", t.elapsed());
            drop(db);
        }
        return;
    }
    let (mut raw, mut open, mut session, mut build) = (vec![], vec![], vec![], vec![]);
    let mut messages = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let db = open_sled(&dir);
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
