//! `grove_codec::reader`: the streaming JSONL reader, checked against the pi oracle fixtures
//! (spec §2.1, §2.3, §12) and against synthetic inputs.

use std::collections::BTreeMap;
use std::io::{BufReader, Read as _};

use grove_codec::reader::{Diagnostic, JsonlReader, Strictness};
use grove_codec::{CodecError, EntryKind, LineError, Role};
use serde_json::Value;

use super::support::{
    case_names, counter_ids, entry, expected, jsonl, physical_lines, read_all, Read, HEADER,
};

fn strict(bytes: &[u8]) -> Result<Read, CodecError> {
    read_all(bytes, Strictness::Strict)
}

fn lenient(bytes: &[u8]) -> Result<Read, CodecError> {
    read_all(bytes, Strictness::Lenient)
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| {
            x.as_str()
                .unwrap_or_else(|| panic!("not a string: {x}"))
                .to_owned()
        })
        .collect()
}

fn invalid_entry(r: Result<Read, CodecError>) -> LineError {
    match r {
        Err(CodecError::InvalidEntry(e)) => e,
        other => panic!("expected InvalidEntry, got {other:?}"),
    }
}

fn invalid_session(r: Result<Read, CodecError>) -> String {
    match r {
        Err(CodecError::InvalidSession { reason }) => reason,
        other => panic!("expected InvalidSession, got {other:?}"),
    }
}

/// The line number in a harness message such as "… line 4 is not valid JSON".
fn harness_line(message: &str) -> u64 {
    let rest = &message[message.find("line ").unwrap() + 5..];
    rest.split(' ').next().unwrap().parse().unwrap()
}

// ---------------------------------------------------------------------------------------------
// The oracle fixtures

#[test]
fn every_file_the_harness_opens_reads_strictly_with_the_same_entries() {
    let mut checked = 0;
    for case in case_names() {
        let exp = expected(&case);
        let harness = &exp["harness"];
        if harness.get("openError").is_some() {
            continue;
        }
        let bytes = jsonl(&case);
        let read = strict(&bytes).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(
            read.ids(),
            str_list(&harness["entryIds"]),
            "{case}: entry ids"
        );

        let meta = &harness["metadata"];
        assert_eq!(read.header.id, meta["id"].as_str().unwrap(), "{case}");
        assert_eq!(read.header.cwd, meta["cwd"].as_str().unwrap(), "{case}");
        assert_eq!(
            read.header.timestamp,
            meta["createdAt"].as_str().unwrap(),
            "{case}"
        );
        assert_eq!(
            read.header.parent_session.as_deref(),
            meta.get("parentSessionPath").and_then(Value::as_str),
            "{case}"
        );
        assert_eq!(read.header.source_version, 3, "{case}");

        // Physical line numbers and byte offsets point at the line's bytes.
        let physical = physical_lines(&bytes);
        for line in &read.lines {
            let (offset, text) = physical[(line.line - 1) as usize];
            assert_eq!(line.byte_offset, offset, "{case} line {}", line.line);
            assert_eq!(line.text.as_bytes(), text, "{case} line {}", line.line);
        }
        assert!(
            !read
                .diagnostics
                .iter()
                .any(|d| matches!(d, Diagnostic::Skipped { .. } | Diagnostic::TornTail { .. })),
            "{case}: {:?}",
            read.diagnostics
        );
        checked += 1;
    }
    assert!(checked >= 140, "only {checked} cases checked");
}

