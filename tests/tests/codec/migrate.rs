//! Legacy migration v1 → v2 → v3 (spec §2.8), checked against the files pi-CLI rewrote.

use std::collections::HashMap;

use grove_codec::migrate::{set_keys, write_object, Migrator};
use grove_codec::reader::{Diagnostic, Strictness};
use grove_codec::{EntryKind, Role};
use serde_json::Value;

use super::support::{expected, jsonl, physical_lines, read_all, read_all_with, Read};

fn strict(bytes: &[u8]) -> Read {
    read_all(bytes, Strictness::Strict).unwrap()
}

fn text_lines(bytes: &[u8]) -> Vec<String> {
    physical_lines(bytes)
        .into_iter()
        .map(|(_, t)| String::from_utf8(t.to_vec()).unwrap())
        .collect()
}

/// `obj` with `members` appended as its last keys (`obj` is compact object text).
fn appended(obj: &str, members: &str) -> String {
    format!("{},{members}}}", obj.strip_suffix('}').unwrap())
}

/// Replaces the ids in `id`, `parentId` and `firstKeptEntryId` through `map`.
fn remap(mut v: Value, map: &HashMap<String, String>) -> Value {
    for key in ["id", "parentId", "firstKeptEntryId"] {
        if let Some(Value::String(s)) = v.get_mut(key) {
            if let Some(new) = map.get(s.as_str()) {
                *s = new.clone();
            }
        }
    }
    v
}

