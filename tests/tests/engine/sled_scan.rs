//! `grove::kv::sled_scan`, the reader of sled's files without sled (issue 28, point 4): on an
//! intact store it reads exactly what sled reads (plain and `--compress` stores, with blobs);
//! a flipped bit costs the message it is in, reported with its byte range, and nothing read
//! around it differs from the intact store; a truncated log is read up to the cut.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use grove::kv::sled_scan;
use grove::{Backend, CreateSession, ImportOptions, NewEntry, Store, StoreConfig};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/pi-oracle"))
        .join(format!("{name}.jsonl"))
}

/// A sled store of many imported sessions (the large one's packs are past sled's blob size).
fn build(dir: &Path, compress: bool) {
    let store = Store::open_with(
        StoreConfig::new(dir)
            .backend(Backend::Sled(dir.to_owned()))
            .compress(compress),
    )
    .unwrap();
    for name in [
        "r000-harness",
        "r001-harness",
        "r002-harness",
        "r003-mixed",
        "r004-harness",
        "r005-harness",
        "r007-harness-large",
        "edge-labels",
    ] {
        let path = fixture(name);
        if path.exists() {
            store.import_file(&path, ImportOptions::default()).unwrap();
        }
    }
    // One value far past sled's blob size however well it compresses (3 MiB of hex digits of
    // hashes: about half survives zstd), so the store has blobs whatever pages sled's flusher
    // happened to gather (under load an imported session's pages alone sometimes made none).
    let mut text = String::with_capacity(3 << 20);
    let mut n = 0u64;
    while text.len() < 3 << 20 {
        text.push_str(&blake3::hash(&n.to_le_bytes()).to_hex());
        n += 1;
    }
    let big = store.create_session(CreateSession::default()).unwrap();
    big.append(NewEntry::Message {
        message: serde_json::json!({"role": "user", "content": text, "timestamp": 1}).to_string(),
    })
    .unwrap();
    store.flush().unwrap();
}

/// Every key and value as sled itself reads them (on a copy: sled writes at open).
fn sled_pairs(dir: &Path, compress: bool) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let copy = tempfile::tempdir().unwrap();
    grove_tests::copy_dir(dir, copy.path());
    let db = sled::Config::new()
        .path(copy.path())
        .use_compression(compress)
        .open()
        .unwrap();
    db.iter()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// The byte ranges of `db` the damage lines name ("bytes A..B of db").
fn ranges(damage: &[String]) -> Vec<(u64, u64)> {
    damage
        .iter()
        .filter_map(|d| {
            let rest = &d[d.find("bytes ")? + 6..];
            let (a, rest) = rest.split_once("..")?;
            let b = rest.split_once(' ')?.0;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}

#[test]
fn an_intact_store_reads_exactly_as_sled_reads_it() {
    for compress in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        build(dir.path(), compress);
        let blobs = std::fs::read_dir(dir.path().join("blobs")).map_or(0, |d| d.count());
        assert!(blobs > 0, "compress {compress}: the store has no blob");
        let scan = sled_scan::scan(dir.path()).unwrap();
        assert!(scan.damage.is_empty(), "{:?}", scan.damage);
        assert!(scan.lost_keys.is_empty());
        let expected = sled_pairs(dir.path(), compress);
        assert!(expected.len() > 50, "{}", expected.len());
        assert!(
            scan.pairs == expected,
            "compress {compress}: the scan read {} keys, sled {}",
            scan.pairs.len(),
            expected.len()
        );
    }
}

/// Where the log ends: the last non-zero byte of `db`.
fn log_end(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|b| *b != 0).unwrap()
}

/// Where the newest messages end: the last non-zero byte of `db`'s newest segment (the one
/// whose header holds the highest sequence number). Not the file's end: sled reuses freed
/// segments, so the newest may lie before older ones (the flip test's flake: a flip near the
/// file's end landed in an old page copy, superseded, rightly not reported). Also where that
/// segment's messages begin (past its 20-byte header).
fn newest_messages(bytes: &[u8]) -> (usize, usize) {
    // sled's segment header: CRC-32 (inverted) of bytes 4..20, then the lsn xored with
    // i64::MAX; segments of 512 KiB (sled's default, which grove keeps).
    const SEGMENT: usize = 512 * 1024;
    let lsn = |seg: &[u8]| {
        let header = seg.get(..20)?;
        let stored = u32::from_le_bytes(header[..4].try_into().ok()?) ^ 0xFFFF_FFFF;
        (crc32fast::hash(&header[4..]) == stored)
            .then(|| u64::from_le_bytes(header[4..12].try_into().unwrap()) ^ 0x7FFF_FFFF_FFFF_FFFF)
    };
    let (start, seg) = bytes
        .chunks(SEGMENT)
        .enumerate()
        .filter_map(|(k, seg)| Some((lsn(seg)?, k * SEGMENT, seg)))
        .max_by_key(|(lsn, _, _)| *lsn)
        .map(|(_, start, seg)| (start, seg))
        .expect("db has a segment whose header checks out");
    (start + 20, start + log_end(seg))
}

