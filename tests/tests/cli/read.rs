//! Read commands: their `--json` output equals what the library computes.

use grove::{ContextOptions, ImportOptions, Tree};
use serde_json::{json, Value};

use super::{fixture, library, lines_json, Grove};

/// Fixtures with branches, labels, compactions (branch and path differ) and retained tails.
const FIXTURES: &[&str] = &[
    "edge-seed-harness.jsonl",
    "edge-labels.jsonl",
    "edge-nested-compaction-harness.jsonl",
    "edge-retained-tail.jsonl",
    "edge-leaf-last-null.jsonl",
];

/// Imports the fixtures through the CLI; checks each `--json` line against the library.
fn import_all(g: &Grove) -> grove::Store {
    let lib = library(&[]);
    for f in FIXTURES {
        let path = fixture(f);
        let report = lib.import_file(&path, ImportOptions::default()).unwrap();
        let got = g.ok(&["import", "--json", path.to_str().unwrap()]);
        let expected = json!({"session": report.session, "entries": report.entries});
        assert_eq!(
            serde_json::from_str::<Value>(&got).unwrap(),
            expected,
            "{f}"
        );
    }
    lib
}

/// The tree as nested JSON, the reference for `tree --json`.
fn expected_tree(tree: &Tree) -> Value {
    fn node(tree: &Tree, i: usize) -> Value {
        let n = &tree.nodes[i];
        let mut obj = serde_json::Map::new();
        obj.insert("id".into(), json!(n.id));
        if let Some(l) = &n.label {
            obj.insert("label".into(), json!(l));
        }
        let children = n.children.iter().map(|&c| node(tree, c)).collect();
        obj.insert("children".into(), Value::Array(children));
        Value::Object(obj)
    }
    Value::Array(tree.roots.iter().map(|&r| node(tree, r)).collect())
}

#[test]
fn json_outputs_equal_the_library() {
    let g = Grove::new();
    let lib = import_all(&g);
    for summary in lib.sessions().unwrap() {
        let id = summary.id.as_str();
        let session = lib.session(id).unwrap();

        assert_eq!(
            g.ok(&["branch", id, "--json"]),
            lines_json(&session.branch(None).unwrap()),
            "{id}"
        );
        assert_eq!(
            g.ok(&["path", id, "--json"]),
            lines_json(&session.path_to_root(None).unwrap()),
            "{id}"
        );
        assert_eq!(
            g.json(&["tree", id, "--json"]),
            expected_tree(&session.tree().unwrap()),
            "{id}"
        );

        let presets = [
            ("grove", ContextOptions::grove()),
            ("harness", ContextOptions::pi_harness()),
            ("cli", ContextOptions::pi_cli()),
        ];
        for (name, options) in presets {
            let expected = session.build_context_with(None, options).unwrap().to_json();
            let got = g.ok(&["context", id, "--preset", name, "--json"]);
            assert_eq!(got, format!("{expected}\n"), "{id} {name}");
        }
        let default = g.ok(&["context", id, "--json"]);
        assert_eq!(
            default,
            format!("{}\n", session.build_context().unwrap().to_json())
        );

        // --from with a unique prefix of every entry: the walks from there.
        for entry in session
            .entries()
            .map(Result::unwrap)
            .filter(|e| !e.node.shadowed)
        {
            let prefix = &entry.id()[..6.min(entry.id().len())];
            let Ok(resolved) = session.resolve_entry(prefix) else {
                continue; // not unique
            };
            let target = resolved.unwrap();
            let branch = session.branch(Some(&target));
            match branch {
                Ok(b) => assert_eq!(
                    g.ok(&["branch", id, "--from", prefix, "--json"]),
                    lines_json(&b)
                ),
                Err(e) => {
                    let (_, err) = g.fail(&["branch", id, "--from", prefix, "--json"]);
                    assert!(err.contains(e.name()), "{err}");
                }
            }
            let path = session.path_to_root(Some(&target)).unwrap();
            assert_eq!(
                g.ok(&["path", id, "--from", prefix, "--json"]),
                lines_json(&path)
            );
        }
    }

    let listed = g.json(&["ls", "--json"]);
    let rows = listed.as_array().unwrap();
    let sessions = lib.sessions().unwrap();
    assert_eq!(rows.len(), sessions.len());
    for (row, s) in rows.iter().zip(&sessions) {
        assert_eq!(row["id"], json!(s.id));
        assert_eq!(row["created"], json!(s.created));
        assert_eq!(row["cwd"], json!(s.cwd));
        assert_eq!(row["entries"], json!(s.entries));
        assert_eq!(row["parentSessionId"], json!(s.parent_session_id));
        assert_eq!(row["parentSession"], json!(s.parent_session));
        assert_eq!(
            row["name"],
            json!(lib.session(&s.id).unwrap().name().unwrap())
        );
        assert_eq!(row["lineage"], json!([]));
    }
}

