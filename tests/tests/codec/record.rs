//! `grove_codec::record`: the binary values of the store, `[format version] ++ bincode
//! (standard config: little-endian varints)`. The golden tests pin the layout byte for byte
//! so that a change of encoding cannot slip in without a new format version.

use grove_codec::record::{
    decode, decode_log, decode_log_node, decode_node, encode, encode_log, line_crc, split_log,
    FormatVersion, HeadRecord, Jump, LabelRecord, LeafTarget, LineCheck, NodeRecord, Parent,
    SessionRecord, CHECKSUM_LEN,
};
use grove_codec::{CodecError, EntryKind, Role};

/// The payload of an encoded record (its checksum trailer removed, after checking it).
fn payload(bytes: &[u8]) -> Vec<u8> {
    let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
    assert_eq!(
        sum,
        &crc32fast::hash(body).to_le_bytes()[..CHECKSUM_LEN],
        "checksum trailer"
    );
    body.to_vec()
}

/// A payload with a valid checksum trailer.
fn seal(mut body: Vec<u8>) -> Vec<u8> {
    let sum = crc32fast::hash(&body).to_le_bytes();
    body.extend_from_slice(&sum[..CHECKSUM_LEN]);
    body
}

pub(super) fn node() -> NodeRecord {
    NodeRecord {
        id: "e1".into(),
        kind: EntryKind::Message(Role::Assistant).tag(),
        parent: Parent::Seq(300),
        depth: 7,
        run_start: 5,
        jump: Some(Jump { seq: 2, depth: 3 }),
        checkpoint: Some(1),
        model_at: None,
        thinking_at: Some(70_000),
        tools_at: None,
        leaf_target: Some(LeafTarget::Missing),
        shadowed: true,
        content: [0x11; 32],
        digest: std::array::from_fn(|i| i as u8),
        message: Some(grove_codec::record::MessageSpan {
            start: 30,
            len: 300,
            null_content: true,
        }),
    }
}

fn head() -> HeadRecord {
    HeadRecord {
        next_seq: u64::MAX,
        leaf: Some(250),
        entries: 251,
        name_at: None,
        last_timestamp: Some("2030-01-21T00:00:00.000Z".to_owned()),
    }
}

fn session() -> SessionRecord {
    SessionRecord {
        id: "s-1".to_owned(),
        header: r#"{"type":"session"}"#.to_owned(),
        created: "t".to_owned(),
        cwd: "/ü".to_owned(),
        parent_session: None,
        parent_session_id: Some("p".to_owned()),
        source_path: Some(String::new()),
    }
}

fn label() -> LabelRecord {
    LabelRecord {
        label: "\"mark\"".to_owned(),
        set_by: 65_536,
    }
}

/// The payload of [`node()`] as a version-1 record: what `encode` writes, and what a log row of
/// store layout 8 or earlier holds. A version-2 node record is the same after its version
/// byte, followed by the line's CRC-32.
fn node_golden_payload() -> Vec<u8> {
    let mut want: Vec<u8> = vec![
        0x01, // format version 1
        0x02, b'e', b'1', // id: length 2, then the UTF-8 bytes
        0x02, // kind: message/assistant
        0x01, 0xfb, 0x2c, 0x01, // parent: Parent::Seq (variant 1), 300 as u16 varint
        0x07, // depth
        0x05, // run_start
        0x01, 0x02, 0x03, // jump: Some(Jump { seq: 2, depth: 3 })
        0x01, 0x01, // checkpoint: Some(1)
        0x00, // model_at: None
        0x01, 0xfc, 0x70, 0x11, 0x01, 0x00, // thinking_at: Some(70000) as u32 varint
        0x00, // tools_at: None
        0x01, 0x02, // leaf_target: Some(LeafTarget::Missing)
        0x01, // shadowed: true
    ];
    want.extend([0x11; 32]); // content: 32 raw bytes, no length
    want.extend(0u8..32); // digest
    want.extend([0x01, 30, 0xfb, 0x2c, 0x01, 0x01]); // message: Some(span 30, 300, true)
    want
}

