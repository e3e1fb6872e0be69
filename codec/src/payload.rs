//! Payload values as the store keeps them (docs/format.md, "Payloads"). A payload is a JSON
//! string value's raw bytes, quotes included ([`crate::splice`]); most large ones are base64
//! (images, files, serialized checkpoints) and cost a third more than the bytes they carry, and
//! most of the others are text that compresses well (tool results, file reads, a conversation
//! serialized again at every checkpoint). A payload that is canonical standard base64 (RFC 4648
//! §4, padded, as every common encoder writes it) is stored as the bytes it decodes to behind
//! the tag [`BASE64`], and encoded again when it is read; any other is stored as it is, and
//! starts with its quote. Either form is then compressed with zstd behind the tag [`ZSTD`] when
//! that saves at least an eighth of it. The hash that keys a payload and the check of a joined
//! line stay over the string as the line holds it, so how a payload is stored changes neither.
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

/// The first byte of a payload stored compressed: a zstd frame (with its content size) of the
/// payload's form behind [`BASE64`] or [`AS_WRITTEN`] follows.
pub const ZSTD: u8 = 0x02;

/// zstd's level for payloads: its fastest of the usual levels (a payload is compressed on the
/// append that brings it, decompressed on every read of it that a view does not answer).
const ZSTD_LEVEL: i32 = 1;

/// The most bytes a compressed payload may say it holds (a larger figure is a corrupt value,
/// not an allocation to make).
const MOST_BYTES: u64 = 1 << 32;

/// How `payload` (a JSON string token, quotes included) is stored: its decoded bytes behind
/// [`BASE64`] when its text is canonical base64 (what [`line_form`] gives back is then exactly
/// `payload`), else `payload` itself; either compressed behind [`ZSTD`] when that saves at least
/// an eighth of it.
pub fn stored_form(payload: &[u8]) -> Cow<'_, [u8]> {
    let form = match decoded(payload) {
        Some(stored) => Cow::Owned(stored),
        None => Cow::Borrowed(payload),
    };
    match compressed(&form) {
        Some(stored) => Cow::Owned(stored),
        None => form,
    }
}

/// `form` compressed behind [`ZSTD`], when that saves at least an eighth of it.
fn compressed(form: &[u8]) -> Option<Vec<u8>> {
    let frame = zstd::block::compress(form, ZSTD_LEVEL).ok()?;
    if 1 + frame.len() > form.len() - form.len() / 8 {
        return None;
    }
    let mut stored = Vec::with_capacity(1 + frame.len());
    stored.push(ZSTD);
    stored.extend_from_slice(&frame);
    Some(stored)
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
        Some(&ZSTD) => decompressed_into(&stored[1..], out),
        _ => form_into(stored, out),
    }
}