#[test]
fn entry_kinds_match_the_oracle_type_counts() {
    let known_roles = [
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "hookMessage",
        "branchSummary",
        "compactionSummary",
    ];
    let known_types = [
        "message",
        "model_change",
        "thinking_level_change",
        "active_tools_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "leaf",
    ];
    for case in case_names() {
        let exp = expected(&case);
        if exp["harness"].get("openError").is_some() {
            continue;
        }
        let read = strict(&jsonl(&case)).unwrap();
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for line in &read.lines {
            let env = &line.envelope;
            let key = match env.kind {
                EntryKind::Message(Role::Other) => {
                    let v: Value = serde_json::from_str(&line.text).unwrap();
                    let role = v["message"]["role"]
                        .as_str()
                        .unwrap_or("undefined")
                        .to_owned();
                    assert!(!known_roles.contains(&role.as_str()), "{case}: {role}");
                    format!("message:{role}")
                }
                EntryKind::Message(role) => format!("message:{}", role.name()),
                EntryKind::Unknown => {
                    assert!(!known_types.contains(&env.type_name.as_str()), "{case}");
                    env.type_name.clone()
                }
                _ => env.type_name.clone(),
            };
            assert_eq!(
                EntryKind::from_tag(env.kind.tag()),
                Some(env.kind),
                "{case}"
            );
            *counts.entry(key).or_default() += 1;
        }
        let want: BTreeMap<String, u64> = exp["case"]["types"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        assert_eq!(counts, want, "{case}");
    }
}

#[test]
fn every_harness_refusal_is_explained() {
    // What grove does with each file the pi harness refuses to open.
    let mut seen = Vec::new();
    for case in case_names() {
        let exp = expected(&case);
        let Some(open_error) = exp["harness"].get("openError") else {
            continue;
        };
        let code = open_error["code"].as_str().unwrap();
        let message = open_error["message"].as_str().unwrap();
        let bytes = jsonl(&case);
        match (case.as_str(), code) {
            // Torn final lines: grove drops and reports them (spec §12).
            ("edge-torn-last-line" | "edge-torn-utf8", "invalid_entry") => {
                let read = strict(&bytes).unwrap();
                let torn: Vec<&LineError> = read
                    .diagnostics
                    .iter()
                    .filter_map(|d| match d {
                        Diagnostic::TornTail { error, .. } => Some(error),
                        _ => None,
                    })
                    .collect();
                assert_eq!(torn.len(), 1, "{case}");
                assert_eq!(torn[0].line, harness_line(message), "{case}");
                assert_eq!(
                    read.ids(),
                    str_list(&exp["sessionManager"]["entryIds"]),
                    "{case}"
                );
            }
            (_, "invalid_entry") => {
                let e = invalid_entry(strict(&bytes));
                // These files have no blank lines, so pi's count is the physical one.
                assert_eq!(e.line, harness_line(message), "{case}: {e}");
                let physical = physical_lines(&bytes);
                assert_eq!(e.byte_offset, physical[(e.line - 1) as usize].0, "{case}");
            }
            // Legacy files: the harness refuses them, grove migrates them (see migrate.rs).
            ("edge-v1" | "edge-v1-bad-index" | "edge-v2", "invalid_session") => {
                let read = strict(&bytes).unwrap();
                assert!(read.header.source_version < 3, "{case}");
                assert_eq!(
                    read.lines.len(),
                    exp["sessionManager"]["entryIds"].as_array().unwrap().len(),
                    "{case}"
                );
            }
            (_, "invalid_session") => {
                let reason = invalid_session(strict(&bytes));
                let pi_reason = message.rsplit(": ").next().unwrap();
                assert!(
                    reason.contains(pi_reason),
                    "{case}: {reason:?} vs {pi_reason:?}"
                );
                // Lenient mode does not help with a bad header.
                invalid_session(lenient(&bytes));
            }
            _ => panic!("{case}: unexpected harness error {code}"),
        }
        seen.push(case);
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "edge-bom",
            "edge-header-missing",
            "edge-malformed-middle",
            "edge-nonobject-line",
            "edge-torn-last-line",
            "edge-torn-utf8",
            "edge-v1",
            "edge-v1-bad-index",
            "edge-v2",
            "edge-version-string",
            "edge-zero-bytes",
        ]
    );
}

