//! Packs (docs/format.md, "Packs"): log packs and id packs round-trip, find every record and
//! id, and refuse damaged tables.

use grove_codec::pack::{
    encode_id_pack, IdPack, LogPack, LogPackWriter, LogValue, BATCH_MARK, LOG_PACK_BYTES,
    LOG_PACK_RECORDS,
};
use grove_codec::record::encode_log;

#[test]
fn log_pack_round_trips_and_refuses_damage() {
    let mut w = LogPackWriter::new();
    for row in [&b"first"[..], b"", b"third row"] {
        w.push(row).unwrap();
    }
    let bytes = w.take();
    assert!(w.is_empty());
    let pack = LogPack::parse(&bytes).expect("pack");
    assert_eq!(pack.len(), 3);
    assert_eq!(pack.row(0), Some(&b"first"[..]));
    assert_eq!(pack.row(1), Some(&b""[..]));
    assert_eq!(pack.row(2), Some(&b"third row"[..]));
    assert_eq!(pack.row(3), None);
    // Any change to the table is refused; a change to a row is left to the row's own
    // checks, and a change of length is refused.
    for at in 0..4 + 4 * 3 + 4 {
        let mut bad = bytes.clone();
        bad[at] ^= 0x01;
        assert!(LogPack::parse(&bad).is_err(), "flip at {at} accepted");
    }
    assert!(LogPack::parse(&bytes[..bytes.len() - 1]).is_err());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(LogPack::parse(&longer).is_err());
    assert!(LogPack::parse(&LogPackWriter::new().take()).is_err());
}

#[test]
fn a_batch_is_its_mark_then_a_log_pack_and_a_row_is_told_apart() {
    let mut w = LogPackWriter::new();
    w.push(b"xy").unwrap();
    w.push(b"z").unwrap();
    let batch = w.take_batch();
    assert!(w.is_empty());
    w.push(b"xy").unwrap();
    w.push(b"z").unwrap();
    let mut expected = vec![0xFF];
    expected.extend_from_slice(&w.take());
    assert_eq!(BATCH_MARK, 0xFF);
    assert_eq!(batch, expected);
    let LogValue::Batch(pack) = LogValue::parse(&batch).unwrap() else {
        panic!("a batch read as a row");
    };
    assert_eq!((pack.len(), pack.row(1)), (2, Some(&b"z"[..])));
    let value = LogValue::parse(&batch).unwrap();
    assert_eq!(
        (value.len(), value.row(0), value.row(2)),
        (2, Some(&b"xy"[..]), None)
    );
    // A damaged table is refused, with or without the mark.
    let mut bad = batch.clone();
    bad[4] ^= 1;
    assert!(LogValue::parse(&bad).is_err());
    assert!(LogValue::parse(&[BATCH_MARK]).is_err());
    // A single row (its node record's length first) is a row, whole.
    let row = encode_log(&super::record::node(), br#"{"type":"leaf"}"#);
    assert_ne!(row[0], BATCH_MARK);
    let value = LogValue::parse(&row).unwrap();
    assert!(matches!(value, LogValue::Row(r) if r == row.as_slice()));
    assert_eq!((value.len(), value.row(1)), (1, None));
    // Rows encoded in place are the rows `encode_log` makes; one row is taken as it is.
    let node = super::record::node();
    let mut w = LogPackWriter::new();
    w.push_log(&node, b"{}").unwrap();
    assert_eq!(w.body_len(), encode_log(&node, b"{}").len());
    assert_eq!(w.take_row(), Some(encode_log(&node, b"{}")));
    assert!(w.is_empty());
    w.push_log(&node, b"{}").unwrap();
    w.push_log(&node, b"[]").unwrap();
    assert_eq!(w.take_row(), None);
    let batch = w.take_batch();
    let value = LogValue::parse(&batch).unwrap();
    assert_eq!(value.row(1), Some(encode_log(&node, b"[]").as_slice()));
}

#[test]
fn log_pack_closes_at_its_limits() {
    let mut w = LogPackWriter::new();
    for _ in 0..LOG_PACK_RECORDS - 1 {
        w.push(b"x").unwrap();
    }
    assert!(!w.is_full());
    w.push(b"x").unwrap();
    assert!(w.is_full());
    let mut w = LogPackWriter::new();
    w.push(&vec![b'y'; LOG_PACK_BYTES]).unwrap();
    assert!(w.is_full());
}

#[test]
fn id_pack_finds_every_id_and_only_those() {
    let ids = ["0a", "0b", "1", "ab\u{e9}", "b", "zz"];
    let bytes = encode_id_pack(ids.iter().enumerate().map(|(i, id)| (*id, 10 * i as u64)));
    let pack = IdPack::parse(&bytes).expect("pack");
    assert_eq!(pack.len(), ids.len());
    assert_eq!(pack.first(), "0a");
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(pack.get(id), Some(10 * i as u64), "{id}");
    }
    for absent in ["", "0", "0c", "ab", "c", "zzz"] {
        assert_eq!(pack.get(absent), None, "{absent}");
    }
    let all: Vec<_> = pack.iter().collect();
    assert_eq!(all[3], ("ab\u{e9}", 30));
    assert!(pack.check().is_ok());
    // The checksum covers every byte of an id pack.
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x01;
        assert!(IdPack::parse(&bad).is_err(), "flip at {at} accepted");
    }
    // Pairs the writer would never produce pass the checksum but not `check`.
    let unsorted = encode_id_pack([("b", 1), ("a", 2)]);
    assert!(IdPack::parse(&unsorted).unwrap().check().is_err());
    let repeated = encode_id_pack([("a", 1), ("a", 2)]);
    assert!(IdPack::parse(&repeated).unwrap().check().is_err());
    let short = {
        // A table that says one pair of 3 bytes: too short for a seq.
        let mut t = vec![0, 0, 0, 1, 0, 0, 0, 3];
        let mut h = crc32fast::Hasher::new();
        h.update(&t);
        h.update(b"abc");
        t.extend_from_slice(&h.finalize().to_le_bytes());
        t.extend_from_slice(b"abc");
        t
    };
    assert!(IdPack::parse(&short).unwrap().check().is_err());
}

