//! `grove summary-preview`: its JSON equals the library's collection, preparation and prompt.

use grove::summary::prompt::build_prompt;
use grove::summary::{prepare_branch_entries, PathMode, DEFAULT_BUDGET};
use serde_json::{json, Value};

use super::{fixture, library, Grove};

const FIXTURES: &[&str] = &[
    "edge-seed-harness.jsonl",
    "edge-nested-compaction-harness.jsonl",
    "edge-labels.jsonl",
];

#[test]
fn json_equals_the_library_for_every_target() {
    let g = Grove::new();
    for f in FIXTURES {
        g.ok(&["import", fixture(f).to_str().unwrap()]);
    }
    let lib = library(FIXTURES);
    for summary in lib.sessions().unwrap() {
        let session = lib.session(&summary.id).unwrap();
        let leaf = session.leaf().unwrap();
        for target in session.entries().map(|e| e.unwrap().id().to_owned()) {
            for (preset, mode) in [("grove", PathMode::Full), ("harness", PathMode::Branch)] {
                let args = [
                    "summary-preview",
                    summary.id.as_str(),
                    target.as_str(),
                    "--preset",
                    preset,
                    "--json",
                ];
                let collected =
                    session.collect_entries_for_branch_summary(leaf.as_deref(), &target, mode);
                let (entries, common) = match collected {
                    Ok(c) => c,
                    Err(e) => {
                        let (_, err) = g.fail(&args);
                        assert!(err.contains(e.name()), "{err}");
                        continue;
                    }
                };
                let prepared = prepare_branch_entries(&entries, DEFAULT_BUDGET);
                let ids: Vec<&str> = entries.iter().map(grove::Entry::id).collect();
                let roles: Vec<&str> = prepared.messages.iter().map(|m| m.role.as_str()).collect();
                let expected = json!({
                    "entryIds": ids,
                    "commonAncestorId": common,
                    "messageRoles": roles,
                    "totalTokens": prepared.total_tokens,
                    "readFiles": prepared.read_files,
                    "modifiedFiles": prepared.modified_files,
                    "prompt": build_prompt(&prepared, None, false),
                });
                let text = g.ok(&args);
                assert!(text.starts_with(r#"{"entryIds":"#), "{text}");
                let got: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(got, expected, "{} {target} {preset}", summary.id);
            }
        }
    }
}

#[test]
fn from_and_instructions_and_human_output() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    // From assistant A to plan B: assistant A and plan A are left; assistant 1 is common.
    let got = g.json(&[
        "summary-preview",
        "seed-harness",
        "67e6",
        "--from",
        "0595",
        "--instructions",
        "only the decision",
        "--replace-instructions",
        "--json",
    ]);
    assert_eq!(got["entryIds"], json!(["73e6edad", "05952c4d"]));
    assert_eq!(got["commonAncestorId"], json!("8bccc31b"));
    assert_eq!(got["messageRoles"], json!(["user", "assistant"]));
    let prompt = got["prompt"].as_str().unwrap();
    assert!(
        prompt.ends_with("</conversation>\n\nonly the decision"),
        "{prompt}"
    );

    let human = g.ok(&["summary-preview", "seed-harness", "73e6"]);
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(lines[0], "leaving a36c for 73e6; common ancestor 8bcc");
    assert_eq!(lines[1], "entries to summarize:");
    assert!(
        lines[2].starts_with("67e6") && lines[2].ends_with("plan B"),
        "{human}"
    );
    assert!(lines[3].starts_with("a36c") && lines[3].ends_with("assistant B"));
    assert!(lines[4].starts_with("2 entries, 2 messages, ~"), "{human}");
    assert_eq!(lines[5], "read files: (none)");
    assert_eq!(lines[6], "modified files: (none)");
    assert_eq!(lines[7], "prompt:");
    assert_eq!(lines[8], "<conversation>");

    // Nothing is written.
    assert_eq!(
        g.open().session("seed-harness").unwrap().leaf().unwrap(),
        Some("a36c3dcf".to_owned())
    );
    let same = g.ok(&["summary-preview", "seed-harness", "@"]);
    assert!(same.ends_with("nothing to summarize\n"), "{same}");
}