#[test]
fn malformed_middle_line_fails_strictly_and_is_skipped_leniently() {
    let bytes = jsonl("edge-malformed-middle");
    let physical = physical_lines(&bytes);
    let e = invalid_entry(strict(&bytes));
    assert_eq!(e.line, 4);
    assert_eq!(e.byte_offset, physical[3].0);
    assert!(e.reason.starts_with("invalid JSON"), "{}", e.reason);

    let read = lenient(&bytes).unwrap();
    let exp = expected("edge-malformed-middle");
    assert_eq!(read.ids(), str_list(&exp["sessionManager"]["entryIds"]));
    assert_eq!(read.ids(), ["c0000001", "c0000002", "c0000003", "c0000004"]);
    let skipped: Vec<_> = read
        .diagnostics
        .iter()
        .filter_map(|d| match d {
            Diagnostic::Skipped { error, bytes } => Some((error, bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(skipped.len(), 1, "{:?}", read.diagnostics);
    assert_eq!(skipped[0].0.line, 4);
    assert_eq!(skipped[0].0.byte_offset, physical[3].0);
    assert_eq!(skipped[0].1.as_slice(), physical[3].1, "quarantined bytes");
    assert_eq!(
        read.lines[2].line, 5,
        "the line after the bad one keeps its number"
    );
}

#[test]
fn non_object_lines_are_invalid_entries() {
    let bytes = jsonl("edge-nonobject-line");
    let e = invalid_entry(strict(&bytes));
    assert_eq!(e.line, 3);
    assert!(e.reason.contains("not a JSON object"), "{}", e.reason);

    let read = lenient(&bytes).unwrap();
    assert_eq!(read.ids(), ["c0000001", "c0000002", "c0000003", "c0000004"]);
    let skipped: Vec<u64> = read
        .diagnostics
        .iter()
        .filter_map(|d| match d {
            Diagnostic::Skipped { error, .. } => Some(error.line),
            _ => None,
        })
        .collect();
    assert_eq!(skipped, [3, 5, 6, 7]);
}

#[test]
fn torn_last_line_is_dropped_and_reported() {
    let bytes = jsonl("edge-torn-last-line");
    assert_ne!(bytes.last(), Some(&b'\n'));
    let physical = physical_lines(&bytes);
    for read in [strict(&bytes).unwrap(), lenient(&bytes).unwrap()] {
        assert_eq!(read.ids(), ["c0000001", "c0000002", "c0000003"]);
        let torn: Vec<_> = read
            .diagnostics
            .iter()
            .filter_map(|d| match d {
                Diagnostic::TornTail { error, bytes } => Some((error.clone(), bytes.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(torn.len(), 1);
        assert_eq!(torn[0].0.line, 5);
        assert_eq!(torn[0].0.byte_offset, physical[4].0);
        assert_eq!(torn[0].1.as_slice(), physical[4].1);
        assert!(!read
            .diagnostics
            .iter()
            .any(|d| matches!(d, Diagnostic::Skipped { .. })));
    }
}

#[test]
fn torn_utf8_last_line_is_dropped_and_reported() {
    let bytes = jsonl("edge-torn-utf8");
    assert!(
        std::str::from_utf8(&bytes).is_err(),
        "the cut splits a character"
    );
    let physical = physical_lines(&bytes);
    let read = strict(&bytes).unwrap();
    assert_eq!(read.ids(), ["c0000001", "c0000002"]);
    let torn: Vec<_> = read
        .diagnostics
        .iter()
        .filter_map(|d| match d {
            Diagnostic::TornTail { error, bytes } => Some((error.clone(), bytes.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(torn.len(), 1);
    assert_eq!(torn[0].0.line, 4);
    assert_eq!(torn[0].0.byte_offset, physical[3].0);
    assert!(torn[0].0.reason.contains("UTF-8"), "{}", torn[0].0.reason);
    assert_eq!(torn[0].1.as_slice(), physical[3].1);
}

#[test]
fn crlf_lines_keep_their_cr_and_blank_lines_are_reported() {
    let bytes = jsonl("edge-crlf-blank-lines");
    let read = strict(&bytes).unwrap();
    assert_eq!(read.ids(), ["c0000001", "c0000002", "c0000003", "c0000004"]);
    assert!(read.header.raw.ends_with('\r'), "header keeps its CR");
    let physical = physical_lines(&bytes);
    let mut with_cr = 0;
    for line in &read.lines {
        let (offset, text) = physical[(line.line - 1) as usize];
        assert_eq!(line.text.as_bytes(), text);
        assert_eq!(line.byte_offset, offset);
        with_cr += usize::from(line.text.ends_with('\r'));
    }
    assert!(with_cr >= 2, "the fixture has CRLF entry lines");
    let blank_expected: Vec<u64> = physical
        .iter()
        .enumerate()
        .filter(|(_, (_, t))| t.iter().all(|b| b" \t\r".contains(b)))
        .map(|(i, _)| i as u64 + 1)
        .collect();
    let blank: Vec<u64> = read
        .diagnostics
        .iter()
        .filter_map(|d| match d {
            Diagnostic::BlankLine { line } => Some(*line),
            _ => None,
        })
        .collect();
    assert_eq!(blank, blank_expected);
    assert_eq!(blank.len(), 4);
}

#[test]
fn missing_header_bom_and_empty_files_are_invalid_sessions() {
    let reason = invalid_session(strict(&jsonl("edge-header-missing")));
    assert!(reason.contains("not a valid session header"), "{reason}");
    let reason = invalid_session(strict(&jsonl("edge-bom")));
    assert!(reason.contains("BOM"), "{reason}");
    let reason = invalid_session(strict(&jsonl("edge-zero-bytes")));
    assert!(reason.contains("missing session header"), "{reason}");
    let reason = invalid_session(strict(b"\n  \r\n\n"));
    assert!(reason.contains("missing session header"), "{reason}");
    let reason = invalid_session(strict(&jsonl("edge-version-string")));
    assert!(reason.contains("unsupported session version"), "{reason}");
}

#[test]
fn header_only_file_has_no_lines() {
    let read = strict(&jsonl("edge-empty")).unwrap();
    assert!(read.lines.is_empty());
    assert!(read.diagnostics.is_empty());
    let no_lf = strict(HEADER.as_bytes()).unwrap();
    assert_eq!(no_lf.header.raw, HEADER);
    assert!(no_lf.lines.is_empty());
}

#[test]
fn lone_surrogates_are_read() {
    let bytes = jsonl("edge-lone-surrogate");
    let read = strict(&bytes).unwrap();
    assert_eq!(read.ids(), ["7ae2a8ed", "bb57254f"]);
    assert!(read.lines[0].text.contains(r"\ud83d (lone high surrogate)"));
}

// ---------------------------------------------------------------------------------------------
// Synthetic inputs

fn file(lines: &[&str]) -> Vec<u8> {
    let mut s = String::new();
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s.into_bytes()
}

#[test]
fn strict_validation_of_common_fields() {
    let ts = r#""timestamp":"2030-01-01T00:00:01.000Z""#;
    let cases: Vec<(String, &str)> = vec![
        ("{".to_owned(), "invalid JSON"),
        ("{\"type\":\"message\",}".to_owned(), "invalid JSON"),
        ("[1]".to_owned(), "not a JSON object"),
        ("\"x\"".to_owned(), "not a JSON object"),
        ("nul".to_owned(), "invalid JSON"),
        (
            format!(r#"{{"id":"a","parentId":null,{ts}}}"#),
            "type must be a string",
        ),
        (
            format!(r#"{{"type":5,"id":"a","parentId":null,{ts}}}"#),
            "type must be a string",
        ),
        (
            format!(r#"{{"type":null,"id":"a","parentId":null,{ts}}}"#),
            "type must be a string",
        ),
        (
            format!(r#"{{"type":"message","parentId":null,{ts}}}"#),
            "missing id",
        ),
        (
            format!(r#"{{"type":"message","id":"","parentId":null,{ts}}}"#),
            "missing id",
        ),
        (
            format!(r#"{{"type":"message","id":7,"parentId":null,{ts}}}"#),
            "missing id",
        ),
        (
            r#"{"type":"message","id":"a","parentId":null}"#.to_owned(),
            "missing timestamp",
        ),
        (
            r#"{"type":"message","id":"a","parentId":null,"timestamp":""}"#.to_owned(),
            "missing timestamp",
        ),
        (
            r#"{"type":"message","id":"a","parentId":null,"timestamp":1}"#.to_owned(),
            "missing timestamp",
        ),
        (
            format!(r#"{{"type":"message","id":"a",{ts}}}"#),
            "missing parentId",
        ),
        (
            format!(r#"{{"type":"message","id":"a","parentId":1,{ts}}}"#),
            "neither null nor a string",
        ),
        (
            format!(r#"{{"type":"message","id":"a","parentId":["p"],{ts}}}"#),
            "neither null nor a string",
        ),
        (
            format!(r#"{{"type":"leaf","id":"a","parentId":null,{ts}}}"#),
            "missing targetId",
        ),
        (
            format!(r#"{{"type":"leaf","id":"a","parentId":null,{ts},"targetId":3}}"#),
            "targetId that is neither null nor a string",
        ),
        (HEADER.to_owned(), "unexpected session header"),
    ];
    for (bad, why) in cases {
        let bytes = file(&[HEADER, &entry("e1", None), &bad, &entry("e2", Some("e1"))]);
        let e = invalid_entry(strict(&bytes));
        assert_eq!(e.line, 3, "{bad}");
        let offset = HEADER.len() + 1 + entry("e1", None).len() + 1;
        assert_eq!(e.byte_offset, offset as u64, "{bad}");
        assert!(
            e.reason.contains(why),
            "{bad}: {:?} lacks {why:?}",
            e.reason
        );
        // Lenient mode keeps reading and reports the same error.
        let read = lenient(&bytes).unwrap();
        assert_eq!(read.ids(), ["e1", "e2"], "{bad}");
        assert!(
            read.diagnostics.iter().any(|d| matches!(
                d,
                Diagnostic::Skipped { error, bytes } if *error == e && bytes == bad.as_bytes()
            )),
            "{bad}: {:?}",
            read.diagnostics
        );
    }
}

#[test]
fn accepted_forms_of_common_fields() {
    let lines = [
        HEADER,
        r#"{"type":"message","id":"\u0061","parentId":"","timestamp":"t","message":{"role":"assistant"}}"#,
        r#"{"type":"leaf","id":"l1","parentId":null,"timestamp":"t","targetId":null}"#,
        r#"{"type":"leaf","id":"l2","parentId":"l1","timestamp":"t","targetId":"a"}"#,
        r#"{"type":"label","id":"lb","parentId":"a","timestamp":"t","targetId":"a","label":"x"}"#,
        r#"{"type":"future","id":"f","parentId":"lb","timestamp":"not a date","extra":[1]}"#,
        r#"{"type":"message","id":"m","parentId":"f","timestamp":"t","message":{"role":7}}"#,
        r#"{"type":"message","id":"n","parentId":"m","timestamp":"t"}"#,
        r#"  {"type":"custom","id":"c","parentId":"n","timestamp":"t","customType":"x"}  "#,
    ];
    let read = strict(&file(&lines)).unwrap();
    let envs: Vec<_> = read.lines.iter().map(|l| l.envelope.clone()).collect();
    assert_eq!(envs[0].id, "a", "ids are decoded JSON strings");
    assert_eq!(envs[0].parent_id, None, "\"\" parent is a root");
    assert_eq!(envs[0].kind, EntryKind::Message(Role::Assistant));
    assert_eq!(envs[1].kind, EntryKind::Leaf);
    assert_eq!(envs[1].target_id, None);
    assert_eq!(envs[2].target_id.as_deref(), Some("a"));
    assert_eq!(envs[2].parent_id.as_deref(), Some("l1"));
    assert_eq!(envs[3].kind, EntryKind::Label);
    assert_eq!(envs[3].target_id.as_deref(), Some("a"));
    assert_eq!(envs[4].kind, EntryKind::Unknown);
    assert_eq!(envs[4].type_name, "future");
    assert_eq!(envs[4].timestamp, "not a date", "timestamps are opaque");
    assert_eq!(envs[5].kind, EntryKind::Message(Role::Other));
    assert_eq!(envs[6].kind, EntryKind::Message(Role::Other));
    assert_eq!(envs[7].kind, EntryKind::Custom);
    assert_eq!(
        read.lines[7].text, lines[8],
        "surrounding spaces kept verbatim"
    );
    for (i, line) in read.lines.iter().enumerate() {
        assert_eq!(line.text, lines[i + 1]);
        assert_eq!(line.line, i as u64 + 2);
    }
}

#[test]
fn physical_line_numbers_and_offsets_count_blank_lines() {
    let e1 = entry("e1", None);
    let text = format!("\n{HEADER}\n\n   \n{e1}\n\t\r\n{{broken\n");
    let e = invalid_entry(strict(text.as_bytes()));
    assert_eq!(e.line, 7);
    assert_eq!(e.byte_offset, text.find("{broken").unwrap() as u64);
    assert!(e.to_string().starts_with("line 7 (byte "), "{e}");

    let read = lenient(text.as_bytes()).unwrap();
    assert_eq!(read.lines[0].line, 5);
    assert_eq!(read.lines[0].byte_offset, text.find(&e1).unwrap() as u64);
    let blanks: Vec<u64> = read
        .diagnostics
        .iter()
        .filter_map(|d| match d {
            Diagnostic::BlankLine { line } => Some(*line),
            _ => None,
        })
        .collect();
    assert_eq!(blanks, [1, 3, 4, 6]);
    assert_eq!(read.header.raw, HEADER);
}

#[test]
fn final_line_without_newline_is_kept_when_it_parses() {
    let e1 = entry("e1", None);
    let e2 = entry("e2", Some("e1"));
    let text = format!("{HEADER}\n{e1}\n{e2}");
    let read = strict(text.as_bytes()).unwrap();
    assert_eq!(read.ids(), ["e1", "e2"]);
    assert_eq!(read.lines[1].text, e2);
    assert_eq!(
        read.diagnostics,
        [Diagnostic::MissingFinalNewline { line: 3 }]
    );
}

#[test]
fn torn_tail_after_a_valid_line() {
    let e1 = entry("e1", None);
    let torn = &entry("e2", Some("e1"))[..40];
    let text = format!("{HEADER}\n{e1}\n{torn}");
    for read in [
        strict(text.as_bytes()).unwrap(),
        lenient(text.as_bytes()).unwrap(),
    ] {
        assert_eq!(read.ids(), ["e1"]);
        assert_eq!(read.diagnostics.len(), 1);
        assert!(matches!(
            &read.diagnostics[0],
            Diagnostic::TornTail { error, bytes }
                if error.line == 3
                    && error.byte_offset == (HEADER.len() + e1.len() + 2) as u64
                    && bytes == torn.as_bytes()
        ));
    }
    // An unterminated blank tail is only a blank line.
    let text = format!("{HEADER}\n{e1}\n  ");
    let read = strict(text.as_bytes()).unwrap();
    assert_eq!(read.diagnostics, [Diagnostic::BlankLine { line: 3 }]);
}

#[test]
fn a_terminated_bad_last_line_is_not_a_torn_tail() {
    let e1 = entry("e1", None);
    let text = format!("{HEADER}\n{e1}\n{{\"type\":\n");
    let e = invalid_entry(strict(text.as_bytes()));
    assert_eq!(e.line, 3);
}

#[test]
fn lines_split_at_lf_only() {
    // U+2028, U+2029, CR and NEL inside a string are content, not line ends.
    let content = "a\u{2028}b\u{2029}c\u{85}d";
    let line = format!(
        r#"{{"type":"message","id":"e1","parentId":null,"timestamp":"t","message":{{"role":"user","content":"{content}"}}}}"#
    );
    let text = format!("{HEADER}\n{line}\n{}\n", entry("e2", Some("e1")));
    let read = strict(text.as_bytes()).unwrap();
    assert_eq!(read.ids(), ["e1", "e2"]);
    assert_eq!(read.lines[0].text, line);
    assert_eq!(read.lines[1].line, 3);
}

#[test]
fn invalid_utf8_in_a_middle_line_is_an_invalid_entry() {
    let mut bytes = file(&[HEADER]);
    bytes.extend_from_slice(b"{\"type\":\"message\",\"id\":\"\xff\"}\n");
    bytes.extend_from_slice(&file(&[&entry("e1", None)]));
    let e = invalid_entry(strict(&bytes));
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("UTF-8"), "{}", e.reason);
    let read = lenient(&bytes).unwrap();
    assert_eq!(read.ids(), ["e1"]);
}

#[test]
fn invalid_utf8_header_is_an_invalid_session() {
    let reason = invalid_session(strict(b"{\"type\":\"session\",\"id\":\"\xc3\"}\n"));
    assert!(reason.contains("not a valid session header"), "{reason}");
}

#[test]
fn blank_lines_before_the_header_are_skipped() {
    let text = format!("\n \r\n{HEADER}\n{}\n", entry("e1", None));
    let read = strict(text.as_bytes()).unwrap();
    assert_eq!(read.header.id, "s1");
    assert_eq!(read.ids(), ["e1"]);
    assert_eq!(read.lines[0].line, 4);
    assert_eq!(
        read.diagnostics,
        [
            Diagnostic::BlankLine { line: 1 },
            Diagnostic::BlankLine { line: 2 }
        ]
    );
}

#[test]
fn header_errors_name_the_line() {
    let reason = invalid_session(strict(
        b"\n{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\"}\n",
    ));
    assert!(reason.contains("line 2"), "{reason}");
    assert!(reason.contains("missing cwd"), "{reason}");
    let v4 = invalid_session(strict(b"{\"kind\":\"header\",\"version\":4}\n"));
    assert!(v4.contains("pi \u{2265}0.84"), "{v4}");
}

#[test]
fn diagnostics_are_gathered_while_reading() {
    let text = format!(
        "{HEADER}\n\n{}\n\n{}",
        entry("e1", None),
        entry("e2", Some("e1"))
    );
    let mut reader =
        JsonlReader::new(text.as_bytes(), Strictness::Strict, counter_ids("x")).unwrap();
    assert!(reader.diagnostics().is_empty());
    let first = reader.next_line().unwrap().unwrap();
    assert_eq!(first.envelope.id, "e1");
    assert_eq!(reader.diagnostics(), [Diagnostic::BlankLine { line: 2 }]);
    assert_eq!(reader.take_diagnostics().len(), 1);
    assert!(reader.diagnostics().is_empty());
    assert!(reader.next_line().unwrap().is_some());
    assert!(reader.next_line().unwrap().is_none());
    assert!(reader.next_line().unwrap().is_none(), "EOF is sticky");
    assert_eq!(
        reader.take_diagnostics(),
        [
            Diagnostic::BlankLine { line: 4 },
            Diagnostic::MissingFinalNewline { line: 5 }
        ]
    );
}

#[test]
fn long_lines_are_read_whole() {
    let big = "x".repeat(300_000);
    let line = format!(
        r#"{{"type":"message","id":"e1","parentId":null,"timestamp":"t","message":{{"role":"user","content":"{big}"}}}}"#
    );
    let text = format!("{HEADER}\n{line}\n");
    // A tiny buffer forces many partial reads of one line.
    let reader = BufReader::with_capacity(7, text.as_bytes());
    let mut r = JsonlReader::new(reader, Strictness::Strict, counter_ids("x")).unwrap();
    assert_eq!(r.next_line().unwrap().unwrap().text, line);
    assert!(r.next_line().unwrap().is_none());
}

/// Yields `data`, then fails.
struct FailAfter {
    data: Vec<u8>,
    pos: usize,
}

impl std::io::Read for FailAfter {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.data.len() {
            return Err(std::io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[test]
fn read_failures_are_io_errors_with_the_offset() {
    let e1 = entry("e1", None);
    let data = format!("{HEADER}\n{e1}\n{{\"type\"").into_bytes();
    let input = BufReader::new(FailAfter { data, pos: 0 });
    let mut r = JsonlReader::new(input, Strictness::Strict, counter_ids("x")).unwrap();
    assert_eq!(r.next_line().unwrap().unwrap().envelope.id, "e1");
    match r.next_line() {
        Err(CodecError::Io { offset, source }) => {
            assert_eq!(offset, (HEADER.len() + e1.len() + 2) as u64);
            assert_eq!(source.to_string(), "disk on fire");
        }
        other => panic!("expected Io, got {other:?}"),
    }

    let mut header_fails = FailAfter {
        data: Vec::new(),
        pos: 0,
    };
    let mut sink = [0u8; 1];
    assert!(header_fails.read(&mut sink).is_err());
    let r = JsonlReader::new(
        BufReader::new(header_fails),
        Strictness::Strict,
        counter_ids("x"),
    );
    assert!(matches!(r, Err(CodecError::Io { offset: 0, .. })));
}