#[test]
fn node_record_golden_bytes() {
    let bytes = encode(&node());
    assert_eq!(payload(&bytes), node_golden_payload());
    assert_eq!(decode::<NodeRecord>(&bytes).unwrap(), node());
    assert_eq!(decode_node(&bytes).unwrap(), (node(), None));
}

#[test]
fn node_record_ids_of_any_length_encode_as_strings() {
    // Ids live inline up to 24 bytes and on the heap beyond; both encode as a bincode string.
    let golden = payload(&encode(&node()));
    let rest = &golden[4..]; // after version, length 2 and "e1"
    for id in [
        "",
        "a",
        &"x".repeat(24),
        &"y".repeat(25),
        &"z".repeat(300),
        "ü😀",
    ] {
        let mut n = node();
        n.id = id.into();
        let bytes = encode(&n);
        let mut want = vec![0x01];
        let len = id.len();
        if len < 251 {
            want.push(len as u8);
        } else {
            want.push(0xfb);
            want.extend((len as u16).to_le_bytes());
        }
        want.extend(id.as_bytes());
        want.extend(rest);
        assert_eq!(payload(&bytes), want, "id of {len} bytes");
        let back = decode::<NodeRecord>(&bytes).unwrap();
        assert_eq!(back.id.as_str(), id);
        assert_eq!(back, n);
    }
}

#[test]
fn absurd_lengths_behind_a_valid_checksum_are_corrupt_not_a_panic() {
    // A ViewRecord (leaf 1, no checkpoint) whose segment count claims 2^64 - 1 pairs.
    let mut body = vec![0x01, 0x01, 0x00, 0xfd];
    body.extend(u64::MAX.to_le_bytes());
    assert!(matches!(
        decode::<grove_codec::record::ViewRecord>(&seal(body)),
        Err(CodecError::CorruptRecord(_))
    ));
    // A materialized chunk whose one row claims 2^40 bytes.
    let mut body = vec![0x01, 0x00, 0x01, 0x05, 0xfd];
    body.extend((1u64 << 40).to_le_bytes());
    assert!(matches!(
        decode::<grove_codec::record::ViewRowsRecord>(&seal(body)),
        Err(CodecError::CorruptRecord(_))
    ));
}

