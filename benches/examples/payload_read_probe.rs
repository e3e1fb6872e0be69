//! What reading lines that hold payloads costs: a realistic generated session (its tool results
//! large text, an occasional base64 image) imported into a fresh store, then its active branch
//! read (every line joined with its payloads), repeated; the median wall time, and the
//! payloads' bytes as stored. Run at two commits to compare how payloads are stored.
//!
//! With `images`, the session is instead 200 user messages, each with a fresh 96 KiB base64
//! image (screenshots).
//!
//! ```sh
//! cargo run --release -p grove-benches --example payload_read_probe -- [entries|images] [runs]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::io::Cursor;

use grove::{CreateSession, Durability, ImportOptions, NewEntry, Store, StoreConfig};
use grove_benches::{generate_to, GenSpec, Payload};

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "10000".into());
    let runs: usize = args.next().map_or(30, |a| a.parse().expect("runs"));
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open_with(StoreConfig::new(dir.path()).durability(Durability::None)).unwrap();
    let (entries, session) = if what == "images" {
        let s = store.create_session(CreateSession::default()).unwrap();
        for i in 0..200u32 {
            let data: String = (0..96 * 1024u32)
                .map(|j| {
                    let n = j.wrapping_mul(2_654_435_761).wrapping_add(i * 7919);
                    char::from(
                        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                            [(n >> 26) as usize],
                    )
                })
                .collect();
            s.append(NewEntry::Message {
                message: format!(
                    r#"{{"role":"user","content":[{{"type":"image","data":"{data}","mimeType":"image/png"}}],"timestamp":1}}"#
                ),
            })
            .unwrap();
        }
        (200, s)
    } else {
        let entries: usize = what.parse().expect("entries");
        let mut spec = GenSpec::linear(entries, 7);
        spec.payload = Payload::Realistic;
        let mut jsonl = Vec::new();
        generate_to(&spec, &mut jsonl).unwrap();
        let imported = store
            .import_reader(Cursor::new(&jsonl), ImportOptions::default())
            .unwrap();
        (entries, store.session(&imported.session).unwrap())
    };
    let payloads = store.payload_stats().unwrap();
    let (_, bytes, times) = grove_benches::branch_reads(&session, runs).unwrap();
    println!(
        "{entries} entries: payloads {} of {:.1} MiB as stored; branch read of {:.1} MiB: \
         median {:.2} ms, min {:.2} ms ({runs} runs)",
        payloads.payloads,
        payloads.bytes as f64 / 1048576.0,
        bytes as f64 / 1048576.0,
        times[runs / 2].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
    );
}