#[test]
fn pack_bytes_match_docs_format_md() {
    // count, ends, crc32 (LE) of count, ends and items (id packs) or of count and ends
    // (log packs), then the items.
    let bytes = encode_id_pack([("ab", 258)]);
    let table = [0, 0, 0, 1, 0, 0, 0, 10];
    let items = [0, 0, 0, 0, 0, 0, 1, 2, b'a', b'b'];
    let mut expected = table.to_vec();
    let whole: Vec<u8> = table.iter().chain(&items).copied().collect();
    expected.extend_from_slice(&crc32fast::hash(&whole).to_le_bytes());
    expected.extend_from_slice(&items);
    assert_eq!(bytes, expected);
    let mut w = LogPackWriter::new();
    w.push(b"xy").unwrap();
    w.push(b"z").unwrap();
    let table = [0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3];
    let mut expected = table.to_vec();
    expected.extend_from_slice(&crc32fast::hash(&table).to_le_bytes());
    expected.extend_from_slice(b"xyz");
    assert_eq!(w.take(), expected);
}

#[test]
fn id_filter_holds_every_id_and_few_others() {
    use grove_codec::pack::IdFilter;
    let ids: Vec<String> = (0..5000).map(|i| format!("{:08x}", i * 7919)).collect();
    let filter = IdFilter::build(ids.len(), ids.iter().map(String::as_str));
    for id in &ids {
        assert!(filter.may_contain(id), "{id}");
    }
    let false_positives = (0..20_000)
        .map(|i| format!("other-{i}"))
        .filter(|id| filter.may_contain(id))
        .count();
    // About 1 % at 10 bits per id and 7 probes.
    assert!(false_positives < 400, "{false_positives} false positives");
    let bytes = filter.encode();
    assert_eq!(IdFilter::decode(&bytes).unwrap(), filter);
    for at in [0, 1, bytes.len() / 2, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(IdFilter::decode(&bad).is_err(), "flip at {at} accepted");
    }
    // An empty set answers no for everything.
    let empty = IdFilter::build(0, []);
    assert!(!empty.may_contain("a"));
}

#[test]
fn id_filter_bytes_match_docs_format_md() {
    use grove_codec::pack::IdFilter;
    // XXH3-128 as its specification gives it (the empty input, seed 0), so the filters do not
    // change with the crate that computes it.
    assert_eq!(
        twox_hash::XxHash3_128::oneshot(b""),
        0x99aa_06d3_0147_98d8_6001_c324_468d_497f
    );
    // One id in the smallest filter (8 bytes, 64 bits): bits (h1 + i·h2) mod 64, i < 7, with
    // h1, h2 the low and high 64 bits of XXH3-128("ab"), h2 | 1.
    let hash = twox_hash::XxHash3_128::oneshot(b"ab");
    let h1 = hash as u64;
    let h2 = (hash >> 64) as u64 | 1;
    let mut bits = [0u8; 8];
    for i in 0..7u64 {
        let bit = (h1.wrapping_add(i.wrapping_mul(h2)) % 64) as usize;
        bits[bit / 8] |= 1 << (bit % 8);
    }
    let mut expected = vec![7u8];
    expected.extend_from_slice(&bits);
    expected.extend_from_slice(&crc32fast::hash(&expected).to_le_bytes());
    assert_eq!(IdFilter::build(1, ["ab"]).encode(), expected);
}

#[test]
fn id_run_description_round_trips_matches_docs_and_refuses_damage() {
    use grove_codec::pack::{IdFilter, IdRunMeta};
    let ids: Vec<String> = (0..300).map(|i| format!("{i:x}")).collect();
    let meta = IdRunMeta {
        end: 1_300,
        count: 300,
        filter: IdFilter::build(ids.len(), ids.iter().map(String::as_str)),
    };
    let bytes = meta.encode();
    assert_eq!(IdRunMeta::decode(&bytes).unwrap(), meta);
    // end:u64 BE ++ count:u64 BE ++ the filter's probes and bits ++ crc32 of all before, LE.
    let filter = meta.filter.encode();
    let mut expected = Vec::new();
    expected.extend_from_slice(&1_300u64.to_be_bytes());
    expected.extend_from_slice(&300u64.to_be_bytes());
    expected.extend_from_slice(&filter[..filter.len() - 4]);
    expected.extend_from_slice(&crc32fast::hash(&expected).to_le_bytes());
    assert_eq!(bytes, expected);
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x20;
        assert!(IdRunMeta::decode(&bad).is_err(), "flip at {at} accepted");
    }
    for len in 0..22 {
        assert!(IdRunMeta::decode(&bytes[..len.min(bytes.len())]).is_err());
    }
}
