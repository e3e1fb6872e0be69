//! Spliced lines: a line whose large JSON string values are stored apart, once each, keyed by
//! their blake3 (the payload store, docs/format.md "Payloads"). Pure: this module cuts a line
//! into its skeleton and payloads and joins them back; the engine stores and fetches.
//!
//! A stored line is either the line itself (it starts with `{`) or, when it had string values
//! of at least the threshold's length, `0x00`, a u32 LE count `n`, then `n` splices of
//! (u32 LE offset in the skeleton, u32 LE length, 32-byte blake3 of the payload), then the
//! skeleton: the line with each payload's bytes cut out. A payload is a string value's raw
//! bytes as the line holds them, quotes and escapes included, so joining is exact.

use crate::error::CodecError;

/// The first byte of a spliced line (a line of JSON text starts with `{`).
pub const SPLICED: u8 = 0x00;

/// Bytes of one splice in the table.
const SPLICE_BYTES: usize = 4 + 4 + 32;

/// One payload cut out of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Splice {
    /// Where it goes back, as an offset into the skeleton.
    pub at: u32,
    /// Its length.
    pub len: u32,
    /// Its blake3.
    pub hash: [u8; 32],
}

/// A line cut: its stored form and the payloads it references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut<'a> {
    /// The stored line.
    pub stored: Vec<u8>,
    /// The payloads, in line order, with their hashes.
    pub payloads: Vec<([u8; 32], &'a [u8])>,
}

/// Cuts the string values of `line` (JSON text) whose raw length is at least `threshold`
/// bytes; `None` when it has none.
pub fn cut(line: &[u8], threshold: usize) -> Option<Cut<'_>> {
    let threshold = threshold.max(2);
    if line.len() < threshold {
        return None;
    }
    let spans = long_strings(line, threshold);
    if spans.is_empty() {
        return None;
    }
    let mut table = Vec::with_capacity(5 + spans.len() * SPLICE_BYTES);
    let mut skeleton =
        Vec::with_capacity(line.len() - spans.iter().map(|(a, b)| b - a).sum::<usize>());
    let mut payloads = Vec::with_capacity(spans.len());
    table.push(SPLICED);
    table.extend_from_slice(&u32::try_from(spans.len()).ok()?.to_le_bytes());
    let mut from = 0;
    for (start, end) in spans {
        skeleton.extend_from_slice(&line[from..start]);
        let payload = &line[start..end];
        let hash = *blake3::hash(payload).as_bytes();
        table.extend_from_slice(&u32::try_from(skeleton.len()).ok()?.to_le_bytes());
        table.extend_from_slice(&u32::try_from(payload.len()).ok()?.to_le_bytes());
        table.extend_from_slice(&hash);
        payloads.push((hash, payload));
        from = end;
    }
    skeleton.extend_from_slice(&line[from..]);
    table.extend_from_slice(&skeleton);
    Some(Cut {
        stored: table,
        payloads,
    })
}

/// The `[start, end)` byte spans of the JSON string tokens of `text` (quotes included) that
/// are at least `threshold` bytes long. `text` is JSON text: outside strings no `"` occurs.
fn long_strings(text: &[u8], threshold: usize) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < text.len() && text[i] != b'"' {
            i += if text[i] == b'\\' { 2 } else { 1 };
        }
        let end = (i + 1).min(text.len());
        if end - start >= threshold {
            spans.push((start, end));
        }
        i = end;
    }
    spans
}

/// Whether a stored line is spliced.
pub fn is_spliced(stored: &[u8]) -> bool {
    stored.first() == Some(&SPLICED)
}

/// A spliced line's table and skeleton.
pub fn parse(stored: &[u8]) -> Result<(Vec<Splice>, &[u8]), CodecError> {
    let bad = |what: &str| CodecError::CorruptRecord(format!("spliced line: {what}"));
    if !is_spliced(stored) || stored.len() < 5 {
        return Err(bad("no splice table"));
    }
    let n = u32::from_le_bytes([stored[1], stored[2], stored[3], stored[4]]) as usize;
    let table_end = n
        .checked_mul(SPLICE_BYTES)
        .and_then(|t| t.checked_add(5))
        .filter(|&e| e <= stored.len())
        .ok_or_else(|| bad("its table is cut short"))?;
    let skeleton = &stored[table_end..];
    let mut splices = Vec::with_capacity(n);
    let mut previous = 0u32;
    for chunk in stored[5..table_end].chunks_exact(SPLICE_BYTES) {
        let at = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        let len = u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]);
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&chunk[8..]);
        if at < previous || at as usize > skeleton.len() {
            return Err(bad("its splices are out of order"));
        }
        previous = at;
        splices.push(Splice { at, len, hash });
    }
    Ok((splices, skeleton))
}

/// Joins a spliced line back: `fetch` appends each payload's bytes, by hash, to the line it
/// is given (no copy in between); each is checked against its hash and length.
pub fn join(
    stored: &[u8],
    mut fetch: impl FnMut(&[u8; 32], &mut Vec<u8>) -> Result<(), CodecError>,
) -> Result<Vec<u8>, CodecError> {
    let (splices, skeleton) = parse(stored)?;
    let total = skeleton.len() + splices.iter().map(|s| s.len as usize).sum::<usize>();
    let mut line = Vec::with_capacity(total);
    let mut from = 0;
    for s in splices {
        line.extend_from_slice(&skeleton[from..s.at as usize]);
        let start = line.len();
        fetch(&s.hash, &mut line)?;
        let payload = &line[start..];
        if payload.len() != s.len as usize || *blake3::hash(payload).as_bytes() != s.hash {
            return Err(CodecError::CorruptRecord(format!(
                "payload {} does not match its hash",
                crate::digest::hex(&s.hash)
            )));
        }
        from = s.at as usize;
    }
    line.extend_from_slice(&skeleton[from..]);
    Ok(line)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cut_and_join_give_the_line_back() {
        let big = "x".repeat(100);
        let esc = format!("a\\\"{}\\\\", "y".repeat(80));
        let line = format!(r#"{{"a":"{big}","b":[1,"short","{esc}"],"{big}":2}}"#);
        let cut = cut(line.as_bytes(), 64).unwrap();
        assert_eq!(cut.payloads.len(), 3);
        assert_eq!(cut.payloads[1].1, format!("\"{esc}\"").as_bytes());
        // The same bytes are one payload.
        assert_eq!(cut.payloads[0].0, cut.payloads[2].0);
        let joined = join(&cut.stored, |h, line| {
            if let Some((_, p)) = cut.payloads.iter().find(|(k, _)| k == h) {
                line.extend_from_slice(p);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(joined, line.as_bytes());
        assert!(super::cut(line.as_bytes(), 1000).is_none());
        // A wrong payload is refused.
        assert!(join(&cut.stored, |_, line| {
            line.extend_from_slice(b"\"nope\"");
            Ok(())
        })
        .is_err());
        // A cut-short table is refused.
        assert!(parse(&cut.stored[..20]).is_err());
    }
}
