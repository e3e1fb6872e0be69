//! Whole JSON answers as the text a JavaScript engine takes in cheapest, for the native Node
//! package (`tools/clients/typescript/native`). V8 keeps a string of only Latin-1 characters
//! one byte per character and makes it from bytes with a copy; a string with any other
//! character it decodes from UTF-8 into two bytes per character (twice the memory, and the
//! decoding was a third of a 1,000-entry branch read in node). Characters past ASCII occur in
//! JSON text only inside strings, where `\uXXXX` escapes say the same, so [`ascii_json`]
//! writes them so and the answer crosses as one-byte text; `JSON.parse` gives back the very
//! same values. A JSON-lines answer is made one JSON array on the way, so that JS parses it
//! with one `JSON.parse` instead of one per line.
//!
//! It owns that rewriting and calls nothing.

/// `text`, JSON (or JSON lines, when `lines`), as JSON text of ASCII only: each character
/// past ASCII written as its `\uXXXX` escape (a pair of them past the Basic Multilingual
/// Plane; bytes that are not UTF-8 as U+FFFD, as a lossy decoding would); JSON lines as one
/// array of their values, blank lines skipped. Text that is not JSON is rewritten alike,
/// never refused: the reader's parse refuses it as it would the original. One pass, eight
/// bytes at a time between the characters it rewrites. The bytes returned are all ASCII (so
/// also Latin-1 and UTF-8 text), and are not checked again on the way out.
pub fn ascii_json(text: Vec<u8>, lines: bool) -> Vec<u8> {
    if !lines && text.is_ascii() {
        return text;
    }
    let mut out = Vec::with_capacity(text.len() + text.len() / 8 + 2);
    let mut rest = text.as_slice();
    if lines {
        out.push(b'[');
        let mut first = true;
        while !rest.is_empty() {
            // A line: its leading blanks skipped; a blank line skipped whole.
            let blanks = rest
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\r'))
                .unwrap_or(rest.len());
            rest = &rest[blanks..];
            match rest.first() {
                None => break,
                Some(b'\n') => {
                    rest = &rest[1..];
                    continue;
                }
                Some(_) => {}
            }
            if !first {
                out.push(b',');
            }
            first = false;
            rest = escape_line(rest, true, &mut out);
        }
        out.push(b']');
    } else {
        escape_line(rest, false, &mut out);
    }
    out
}

/// Appends `text` to `out` with every character past ASCII escaped, up to the end or (with
/// `lines`) the end of the line; what follows that line.
fn escape_line<'a>(mut text: &'a [u8], lines: bool, out: &mut Vec<u8>) -> &'a [u8] {
    loop {
        let at = plain_run(text, lines);
        out.extend_from_slice(&text[..at]);
        text = &text[at..];
        let Some(&lead) = text.first() else {
            return text;
        };
        if lead == b'\n' {
            return &text[1..];
        }
        let width = match lead {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        let decoded = text
            .get(..width)
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
            .and_then(|s| s.chars().next());
        let (c, used) = match decoded {
            Some(c) => (c, width),
            None => (char::REPLACEMENT_CHARACTER, 1),
        };
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            push_escape(*unit, out);
        }
        text = &text[used..];
    }
}

/// How many bytes from the start of `text` are ASCII (and, with `lines`, not a newline).
fn plain_run(text: &[u8], lines: bool) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    const NEWLINES: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut at = 0;
    for chunk in text.chunks_exact(8) {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or([0x80; 8]));
        let newline = match lines {
            true => {
                let x = word ^ NEWLINES;
                x.wrapping_sub(ONES) & !x & HIGH
            }
            false => 0,
        };
        if word & HIGH != 0 || newline != 0 {
            break;
        }
        at += 8;
    }
    at + text[at..]
        .iter()
        .position(|&b| !b.is_ascii() || (lines && b == b'\n'))
        .unwrap_or(text.len() - at)
}

fn push_escape(unit: u16, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[usize::from((unit >> shift) & 0xf)]);
    }
}

#[cfg(test)]
mod tests {
    use super::ascii_json;
    use proptest::prelude::*;
    use serde_json::Value;

    /// [`ascii_json`] as a string (all of its bytes ASCII, else empty).
    fn to_ascii(text: Vec<u8>, lines: bool) -> String {
        let bytes = ascii_json(text, lines);
        assert!(bytes.is_ascii());
        String::from_utf8(bytes).unwrap_or_default()
    }

    #[test]
    fn characters_past_ascii_are_escaped_and_lines_become_an_array() {
        let text = r#"{"a":"é😀\n","b":["ü"]}"#.to_owned();
        let ascii = to_ascii(text.clone().into_bytes(), false);
        assert_eq!(ascii, r#"{"a":"\u00e9\ud83d\ude00\n","b":["\u00fc"]}"#);
        let same: Value = serde_json::from_str(&ascii).unwrap_or_default();
        assert_eq!(
            same,
            serde_json::from_str::<Value>(&text).unwrap_or_default()
        );
        assert_eq!(to_ascii(b"{\"x\":1}".to_vec(), false), "{\"x\":1}");
        assert_eq!(
            to_ascii("1\n\n \n\"ß\"\n".as_bytes().to_vec(), true),
            "[1,\"\\u00df\"]"
        );
        assert_eq!(to_ascii(b"\"a\xffb\"".to_vec(), false), "\"a\\ufffdb\"");
        assert_eq!(to_ascii(b"  1  \r\n\t2".to_vec(), true), "[1  \r,2]");
        assert_eq!(to_ascii(Vec::new(), true), "[]");
    }

    proptest! {
        /// Any JSON values, as JSON lines with blank lines among them: the array of ASCII text
        /// reads back as the same values.
        #[test]
        fn the_values_read_back_the_same(
            strings in proptest::collection::vec(any::<String>(), 0..8),
            blank in proptest::collection::vec(any::<bool>(), 0..8),
        ) {
            let values: Vec<Value> = strings
                .iter()
                .map(|s| serde_json::json!({ "s": s, "k": [s] }))
                .collect();
            let mut text = String::new();
            for (i, v) in values.iter().enumerate() {
                text.push_str(&v.to_string());
                text.push('\n');
                if blank.get(i).copied().unwrap_or(false) {
                    text.push_str(" \n");
                }
            }
            let ascii = to_ascii(text.into_bytes(), true);
            prop_assert!(ascii.is_ascii());
            let back: Vec<Value> = serde_json::from_str(&ascii).unwrap_or_default();
            prop_assert_eq!(&back, &values);
            for v in &values {
                let one = to_ascii(v.to_string().into_bytes(), false);
                prop_assert!(one.is_ascii());
                prop_assert_eq!(&serde_json::from_str::<Value>(&one).ok(), &Some(v.clone()));
            }
        }
    }
}
