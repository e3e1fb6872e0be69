//! `grove_codec::Header`: the session header rules of spec §2.2.

use grove_codec::Header;

const V3: &str = r#"{"type":"session","version":3,"id":"s-1","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/home/dev"}"#;

fn err(text: &str) -> String {
    match Header::parse(text) {
        Ok(h) => panic!("{text} parsed as {h:?}"),
        Err(reason) => reason,
    }
}

#[test]
fn valid_v3_header() {
    let h = Header::parse(V3).unwrap();
    assert_eq!(h.raw, V3);
    assert_eq!(h.source_version, 3);
    assert_eq!(h.id, "s-1");
    assert_eq!(h.timestamp, "2030-01-01T00:00:00.000Z");
    assert_eq!(h.cwd, "/home/dev");
    assert_eq!(h.parent_session, None);
    assert_eq!(h.metadata, None);
}

#[test]
fn optional_fields_and_unknown_keys_are_kept() {
    let text = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"C:\\dev","parentSession":"/p/a.jsonl","metadata":{"k":[1,2]},"future":{"x":1}}"#;
    let h = Header::parse(text).unwrap();
    assert_eq!(h.raw, text, "raw is the line byte for byte");
    assert_eq!(h.cwd, "C:\\dev");
    assert_eq!(h.parent_session.as_deref(), Some("/p/a.jsonl"));
    assert_eq!(h.metadata.as_deref(), Some(r#"{"k":[1,2]}"#));
}

#[test]
fn keys_in_any_order_and_escaped_values() {
    let text = r#"{"cwd":"/w","id":"\u0061b","timestamp":"t","version":3,"type":"session"}"#;
    let h = Header::parse(text).unwrap();
    assert_eq!(h.id, "ab");
    assert_eq!(h.raw, text);
}

#[test]
fn v3_requires_non_empty_id_timestamp_and_cwd() {
    let missing_ts = r#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#;
    assert_eq!(err(missing_ts), "session header is missing timestamp");
    let empty_ts = r#"{"type":"session","version":3,"id":"s","timestamp":"","cwd":"/w"}"#;
    assert_eq!(err(empty_ts), "session header is missing timestamp");
    let missing_cwd = r#"{"type":"session","version":3,"id":"s","timestamp":"t"}"#;
    assert_eq!(err(missing_cwd), "session header is missing cwd");
    let empty_cwd = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":""}"#;
    assert_eq!(err(empty_cwd), "session header is missing cwd");
    let empty_id = r#"{"type":"session","version":3,"id":"","timestamp":"t","cwd":"/w"}"#;
    assert_eq!(err(empty_id), "session header is missing id");
    // A header without a string id is no header at all.
    let missing_id = r#"{"type":"session","version":3,"timestamp":"t","cwd":"/w"}"#;
    assert_eq!(err(missing_id), "first line is not a valid session header");
    let numeric_id = r#"{"type":"session","version":3,"id":7,"timestamp":"t","cwd":"/w"}"#;
    assert_eq!(err(numeric_id), "first line is not a valid session header");
}

#[test]
fn legacy_headers_may_lack_cwd_and_timestamp() {
    let v1 = Header::parse(r#"{"type":"session","id":"old"}"#).unwrap();
    assert_eq!(v1.source_version, 1);
    assert_eq!(v1.cwd, "");
    assert_eq!(v1.timestamp, "");
    let v2 = Header::parse(r#"{"type":"session","version":2,"id":"old","timestamp":"t"}"#).unwrap();
    assert_eq!(v2.source_version, 2);
    assert_eq!(v2.cwd, "");
    let v1_explicit = Header::parse(r#"{"type":"session","version":1,"id":"old"}"#).unwrap();
    assert_eq!(v1_explicit.source_version, 1);
}

#[test]
fn parent_session_must_be_a_string() {
    for ps in ["null", "1", "{}", "[]", "true"] {
        let text = format!(
            r#"{{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w","parentSession":{ps}}}"#
        );
        assert_eq!(
            err(&text),
            "session header parentSession must be a string",
            "{ps}"
        );
    }
}

#[test]
fn metadata_must_be_an_object() {
    for md in ["null", "[]", "[{}]", "\"{}\"", "1", "false"] {
        let text = format!(
            r#"{{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w","metadata":{md}}}"#
        );
        assert_eq!(
            err(&text),
            "session header metadata must be an object",
            "{md}"
        );
    }
    let spaced =
        r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w","metadata": {}}"#;
    assert_eq!(
        Header::parse(spaced).unwrap().metadata.as_deref(),
        Some("{}")
    );
}

#[test]
fn pi_v4_header_is_unsupported() {
    let v4 = r#"{"kind":"header","version":4,"id":"s","createdAt":"2030-01-01T00:00:00.000Z"}"#;
    let reason = err(v4);
    assert!(reason.contains("unsupported session version"), "{reason}");
    assert!(reason.contains("pi ≥0.84"), "{reason}");
    // Even when it also says type:"session".
    let both =
        r#"{"type":"session","kind":"header","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#;
    assert!(err(both).contains("pi ≥0.84"));
}

#[test]
fn other_versions_are_unsupported() {
    for v in ["4", "0", "\"3\"", "3.5", "-3", "null", "[3]", "\"v3\""] {
        let text =
            format!(r#"{{"type":"session","version":{v},"id":"s","timestamp":"t","cwd":"/w"}}"#);
        assert_eq!(err(&text), "unsupported session version", "version {v}");
    }
}

#[test]
fn bom_and_non_headers_are_refused() {
    let bom = format!("\u{feff}{V3}");
    let reason = err(&bom);
    assert!(
        reason.starts_with("first line is not a valid session header"),
        "{reason}"
    );
    assert!(reason.contains("BOM"), "{reason}");
    for bad in [
        "",
        "   ",
        "{",
        "null",
        "[]",
        "\"session\"",
        r#"{"type":"message","id":"x","parentId":null,"timestamp":"t"}"#,
        r#"{"type":"Session","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#,
        r#"{"version":3,"id":"s","timestamp":"t","cwd":"/w"}"#,
        r#"{"type":1,"version":3,"id":"s","timestamp":"t","cwd":"/w"}"#,
    ] {
        assert_eq!(
            err(bad),
            "first line is not a valid session header",
            "{bad:?}"
        );
    }
}

#[test]
fn create_writes_keys_in_spec_order() {
    let h = Header::create("s-1", "2030-01-01T00:00:00.000Z", "/home/dev", None, None);
    assert_eq!(
        h.raw,
        r#"{"type":"session","version":3,"id":"s-1","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/home/dev"}"#
    );
    let full = Header::create(
        "s-2",
        "2030-01-01T00:00:00.000Z",
        "C:\\dev\\\"q\"",
        Some("/sessions/a.jsonl"),
        Some(r#"{"k":1}"#),
    );
    assert_eq!(
        full.raw,
        r#"{"type":"session","version":3,"id":"s-2","timestamp":"2030-01-01T00:00:00.000Z","cwd":"C:\\dev\\\"q\"","parentSession":"/sessions/a.jsonl","metadata":{"k":1}}"#
    );
    assert_eq!(full.source_version, 3);
    assert_eq!(full.parent_session.as_deref(), Some("/sessions/a.jsonl"));
    assert_eq!(full.metadata.as_deref(), Some(r#"{"k":1}"#));
    let meta_only = Header::create("s", "t", "/w", None, Some("{}"));
    assert_eq!(
        meta_only.raw,
        r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w","metadata":{}}"#
    );
}

#[test]
fn created_header_parses_back_to_itself() {
    let h = Header::create(
        "id\u{2028}x",
        "2030-01-01T00:00:00.000Z",
        "/tmp/ü\n",
        Some("p"),
        Some(r#"{"a":"b"}"#),
    );
    assert_eq!(Header::parse(&h.raw), Ok(h));
}
