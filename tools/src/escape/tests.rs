//! The escaping of control characters, as a function and as a writer fed in pieces.
#![allow(clippy::unwrap_used)]

use std::io::Write;

use super::{escape_controls, EscapeArg, Escaping};

const EVIL: &str = "red\u{1b}[31m bell\u{7} cr\r nul\0 del\u{7f} csi\u{9b}2J é€😀\ttab\nline";
/// `EVIL` escaped: the controls written as `escape_debug` writes them, TAB and LF kept.
fn expected() -> String {
    let escaped = r"red\u{1b}[31m bell\u{7} cr\r nul\0 del\u{7f} csi\u{9b}2J é€😀";
    format!("{escaped}\ttab\nline")
}

#[test]
fn the_function_escapes_controls_and_keeps_the_rest() {
    assert_eq!(escape_controls(EVIL), expected());
    assert!(matches!(
        escape_controls("plain é€ text\twith\nlines"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn the_writer_escapes_the_same_whatever_the_pieces() {
    let bytes = EVIL.as_bytes();
    // Every split point, a C1 character's two bytes split between writes included.
    for cut in 0..=bytes.len() {
        let mut out = Vec::new();
        {
            let mut w = Escaping::new(&mut out);
            w.write_all(&bytes[..cut]).unwrap();
            w.write_all(&bytes[cut..]).unwrap();
            w.flush().unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), expected(), "cut at {cut}");
    }
    // One byte at a time.
    let mut out = Vec::new();
    {
        let mut w = Escaping::new(&mut out);
        for b in bytes {
            w.write_all(std::slice::from_ref(b)).unwrap();
        }
    }
    assert_eq!(String::from_utf8(out).unwrap(), expected());
}

#[test]
fn output_without_controls_passes_unchanged() {
    let text =
        "◆ 5700 user: user 1\n│ ○ 73e6 assistant: [call read] é ¢ (U+00A2 starts with 0xC2)\n";
    let mut out = Vec::new();
    Escaping::new(&mut out).write_all(text.as_bytes()).unwrap();
    assert_eq!(out, text.as_bytes());
}

#[test]
fn the_setting() {
    assert!(EscapeArg::Auto.enabled(true));
    assert!(!EscapeArg::Auto.enabled(false));
    assert!(EscapeArg::Always.enabled(false));
    assert!(!EscapeArg::Never.enabled(true));
}

/// Bidirectional controls, each in its own place, and characters next to them that are kept
/// (U+2060, U+2070, U+061B share their lead bytes).
const BIDI: &str = "a\u{202a}b\u{202b}c\u{202c}d\u{202d}e\u{202e}f\u{2066}g\u{2067}h\u{2068}i\
                    \u{2069}j\u{200e}k\u{200f}l\u{61c}m \u{2060}\u{2070}\u{61b}—€";

fn bidi_expected() -> &'static str {
    concat!(
        r"a\u{202a}b\u{202b}c\u{202c}d\u{202d}e\u{202e}f\u{2066}g\u{2067}h\u{2068}i",
        r"\u{2069}j\u{200e}k\u{200f}l\u{61c}m ",
        "\u{2060}\u{2070}\u{61b}—€"
    )
}

#[test]
fn bidirectional_controls_are_escaped_by_the_function_and_the_writer() {
    assert_eq!(escape_controls(BIDI), bidi_expected());
    let bytes = BIDI.as_bytes();
    // Every pair of split points: a three-byte control split in three writes included.
    for first in 0..=bytes.len() {
        for second in first..=bytes.len() {
            let mut out = Vec::new();
            {
                let mut w = Escaping::new(&mut out);
                w.write_all(&bytes[..first]).unwrap();
                w.write_all(&bytes[first..second]).unwrap();
                w.write_all(&bytes[second..]).unwrap();
            }
            assert_eq!(
                String::from_utf8(out).unwrap(),
                bidi_expected(),
                "cut at {first} and {second}"
            );
        }
    }
}
