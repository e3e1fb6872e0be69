//! Write commands: append, goto, demo; each checked by reading back.

use serde_json::{json, Value};

use super::{fixture, Grove};

/// The `message.content[0].text` (or string content) of each context message.
fn context_texts(ctx: &Value) -> Vec<String> {
    ctx["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            c => c[0]["text"].as_str().unwrap().to_owned(),
        })
        .collect()
}

fn last_entry(g: &Grove, session: &str) -> Value {
    let path = g.json(&["path", session, "--json"]);
    path.as_array()
        .unwrap()
        .last()
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn append_then_goto() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);

    // A message (a "role" key) is wrapped in a message entry at the leaf.
    let msg = r#"{"role":"user","content":[{"type":"text","text":"plan C"}],"timestamp":7}"#;
    let out = g.run_with_stdin(&["append", "seed"], msg);
    super::assert_success(&["append"], &out);
    let id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let last = last_entry(&g, "seed-harness");
    assert_eq!(last["id"], json!(id));
    assert_eq!(last["parentId"], json!("a36c3dcf"));
    assert_eq!(last["message"], serde_json::from_str::<Value>(msg).unwrap());

    // An entry (a "type" key) keeps its fields; its "id" is used.
    let entry = r#"{"type":"custom","id":"note-1","customType":"memo","data":{"z":1,"a":2}}"#;
    let out = g.run_with_stdin(&["append", "seed-harness", "--json"], entry);
    super::assert_success(&["append"], &out);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!({"id": "note-1"})
    );
    let stored = g.ok(&["path", "seed-harness", "--json"]);
    assert!(
        stored.contains(r#""customType":"memo","data":{"z":1,"a":2}}"#),
        "{stored}"
    );

    // The same entry again is a retry: answered with its id, nothing written.
    let out = g.run_with_stdin(&["append", "seed-harness", "--json"], entry);
    super::assert_success(&["append"], &out);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!({"id": "note-1"})
    );
    assert_eq!(g.ok(&["path", "seed-harness", "--json"]), stored);
    // Another entry under the id is refused.
    let other = entry.replace(r#""z":1"#, r#""z":3"#);
    let out = g.run_with_stdin(&["append", "seed-harness"], &other);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: DuplicateId"));

    // goto a prefix, then `@-`, then root.
    g.ok(&["goto", "seed-harness", "73e6"]);
    assert_eq!(last_entry(&g, "seed-harness")["id"], json!("73e6edad"));
    let ctx = g.json(&["context", "seed-harness", "--json"]);
    assert_eq!(context_texts(&ctx), ["user 1", "assistant 1", "plan A"]);
    g.ok(&["goto", "seed-harness", "@-"]);
    assert_eq!(last_entry(&g, "seed-harness")["id"], json!("8bccc31b"));
    assert_eq!(
        g.json(&["goto", "seed-harness", "root", "--json"]),
        json!({"leaf": null})
    );
    assert_eq!(g.ok(&["path", "seed-harness", "--json"]), "[]\n");

    // Appending at the root position starts a second root.
    let out = g.run_with_stdin(
        &["append", "seed-harness"],
        r#"{"role":"user","content":"again","timestamp":8}"#,
    );
    super::assert_success(&["append"], &out);
    assert_eq!(
        g.json(&["tree", "seed-harness", "--json"])
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // The moves are in the store: the library sees them after the processes exit.
    let store = g.open();
    let session = store.session("seed-harness").unwrap();
    let history = session.leaf_history().unwrap();
    let targets: Vec<Option<&str>> = history.iter().skip(1).map(|(_, t)| t.as_deref()).collect();
    assert_eq!(targets, [Some("73e6edad"), Some("8bccc31b"), None]);
}

#[test]
fn append_rejects_bad_input() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    for input in ["", "[1]", r#"{"x":1}"#, r#"{"role":"user"} {}"#, "not json"] {
        let out = g.run_with_stdin(&["append", "seed-harness"], input);
        assert_eq!(out.status.code(), Some(1), "{input:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("error: InvalidInput") && err.contains("hint:"),
            "{input:?}: {err}"
        );
    }
}

#[test]
fn demo_builds_the_seed_scenario_twice() {
    let g = Grove::new();
    for _ in 0..2 {
        let out = g.ok(&["demo"]);
        assert!(out.contains("plan A") && out.contains("plan B"), "{out}");
        let after_context = out.split("context").nth(1).unwrap();
        let roles: Vec<&str> = after_context.lines().skip(2).collect();
        assert_eq!(
            roles,
            [
                "user: user 1",
                "assistant: assistant 1",
                "user: plan B",
                "assistant: assistant B"
            ]
        );
    }
    let sessions = g.json(&["ls", "--json"]);
    let sessions = sessions.as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    for s in sessions {
        let id = s["id"].as_str().unwrap();
        assert_eq!(s["entries"], json!(6));
        let ctx = g.json(&["context", id, "--json"]);
        assert_eq!(
            context_texts(&ctx),
            ["user 1", "assistant 1", "plan B", "assistant B"]
        );
        assert_eq!(
            ctx["model"],
            json!({"provider": "demo", "modelId": "demo-model"})
        );
        let tree = g.json(&["tree", id, "--json"]);
        let second = &tree[0]["children"][0];
        assert_eq!(
            second["children"].as_array().unwrap().len(),
            2,
            "two branches: {tree}"
        );
    }
}