#[test]
fn human_output_marks_the_leaf_and_labels() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let tree = g.ok(&["tree", "seed-h"]);
    let leaf_line = tree.lines().find(|l| l.contains("@ a36c")).unwrap();
    assert!(leaf_line.contains("assistant B"), "{tree}");
    assert!(
        tree.contains("│ ○ 73e6 user: plan A") && tree.contains("├─╮"),
        "{tree}"
    );

    let branch = g.ok(&["branch", "seed-harness"]);
    let first: Vec<&str> = branch
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(first, ["5700", "8bcc", "67e6", "a36c"]);

    let ctx = g.ok(&["context", "seed-harness"]);
    let lines: Vec<&str> = ctx.lines().collect();
    assert!(
        lines[0].starts_with("model: anthropic/claude-sonnet-4-5"),
        "{ctx}"
    );
    assert_eq!(
        &lines[1..],
        [
            "user: user 1",
            "assistant: assistant 1",
            "user: plan B",
            "assistant: assistant B"
        ]
    );

    g.ok(&["import", fixture("edge-labels.jsonl").to_str().unwrap()]);
    // The labelled entry is itself a label entry: shown with --all.
    assert!(g
        .ok(&["tree", "labels", "--all"])
        .contains("[label on a label entry]"));
}

#[test]
fn ls_shows_the_lineage() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    {
        let store = g.open();
        let child = grove::CreateSession {
            id: Some("child".into()),
            cwd: "/w".into(),
            parent_session_id: Some("seed-harness".into()),
            ..Default::default()
        };
        store.create_session(child).unwrap();
        let grandchild = grove::CreateSession {
            id: Some("grandchild".into()),
            cwd: "/w".into(),
            parent_session_id: Some("child".into()),
            ..Default::default()
        };
        store.create_session(grandchild).unwrap();
    }
    let rows = g.json(&["ls", "--json"]);
    let lineage: Vec<(&str, &Value)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), &r["lineage"]))
        .collect();
    assert_eq!(
        lineage,
        [
            ("child", &json!(["seed-harness"])),
            ("grandchild", &json!(["child", "seed-harness"])),
            ("seed-harness", &json!([])),
        ]
    );
    assert!(g.ok(&["ls"]).contains("<- child <- seed-harness"));
}

#[test]
fn export_round_trips_byte_for_byte() {
    let g = Grove::new();
    let original = std::fs::read(fixture("edge-seed-harness.jsonl")).unwrap();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let out = g.run(&["export", "seed-harness"]);
    super::assert_success(&["export"], &out);
    assert_eq!(out.stdout, original);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.jsonl");
    g.ok(&["export", "seed-h", "-o", file.to_str().unwrap()]);
    assert_eq!(std::fs::read(&file).unwrap(), original);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["out.jsonl"], "no temporary file left behind");

    // Re-importing the export into another store and exporting again gives the same bytes.
    let g2 = Grove::new();
    g2.ok(&["import", file.to_str().unwrap()]);
    let again = g2.run(&["export", "seed-harness"]);
    assert_eq!(again.stdout, original);

    // The cli flavor has no leaf lines and ends with the active leaf.
    let cli = g.ok(&["export", "seed-harness", "--flavor", "cli"]);
    assert!(!cli.contains(r#""type":"leaf""#));
    assert!(cli.lines().last().unwrap().contains(r#""id":"a36c3dcf""#));
}

#[test]
fn show_prints_an_entry_with_the_digests_that_chain_it_to_the_root() {
    let g = Grove::new();
    let lib = import_all(&g);
    let hex = grove::codec::digest::hex;
    for summary in lib.sessions().unwrap() {
        let id = summary.id.as_str();
        let session = lib.session(id).unwrap();
        let path = session
            .path_to_root(session.leaf().unwrap().as_deref())
            .unwrap();
        if path.is_empty() {
            // The leaf is the root position: `@` names no entry.
            let (code, err) = g.fail(&["show", id, "@"]);
            assert_eq!(code, 1, "{err}");
            continue;
        }
        // The root, the leaf's parent and the leaf (`@`).
        let picks = [0, path.len().saturating_sub(2), path.len() - 1];
        for (n, &i) in picks.iter().enumerate() {
            let entry = &path[i];
            let spec = if n == 2 { "@" } else { entry.id() };
            let text = g.ok(&["show", id, spec, "--json"]);
            assert!(
                text.starts_with(&format!("{{\"entry\":{},\"seq\":", entry.line)),
                "{id} {spec}: the entry exactly as stored: {text}"
            );
            let v: Value = serde_json::from_str(&text).unwrap();
            let content = *blake3::hash(entry.line.as_bytes()).as_bytes();
            assert_eq!(v["digest"], hex(&content), "{id} {spec}");
            assert_eq!(v["pathDigest"], hex(&entry.node.digest), "{id} {spec}");
            assert_eq!(v["seq"], entry.seq);
            let parent = match i {
                0 => [0u8; 32],
                _ => path[i - 1].node.digest,
            };
            assert_eq!(v["parentPathDigest"], hex(&parent), "{id} {spec}");
            let human = g.ok(&["show", id, spec]);
            assert!(
                human.contains(&format!("path digest  {}", hex(&entry.node.digest)))
                    && human.contains(&format!("digest       {}", hex(&content)))
                    && human.contains(&format!("id           {}", entry.id())),
                "{human}"
            );
        }
        let (code, err) = g.fail(&["show", id, "root"]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("root position"), "{err}");
        let (code, err) = g.fail(&["show", id, "zzzzzzzz"]);
        assert_eq!(code, 1, "{err}");
    }
}
