//! `grove label` and `grove name`.

use serde_json::json;

use super::{fixture, Grove};

#[test]
fn label_and_clear() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let out = g.json(&["label", "seed-harness", "73e6", "  plan A  ", "--json"]);
    let id = out["id"].as_str().unwrap().to_owned();
    assert_eq!(
        out,
        json!({"id": id, "targetId": "73e6edad", "label": "plan A"})
    );
    let tree = g.json(&["tree", "seed-harness", "--json"]);
    assert_eq!(tree[0]["children"][0]["children"][0]["label"], "plan A");
    assert!(g
        .ok(&["tree", "seed-harness"])
        .contains("73e6 user: plan A [plan A]"));
    {
        let store = g.open();
        let session = store.session("seed-harness").unwrap();
        assert_eq!(session.label("73e6edad").unwrap().unwrap().set_by, id);
        assert_eq!(
            session.leaf().unwrap(),
            Some(id),
            "the label entry is the leaf"
        );
    }

    assert_eq!(
        g.ok(&["label", "seed-harness", "73e6", "--clear"]),
        "73e6 user: plan A (no label)\n"
    );
    assert_eq!(
        g.ok(&["label", "seed-harness", "a36c", "done"]),
        "a36c assistant: assistant B [done]\n"
    );
    let tree = g.json(&["tree", "seed-harness", "--json"]);
    assert!(tree[0]["children"][0]["children"][0].get("label").is_none());

    let (code, _) = g.fail(&["label", "seed-harness", "73e6"]);
    assert_eq!(code, 2, "TEXT or --clear is required");
    let (code, _) = g.fail(&["label", "seed-harness", "73e6", "x", "--clear"]);
    assert_eq!(code, 2);
    let (code, err) = g.fail(&["label", "seed-harness", "nope", "x"]);
    assert_eq!(code, 1);
    assert!(err.contains("error: EntryNotFound"), "{err}");
}

#[test]
fn name_is_normalized_and_listed() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(
        g.ok(&["name", "seed-h", " Two\r\nplans "]),
        "name: Two plans\n"
    );
    let rows = g.json(&["ls", "--json"]);
    assert_eq!(rows[0]["name"], "Two plans");
    assert!(g.ok(&["ls"]).contains("\"Two plans\""));

    let out = g.json(&["name", "seed-harness", "", "--json"]);
    assert_eq!(out["name"], json!(null));
    assert!(out["id"].is_string());
    assert_eq!(g.json(&["ls", "--json"])[0]["name"], json!(null));
}
