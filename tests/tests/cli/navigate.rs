//! `grove navigate`: hook summaries, command summarizers, failures, JSON shapes.

use grove::summary::prompt::{build_prompt, final_summary};
use grove::summary::{prepare_branch_entries, PathMode, DEFAULT_BUDGET};
use serde_json::{json, Value};

use super::{fixture, library, Grove};

fn seed() -> Grove {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    g
}

/// The stored entry `id` of the session, as JSON.
fn entry(g: &Grove, session: &str, id: &str) -> Value {
    let store = g.open();
    let line = store.session(session).unwrap().entry(id).unwrap().line;
    serde_json::from_str(&line).unwrap()
}

fn leaf(g: &Grove, session: &str) -> Option<String> {
    g.open().session(session).unwrap().leaf().unwrap()
}

#[test]
fn summary_text_is_written_as_a_hook_summary() {
    let g = seed();
    // plan A is a user message: the leaf goes to its parent, its text back to the editor.
    let text = g.ok(&[
        "navigate",
        "seed-harness",
        "73e6",
        "--summary",
        "Tried plan B; it worked.",
        "--json",
    ]);
    assert!(
        text.starts_with(r#"{"oldLeafId":"a36c3dcf","newLeafId":"8bccc31b","#),
        "{text}"
    );
    let out: Value = serde_json::from_str(&text).unwrap();
    let summary_id = out["summaryEntryId"].as_str().unwrap().to_owned();
    assert_eq!(
        out,
        json!({"oldLeafId": "a36c3dcf", "newLeafId": "8bccc31b", "editorText": "plan A",
               "summaryEntryId": summary_id})
    );
    let written = entry(&g, "seed-harness", &summary_id);
    assert_eq!(written["type"], "branch_summary");
    assert_eq!(written["parentId"], "8bccc31b");
    assert_eq!(written["fromId"], "8bccc31b");
    assert_eq!(written["summary"], "Tried plan B; it worked.");
    assert_eq!(written["fromHook"], true);
    assert_eq!(leaf(&g, "seed-harness"), Some(summary_id.clone()));

    // Navigating to the leaf is a no-op of the same shape.
    assert_eq!(
        g.json(&["navigate", "seed-harness", "@", "--json"]),
        json!({"oldLeafId": summary_id, "newLeafId": summary_id})
    );

    // Human output: where the leaf moved, no summary, no editor text (an assistant target).
    let human = g.ok(&["navigate", "seed-h", "a36c"]);
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(lines.len(), 1, "{human}");
    assert!(
        lines[0].starts_with("leaf: ") && lines[0].ends_with("-> a36c assistant: assistant B"),
        "{human}"
    );

    // Human output with a summary and editor text; --label labels the summary entry.
    let human = g.ok(&[
        "navigate",
        "seed-harness",
        "67e6",
        "--summary",
        "short",
        "--label",
        "checkpoint",
    ]);
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(
        lines[0], "leaf: a36c -> 8bcc assistant: assistant 1",
        "{human}"
    );
    assert!(lines[1].starts_with("summary: ") && lines[1].ends_with("branch_summary: short"));
    assert_eq!(&lines[2..], ["editor text:", "plan B"]);
    let labels = g.open().session("seed-harness").unwrap().labels().unwrap();
    assert!(labels.values().any(|l| l.label == "checkpoint"));
}

#[test]
fn summarizer_command_output_becomes_the_summary() {
    let g = seed();
    let out = g.json(&[
        "navigate",
        "seed-harness",
        "73e6edad",
        "--summarize",
        "--summarizer-cmd",
        "cat",
        "--instructions",
        "mention the plans",
        "--json",
    ]);
    let id = out["summaryEntryId"].as_str().unwrap();
    let written = entry(&g, "seed-harness", id);

    // The library's prompt, through `cat`, then the final text.
    let lib = library(&["edge-seed-harness.jsonl"]);
    let session = lib.session("seed-harness").unwrap();
    let (entries, _) = session
        .collect_entries_for_branch_summary(Some("a36c3dcf"), "73e6edad", PathMode::Full)
        .unwrap();
    let prepared = prepare_branch_entries(&entries, DEFAULT_BUDGET);
    let prompt = build_prompt(&prepared, Some("mention the plans"), false);
    assert!(prompt.contains("Additional focus: mention the plans"));
    assert_eq!(written["summary"], json!(final_summary(&prompt, &prepared)));
    assert_eq!(written["fromHook"], false);
    assert_eq!(
        written["details"],
        json!({"readFiles": [], "modifiedFiles": []})
    );

    // The system prompt and token limit are in the command's environment.
    let out = g.json(&[
        "navigate",
        "seed-harness",
        "a36c",
        "--summarize",
        "--summarizer-cmd",
        "printf '%s' \"$GROVE_MAX_TOKENS\"",
        "--json",
    ]);
    let written = entry(&g, "seed-harness", out["summaryEntryId"].as_str().unwrap());
    assert!(written["summary"].as_str().unwrap().ends_with("2048"));
}

#[test]
fn a_failing_summarizer_moves_nothing() {
    let g = seed();
    let before = g.ok(&["export", "seed-harness"]);
    let (code, err) = g.fail(&[
        "navigate",
        "seed-harness",
        "73e6",
        "--summarize",
        "--summarizer-cmd",
        "echo 'model unavailable' >&2; exit 7",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: BranchSummary") && err.contains("model unavailable"),
        "{err}"
    );
    assert_eq!(g.ok(&["export", "seed-harness"]), before, "nothing written");
    assert_eq!(leaf(&g, "seed-harness").as_deref(), Some("a36c3dcf"));

    // Asking for a summary with no summarizer is InvalidState, with a hint.
    let (code, err) = g.fail(&["navigate", "seed-harness", "73e6", "--summarize"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: InvalidState") && err.contains("--summary"),
        "{err}"
    );
    // The root position is not a navigation target; unknown ids are EntryNotFound.
    let (code, err) = g.fail(&["navigate", "seed-harness", "root"]);
    assert_eq!(code, 1);
    assert!(err.contains("error: InvalidInput"), "{err}");
    let (_, err) = g.fail(&["navigate", "seed-harness", "zzzz"]);
    assert!(err.contains("error: EntryNotFound"), "{err}");
    // An unreachable endpoint fails as BranchSummary too.
    let (code, err) = g.fail(&[
        "navigate",
        "seed-harness",
        "73e6",
        "--summarize",
        "--openai-url",
        "http://127.0.0.1:9",
        "--openai-model",
        "m",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("error: BranchSummary"), "{err}");
    assert_eq!(g.ok(&["export", "seed-harness"]), before, "nothing written");

    // Flags that need each other are usage errors.
    let (code, _) = g.fail(&["navigate", "seed-harness", "73e6", "--openai-url", "x"]);
    assert_eq!(code, 2);
    let (code, _) = g.fail(&[
        "navigate",
        "seed-harness",
        "73e6",
        "--summary",
        "x",
        "--summarizer-cmd",
        "cat",
    ]);
    assert_eq!(code, 2);
}
