//! `grove_codec::jsstr`: JSON string literals as JavaScript (UTF-16) strings.

use grove_codec::jsstr::{decode_literal, decode_lossy, decode_lossy_cow, quote, truthy, JsString};
use proptest::prelude::*;
use serde_json::value::RawValue;
use std::borrow::Cow;

fn units(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

#[test]
fn decode_literal_handles_every_json_escape() {
    let cases: &[(&str, &str)] = &[
        (r#""""#, ""),
        (r#""plain""#, "plain"),
        (r#""\u0061""#, "a"),
        (r#""\u00e9\u00E9""#, "éé"),
        (r#""\"\\\/""#, "\"\\/"),
        (r#""\b\f\n\r\t""#, "\u{8}\u{c}\n\r\t"),
        (r#""\ud83d\ude00""#, "😀"),
        (r#""raw 😀 and 你好""#, "raw 😀 and 你好"),
        ("\"line\u{2028}sep\u{2029}\"", "line\u{2028}sep\u{2029}"),
    ];
    for (lit, want) in cases {
        let got = decode_literal(lit).unwrap_or_else(|| panic!("{lit} did not decode"));
        assert_eq!(got.0, units(want), "decoding {lit}");
        assert_eq!(got.to_rust().as_deref(), Some(*want));
    }
}

#[test]
fn escaped_and_plain_ids_compare_equal() {
    // Spec §2.6: ids are compared as decoded strings, "\u0061" == "a".
    assert_eq!(decode_literal(r#""\u0061bc""#), decode_literal(r#""abc""#));
    assert_eq!(decode_lossy(&raw(r#""\u0061bc""#)).as_deref(), Some("abc"));
}

#[test]
fn decode_literal_keeps_lone_surrogates_as_units() {
    let hi = decode_literal(r#""x\ud83dy""#).unwrap();
    assert_eq!(hi.0, vec![0x78, 0xD83D, 0x79]);
    assert_eq!(hi.to_rust(), None, "a lone surrogate is not Rust text");
    assert_eq!(hi.to_lossy(), "x\u{FFFD}y");

    let lo = decode_literal(r#""\udca9""#).unwrap();
    assert_eq!(lo.0, vec![0xDCA9]);

    // Reversed pair: two lone surrogates, not an emoji.
    let rev = decode_literal(r#""\ude00\ud83d""#).unwrap();
    assert_eq!(rev.0, vec![0xDE00, 0xD83D]);
    assert_eq!(rev.len(), 2);
}

#[test]
fn decode_literal_rejects_malformed_literals() {
    for bad in [
        "",
        "\"",
        "abc",
        "\"abc",
        "abc\"",
        r#""\x""#,
        r#""\u12""#,
        r#""\u12g4""#,
        r#""\""#,
        r#""trailing\""#,
        r#""\U0061""#,
    ] {
        assert_eq!(decode_literal(bad), None, "{bad:?} must not decode");
    }
}

#[test]
fn decode_lossy_replaces_lone_surrogates_and_refuses_non_strings() {
    assert_eq!(
        decode_lossy(&raw(r#""a\ud83d""#)).as_deref(),
        Some("a\u{FFFD}")
    );
    assert_eq!(decode_lossy(&raw("42")), None);
    assert_eq!(decode_lossy(&raw("null")), None);
    assert_eq!(
        JsString::from_raw(&raw(r#""\ud83d\ude00""#)).map(|s| s.len()),
        Some(2)
    );
    assert_eq!(JsString::from_raw(&raw("[]")), None);
}

#[test]
fn to_json_follows_json_stringify() {
    let cases: &[(&str, &str)] = &[
        ("", r#""""#),
        ("abc", r#""abc""#),
        ("\"\\", r#""\"\\""#),
        ("\u{8}\u{c}\n\r\t", r#""\b\f\n\r\t""#),
        ("\u{0}\u{1}\u{1f}", r#""\u0000\u0001\u001f""#),
        ("\u{1b}[0m", r#""\u001b[0m""#),
        ("\u{b}", r#""\u000b""#),
        // Not escaped by JSON.stringify:
        ("/", r#""/""#),
        ("\u{7f}", "\"\u{7f}\""),
        ("\u{2028}\u{2029}", "\"\u{2028}\u{2029}\""),
        ("é😀你", "\"é😀你\""),
        (" ", r#"" ""#),
    ];
    for (text, want) in cases {
        assert_eq!(
            JsString::from_text(text).to_json(),
            *want,
            "to_json({text:?})"
        );
        assert_eq!(quote(text), *want, "quote({text:?})");
    }
}

#[test]
fn to_json_writes_lone_surrogates_as_lowercase_escapes() {
    let s = JsString(vec![0x61, 0xD83D, 0x62, 0xDCA9, 0xDBFF]);
    assert_eq!(s.to_json(), r#""a\ud83db\udca9\udbff""#);
    // A valid pair is written as the character itself.
    let pair = JsString(vec![0xD83D, 0xDE00]);
    assert_eq!(pair.to_json(), "\"😀\"");
}

#[test]
fn to_json_round_trips_through_decode_literal() {
    let samples: Vec<JsString> = vec![
        JsString::from_text("plain"),
        JsString::from_text("ctl \u{0}\u{1}\u{1f}\u{7f} \"q\" \\ / \u{2028}"),
        JsString(vec![0xD83D]),
        JsString(vec![0xDC00, 0x41, 0xD800, 0xDFFF]),
        JsString((0u16..0x80).collect()),
    ];
    for s in samples {
        let lit = s.to_json();
        assert_eq!(decode_literal(&lit), Some(s.clone()), "{lit}");
    }
    // Every single code unit, surrogates included.
    for u in 0..=u16::MAX {
        let s = JsString(vec![u]);
        assert_eq!(decode_literal(&s.to_json()), Some(s), "unit {u:#06x}");
    }
}

#[test]
fn to_json_output_is_valid_json_for_rust_text() {
    for text in ["a\u{0}b", "tab\tq\"", "\u{2028}", "😀", "\\u0061"] {
        let lit = quote(text);
        let back: String = serde_json::from_str(&lit).unwrap();
        assert_eq!(back, text);
    }
}

#[test]
fn trim_removes_javascript_whitespace() {
    let ws = [
        '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{a0}', '\u{1680}', '\u{2000}', '\u{200a}',
        '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}', '\u{feff}',
    ];
    for c in ws {
        let s = JsString::from_text(&format!("{c}{c}x y{c}"));
        assert_eq!(s.trim(), JsString::from_text("x y"), "U+{:04X}", c as u32);
        let only = JsString::from_text(&format!("{c}{c}"));
        assert!(only.trim().is_empty(), "U+{:04X} alone", c as u32);
    }
}

#[test]
fn trim_keeps_characters_javascript_does_not_trim() {
    // U+0085 (NEL), U+200B (zero width space) and U+180E are not WhiteSpace in ES2016+.
    for c in ['\u{85}', '\u{200b}', '\u{180e}'] {
        let s = JsString::from_text(&format!("{c}x{c}"));
        assert_eq!(s.trim(), s, "U+{:04X} must survive", c as u32);
    }
    assert_eq!(JsString::default().trim(), JsString::default());
    assert_eq!(
        JsString(vec![0x20, 0xD83D, 0x20]).trim(),
        JsString(vec![0xD83D])
    );
}

#[test]
fn len_counts_utf16_code_units() {
    assert_eq!(JsString::from_text("").len(), 0);
    assert!(JsString::from_text("").is_empty());
    assert_eq!(JsString::from_text("abc").len(), 3);
    assert_eq!(JsString::from_text("é").len(), 1);
    assert_eq!(JsString::from_text("😀").len(), 2);
    assert_eq!(JsString::from_text("👨‍👩‍👧").len(), 8);
    assert_eq!(JsString::from_text("𠮷").len(), 2);
    assert!(!JsString::from_text("x").is_empty());
}

#[test]
fn ordering_is_by_code_units_like_javascript() {
    // JS compares UTF-16 units: U+FF61 sorts after U+1F600 (whose first unit is 0xD83D).
    let emoji = JsString::from_text("😀");
    let halfwidth = JsString::from_text("\u{ff61}");
    assert!(emoji < halfwidth);
    assert!(JsString::from_text("a") < JsString::from_text("ab"));
    assert!(JsString::from_text("B") < JsString::from_text("a"));
}

#[test]
fn truthy_follows_javascript() {
    let falsy = ["null", "false", r#""""#, "0", "-0", "0.0", "0e10", " 0 "];
    let truthy_values = [
        "true",
        r#""0""#,
        r#"" ""#,
        r#""false""#,
        "1",
        "-1",
        "0.5",
        "1e999",
        "[]",
        "{}",
        r#"{"a":1}"#,
        r#""\u0000""#,
    ];
    for t in falsy {
        assert!(!truthy(&raw(t.trim())), "{t} must be falsy");
    }
    for t in truthy_values {
        assert!(truthy(&raw(t)), "{t} must be truthy");
    }
}

proptest! {
    /// The borrowed fast path of `decode_lossy_cow` (a literal without escapes) decodes as the
    /// UTF-16 path does, and is taken exactly when the literal has no backslash.
    #[test]
    fn decode_lossy_cow_agrees_with_the_utf16_decoding(
        text in "[a-z\\\\\"\u{0}-\u{1f}é😀\u{2028}]{0,12}",
        escape_all in any::<bool>(),
    ) {
        // Both serde_json's quoting (escapes only what it must) and a literal with every
        // character escaped as \uXXXX.
        let literal = if escape_all {
            let mut l = String::from("\"");
            for u in text.encode_utf16() {
                l.push_str(&format!("\\u{u:04x}"));
            }
            l.push('"');
            l
        } else {
            serde_json::to_string(&text).unwrap()
        };
        let value = raw(&literal);
        let slow = decode_literal(&literal).and_then(|s| s.to_rust());
        let got = decode_lossy_cow(&value);
        prop_assert_eq!(got.as_deref(), slow.as_deref());
        prop_assert_eq!(got.as_deref(), Some(text.as_str()));
        prop_assert_eq!(
            matches!(got, Some(Cow::Borrowed(_))),
            !literal.contains('\\'),
            "borrowed exactly when {} has no escape", literal
        );
        prop_assert_eq!(decode_lossy(&value), slow);
    }
}

#[test]
fn decode_lossy_cow_refuses_what_decode_lossy_refuses() {
    for text in ["42", "null", "{}", "[\"a\"]", "true"] {
        assert_eq!(decode_lossy_cow(&raw(text)), None, "{text}");
    }
}
