//! What sled charges for the write patterns grove could use, for the same generated lines:
//! one raw insert per line; a packed log row plus an id row (plus a head row) as single
//! inserts; separate line, node and id rows; the four rows of store layout 1 as one
//! `sled::Batch`; the sled operations of an append (a `get` of the id, then the log row, id
//! and head rows); `append_many`'s rows in batches of 100 entries, as one key each (layout 4)
//! and as one value per batch (layout 5). docs/design.md
//! ("Commit protocol", "Open questions") cites its output.
//!
//! `cargo run --release -p grove-benches --example sled_write_modes -- [entries] [realistic]`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use grove_benches::gen::{Generator, Record};
use grove_benches::{GenSpec, Payload};
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20000);
    let realistic = std::env::args().nth(2).is_some();
    let mut spec = GenSpec::linear(n, 31);
    if realistic {
        spec = spec.payload(Payload::Realistic);
    }
    let mut g = Generator::new(&spec);
    let mut lines = Vec::new();
    for r in &mut g {
        if let Record::Entry { .. } = r {
            lines.push(r.line());
        }
    }
    for variant in [
        "raw",
        "packed+id",
        "packed+id+head",
        "line+node+id",
        "line+node+id+head",
        "batch4",
        "get+packed+id",
        "get+packed+id+head",
        "batch100:packed+id",
        "batch100:one-value+head",
        "raw",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new()
            .path(dir.path())
            .cache_capacity(256 << 20)
            .open()
            .unwrap();
        let t = Instant::now();
        let mut many = sled::Batch::default();
        let mut value = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let seq = (i as u64).to_be_bytes();
            let mut k = vec![0x10u8, 0, 0, 0, 0, 0, 0, 0, 1];
            k.extend_from_slice(&seq);
            match variant {
                "raw" => {
                    db.insert(&k, l.as_bytes()).unwrap();
                }
                "batch100:one-value+head" => {
                    // A batch as store layout 5 writes it: the 100 rows in one value under
                    // the first one's key, with the head, in one sled batch.
                    value.extend_from_slice(&[7u8; 100]);
                    value.extend_from_slice(l.as_bytes());
                    if i % 100 == 99 {
                        let mut b = sled::Batch::default();
                        b.insert(k, std::mem::take(&mut value));
                        b.insert(&[0x02u8, 0, 0, 0, 0, 0, 0, 0, 1], vec![3u8; 40]);
                        db.apply_batch(b).unwrap();
                    }
                }
                _ if variant.starts_with("batch100") => {
                    let mut v = vec![7u8; 100];
                    v.extend_from_slice(l.as_bytes());
                    many.insert(k, v);
                    let mut ki = vec![0x12u8, 0, 0, 0, 0, 0, 0, 0, 1];
                    ki.extend_from_slice(format!("{:08x}", i * 2654435761 % (1 << 32)).as_bytes());
                    many.insert(ki, &seq);
                    if i % 100 == 99 {
                        many.insert(&[0x13u8, 0, 0, 0, 0, 0, 0, 0, 1], vec![3u8; 40]);
                        db.apply_batch(std::mem::take(&mut many)).unwrap();
                    }
                }
                _ if variant.starts_with("packed") || variant.starts_with("get+") => {
                    if variant.starts_with("get+") {
                        let mut ki = vec![0x12u8, 0, 0, 0, 0, 0, 0, 0, 1];
                        ki.extend_from_slice(
                            format!("{:08x}", i * 2654435761 % (1 << 32)).as_bytes(),
                        );
                        assert!(db.get(ki).unwrap().is_none());
                    }
                    if variant.ends_with("head") {
                        db.insert([0x13u8, 0, 0, 0, 0, 0, 0, 0, 1], vec![3u8; 40])
                            .unwrap();
                    }
                    let mut v = vec![7u8; 100];
                    v.extend_from_slice(l.as_bytes());
                    db.insert(&k, v).unwrap();
                    let mut ki = vec![0x12u8, 0, 0, 0, 0, 0, 0, 0, 1];
                    ki.extend_from_slice(format!("{:08x}", i * 2654435761 % (1 << 32)).as_bytes());
                    db.insert(ki, &seq).unwrap();
                }
                _ if variant.starts_with("line") => {
                    db.insert(&k, l.as_bytes()).unwrap();
                    let mut kn = k.clone();
                    kn[0] = 0x11;
                    db.insert(kn, vec![7u8; 100]).unwrap();
                    let mut ki = vec![0x12u8, 0, 0, 0, 0, 0, 0, 0, 1];
                    ki.extend_from_slice(format!("{:08x}", i * 2654435761 % (1 << 32)).as_bytes());
                    db.insert(ki, &seq).unwrap();
                    if variant.ends_with("head") {
                        db.insert([0x13u8, 0, 0, 0, 0, 0, 0, 0, 1], vec![3u8; 40])
                            .unwrap();
                    }
                }
                _ => {
                    let mut b = sled::Batch::default();
                    b.insert(k.clone(), l.as_bytes());
                    let mut kn = k.clone();
                    kn[0] = 0x11;
                    b.insert(kn, vec![7u8; 100]);
                    let mut ki = vec![0x12u8, 0, 0, 0, 0, 0, 0, 0, 1];
                    ki.extend_from_slice(format!("{:08x}", i * 2654435761 % (1 << 32)).as_bytes());
                    b.insert(ki, &seq);
                    b.insert(&[0x13u8, 0, 0, 0, 0, 0, 0, 0, 1], vec![3u8; 40]);
                    db.apply_batch(b).unwrap();
                }
            }
        }
        db.apply_batch(many).unwrap();
        db.flush().unwrap();
        let d = t.elapsed();
        println!("{variant}: {:.0}/s", lines.len() as f64 / d.as_secs_f64());
    }
}
