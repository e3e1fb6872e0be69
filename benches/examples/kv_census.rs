//! Counts the keys and bytes of a sled store directory per table (the first key byte):
//! how many keys, key bytes, value bytes, and values over sled's blob threshold (128 KiB
//! with 512 KiB segments). docs/design.md ("Backends") cites it when it explains what
//! sled's open grows with.
//!
//! `cargo run --release -p grove-benches --example kv_census -- STORE_DIR`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::collections::BTreeMap;

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("store dir"));
    let compress = grove::kv::stored_compression(&dir)
        .unwrap()
        .unwrap_or(false);
    let db = sled::Config::new()
        .path(&dir)
        .use_compression(compress)
        .open()
        .unwrap();
    // table -> (keys, key bytes, value bytes, values over 128 KiB)
    let mut tables: BTreeMap<u8, (u64, u64, u64, u64)> = BTreeMap::new();
    for item in db.iter() {
        let (k, v) = item.unwrap();
        let t = tables
            .entry(k.first().copied().unwrap_or(0xFF))
            .or_default();
        t.0 += 1;
        t.1 += k.len() as u64;
        t.2 += v.len() as u64;
        t.3 += u64::from(v.len() > 128 * 1024);
    }
    println!("table    keys   key bytes   value bytes   over 128 KiB");
    for (t, (n, kb, vb, big)) in tables {
        println!("0x{t:02X} {n:>9} {kb:>11} {vb:>13} {big:>14}");
    }
}
