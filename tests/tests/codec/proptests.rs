//! Property tests: the reader never panics, whatever it is fed; the JS string codec round
//! trips; timestamps round trip.

use grove_codec::jsstr::{decode_literal, JsString};
use grove_codec::reader::{Diagnostic, Strictness};
use grove_codec::time::{format_ms, parse_ms};
use grove_codec::Envelope;
use proptest::prelude::*;

use super::support::{physical_lines, read_all, HEADER};

/// JSON-ish fragments that reach deep into the reader's paths.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("null".to_owned()),
        Just("\"type\":".to_owned()),
        Just("\"session\"".to_owned()),
        Just("\"message\"".to_owned()),
        Just("\"leaf\"".to_owned()),
        Just("\"compaction\"".to_owned()),
        Just("\"id\":".to_owned()),
        Just("\"parentId\":".to_owned()),
        Just("\"timestamp\":".to_owned()),
        Just("\"targetId\":".to_owned()),
        Just("\"version\":".to_owned()),
        Just("\"kind\":\"header\"".to_owned()),
        Just("\"message\":{\"role\":\"hookMessage\"}".to_owned()),
        Just("\"firstKeptEntryIndex\":".to_owned()),
        Just("\\ud83d".to_owned()),
        Just("\u{2028}".to_owned()),
        Just("\r".to_owned()),
        Just("\n".to_owned()),
        Just("\u{feff}".to_owned()),
        Just(" ".to_owned()),
        (0u64..1000).prop_map(|n| n.to_string()),
        "[a-z0-9é😀]{0,6}".prop_map(|s| format!("\"{s}\"")),
    ]
}

fn jsonish_line() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..24).prop_map(|parts| parts.concat())
}

/// A plausible entry line with random choices of each common field.
fn entry_line() -> impl Strategy<Value = String> {
    let opt = |s: &'static [&'static str]| prop::sample::select(s.to_vec());
    (
        opt(&[
            "\"message\"",
            "\"leaf\"",
            "\"label\"",
            "\"session\"",
            "1",
            "\"x\"",
        ]),
        opt(&["\"a\"", "\"\"", "null", "7", "\"\\u0061\"", "\"\\ud800\""]),
        opt(&["null", "\"a\"", "\"\"", "[]", "false"]),
        opt(&["\"2030-01-01T00:00:00.000Z\"", "\"\"", "0", "null"]),
        opt(&[
            "",
            ",\"targetId\":null",
            ",\"targetId\":\"a\"",
            ",\"targetId\":{}",
        ]),
        opt(&[
            "",
            ",\"message\":{\"role\":\"user\"}",
            ",\"message\":[]",
            ",\"message\":{\"role\":1}",
        ]),
        any::<bool>(),
    )
        .prop_map(|(ty, id, parent, ts, target, message, drop_parent)| {
            let parent = if drop_parent {
                String::new()
            } else {
                format!(",\"parentId\":{parent}")
            };
            format!("{{\"type\":{ty},\"id\":{id}{parent},\"timestamp\":{ts}{target}{message}}}")
        })
}

fn header_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(HEADER.to_owned()),
        Just(r#"{"type":"session","id":"s"}"#.to_owned()),
        Just(r#"{"type":"session","version":2,"id":"s"}"#.to_owned()),
        jsonish_line(),
    ]
}

fn exercise(bytes: &[u8]) {
    for strictness in [Strictness::Strict, Strictness::Lenient] {
        if let Ok(read) = read_all(bytes, strictness) {
            // Whatever was accepted is valid and re-parses to the same envelope.
            for line in &read.lines {
                assert_eq!(Envelope::parse(&line.text).as_ref(), Ok(&line.envelope));
                assert!(!line.envelope.id.is_empty());
                assert!(line.line >= 2);
                assert!((line.byte_offset as usize) < bytes.len());
            }
            // Every physical line is the header, a line, or reported: nothing is dropped
            // silently.
            let reported = read
                .diagnostics
                .iter()
                .filter(|d| {
                    matches!(
                        d,
                        Diagnostic::BlankLine { .. }
                            | Diagnostic::Skipped { .. }
                            | Diagnostic::TornTail { .. }
                    )
                })
                .count();
            assert_eq!(physical_lines(bytes).len(), 1 + read.lines.len() + reported);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn reader_never_panics_on_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        exercise(&bytes);
        let mut with_header = HEADER.as_bytes().to_vec();
        with_header.push(b'\n');
        with_header.extend_from_slice(&bytes);
        exercise(&with_header);
    }

    #[test]
    fn reader_never_panics_on_jsonish_lines(
        header in header_line(),
        lines in prop::collection::vec(prop_oneof![jsonish_line(), entry_line()], 0..12),
        final_lf in any::<bool>(),
    ) {
        let mut text = header;
        for l in &lines {
            text.push('\n');
            text.push_str(l);
        }
        if final_lf {
            text.push('\n');
        }
        exercise(text.as_bytes());
    }

    #[test]
    fn to_json_round_trips_any_code_units(units in prop::collection::vec(any::<u16>(), 0..64)) {
        let s = JsString(units);
        let lit = s.to_json();
        prop_assert_eq!(decode_literal(&lit), Some(s.clone()));
        // And the literal is JSON a strict parser accepts whenever the text is valid UTF-16.
        if let Some(text) = s.to_rust() {
            let back: String = serde_json::from_str(&lit).unwrap();
            prop_assert_eq!(back, text);
        }
    }

    #[test]
    fn parse_ms_never_panics(s in "\\PC{0,40}") {
        let _ = parse_ms(&s);
    }

    #[test]
    fn parse_ms_never_panics_near_the_format(
        prefix in prop::sample::select(vec!["2030-01-21T00:00:00", "2030-01-21T00:00:00.000", "2000-02-29T23:59:59"]),
        suffix in "[+\\-:.Z0-9é😀]{0,8}",
    ) {
        let _ = parse_ms(&format!("{prefix}{suffix}"));
    }

    #[test]
    fn timestamps_round_trip(ms in -62_167_219_200_000i64..=253_402_300_799_999) {
        let text = format_ms(ms);
        prop_assert_eq!(parse_ms(&text), Some(ms));
    }
}
