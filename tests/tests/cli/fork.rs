//! `grove fork`: the three modes and both positions, against the library's fork.

use grove::{ForkMode, ForkOptions, ForkPosition};
use serde_json::{json, Value};

use super::{fixture, library, Grove};

/// The stored lines of a session's log.
fn log_lines(store: &grove::Store, id: &str) -> Vec<String> {
    store
        .session(id)
        .unwrap()
        .log()
        .map(|e| e.unwrap().line)
        .collect()
}

#[test]
fn modes_and_positions_equal_the_library() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-labels.jsonl").to_str().unwrap(),
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let lib = library(&["edge-labels.jsonl", "edge-seed-harness.jsonl"]);
    // (source, args after the source, the library's options)
    let cases: Vec<(&str, Vec<&str>, ForkOptions)> = vec![
        (
            "seed-harness",
            vec!["67e6"],
            ForkOptions {
                entry: Some("67e60f1b".into()),
                ..ForkOptions::default()
            },
        ),
        (
            "seed-harness",
            vec!["0595", "--at", "--mode", "path"],
            ForkOptions {
                entry: Some("05952c4d".into()),
                position: ForkPosition::At,
                ..ForkOptions::default()
            },
        ),
        (
            "labels",
            vec!["@", "--at", "--mode", "rechained"],
            ForkOptions {
                entry: Some(lib.session("labels").unwrap().leaf().unwrap().unwrap()),
                position: ForkPosition::At,
                mode: ForkMode::Rechained,
                ..ForkOptions::default()
            },
        ),
        (
            "seed-harness",
            vec!["73e6", "--before", "--mode", "copy"],
            ForkOptions {
                entry: Some("73e6edad".into()),
                mode: ForkMode::Copy,
                ..ForkOptions::default()
            },
        ),
        ("seed-harness", vec![], ForkOptions::default()),
    ];
    let mut expected = Vec::new();
    for (k, (source, extra, options)) in cases.into_iter().enumerate() {
        let id = format!("fork-{k}");
        let mut args = vec!["fork", source];
        args.extend(extra);
        args.extend(["--id", id.as_str(), "--json"]);
        assert_eq!(g.json(&args), json!({ "session": id }), "{args:?}");
        let src = lib.session(source).unwrap();
        let forked = lib
            .fork(
                &src,
                ForkOptions {
                    id: Some(id.clone()),
                    ..options
                },
            )
            .unwrap();
        expected.push((id, source, log_lines(&lib, forked.id())));
    }
    let rows = g.json(&["ls", "--json"]);
    let store = g.open();
    for (id, source, lines) in expected {
        let got = log_lines(&store, &id);
        // Rechained label entries get fresh random ids: compare those lines without them.
        assert_eq!(got.len(), lines.len(), "{id}");
        for (a, b) in got.iter().zip(&lines) {
            let (mut a, mut b): (Value, Value) = (
                serde_json::from_str(a).unwrap(),
                serde_json::from_str(b).unwrap(),
            );
            if a["type"] == "label" && id == "fork-2" {
                for v in [&mut a, &mut b] {
                    v["id"] = Value::Null;
                    v["parentId"] = Value::Null;
                }
            }
            assert_eq!(a, b, "{id}");
        }
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == json!(id))
            .unwrap();
        assert_eq!(row["parentSessionId"], json!(source));
        assert_eq!(row["lineage"], json!([source]));
    }
}

#[test]
fn human_output_cwd_and_errors() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let out = g.ok(&[
        "fork",
        "seed-harness",
        "67e6",
        "--id",
        "child",
        "--cwd",
        "/elsewhere",
    ]);
    assert_eq!(
        out,
        "session child (2 entries, leaf 8bccc31b)\nlineage: child <- seed-harness\n"
    );
    // A fork of the fork: the lineage goes back to the first session.
    let out = g.ok(&["fork", "child", "--id", "grandchild"]);
    assert!(
        out.ends_with("lineage: grandchild <- child <- seed-harness\n"),
        "{out}"
    );
    let rows = g.json(&["ls", "--json"]);
    let child = rows.as_array().unwrap().iter().find(|r| r["id"] == "child");
    assert_eq!(child.unwrap()["cwd"], "/elsewhere");
    assert!(g.ok(&["ls"]).contains("<- child <- seed-harness"));

    // --before needs a user message.
    let (code, err) = g.fail(&["fork", "seed-harness", "a36c"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: InvalidForkTarget") && err.contains("--at"),
        "{err}"
    );
    // A taken id; the root position; both positions at once.
    let (_, err) = g.fail(&["fork", "seed-harness", "--id", "child"]);
    assert!(err.contains("error: SessionExists"), "{err}");
    let (_, err) = g.fail(&["fork", "seed-harness", "root"]);
    assert!(err.contains("error: InvalidInput"), "{err}");
    let (code, _) = g.fail(&["fork", "seed-harness", "67e6", "--at", "--before"]);
    assert_eq!(code, 2);
}
