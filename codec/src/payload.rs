//! Payload values as the store keeps them (docs/format.md, "Payloads"). A payload is a JSON
//! string value's raw bytes, quotes included ([`crate::splice`]); most large ones are base64
//! (images, files, serialized checkpoints) and cost a third more than the bytes they carry. A
//! payload that is canonical standard base64 (RFC 4648 §4, padded, as every common encoder
//! writes it) is stored as the bytes it decodes to behind the tag [`BASE64`], and encoded again
//! when it is read; any other is stored as it is, and starts with its quote. The hash that keys
//! a payload and the check of a joined line stay over the string as the line holds it, so how
//! a payload is stored changes neither.
//!
//! Pure: the engine's payload store calls [`stored_form`] when it writes a payload and
//! [`line_form`] when it joins one back.

use std::borrow::Cow;

use crate::error::CodecError;

/// The first byte of a payload stored decoded: its base64 text is given back by encoding the
/// bytes after it, between quotes.
pub const BASE64: u8 = 0x01;

/// The first byte of a payload stored as written (the string's opening quote).
pub const AS_WRITTEN: u8 = b'"';

/// How `payload` (a JSON string token, quotes included) is stored: its decoded bytes behind
/// [`BASE64`] when its text is canonical base64 (what [`line_form`] gives back is then exactly
/// `payload`), else `payload` itself.
pub fn stored_form(payload: &[u8]) -> Cow<'_, [u8]> {
    match decoded(payload) {
        Some(stored) => Cow::Owned(stored),
        None => Cow::Borrowed(payload),
    }
}

fn decoded(payload: &[u8]) -> Option<Vec<u8>> {
    let text = payload.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if text.is_empty() || text.len() % 4 != 0 {
        return None;
    }
    let mut stored = Vec::with_capacity(1 + text.len() / 4 * 3);
    stored.push(BASE64);
    base64_simd::STANDARD
        .decode_append(text, &mut stored)
        .ok()?;
    // The decoder refuses what is not base64; the text encoded again must also be the same
    // bytes (no stray bits in the last character), or the payload is kept as written.
    encodes_to(&stored[1..], text).then_some(stored)
}

/// Whether `bytes` encode to exactly `text`, compared a piece at a time (no second copy of a
/// large payload).
fn encodes_to(bytes: &[u8], text: &[u8]) -> bool {
    const PIECE: usize = 3 * 1024;
    let mut buffer = [0u8; PIECE / 3 * 4];
    if base64_simd::STANDARD.encoded_length(bytes.len()) != text.len() {
        return false;
    }
    bytes
        .chunks(PIECE)
        .zip(text.chunks(PIECE / 3 * 4))
        .all(|(piece, written)| {
            base64_simd::STANDARD.encode(piece, base64_simd::Out::from_slice(&mut buffer))
                == written
        })
}

/// Appends the base64 text of `bytes` (SIMD: this runs on every read of such a payload).
fn encode_into(bytes: &[u8], out: &mut Vec<u8>) {
    base64_simd::STANDARD.encode_append(bytes, out);
}

/// The payload a stored value stands for: the value itself when stored as written, the
/// base64 text of its bytes, between quotes, when stored decoded.
pub fn line_form(stored: Vec<u8>) -> Result<Vec<u8>, CodecError> {
    if stored.first() == Some(&AS_WRITTEN) {
        return Ok(stored);
    }
    let mut payload = Vec::new();
    line_form_into(&stored, &mut payload)?;
    Ok(payload)
}

