//! `grove import --format claude-code|codex|auto` and `grove export --format`: other tools'
//! transcripts (hand-written fixtures from the published formats, tests/fixtures/foreign) kept
//! line for line and given back byte for byte, their tree from the tools' own links.

use std::path::{Path, PathBuf};

use grove::Flavor;

use super::Grove;

fn foreign(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/foreign")
        .join(rel)
}

const SESSION: &str = "11111111-2222-4333-8444-555555555555";

fn uuid(n: u32) -> String {
    format!("{n:08x}-aaaa-4bbb-8ccc-dddddddddddd")
}

#[test]
fn a_claude_code_project_imports_as_trees_and_exports_byte_for_byte() {
    let g = Grove::new();
    let dir = foreign("claude-code/-home-user-work-demo");
    let out = g.ok(&["import", "--json", dir.to_str().unwrap()]);
    let sessions: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = sessions
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    // The subagent's transcript (SESSION/subagents/agent-7a1b.jsonl) is a session of its own.
    assert_eq!(ids, [format!("{SESSION}.agent-7a1b"), SESSION.to_owned()]);
    assert_eq!(sessions[1]["entries"], 19);

    // Byte for byte back, through the command and the library.
    let main = std::fs::read(dir.join(format!("{SESSION}.jsonl"))).unwrap();
    let out = g.run(&["export", SESSION, "--format", "claude-code"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, main);
    let agent = std::fs::read(dir.join(format!("{SESSION}/subagents/agent-7a1b.jsonl"))).unwrap();
    let out = g.run(&[
        "export",
        &format!("{SESSION}.agent-7a1b"),
        "--format",
        "claude-code",
    ]);
    assert_eq!(out.stdout, agent);

    let store = g.open();
    let session = store.session(SESSION).unwrap();
    let parent = |id: &str| session.entry(id).unwrap().parent_id();
    // The rewind (the second question asked again from the first answer) is a sibling branch.
    assert_eq!(parent(&uuid(6)), Some(uuid(4)));
    assert_eq!(parent(&uuid(8)), Some(uuid(4)));
    // The compaction boundary hangs off the entry it logically follows.
    assert_eq!(parent(&uuid(10)), Some(uuid(7)));
    // The in-file sidechain is a root of its own; a title or tag follows the line before it.
    assert_eq!(parent("5100000a-aaaa-4bbb-8ccc-dddddddddddd"), None);
    assert_eq!(parent("L18"), Some(uuid(13)));
    // Claude Code's leaf: the last main-chain message no line continues.
    assert_eq!(session.leaf().unwrap(), Some(uuid(13)));
    let mut exported = Vec::new();
    session
        .export(
            Flavor::Foreign(grove::codec::foreign::Format::ClaudeCode),
            &mut exported,
        )
        .unwrap();
    assert_eq!(exported, main);
    drop(session);
    drop(store);

    // The tree view shows the messages and the branch, the bookkeeping lines hidden.
    let tree = g.ok(&["tree", SESSION, "--ascii"]);
    assert!(
        tree.contains("user: Wie ist das Wetter in Zürich?"),
        "{tree}"
    );
    assert!(tree.contains("assistant: [call weather]"), "{tree}");
    assert!(tree.contains("system: Conversation compacted"), "{tree}");
    assert!(tree.contains("|\\"), "{tree}");
    assert!(!tree.contains("custom-title"), "{tree}");
    let html = g.ok(&["export", SESSION, "--html"]);
    assert!(html.contains("Gern geschehen."));
    let verify = g.ok(&["verify"]);
    assert!(verify.contains("0 problem(s)"), "{verify}");
}

#[test]
fn codex_rollouts_import_as_chains_and_export_byte_for_byte() {
    let g = Grove::new();
    g.ok(&["import", foreign("codex").to_str().unwrap()]);
    for rel in [
        "codex/2025/05/07/rollout-2025-05-07T17-24-21-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl",
        "codex/2026/11/30/rollout-2026-11-30T09-15-00-0199ab12-3456-7def-8abc-0123456789ab.jsonl",
    ] {
        let path = foreign(rel);
        let id = path.file_stem().unwrap().to_str().unwrap();
        let out = g.run(&["export", id, "--format", "codex"]);
        assert!(out.status.success());
        assert_eq!(out.stdout, std::fs::read(&path).unwrap(), "{id}");
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        let store = g.open();
        let session = store.session(id).unwrap();
        // A chain: each line the child of the one before; the leaf is the last.
        for n in 2..=lines {
            assert_eq!(
                session.entry(&format!("L{n}")).unwrap().parent_id(),
                Some(format!("L{}", n - 1))
            );
        }
        assert_eq!(session.leaf().unwrap(), Some(format!("L{lines}")));
    }
    let tree = g.ok(&[
        "tree",
        "rollout-2026-11-30T09-15-00-0199ab12-3456-7def-8abc-0123456789ab",
    ]);
    assert!(tree.contains("function_call: [call shell]"), "{tree}");
    assert!(tree.contains("assistant: Zwei Einträge"), "{tree}");
}

#[test]
fn a_file_without_a_final_newline_or_with_crlf_comes_back_as_it_was() {
    let g = Grove::new();
    let path = foreign("claude-code/unterminated.jsonl");
    g.ok(&["import", "--format", "claude-code", path.to_str().unwrap()]);
    let out = g.run(&["export", "unterminated", "--format", "claude-code"]);
    assert_eq!(out.stdout, std::fs::read(&path).unwrap());
}

#[test]
fn malformed_and_truncated_lines_fail_naming_the_line_and_store_nothing() {
    let g = Grove::new();
    g.ok(&[
        "import",
        foreign("claude-code/unterminated.jsonl").to_str().unwrap(),
    ]);
    for (name, needle) in [
        (
            "malformed.jsonl",
            "line 3 (byte 1167): not a claude-code line: a JSON object was expected",
        ),
        (
            "truncated.jsonl",
            "line 3 (byte 1167): not a claude-code line: EOF while parsing",
        ),
    ] {
        let path = foreign(&format!("claude-code/{name}"));
        let (code, err) = g.fail(&["import", "--format", "claude-code", path.to_str().unwrap()]);
        assert_ne!(code, 0);
        assert!(err.contains(name) && err.contains(needle), "{err}");
    }
    let (_, err) = g.fail(&[
        "import",
        "--lenient",
        foreign("claude-code/malformed.jsonl").to_str().unwrap(),
    ]);
    assert!(err.contains("keeps every line"), "{err}");
    // Only the good file's session is there.
    let listed = g.ok(&["ls"]);
    assert_eq!(listed.lines().count(), 1, "{listed}");
}

#[test]
fn exports_of_the_wrong_format_are_refused() {
    let g = Grove::new();
    g.ok(&[
        "import",
        foreign("claude-code/unterminated.jsonl").to_str().unwrap(),
    ]);
    let (_, err) = g.fail(&["export", "unterminated", "--format", "codex"]);
    assert!(
        err.contains("imported from a claude-code transcript, not codex"),
        "{err}"
    );
    g.ok(&[
        "import",
        super::fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let (_, err) = g.fail(&["export", "seed-harness", "--format", "claude-code"]);
    assert!(
        err.contains("was not imported from a claude-code transcript"),
        "{err}"
    );
    // `auto` takes pi's JSONL as before.
    assert!(g.ok(&["ls"]).contains("seed-harness"));
}