/// Compares grove's migrated lines with pi-CLI's rewritten file and `getEntries()`, after
/// mapping grove's ids onto pi's random ones by position.
fn compare_with_pi(case: &str, read: &Read) {
    let exp = expected(case);
    let sm = &exp["sessionManager"];
    assert_eq!(sm["rewroteFile"], Value::Bool(true), "{case}");
    let rewritten = sm["rewrittenFileLines"].as_array().unwrap();
    let entries = sm["entries"].as_array().unwrap();
    assert_eq!(rewritten.len(), read.lines.len() + 1, "{case}");
    assert_eq!(entries.len(), read.lines.len(), "{case}");

    let header: Value = serde_json::from_str(&read.header.raw).unwrap();
    assert_eq!(header, rewritten[0], "{case}: header");
    assert_eq!(header, sm["header"], "{case}: header");

    let map: HashMap<String, String> = read
        .lines
        .iter()
        .zip(entries)
        .map(|(l, e)| (l.envelope.id.clone(), e["id"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(map.len(), read.lines.len(), "{case}: ids are distinct");
    for (i, line) in read.lines.iter().enumerate() {
        let ours = remap(serde_json::from_str(&line.text).unwrap(), &map);
        assert_eq!(ours, rewritten[i + 1], "{case}: line {}", line.line);
        assert_eq!(ours, entries[i], "{case}: entry {i}");
    }
}

#[test]
fn v1_file_is_migrated_like_pi_cli() {
    let bytes = jsonl("edge-v1");
    let original = text_lines(&bytes);
    let read = strict(&bytes);

    assert_eq!(read.header.source_version, 1);
    assert_eq!(read.header.raw, appended(&original[0], r#""version":3"#));
    assert_eq!(read.header.id, "legacy-v1-session");

    let ids: Vec<String> = (1..=8).map(|n| format!("m{n}")).collect();
    assert_eq!(read.ids(), ids);
    for (i, line) in read.lines.iter().enumerate() {
        let env = &line.envelope;
        let parent = if i == 0 {
            None
        } else {
            Some(ids[i - 1].clone())
        };
        assert_eq!(env.parent_id, parent, "entries are chained in file order");
        assert_eq!(line.line, i as u64 + 2);
        assert!(read
            .diagnostics
            .contains(&Diagnostic::Migrated { line: line.line }));
    }

    // Plain lines: the original with id and parentId appended as the last keys.
    assert_eq!(
        read.lines[0].text,
        appended(&original[1], r#""id":"m1","parentId":null"#)
    );
    assert_eq!(
        read.lines[3].text,
        appended(&original[4], r#""id":"m4","parentId":"m3""#),
        "non-ASCII text survives the rewrite"
    );

    // The compaction: firstKeptEntryIndex 4 is the fourth entry (the header is index 0).
    let compaction = &read.lines[5];
    assert_eq!(compaction.envelope.kind, EntryKind::Compaction);
    assert_eq!(
        compaction.text,
        r#"{"type":"compaction","timestamp":"2025-06-01T12:00:06.000Z","summary":"v1 summary","tokensBefore":1234,"id":"m6","parentId":"m5","firstKeptEntryId":"m4"}"#
    );
    compare_with_pi("edge-v1", &read);
}

#[test]
fn v1_bad_indexes_lose_first_kept_entry_id() {
    let bytes = jsonl("edge-v1-bad-index");
    let read = strict(&bytes);
    let compactions: Vec<Value> = read
        .lines
        .iter()
        .filter(|l| l.envelope.kind == EntryKind::Compaction)
        .map(|l| serde_json::from_str(&l.text).unwrap())
        .collect();
    assert_eq!(compactions.len(), 2);
    for c in &compactions {
        assert!(c.get("firstKeptEntryIndex").is_none(), "{c}");
        assert!(c.get("firstKeptEntryId").is_none(), "{c}");
    }
    compare_with_pi("edge-v1-bad-index", &read);
}

#[test]
fn v2_file_is_migrated_like_pi_cli() {
    let bytes = jsonl("edge-v2");
    let original = text_lines(&bytes);
    let read = strict(&bytes);
    assert_eq!(read.header.source_version, 2);
    assert_eq!(
        read.header.raw,
        original[0].replace(r#""version":2"#, r#""version":3"#),
        "version is replaced in place"
    );
    let exp = expected("edge-v2");
    let want_ids: Vec<String> = exp["sessionManager"]["entryIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(read.ids(), want_ids, "v2 ids are kept");

    let mut hook = 0;
    for (i, line) in read.lines.iter().enumerate() {
        let before = &original[i + 1];
        if before.contains(r#""role":"hookMessage""#) {
            hook += 1;
            assert_eq!(
                line.text,
                before.replace(r#""role":"hookMessage""#, r#""role":"custom""#),
                "the role is renamed in place"
            );
            assert_eq!(line.envelope.kind, EntryKind::Message(Role::Custom));
        } else {
            assert_eq!(&line.text, before, "other lines are unchanged");
        }
    }
    assert_eq!(hook, 1);
    compare_with_pi("edge-v2", &read);
}

#[test]
fn v1_ids_are_drawn_again_on_collision() {
    let text = concat!(
        r#"{"type":"session","id":"s"}"#,
        "\n",
        r#"{"type":"message","timestamp":"t","message":{"role":"user"}}"#,
        "\n",
        r#"{"type":"message","timestamp":"t","message":{"role":"user"}}"#,
        "\n",
        r#"{"type":"message","timestamp":"t","message":{"role":"user"}}"#,
        "\n",
    );
    let mut draws = vec!["a", "a", "a", "b", "a", "b", "c"].into_iter();
    let fresh = Box::new(move || draws.next().unwrap_or("z").to_owned());
    let read = read_all_with(text.as_bytes(), Strictness::Strict, fresh).unwrap();
    assert_eq!(read.ids(), ["a", "b", "c"]);
}

#[test]
fn v1_first_kept_index_rules() {
    let h = r#"{"type":"session","id":"s","timestamp":"t"}"#;
    let msg = r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"x"}}"#;
    let comp = |index: &str| {
        format!(
            r#"{{"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":{index},"tokensBefore":1}}"#
        )
    };
    // index → the firstKeptEntryId grove must write (entries get ids m1, m2, …).
    let cases: &[(&str, Option<&str>)] = &[
        ("1", Some("m1")),
        ("2", Some("m2")),
        ("2.0", Some("m2")),
        ("0", None),   // the header
        ("1.5", None), // no such element
        ("-1", None),
        ("4", None), // later in the file: not assigned yet
        ("1e300", None),
    ];
    for (index, want) in cases {
        let text = [h, msg, msg, &comp(index), msg].join("\n") + "\n";
        let read = strict(text.as_bytes());
        let c: Value = serde_json::from_str(&read.lines[2].text).unwrap();
        assert!(c.get("firstKeptEntryIndex").is_none(), "{index}: {c}");
        assert_eq!(
            c.get("firstKeptEntryId").and_then(Value::as_str),
            *want,
            "index {index}"
        );
        assert_eq!(c["id"], "m3");
        assert_eq!(c["parentId"], "m2");
    }
    // A non-numeric index is not a v1 index: it is kept as is.
    let text = [h, msg, &comp("\"1\"")].join("\n") + "\n";
    let read = strict(text.as_bytes());
    let c: Value = serde_json::from_str(&read.lines[1].text).unwrap();
    assert_eq!(c["firstKeptEntryIndex"], "1");
    assert!(c.get("firstKeptEntryId").is_none());
}

#[test]
fn v1_compaction_pointing_at_itself_gets_its_own_id() {
    // pi assigns the entry's id before it resolves firstKeptEntryIndex, so an index that
    // names the compaction itself resolves to the compaction's new id.
    let text = [
        r#"{"type":"session","id":"s","timestamp":"t"}"#,
        r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"x"}}"#,
        r#"{"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":2,"tokensBefore":1}"#,
    ]
    .join("\n")
        + "\n";
    let read = strict(text.as_bytes());
    let c: Value = serde_json::from_str(&read.lines[1].text).unwrap();
    assert_eq!(c["id"], "m2");
    assert_eq!(c["firstKeptEntryId"], "m2");
}

#[test]
fn v1_malformed_lines_do_not_count_as_indexes() {
    let text = [
        r#"{"type":"session","id":"s","timestamp":"t"}"#,
        r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"a"}}"#,
        r#"{"type":"message", torn"#,
        "",
        r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"b"}}"#,
        r#"{"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":2,"tokensBefore":1}"#,
    ]
    .join("\n")
        + "\n";
    let read = read_all(text.as_bytes(), Strictness::Lenient).unwrap();
    assert_eq!(read.ids(), ["m1", "m2", "m3"]);
    assert_eq!(read.lines[1].envelope.parent_id.as_deref(), Some("m1"));
    let c: Value = serde_json::from_str(&read.lines[2].text).unwrap();
    assert_eq!(
        c["firstKeptEntryId"], "m2",
        "index 2 is the second parsed entry"
    );
    assert!(read
        .diagnostics
        .iter()
        .any(|d| matches!(d, Diagnostic::Skipped { error, .. } if error.line == 3)));
    assert!(read
        .diagnostics
        .contains(&Diagnostic::BlankLine { line: 4 }));
    // Strictly, the malformed line fails the read.
    assert!(read_all(text.as_bytes(), Strictness::Strict).is_err());
}

#[test]
fn v1_existing_id_keys_are_replaced_in_place() {
    let text = [
        r#"{"type":"session","version":1,"id":"s","timestamp":"t"}"#,
        r#"{"id":"old","type":"message","parentId":"x","timestamp":"t","message":{"role":"hookMessage","content":"c"}}"#,
    ]
    .join("\n")
        + "\n";
    let read = strict(text.as_bytes());
    assert_eq!(
        read.header.raw,
        r#"{"type":"session","version":3,"id":"s","timestamp":"t"}"#
    );
    assert_eq!(
        read.lines[0].text,
        r#"{"id":"m1","type":"message","parentId":null,"timestamp":"t","message":{"role":"custom","content":"c"}}"#
    );
}

#[test]
fn v1_lines_that_are_not_objects_are_invalid() {
    let text = "{\"type\":\"session\",\"id\":\"s\"}\n42\n";
    assert!(read_all(text.as_bytes(), Strictness::Strict).is_err());
    let read = read_all(text.as_bytes(), Strictness::Lenient).unwrap();
    assert!(read.lines.is_empty());
    assert!(matches!(
        read.diagnostics.as_slice(),
        [Diagnostic::Skipped { error, .. }] if error.line == 2
    ));
}

#[test]
fn migrated_lines_still_get_strict_validation() {
    // Migration adds id and parentId, but a missing timestamp is still an invalid entry.
    let text = "{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\"}\n";
    match read_all(text.as_bytes(), Strictness::Strict) {
        Err(grove_codec::CodecError::InvalidEntry(e)) => {
            assert_eq!(e.line, 2);
            assert!(e.reason.contains("missing timestamp"), "{}", e.reason);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn migrator_used_directly() {
    let mut m = Migrator::new(2);
    assert_eq!(
        m.header(r#"{"type":"session","id":"s"}"#).as_deref(),
        Some(r#"{"type":"session","id":"s","version":3}"#)
    );
    assert_eq!(m.header("[]"), None);
    let mut never = || -> String { panic!("v2 draws no ids") };
    let line = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"content":"c","role":"hookMessage","x":1}}"#;
    assert_eq!(
        m.entry(line, &mut never).as_deref(),
        Some(
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"content":"c","role":"custom","x":1}}"#
        )
    );
    // hookMessage outside a message entry, or not as the role, is left alone.
    for untouched in [
        r#"{"type":"custom_message","id":"a","parentId":null,"timestamp":"t","message":{"role":"hookMessage"}}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"content":"hookMessage"}}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t"}"#,
    ] {
        assert_eq!(m.entry(untouched, &mut never).as_deref(), Some(untouched));
    }
}

#[test]
fn set_keys_replaces_in_place_appends_and_removes() {
    assert_eq!(
        set_keys(
            r#"{"a":1,"b":2,"c":3}"#,
            &[("b", "\"x\"".to_owned()), ("d", "null".to_owned())],
            &["c"]
        )
        .as_deref(),
        Some(r#"{"a":1,"b":"x","d":null}"#)
    );
    assert_eq!(
        set_keys(r#" { "a" : [1, 2] } "#, &[], &[]).as_deref(),
        Some(r#"{"a":[1, 2]}"#),
        "values are kept verbatim"
    );
    assert_eq!(
        set_keys(r#"{"\u0061":1,"q\"":2}"#, &[], &[]).as_deref(),
        Some(r#"{"a":1,"q\"":2}"#)
    );
    assert_eq!(
        set_keys(r#"{"a":1,"a":2}"#, &[], &[]).as_deref(),
        Some(r#"{"a":2}"#),
        "like JSON.parse: the last duplicate wins, at the first position"
    );
    assert_eq!(set_keys("[1]", &[], &[]), None);
    assert_eq!(set_keys("{", &[], &[]), None);
    assert_eq!(write_object(&[]), "{}");
    assert_eq!(
        write_object(&[("k\n".to_owned(), "1".to_owned())]),
        r#"{"k\n":1}"#
    );
}