/// [`line_form`], appended to `out` (a line being joined).
pub fn line_form_into(stored: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
    match stored.first() {
        Some(&AS_WRITTEN) => out.extend_from_slice(stored),
        Some(&BASE64) => {
            let bytes = &stored[1..];
            out.reserve(base64_simd::STANDARD.encoded_length(bytes.len()) + 2);
            out.push(b'"');
            encode_into(bytes, out);
            out.push(b'"');
        }
        Some(&other) => {
            return Err(CodecError::CorruptRecord(format!(
                "a payload's value starts with the unknown tag {other:#04x}"
            )))
        }
        None => {
            return Err(CodecError::CorruptRecord(
                "a payload's value is empty".into(),
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encoded(bytes: &[u8]) -> String {
        base64_simd::STANDARD.encode_to_string(bytes)
    }

    fn token(text: &str) -> Vec<u8> {
        format!("\"{text}\"").into_bytes()
    }

    #[test]
    fn canonical_base64_is_stored_decoded_and_read_back_as_written() {
        for bytes in [
            &b"a"[..],
            b"ab",
            b"abc",
            b"abcd",
            &[0u8, 255, 7, 128, 64][..],
        ] {
            let payload = token(&encoded(bytes));
            let stored = stored_form(&payload);
            assert_eq!(stored[0], BASE64);
            assert_eq!(&stored[1..], bytes);
            assert_eq!(line_form(stored.into_owned()).unwrap(), payload);
        }
    }

    #[test]
    fn anything_else_is_stored_as_written() {
        for text in [
            "",                   // empty
            "abc",                // not a multiple of four
            "QQ",                 // unpadded
            "QR==",               // stray bits in the last character
            "QQ==QQ==",           // padding inside
            "YWJj\\/ZA==",        // an escaped slash
            "aGVsbG8gd29ybGQ=\n", // a character past the alphabet
            "not base64 at all!",
            "YWJj-_Z=", // the URL-safe alphabet
        ] {
            let payload = token(text);
            assert_eq!(
                stored_form(&payload),
                Cow::Borrowed(&payload[..]),
                "{text:?}"
            );
            assert_eq!(line_form(payload.clone()).unwrap(), payload);
        }
        // Not a string token at all.
        assert_eq!(stored_form(b"QUJD"), Cow::Borrowed(&b"QUJD"[..]));
    }

    #[test]
    fn a_payload_longer_than_one_piece_is_compared_to_its_last_character() {
        // 10,000 bytes span several pieces of the comparison, the last one padded.
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let text = encoded(&bytes);
        let payload = token(&text);
        let stored = stored_form(&payload);
        assert_eq!(stored[0], BASE64);
        assert_eq!(line_form(stored.into_owned()).unwrap(), payload);
        // Stray bits in the very last character: decodable, but not what it encodes to.
        let mut stray = text.clone().into_bytes();
        // 10,000 = 3 * 3,333 + 1: the last byte, 215, is written "1w==", and "1x==" decodes
        // to it too.
        let last = stray.len() - 3;
        assert_eq!(&stray[last - 1..], b"1w==");
        stray[last] = b'x';
        let payload = token(std::str::from_utf8(&stray).unwrap());
        assert_eq!(stored_form(&payload), Cow::Borrowed(&payload[..]));
    }

    #[test]
    fn an_unknown_tag_or_an_empty_value_is_corrupt() {
        assert!(line_form(vec![0x02, 1, 2]).is_err());
        assert!(line_form(Vec::new()).is_err());
    }

    proptest! {
        #[test]
        fn any_string_token_reads_back_as_written(text in "[A-Za-z0-9+/=]{0,64}") {
            let payload = token(&text);
            let stored = stored_form(&payload).into_owned();
            prop_assert_eq!(line_form(stored).unwrap(), payload);
        }

        #[test]
        fn any_bytes_encoded_are_stored_decoded(bytes in proptest::collection::vec(any::<u8>(), 1..300)) {
            let payload = token(&encoded(&bytes));
            let stored = stored_form(&payload).into_owned();
            prop_assert_eq!(stored[0], BASE64);
            prop_assert_eq!(stored.len(), bytes.len() + 1);
            prop_assert_eq!(line_form(stored).unwrap(), payload);
        }
    }
}
