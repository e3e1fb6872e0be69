//! Golden bytes of every key layout documented in docs/format.md.

use grove::keys;

#[test]
fn key_layouts_match_docs_format_md() {
    assert_eq!(keys::meta(b"format"), b"\x00format");
    assert_eq!(keys::session(2), [0x01, 0, 0, 0, 0, 0, 0, 0, 2]);
    assert_eq!(keys::head(2), [0x02, 0, 0, 0, 0, 0, 0, 0, 2]);
    assert_eq!(keys::session_id("ab"), [0x03, b'a', b'b']);
    assert_eq!(keys::pending(1), [0x04, 0, 0, 0, 0, 0, 0, 0, 1]);
    // Layout 15: the catalogue indexes.
    let digest = |text: &str| blake3::hash(text.as_bytes()).as_bytes()[..16].to_vec();
    let by_cwd = [
        &[0x09][..],
        &digest("/w"),
        b"ab\x00",
        &[0, 0, 0, 0, 0, 0, 0, 2],
    ]
    .concat();
    assert_eq!(keys::by_cwd("/w", "ab", 2), by_cwd);
    assert_eq!(
        keys::catalogue_entry(&by_cwd, 17, 0),
        Some(("ab".into(), 2))
    );
    // 2025-01-01T00:00:00Z is 1735689600000 ms: 0x0000_0194_1F29_7C00, sign bit flipped.
    assert_eq!(
        keys::by_created(1_735_689_600_000, "ab", 2),
        [0x0A, 0x80, 0, 0x01, 0x94, 0x1F, 0x29, 0x7C, 0, b'a', b'b', 0, 0, 0, 0, 0, 0, 0, 0, 2]
    );
    assert!(keys::by_created(-1, "a", 1) < keys::by_created(0, "a", 1));
    // The hour of 2025-01-01T00:00:00Z: 482136 = 0x75B58.
    let by_updated = keys::by_updated(482_136, "ab", 2);
    assert_eq!(
        by_updated,
        [0x0C, 0x80, 0, 0, 0, 0, 0x07, 0x5B, 0x58, b'a', b'b', 0, 0, 0, 0, 0, 0, 0, 0, 2]
    );
    assert_eq!(keys::updated_hour(&by_updated), Some(482_136));
    assert_eq!(
        keys::catalogue_entry(&by_updated, 9, 0),
        Some(("ab".into(), 2))
    );
    let by_label = [
        &[0x0B][..],
        &digest("keep"),
        b"ab\x00",
        &[0, 0, 0, 0, 0, 0, 0, 2],
        &[0, 0, 0, 0, 0, 0, 0, 9],
    ]
    .concat();
    assert_eq!(keys::by_label("keep", "ab", 2, 9), by_label);
    assert_eq!(
        keys::catalogue_entry(&by_label, 17, 8),
        Some(("ab".into(), 2))
    );
    // The example of docs/format.md: seq 5 of sid 2.
    assert_eq!(
        keys::log(2, 5),
        [0x10, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5]
    );
    // Tag 0x11 (node records before format 2) is no longer written.
    assert!(!keys::SESSION_TABLES.contains(&0x11));
    assert_eq!(
        keys::entry_id(1, "u1"),
        [0x12, 0, 0, 0, 0, 0, 0, 0, 1, b'u', b'1']
    );
    assert_eq!(
        keys::child(1, keys::ROOT, 3),
        [
            0x13, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0,
            0, 0, 0, 0, 3
        ]
    );
    assert_eq!(keys::leaf_history(1, 7)[0], 0x14);
    assert_eq!(keys::label(1, "t"), [0x15, 0, 0, 0, 0, 0, 0, 0, 1, b't']);
    assert_eq!(keys::compaction(1, 7)[0], 0x16);
    // Layout 7: the view under 0x06, its materialized rows right after it; 0x17 retired.
    assert_eq!(keys::view(2), [0x06, 0, 0, 0, 0, 0, 0, 0, 2]);
    assert_eq!(
        keys::view_rows(2, 1),
        [0x06, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1]
    );
    assert!(!keys::SESSION_TABLES.contains(&keys::T_VIEW_OLD));
    assert!(keys::SESSION_TABLES.contains(&keys::T_VIEW));
    assert_eq!(keys::packed(2), [0x05, 0, 0, 0, 0, 0, 0, 0, 2]);
    assert_eq!(
        keys::id_pack(2, "ab"),
        [0x18, 0, 0, 0, 0, 0, 0, 0, 2, b'a', b'b']
    );
    assert_eq!(
        keys::log_pack(2, 7),
        [0x19, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7]
    );
    assert_eq!(
        keys::id_run(2, 7),
        [0x1B, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7]
    );
    assert_eq!(
        keys::id_run_pack(2, 7, "ab"),
        [0x1C, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7, b'a', b'b']
    );
    // Layout 8: index packs of imported sessions.
    assert_eq!(
        keys::child_pack(2, 5, 7),
        [0x1D, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 7]
    );
    assert_eq!(
        keys::leaf_pack(2, 7),
        [0x1E, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7]
    );
    for table in [
        keys::T_CHILD_PACK,
        keys::T_LEAF_PACK,
        keys::T_PACKED,
        keys::T_ID_PACK,
        keys::T_LOG_PACK,
        keys::T_ID_RUN,
        keys::T_ID_RUN_PACK,
        keys::T_ENTRY_ID,
    ] {
        assert!(keys::SESSION_TABLES.contains(&table));
    }
    assert_eq!(keys::meta(b"next_sid"), b"\x00next_sid");
}

#[test]
fn big_endian_keys_sort_numerically() {
    let mut ks: Vec<Vec<u8>> = [256u64, 1, 255, 65536, 0]
        .iter()
        .map(|&s| keys::log(1, s))
        .collect();
    ks.sort();
    let seqs: Vec<u64> = ks.iter().map(|k| keys::last_u64(k).unwrap()).collect();
    assert_eq!(seqs, [0, 1, 255, 256, 65536]);
    assert_eq!(keys::prefix_end(&[1, 0xFF]), [2]);
}
