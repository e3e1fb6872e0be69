//! `view::message_span`: the byte range of a message line's `message` value, recorded in the
//! node so that a context build slices it out — it must name exactly what `Fields::parse`
//! finds.

use grove_codec::fields::{message_at, message_span, Fields};

#[test]
fn the_span_names_the_message_value_fields_parse_finds() {
    let lines = [
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}"#,
        // Multi-byte characters and escapes before the message: offsets are bytes.
        r#"{"type":"message","id":"ü€😀","parentId":"\u00e9\"x","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"ß"}]}}"#,
        // Whitespace and a message that is not the last field.
        "{\"type\":\"message\", \"message\" :  {\"role\":\"user\",\"content\":\"a\"} , \"id\":\"b\"}",
        // A message that is not an object.
        r#"{"type":"message","id":"c","message":"just text"}"#,
    ];
    for line in lines {
        let span = message_span(line).unwrap();
        let expected = Fields::parse(line).unwrap().message.unwrap().get();
        assert_eq!(message_at(line, span), Some(expected), "{line}");
    }
}

#[test]
fn null_or_missing_content_is_flagged() {
    let flag = |line: &str| message_span(line).unwrap().null_content;
    assert!(!flag(r#"{"message":{"role":"user","content":"x"}}"#));
    assert!(!flag(r#"{"message":{"role":"user","content":[]}}"#));
    assert!(flag(r#"{"message":{"role":"user","content":null}}"#));
    assert!(flag(r#"{"message":{"role":"user"}}"#));
    assert!(flag(r#"{"message":"not an object"}"#));
}

#[test]
fn lines_without_a_usable_message_have_no_span() {
    assert_eq!(message_span(r#"{"type":"message","id":"a"}"#), None);
    assert_eq!(message_span("not json"), None);
    // Duplicate keys make Fields::parse refuse the line, so there is no span either and a
    // context build takes the parsing path (and reports the same error as before).
    let dup =
        r#"{"message":{"role":"user","content":"a"},"message":{"role":"user","content":"b"}}"#;
    assert_eq!(Fields::parse(dup).is_none(), message_span(dup).is_none());
}

#[test]
fn a_span_outside_the_line_yields_nothing() {
    let line = r#"{"message":{"role":"user","content":"x"}}"#;
    let mut span = message_span(line).unwrap();
    span.len = 10_000;
    assert_eq!(message_at(line, span), None);
    span.start = u32::MAX;
    span.len = u32::MAX;
    assert_eq!(message_at(line, span), None);
}