#[test]
fn parent_and_leaf_target_variant_bytes() {
    let mut n = node();
    let cases: [(Parent, &[u8]); 5] = [
        (Parent::Root, &[0x00]),
        (Parent::Seq(0), &[0x01, 0x00]),
        (Parent::Missing, &[0x02]),
        (Parent::SelfRef, &[0x03]),
        (
            Parent::Cycle(u64::MAX),
            &[0x04, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        ),
    ];
    for (parent, tail) in cases {
        n.parent = parent;
        let bytes = encode(&n);
        // version, id (3 bytes), kind
        assert_eq!(&bytes[5..5 + tail.len()], tail, "{parent:?}");
        assert_eq!(decode::<NodeRecord>(&bytes).unwrap(), n);
    }
    let targets: [(Option<LeafTarget>, &[u8]); 4] = [
        (None, &[0x00]),
        (Some(LeafTarget::Null), &[0x01, 0x00]),
        (Some(LeafTarget::Seq(251)), &[0x01, 0x01, 0xfb, 0xfb, 0x00]),
        (Some(LeafTarget::Missing), &[0x01, 0x02]),
    ];
    let mut n = node();
    n.parent = Parent::Root;
    for (target, enc) in targets {
        n.leaf_target = target;
        let bytes = encode(&n);
        // version, id(3), kind, parent, depth, run_start, jump(3), checkpoint(2), model_at,
        // thinking_at(6), tools_at
        let at = 1 + 3 + 1 + 1 + 1 + 1 + 3 + 2 + 1 + 6 + 1;
        assert_eq!(&bytes[at..at + enc.len()], enc, "{target:?}");
        // then shadowed, content and digest (64), message (6)
        assert_eq!(bytes.len(), at + enc.len() + 1 + 64 + 6 + CHECKSUM_LEN);
        assert_eq!(decode::<NodeRecord>(&bytes).unwrap(), n);
    }
}

#[test]
fn head_session_and_label_golden_bytes() {
    let mut want = vec![0x01, 0xfd];
    want.extend([0xff; 8]); // next_seq: u64::MAX
    want.extend([0x01, 0xfa]); // leaf: Some(250), the largest one-byte varint
    want.extend([0xfb, 0xfb, 0x00]); // entries: 251
    want.push(0x00); // name_at: None
    want.extend([0x01, 24]); // last_timestamp: Some, length 24
    want.extend(b"2030-01-21T00:00:00.000Z");
    assert_eq!(payload(&encode(&head())), want);

    let mut want = vec![0x01, 3];
    want.extend(b"s-1");
    want.push(18);
    want.extend(br#"{"type":"session"}"#);
    want.extend([1, b't', 3, b'/', 0xc3, 0xbc]);
    want.extend([0x00, 0x01, 1, b'p', 0x01, 0]);
    assert_eq!(payload(&encode(&session())), want);

    let mut want = vec![0x01, 6];
    want.extend(br#""mark""#);
    want.extend([0xfc, 0x00, 0x00, 0x01, 0x00]);
    assert_eq!(payload(&encode(&label())), want);
}

#[test]
fn every_record_round_trips() {
    assert_eq!(decode::<NodeRecord>(&encode(&node())).unwrap(), node());
    assert_eq!(decode::<HeadRecord>(&encode(&head())).unwrap(), head());
    assert_eq!(
        decode::<SessionRecord>(&encode(&session())).unwrap(),
        session()
    );
    assert_eq!(decode::<LabelRecord>(&encode(&label())).unwrap(), label());
    let empty_head = HeadRecord {
        next_seq: 0,
        leaf: None,
        entries: 0,
        name_at: None,
        last_timestamp: None,
    };
    assert_eq!(
        decode::<HeadRecord>(&encode(&empty_head)).unwrap(),
        empty_head
    );
    for depth in [
        0,
        1,
        250,
        251,
        65_535,
        65_536,
        u64::from(u32::MAX),
        u64::from(u32::MAX) + 1,
        u64::MAX,
    ] {
        let mut n = node();
        n.depth = depth;
        n.checkpoint = Some(depth);
        n.parent = Parent::Cycle(depth);
        assert_eq!(decode::<NodeRecord>(&encode(&n)).unwrap(), n, "{depth}");
    }
}

#[test]
fn unknown_format_versions_are_refused() {
    for version in [0u8, 4, 0x7f, 0xff] {
        let mut body = payload(&encode(&node()));
        body[0] = version;
        let bytes = seal(body);
        assert!(
            matches!(decode::<NodeRecord>(&bytes), Err(CodecError::UnknownFormatVersion(v)) if v == version),
            "version {version}"
        );
        assert!(
            matches!(decode_node(&bytes), Err(CodecError::UnknownFormatVersion(v)) if v == version),
            "version {version}"
        );
        assert!(matches!(
            FormatVersion::from_byte(version),
            Err(CodecError::UnknownFormatVersion(v)) if v == version
        ));
    }
    assert_eq!(FormatVersion::from_byte(1).unwrap(), FormatVersion::V1);
    assert_eq!(FormatVersion::from_byte(2).unwrap(), FormatVersion::V2);
    assert!(!FormatVersion::V1.has_line_crc() && FormatVersion::V2.has_line_crc());
    assert_eq!(FormatVersion::CURRENT, FormatVersion::V1);
    assert_eq!(FormatVersion::NODE, FormatVersion::V2);
    assert_eq!(encode(&label())[0], FormatVersion::CURRENT as u8);
    // Version 2 is a node record's only: other records of it are refused.
    let mut body = payload(&encode(&label()));
    body[0] = 2;
    assert!(matches!(
        decode::<LabelRecord>(&seal(body)),
        Err(CodecError::UnknownFormatVersion(2))
    ));
}

/// Decodes bytes as one record type, dropping the value.
type Decoder = fn(&[u8]) -> Result<(), CodecError>;

#[test]
fn truncated_values_are_corrupt() {
    assert!(matches!(
        decode::<NodeRecord>(&[]),
        Err(CodecError::CorruptRecord(_))
    ));
    let records: Vec<(&str, Vec<u8>, Decoder)> = vec![
        ("node", encode(&node()), |b| {
            decode::<NodeRecord>(b).map(drop)
        }),
        ("head", encode(&head()), |b| {
            decode::<HeadRecord>(b).map(drop)
        }),
        ("session", encode(&session()), |b| {
            decode::<SessionRecord>(b).map(drop)
        }),
        ("label", encode(&label()), |b| {
            decode::<LabelRecord>(b).map(drop)
        }),
    ];
    for (name, bytes, dec) in records {
        assert!(dec(&bytes).is_ok(), "{name}");
        for cut in 1..bytes.len() {
            assert!(
                matches!(dec(&bytes[..cut]), Err(CodecError::CorruptRecord(_))),
                "{name} cut at {cut}"
            );
        }
    }
}

#[test]
fn trailing_bytes_are_corrupt() {
    let mut body = payload(&encode(&label()));
    body.push(0);
    let bytes = seal(body);
    match decode::<LabelRecord>(&bytes) {
        Err(CodecError::CorruptRecord(reason)) => {
            assert!(reason.contains("1 trailing"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn invalid_field_values_are_corrupt() {
    // Parent variant 5 does not exist.
    let mut bytes = payload(&encode(&node()));
    assert_eq!(bytes[5], 0x01, "the parent variant");
    bytes[5] = 0x05;
    let bytes = seal(bytes);
    assert!(matches!(
        decode::<NodeRecord>(&bytes),
        Err(CodecError::CorruptRecord(_))
    ));
    // A bool must be 0 or 1 (`shadowed` sits before the 64 digest bytes and the 6 bytes of
    // the message span).
    let mut bytes = payload(&encode(&node()));
    let at = bytes.len() - 65 - 6;
    assert_eq!(bytes[at], 0x01);
    bytes[at] = 0x02;
    let bytes = seal(bytes);
    assert!(matches!(
        decode::<NodeRecord>(&bytes),
        Err(CodecError::CorruptRecord(_))
    ));
    // An Option tag must be 0 or 1.
    let mut bytes = payload(&encode(&head()));
    bytes[10] = 0x07;
    let bytes = seal(bytes);
    assert!(matches!(
        decode::<HeadRecord>(&bytes),
        Err(CodecError::CorruptRecord(_))
    ));
    // Strings must be UTF-8.
    let mut bytes = payload(&encode(&label()));
    bytes[2] = 0xff;
    let bytes = seal(bytes);
    assert!(matches!(
        decode::<LabelRecord>(&bytes),
        Err(CodecError::CorruptRecord(_))
    ));
}

#[test]
fn entry_kind_tags_are_stable() {
    let table: [(EntryKind, u8); 21] = [
        (EntryKind::Message(Role::User), 1),
        (EntryKind::Message(Role::Assistant), 2),
        (EntryKind::Message(Role::ToolResult), 3),
        (EntryKind::Message(Role::BashExecution), 4),
        (EntryKind::Message(Role::Custom), 5),
        (EntryKind::Message(Role::HookMessage), 6),
        (EntryKind::Message(Role::BranchSummary), 7),
        (EntryKind::Message(Role::CompactionSummary), 8),
        (EntryKind::Message(Role::Other), 9),
        (EntryKind::ModelChange, 20),
        (EntryKind::ThinkingLevelChange, 21),
        (EntryKind::ActiveToolsChange, 22),
        (EntryKind::Compaction, 23),
        (EntryKind::BranchSummary, 24),
        (EntryKind::Custom, 25),
        (EntryKind::CustomMessage, 26),
        (EntryKind::Label, 27),
        (EntryKind::SessionInfo, 28),
        (EntryKind::Leaf, 29),
        (EntryKind::Unknown, 30),
        (EntryKind::classify("message", Some("toolResult")), 3),
    ];
    for (kind, tag) in table {
        assert_eq!(kind.tag(), tag, "{kind:?}");
        assert_eq!(EntryKind::from_tag(tag), Some(kind));
    }
    let known: Vec<u8> = (0..=255u8)
        .filter(|t| EntryKind::from_tag(*t).is_some())
        .collect();
    assert_eq!(known.len(), 20);
    for t in known {
        assert_eq!(EntryKind::from_tag(t).unwrap().tag(), t);
    }
}

#[test]
fn parent_seq_follows_only_walkable_parents() {
    assert_eq!(Parent::Seq(4).seq(), Some(4));
    assert_eq!(Parent::Cycle(5).seq(), Some(5));
    assert_eq!(Parent::Root.seq(), None);
    assert_eq!(Parent::Missing.seq(), None);
    assert_eq!(Parent::SelfRef.seq(), None);
}

#[test]
fn any_flipped_byte_is_detected() {
    let bytes = encode(&node());
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut flipped = bytes.clone();
            flipped[i] ^= bit;
            assert!(
                decode::<NodeRecord>(&flipped).is_err(),
                "byte {i} bit {bit:#x}"
            );
        }
    }
}

#[test]
fn log_row_golden_bytes() {
    let line = br#"{"type":"message","id":"e1"}"#;
    let row = encode_log(&node(), line);
    // Golden layout (docs/format.md, "LogRow"): u32 BE length, the node record of version 2
    // (its fields, the line's CRC-32 little-endian, the record checksum), the line.
    let mut record = node_golden_payload();
    record[0] = 0x02;
    record.extend([0x10, 0x03, 0x7b, 0x01]); // CRC-32 of the line: 0x017b0310
    assert_eq!(line_crc(line), 0x017b_0310);
    let record = seal(record);
    assert_eq!(row[..4], (record.len() as u32).to_be_bytes());
    assert_eq!(row[4..4 + record.len()], record[..]);
    assert_eq!(row[4 + record.len()..], line[..]);
    assert_eq!(row.len(), 4 + encode(&node()).len() + 4 + line.len());
    let (n, l) = split_log(&row).unwrap();
    assert_eq!(decode_node(n).unwrap(), (node(), Some(0x017b_0310)));
    assert_eq!(l, line);
    assert_eq!(decode_log_node(&row).unwrap(), node());
    let decoded = decode_log(&row).unwrap();
    assert_eq!(
        (decoded.node, decoded.line_crc, decoded.line),
        (node(), Some(0x017b_0310), &line[..])
    );
    // A version-2 node record is not a version-1 one.
    assert!(matches!(
        decode::<NodeRecord>(n),
        Err(CodecError::UnknownFormatVersion(2))
    ));
    // An empty line is allowed (the split is by length, not by content); its CRC is 0.
    let bare = encode_log(&node(), b"");
    let decoded = decode_log(&bare).unwrap();
    assert_eq!((decoded.line, decoded.line_crc), (&b""[..], Some(0)));
    assert_eq!(line_crc(b"{}"), 0xa3a6_bf43);
}

#[test]
fn a_row_checks_its_line_against_its_crc() {
    let line = br#"{"type":"message","id":"e1"}"#;
    // The node's content hash is wrong: a read of a layout-9 row does not compute it.
    let row = encode_log(&node(), line);
    assert_eq!(decode_log(&row).unwrap().check_line(), Ok(()));
    let at = row.len() - line.len();
    for i in at..row.len() {
        for bit in [0x01u8, 0x80] {
            let mut changed = row.clone();
            changed[i] ^= bit;
            assert_eq!(
                decode_log(&changed).unwrap().check_line(),
                Err(LineCheck::Crc),
                "byte {i} bit {bit:#x}"
            );
        }
    }
    // The CRC lies inside the node record, under its checksum: a changed CRC is a damaged
    // record.
    let mut changed = row.clone();
    changed[at - CHECKSUM_LEN - 1] ^= 1;
    assert!(matches!(
        decode_log(&changed),
        Err(CodecError::CorruptRecord(_))
    ));
    assert_eq!(LineCheck::Crc.to_string(), "CRC-32");
}

#[test]
fn layout_8_rows_are_checked_against_their_content_hash() {
    // A layout-8 row: u32 BE length, the node record of version 1, the line.
    let line = br#"{"type":"message","id":"e1"}"#;
    let mut n = node();
    n.content = grove_codec::digest::content_hash(line);
    let record = encode(&n);
    let mut row = (record.len() as u32).to_be_bytes().to_vec();
    row.extend(&record);
    row.extend(line);
    assert_eq!(row, grove_tests::rows::layout_8_row(&n, line));
    let decoded = decode_log(&row).unwrap();
    assert_eq!((&decoded.node, decoded.line_crc), (&n, None));
    assert_eq!(decoded.check_line(), Ok(()));
    let at = row.len() - line.len();
    for i in at..row.len() {
        let mut changed = row.clone();
        changed[i] ^= 0x20;
        assert_eq!(
            decode_log(&changed).unwrap().check_line(),
            Err(LineCheck::ContentHash),
            "byte {i}"
        );
    }
    assert_eq!(LineCheck::ContentHash.to_string(), "content hash");
}

#[test]
fn node_records_of_version_2_need_their_crc() {
    let mut body = node_golden_payload();
    body[0] = 0x02;
    // The fields alone: the CRC is missing.
    assert!(matches!(
        decode_node(&seal(body.clone())),
        Err(CodecError::CorruptRecord(m)) if m.contains("CRC")
    ));
    // A CRC and one byte more.
    body.extend([1, 2, 3, 4, 5]);
    assert!(matches!(
        decode_node(&seal(body)),
        Err(CodecError::CorruptRecord(m)) if m.contains("1 trailing")
    ));
    // Version 1 with a CRC after its fields: trailing bytes.
    let mut body = node_golden_payload();
    body.extend([1, 2, 3, 4]);
    assert!(matches!(
        decode_node(&seal(body)),
        Err(CodecError::CorruptRecord(m)) if m.contains("4 trailing")
    ));
}

#[test]
fn damaged_log_rows_are_refused() {
    let row = encode_log(&node(), b"{}");
    // Shorter than the length prefix.
    assert!(matches!(
        split_log(&row[..3]),
        Err(CodecError::CorruptRecord(_))
    ));
    // A length beyond the value.
    let mut long = row.clone();
    long[..4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        split_log(&long),
        Err(CodecError::CorruptRecord(_))
    ));
    assert!(matches!(
        decode_log(&long),
        Err(CodecError::CorruptRecord(_))
    ));
    // A flipped bit in the node record fails its checksum.
    let mut flipped = row.clone();
    flipped[6] ^= 1;
    assert!(decode_log_node(&flipped).is_err());
    assert!(decode_log(&flipped).is_err());
}

#[test]
fn an_operation_stamp_rides_on_a_version_3_node_record() {
    use grove_codec::op::{OpKind, OpStamp};
    use grove_codec::record::{decode_node_stamped, encode_log_stamped};
    let stamp = OpStamp::new(OpKind::Navigate, "client \"a\"", 1_796_277_456_558);
    let line = br#"{"type":"leaf"}"#;
    let row = encode_log_stamped(&node(), line, Some(&stamp));
    assert_eq!(row[4], 3, "version 3");
    let parts = decode_log(&row).unwrap();
    assert_eq!(parts.node, node());
    assert_eq!(parts.op.as_ref(), Some(&stamp));
    assert_eq!(parts.op.unwrap().kind(), Some(OpKind::Navigate));
    assert_eq!(parts.line, line);
    parts_check(&row);
    // Without a stamp the row is the version-2 row, byte for byte.
    assert_eq!(
        encode_log_stamped(&node(), line, None),
        encode_log(&node(), line)
    );
    assert_eq!(decode_log(&encode_log(&node(), line)).unwrap().op, None);
    // A stamp cut short, or followed by a byte, is refused (the checksum is recomputed).
    let len = u32::from_be_bytes(row[..4].try_into().unwrap()) as usize;
    let record = &row[4..4 + len];
    let body = &record[..record.len() - 4];
    for bad in [body[..body.len() - 1].to_vec(), [body, &[0u8][..]].concat()] {
        assert!(decode_node_stamped(&seal(bad)).is_err());
    }
}

fn parts_check(row: &[u8]) {
    let parts = decode_log(row).unwrap();
    assert!(parts.check_line().is_ok());
}
