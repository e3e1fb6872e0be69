//! Byte-exact round trips of the oracle fixtures (spec §2.9): what the reader stores is what
//! an export writes back.

use grove_codec::reader::{Diagnostic, Strictness};

use super::support::{case_names, jsonl, physical_lines, read_all, Read};

fn export(read: &Read) -> Vec<u8> {
    let mut out = read.header.raw.clone().into_bytes();
    out.push(b'\n');
    for line in &read.lines {
        out.extend_from_slice(line.text.as_bytes());
        out.push(b'\n');
    }
    out
}

#[test]
fn every_clean_fixture_round_trips_byte_for_byte() {
    let mut exact = 0;
    for case in case_names() {
        let bytes = jsonl(&case);
        let Ok(read) = read_all(&bytes, Strictness::Strict) else {
            continue;
        };
        let clean = bytes.last() == Some(&b'\n')
            && !read.diagnostics.iter().any(|d| {
                matches!(
                    d,
                    Diagnostic::BlankLine { .. }
                        | Diagnostic::Migrated { .. }
                        | Diagnostic::MissingFinalNewline { .. }
                        | Diagnostic::TornTail { .. }
                        | Diagnostic::Skipped { .. }
                )
            });
        if !clean {
            continue;
        }
        let out = export(&read);
        assert!(out == bytes, "{case}: export differs from the file");
        exact += 1;
    }
    // 120 random cases and every hand-made case without blank lines, legacy version or damage.
    assert!(exact >= 140, "only {exact} fixtures round-tripped");
}

#[test]
fn blank_lines_are_the_only_loss() {
    // CRLF and blank lines: the export equals the file without its blank lines.
    let bytes = jsonl("edge-crlf-blank-lines");
    let read = read_all(&bytes, Strictness::Strict).unwrap();
    let mut want = Vec::new();
    for (_, text) in physical_lines(&bytes) {
        if !text.iter().all(|b| b" \t\r".contains(b)) {
            want.extend_from_slice(text);
            want.push(b'\n');
        }
    }
    assert_eq!(export(&read), want);
}

#[test]
fn damaged_files_round_trip_what_was_kept() {
    // A torn tail is excluded; everything before it comes back unchanged.
    let bytes = jsonl("edge-torn-last-line");
    let read = read_all(&bytes, Strictness::Strict).unwrap();
    let cut = bytes.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    assert_eq!(export(&read), &bytes[..cut]);

    // A malformed middle line read leniently: the export is the file without that line.
    let bytes = jsonl("edge-malformed-middle");
    let read = read_all(&bytes, Strictness::Lenient).unwrap();
    let mut want = Vec::new();
    for (i, (_, text)) in physical_lines(&bytes).into_iter().enumerate() {
        if i != 3 {
            want.extend_from_slice(text);
            want.push(b'\n');
        }
    }
    assert_eq!(export(&read), want);
}
