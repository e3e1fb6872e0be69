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

#[test]
fn watch_follows_files_as_they_grow_and_goes_on_where_it_stopped() {
    let g = Grove::new();
    let source = std::fs::read(foreign(&format!(
        "claude-code/-home-user-work-demo/{SESSION}.jsonl"
    )))
    .unwrap();
    let lines: Vec<&[u8]> = source.split_inclusive(|&b| b == b'\n').collect();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let file = project.join("s1.jsonl");
    let write = |parts: &[&[u8]]| {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .unwrap();
        for part in parts {
            std::io::Write::write_all(&mut f, part).unwrap();
        }
    };
    let round = || {
        g.ok(&[
            "import",
            "--watch",
            "--rounds",
            "1",
            "--json",
            project.to_str().unwrap(),
        ])
    };
    let added = |out: &str| -> Vec<(String, u64)> {
        out.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .map(|v| {
                (
                    v["session"].as_str().unwrap().to_owned(),
                    v["lines"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    // Nothing yet: an empty directory, then a file with half a line.
    assert_eq!(round(), "");
    write(&[&lines[0][..10]]);
    assert_eq!(round(), "");
    // Its first lines, then more and a line being written: only complete lines are taken,
    // each run going on where the last stopped (every run is a restart).
    write(&[&lines[0][10..], lines[1], lines[2], lines[3]]);
    assert_eq!(added(&round()), [("s1".to_owned(), 4)]);
    write(&lines[4..12]);
    write(&[&lines[12][..20]]);
    assert_eq!(added(&round()), [("s1".to_owned(), 12)]);
    assert_eq!(added(&round()), [("s1".to_owned(), 12)]);
    write(&[&lines[12][20..]]);
    write(&lines[13..]);
    // A new file appears beside it.
    std::fs::copy(
        foreign("claude-code/unterminated.jsonl"),
        project.join("s2.jsonl"),
    )
    .unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(project.join("s2.jsonl"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"\n"))
        .unwrap();
    let out = round();
    assert_eq!(
        added(&out),
        [("s1".to_owned(), lines.len() as u64), ("s2".to_owned(), 2)]
    );
    let exported = g.run(&["export", "s1", "--format", "claude-code"]);
    assert_eq!(exported.stdout, source);
    // A malformed line leaves that file (reported), a rewritten file too; the rest goes on.
    write(&[b"not json\n"]);
    std::fs::write(
        project.join("s2.jsonl"),
        b"{\"type\":\"user\",\"uuid\":\"x\"}\n",
    )
    .unwrap();
    let out = g.run(&[
        "import",
        "--watch",
        "--rounds",
        "1",
        project.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("s1.jsonl: left:") && err.contains("not a claude-code line"),
        "{err}"
    );
    assert!(
        err.contains("s2.jsonl: left:") && err.contains("rewritten"),
        "{err}"
    );
    // The session kept every good line; verify is clean.
    let store = g.open();
    let session = store.session("s1").unwrap();
    assert_eq!(session.leaf().unwrap(), Some(uuid(13)));
    drop(session);
    drop(store);
    assert!(g.ok(&["verify"]).contains("0 problem(s)"));
}

/// pi's newer harness files, written by pi's own `JsonlSessionRepo` (0.84.4: lanes, records and
/// facts; 0.99.1: one commit a line), import with pi's tree and leaf and export byte for byte.
#[test]
fn pi_lane_and_commit_files_import_as_pi_trees_and_export_byte_for_byte() {
    let g = Grove::new();
    for (dir, format, id, leaf, branch) in [
        (
            "pi-lanes",
            "pi-lanes",
            "0198aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee",
            "e0000002",
            "e0000003",
        ),
        (
            "pi-commits",
            "pi-commits",
            "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee",
            "01a24e55-0480-7068-857d-845ddf73c58d",
            "01a24e55-0485-7068-857d-845e21f84284",
        ),
    ] {
        let dir = foreign(dir);
        let out = g.ok(&["import", "--json", dir.to_str().unwrap()]);
        assert!(out.contains(id), "{out}");
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let exported = g.run(&["export", id, "--format", format]);
        assert_eq!(exported.stdout, std::fs::read(&file).unwrap(), "{format}");
        let store = g.open();
        let session = store.session(id).unwrap();
        // The main lane's (or branch's) leaf; the other lane a branch off the first message.
        assert_eq!(session.leaf().unwrap().as_deref(), Some(leaf));
        let first = session.entry(branch).unwrap().parent_id().unwrap();
        assert!(
            first == "e0000001" || first == "01a24e55-047d-7068-857d-8459e7c6846b",
            "{first}"
        );
        assert_eq!(session.entry(&first).unwrap().parent_id(), None);
        drop(session);
        drop(store);
        let tree = g.ok(&["tree", id, "--ascii"]);
        assert!(tree.contains("user: Wie ist das Wetter?"), "{tree}");
        assert!(tree.contains("assistant: Regnerisch."), "{tree}");
    }
}

/// The context of an imported transcript follows the tool's own rules: Claude Code's chain from
/// the leaf to the compaction boundary (at an older entry, the branch it was on), Codex's history
/// with the compaction standing for what came before; the CLI, the built context and the streamed
/// one agree.
#[test]
fn contexts_follow_the_tools_own_rules() {
    let g = Grove::new();
    g.ok(&[
        "import",
        foreign("claude-code/-home-user-work-demo")
            .to_str()
            .unwrap(),
    ]);
    let tools = foreign("claude-code/-home-user-work-tools");
    g.ok(&["import", tools.to_str().unwrap()]);
    g.ok(&["import", foreign("codex").to_str().unwrap()]);
    let json = |args: &[&str]| -> serde_json::Value { serde_json::from_str(&g.ok(args)).unwrap() };
    let text = |m: &serde_json::Value| -> String {
        match &m["content"] {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str().or(b["type"].as_str()))
                .collect::<Vec<_>>()
                .join("|"),
            other => other.to_string(),
        }
    };

    let claude = json(&["context", SESSION, "--json"]);
    let messages: Vec<String> = claude["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(text)
        .collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[0].starts_with("This session is being continued"));
    assert_eq!(messages[1..], ["Danke!", "Gern geschehen."]);
    assert_eq!(
        claude["model"],
        serde_json::json!({"modelId": "claude-sonnet-4-5"})
    );

    let codex_id = "rollout-2026-11-30T09-15-00-0199ab12-3456-7def-8abc-0123456789ab";
    let codex = json(&["context", codex_id, "--json"]);
    let messages: Vec<String> = codex["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(text)
        .collect();
    assert_eq!(
        messages,
        [
            "Liste die Dateien auf",
            "Summary: the user listed the files of the repository.",
            "Danke"
        ]
    );
    assert_eq!(
        codex["model"],
        serde_json::json!({"modelId": "gpt-5-codex"})
    );
    assert_eq!(codex["thinkingLevel"], "medium");

    let newer = "rollout-2026-12-02T08-00-00-019a0000-1111-7222-8333-444455556666";
    // Both newer fixtures come back byte for byte.
    for (id, format, path) in [
        (
            newer,
            "codex",
            foreign(&format!("codex/2026/12/02/{newer}.jsonl")),
        ),
        (
            "33333333-4444-4555-8666-777777777777",
            "claude-code",
            foreign("claude-code/-home-user-work-tools/33333333-4444-4555-8666-777777777777.jsonl"),
        ),
    ] {
        let out = g.run(&["export", id, "--format", format]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, std::fs::read(&path).unwrap(), "{id}");
    }

    let store = g.open();
    let options = grove::ContextOptions::grove();
    // Before Claude Code's compaction, on the branch of the second question.
    let session = store.session(SESSION).unwrap();
    let at = uuid(7);
    let before = session.build_context_with(Some(&at), options).unwrap();
    let texts: Vec<String> = before
        .messages
        .iter()
        .map(|m| text(&serde_json::from_str(m).unwrap()))
        .collect();
    assert_eq!(
        texts,
        [
            "Wie ist das Wetter in Zürich?",
            "thinking|tool_use",
            "tool_result",
            "Sonnig, 24 °C.",
            "Und nächste Woche?",
            "Wechselhaft."
        ]
    );
    // Before Codex's compaction: the items as they were, the call answered.
    let rollout = store.session(codex_id).unwrap();
    let early = rollout.build_context_with(Some("L8"), options).unwrap();
    let kinds: Vec<String> = early
        .messages
        .iter()
        .map(|m| {
            serde_json::from_str::<serde_json::Value>(m).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "message"
        ]
    );
    // A newer rollout with every item kind: a rollback, a compaction with its replacement.
    let kinds_at = |leaf: Option<&str>| -> Vec<String> {
        let ctx = store
            .session(newer)
            .unwrap()
            .build_context_with(leaf, options)
            .unwrap();
        ctx.messages
            .iter()
            .map(|m| {
                let v: serde_json::Value = serde_json::from_str(m).unwrap();
                match v["role"].as_str() {
                    Some(role) => role.to_owned(),
                    None => v["type"].as_str().unwrap().to_owned(),
                }
            })
            .collect()
    };
    // Before the rollback: the system message, the ghost snapshot, the unknown item and the
    // output without its call left out; the interrupted call answered "aborted".
    let before_rollback = [
        "developer",
        "user",
        "user",
        "reasoning",
        "local_shell_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
        "assistant",
    ];
    let mut expected: Vec<&str> = before_rollback.to_vec();
    expected.extend(["user", "function_call", "function_call_output"]);
    assert_eq!(kinds_at(Some("L22")), expected);
    // After it, the rolled-back turn is gone and the next one in its place.
    assert_eq!(kinds_at(Some("L26")), expected);
    let texts_at = |leaf: &str| -> Vec<String> {
        let ctx = store
            .session(newer)
            .unwrap()
            .build_context_with(Some(leaf), options)
            .unwrap();
        ctx.messages
            .iter()
            .map(|m| text(&serde_json::from_str(m).unwrap()))
            .collect()
    };
    assert!(texts_at("L22").contains(&"Und b.txt?".to_owned()));
    assert!(!texts_at("L26").contains(&"Und b.txt?".to_owned()));
    assert!(texts_at("L26").contains(&"Und c.txt?".to_owned()));
    // At the leaf: the replacement history, then what followed it, with the last settings.
    assert_eq!(
        kinds_at(None),
        ["user", "user", "compaction", "user", "assistant"]
    );
    let last = store.session(newer).unwrap().build_context().unwrap();
    assert_eq!(
        last.model
            .as_ref()
            .map(|m| (m.provider.clone(), m.model_id.clone())),
        Some((
            Some("\"openai\"".to_owned()),
            Some("\"gpt-5.1-codex-max\"".to_owned())
        ))
    );
    assert_eq!(last.thinking_level, "\"xhigh\"");
    // Streamed and built agree, at the leaf and at an entry.
    for (s, leaf) in [
        (&session, None),
        (&session, Some(at.as_str())),
        (&rollout, None),
    ] {
        let built = s.build_context_with(leaf, options).unwrap().to_json();
        let mut streamed = Vec::new();
        s.write_context(leaf, options, &mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), built);
        let scratch = s
            .build_context_from_scratch(leaf, options)
            .unwrap()
            .to_json();
        assert_eq!(scratch, built);
    }
}

/// A pi 0.84 file whose `main` lane was moved to an entry written on another lane: the import's
/// leaf is that entry, and the context there is its branch (pi's `buildSessionContext`).
#[test]
fn a_moved_main_lane_is_the_leaf_and_its_branch_the_context() {
    let g = Grove::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("moved.jsonl");
    let lines = [
        r#"{"kind":"header","version":4,"id":"moved","createdAt":1796610557882,"cwd":"/w"}"#,
        r#"{"kind":"entry","lane":"main","type":"message","id":"e1","message":{"role":"user","content":"eins"},"parentId":null,"seq":1,"timestamp":1796610557900}"#,
        r#"{"kind":"lane","seq":2,"lane":"side","leafId":"e1"}"#,
        r#"{"kind":"entry","lane":"side","type":"message","id":"e2","message":{"role":"user","content":"zwei"},"parentId":"e1","seq":3,"timestamp":1796610557901}"#,
        r#"{"kind":"lane","seq":4,"lane":"main","leafId":"e2"}"#,
        r#"{"kind":"fact","seq":5,"fact":"name","name":"verschoben"}"#,
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    g.ok(&["import", file.to_str().unwrap()]);
    let ctx: serde_json::Value =
        serde_json::from_str(&g.ok(&["context", "moved", "--json"])).unwrap();
    let contents: Vec<&str> = ctx["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["eins", "zwei"]);
    // At e1: e1's branch alone.
    let at_e1: serde_json::Value =
        serde_json::from_str(&g.ok(&["context", "moved", "--from", "e1", "--json"])).unwrap();
    assert_eq!(at_e1["messages"].as_array().unwrap().len(), 1);
    let store = g.open();
    assert_eq!(
        store.session("moved").unwrap().leaf().unwrap().as_deref(),
        Some("e2")
    );
}