/// A payload's form behind [`BASE64`] or [`AS_WRITTEN`], appended to `out` as the line holds it.
fn form_into(stored: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
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

/// A compressed payload (its zstd frame) appended to `out` as the line holds it: a form as
/// written is decompressed straight into `out`, one of base64 bytes into a buffer and encoded.
fn decompressed_into(frame: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
    let corrupt = |why: String| CodecError::CorruptRecord(format!("a compressed payload {why}"));
    let size = zstd::zstd_safe::get_frame_content_size(frame);
    if size == 0 || size > MOST_BYTES {
        return Err(corrupt(format!("says it holds {size} bytes")));
    }
    let size = usize::try_from(size).map_err(|e| corrupt(e.to_string()))?;
    let start = out.len();
    out.resize(start + size, 0);
    let written = zstd::block::decompress_to_buffer(frame, &mut out[start..])
        .map_err(|e| corrupt(format!("does not decompress: {e}")))?;
    if written != size {
        return Err(corrupt(format!("holds {written} bytes, not {size}")));
    }
    match out[start] {
        AS_WRITTEN => Ok(()),
        BASE64 => {
            let form = out.split_off(start);
            form_into(&form, out)
        }
        other => Err(corrupt(format!("holds the tag {other:#04x}"))),
    }
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

    /// `n` bytes that do not compress (xorshift).
    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect()
    }

    #[test]
    fn a_payload_longer_than_one_piece_is_compared_to_its_last_character() {
        // 10,000 bytes span several pieces of the comparison, the last one padded.
        let mut bytes = noise(10_000);
        bytes[9_999] = 215;
        let text = encoded(&bytes);
        let payload = token(&text);
        let stored = stored_form(&payload);
        assert_eq!(stored[0], BASE64);
        assert_eq!(line_form(stored.into_owned()).unwrap(), payload);
        // Stray bits in the very last character: decodable, but not what it encodes to. Kept
        // as written (compressed: base64 text carries 6 bits a byte).
        let mut stray = text.clone().into_bytes();
        // 10,000 = 3 * 3,333 + 1: the last byte, 215, is written "1w==", and "1x==" decodes
        // to it too.
        let last = stray.len() - 3;
        assert_eq!(&stray[last - 1..], b"1w==");
        stray[last] = b'x';
        let payload = token(std::str::from_utf8(&stray).unwrap());
        let stored = stored_form(&payload).into_owned();
        assert_eq!(stored[0], ZSTD);
        let mut form = Vec::new();
        decompressed_into(&stored[1..], &mut form).unwrap();
        assert_eq!(form, payload);
        assert_eq!(line_form(stored).unwrap(), payload);
    }

    #[test]
    fn a_payload_that_compresses_is_stored_compressed_and_read_back_as_written() {
        // Text (a tool's output) and base64 of bytes that compress (a blank image).
        let text = format!("\"{}\"", "lorem ipsum dolor sit amet\\n".repeat(400)).into_bytes();
        let blank = token(&encoded(&[0u8; 30_000]));
        for (payload, inner) in [(&text, AS_WRITTEN), (&blank, BASE64)] {
            let stored = stored_form(payload).into_owned();
            assert_eq!(stored[0], ZSTD);
            assert!(stored.len() < payload.len() / 10, "{}", stored.len());
            let form = zstd::block::decompress(&stored[1..], 1 << 20).unwrap();
            assert_eq!(form[0], inner);
            let mut line = b"{\"a\":".to_vec();
            line_form_into(&stored, &mut line).unwrap();
            assert_eq!(&line[5..], &payload[..]);
            assert_eq!(line_form(stored).unwrap(), *payload);
        }
        // Saving less than an eighth: kept as it is.
        let base64 = token(&encoded(&noise(6_000)));
        assert_eq!(stored_form(&base64)[0], BASE64);
    }

    #[test]
    fn a_compressed_payload_that_is_corrupt_is_an_error() {
        let text = format!("\"{}\"", "abc ".repeat(5_000)).into_bytes();
        let stored = stored_form(&text).into_owned();
        assert_eq!(stored[0], ZSTD);
        // A frame cut short, a frame of no payload's form, a frame of nothing.
        let cut = stored[..stored.len() - 4].to_vec();
        assert!(line_form(cut).is_err());
        let mut other = vec![ZSTD];
        other.extend(zstd::block::compress(&[0x07u8; 5_000], 1).unwrap());
        assert!(line_form(other).is_err());
        assert!(line_form(vec![ZSTD]).is_err());
        assert!(line_form(vec![ZSTD, 1, 2, 3]).is_err());
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
            match stored[0] {
                BASE64 => prop_assert_eq!(stored.len(), bytes.len() + 1),
                ZSTD => prop_assert!(stored.len() < bytes.len()),
                other => prop_assert!(false, "tag {}", other),
            }
            prop_assert_eq!(line_form(stored).unwrap(), payload);
        }

        #[test]
        fn any_text_repeated_reads_back_as_written(text in "[ -~]{1,40}", times in 1usize..400) {
            let payload = format!("\"{}\"", text.replace(['"', '\\'], "").repeat(times)).into_bytes();
            let stored = stored_form(&payload).into_owned();
            prop_assert_eq!(line_form(stored).unwrap(), payload);
        }
    }
}