#[test]
fn a_flipped_bit_costs_its_message_reported_with_its_range() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), false);
    let intact = sled_pairs(dir.path(), false);
    let original = std::fs::read(dir.path().join("db")).unwrap();
    assert!(!sled_scan::recovery_is_damaged(dir.path()).unwrap());
    // In the newest messages (an older copy of a page may be superseded: costs nothing), and
    // inside the newest segment: one the flusher wrote little into may hold fewer than 4,000
    // bytes, and a flip before it lands in an older segment, which recovery rightly never
    // reads (the flake of stop 43: `recovery_is_damaged` false at 4,000 bytes back).
    let (first, end) = newest_messages(&original);
    let offsets: Vec<usize> = [40usize, 400, 4_000]
        .into_iter()
        .filter_map(|back| end.checked_sub(back))
        .filter(|offset| *offset >= first)
        .collect();
    assert!(
        !offsets.is_empty(),
        "the newest segment holds {} bytes",
        end - first
    );
    for offset in offsets {
        let copy = tempfile::tempdir().unwrap();
        grove_tests::copy_dir(dir.path(), copy.path());
        let mut bytes = original.clone();
        bytes[offset] ^= 0x10;
        std::fs::write(copy.path().join("db"), &bytes).unwrap();
        let scan = sled_scan::scan(copy.path()).unwrap();
        let found = ranges(&scan.damage);
        assert!(
            found
                .iter()
                .any(|&(a, b)| a <= offset as u64 && (offset as u64) < b),
            "{offset}: {:?}",
            scan.damage
        );
        // What it hands out is what sled held: nothing older, nothing altered.
        for (k, v) in &scan.pairs {
            assert!(intact.get(k) == Some(v), "{offset}: a key read differently");
        }
        assert!(scan.pairs.len() * 2 >= intact.len(), "{offset}");
        assert!(
            sled_scan::recovery_is_damaged(copy.path()).unwrap(),
            "{offset}"
        );
    }
}

#[test]
fn a_truncated_log_is_read_up_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), false);
    let original = std::fs::read(dir.path().join("db")).unwrap();
    // Through the newest messages, as the flip test does: the file's last bytes may be an
    // older segment's (sled reuses freed ones), or a newest segment shorter than 3,000 bytes
    // puts the cut in the one before it, whose messages are whole (the flake of stop 44: a
    // cut that went through no message, rightly reported as nothing).
    let (first, end) = newest_messages(&original);
    let mut cuts: Vec<u64> = [30usize, 3_000]
        .into_iter()
        .filter_map(|back| end.checked_sub(back))
        .filter(|cut| *cut > first)
        .map(|cut| cut as u64)
        .collect();
    assert!(
        !cuts.is_empty(),
        "the newest segment holds {} bytes",
        end - first
    );
    // Fewer bytes of a message than its header (the flake of stop 44's last CI run: a cut 30
    // bytes before the end left 5 bytes of the last message, which the scan took for the
    // segment's end).
    cuts.push(first as u64 + 5);
    for cut in cuts {
        let copy = tempfile::tempdir().unwrap();
        grove_tests::copy_dir(dir.path(), copy.path());
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(copy.path().join("db"))
            .unwrap();
        file.set_len(cut).unwrap();
        let scan = sled_scan::scan(copy.path()).unwrap();
        let found = ranges(&scan.damage);
        // The message the cut went through is reported, ending at the cut.
        assert!(
            found.iter().any(|&(_, b)| b == cut) && found.iter().all(|&(_, b)| b <= cut),
            "{cut}: {:?}",
            scan.damage
        );
        // The cut 5 bytes in leaves nothing to read when the newest segment is the file's first.
        assert!(!scan.pairs.is_empty() || cut == first as u64 + 5, "{cut}");
    }
}
