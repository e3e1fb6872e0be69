//! `grove tree`: the graph drawing (glyphs, forks, hidden bookkeeping, depth).

use std::io::Write;

use super::{fixture, Grove};

fn import(g: &Grove, name: &str) {
    g.ok(&["import", fixture(name).to_str().unwrap()]);
}

#[test]
fn seed_graph_unicode_and_ascii() {
    let g = Grove::new();
    import(&g, "edge-seed-harness.jsonl");
    assert_eq!(
        g.ok(&["tree", "seed-harness"]),
        "\
◆ 5700 user: user 1
◆ 8bcc assistant: assistant 1
├─╮
│ ○ 73e6 user: plan A
│ ○ 0595 assistant: assistant A
◆ 67e6 user: plan B
@ a36c assistant: assistant B
"
    );
    // After a move the active path is still the first column.
    g.ok(&["goto", "seed-harness", "0595"]);
    assert_eq!(
        g.ok(&["tree", "seed-harness", "--ascii"]),
        "\
o 5700 user: user 1
o 8bcc assistant: assistant 1
|\\
| . 67e6 user: plan B
| . a36c assistant: assistant B
o 73e6 user: plan A
@ 0595 assistant: assistant A
"
    );
    // The root position as the leaf: nothing is on the active path.
    g.ok(&["goto", "seed-harness", "root"]);
    let tree = g.ok(&["tree", "seed-harness"]);
    assert!(!tree.contains('◆') && !tree.contains("\x1b["), "{tree}");
    assert!(
        tree.ends_with("@ root (the leaf is the root position)\n"),
        "{tree}"
    );
}

#[test]
fn bookkeeping_is_hidden_unless_all() {
    let g = Grove::new();
    import(&g, "edge-labels.jsonl");
    let all = g.ok(&["tree", "labels", "--all"]);
    let shown = g.ok(&["tree", "labels"]);
    let entries = |t: &str| t.lines().filter(|l| !l.ends_with('╮')).count();
    assert_eq!(entries(&all), 12, "{all}");
    assert!(
        all.contains("label: ") && all.contains("session_info: "),
        "{all}"
    );
    assert!(
        !shown.contains("label: ") && !shown.contains("session_info: "),
        "{shown}"
    );
    // The leaf is a session_info entry: its nearest shown ancestor carries `@`, and the
    // user message under the hidden chain hangs from the first entry.
    assert_eq!(
        shown,
        "\
◆ 918c user: u1
├─╮
│ ○ 0495 assistant: a1
@ 4c47 user: after labels
"
    );
    let leaf_line = all.lines().find(|l| l.starts_with("@ ")).unwrap();
    assert!(leaf_line.contains("session_info: final name"), "{all}");
    // Labels show in brackets on their targets, whichever view.
    assert!(all.contains("[label on a label entry]"), "{all}");

    // Several roots: the side roots fork off the root position.
    import(&g, "edge-orphan-side.jsonl");
    assert_eq!(
        g.ok(&["tree", "orphan-side"]),
        "\
╭─╮
│ ○ e0000002 user: orphan off the main path
◆ e0000001 user: root question
@ e0000003 assistant: main path answer
"
    );
}

/// A session file: the header, then `(id, parent, second)` user messages, the last the leaf.
fn session_file(dir: &std::path::Path, id: &str, entries: &[(&str, Option<&str>, u32)]) -> String {
    let mut text = Vec::new();
    writeln!(
        text,
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}}"#
    )
    .unwrap();
    for (entry, parent, second) in entries {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        writeln!(
            text,
            r#"{{"type":"message","id":"{entry}","parentId":{parent},"timestamp":"2030-01-01T00:00:{second:02}.000Z","message":{{"role":"user","content":"{entry}","timestamp":1}}}}"#
        )
        .unwrap();
    }
    let file = dir.join(format!("{id}.jsonl"));
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_owned()
}

#[test]
fn nested_branches_indent_one_column_each() {
    let dir = tempfile::tempdir().unwrap();
    // root → (side → (side-1, side-2), main); the leaf is main.
    let file = session_file(
        dir.path(),
        "nested",
        &[
            ("root", None, 0),
            ("side", Some("root"), 1),
            ("side-1", Some("side"), 3),
            ("side-2", Some("side"), 4),
            ("main", Some("root"), 2),
        ],
    );
    let g = Grove::new();
    g.ok(&["import", &file]);
    // Off the active path, the last child (by timestamp) continues the column.
    assert_eq!(
        g.ok(&["tree", "nested"]),
        "\
◆ root user: root
├─╮
│ ○ side user: side
│ ├─╮
│ │ ○ side-1 user: side-1
│ ○ side-2 user: side-2
@ main user: main
"
    );
    // The active path always runs down the first column.
    g.ok(&["goto", "nested", "side-1"]);
    assert_eq!(
        g.ok(&["tree", "nested", "--ascii"]),
        "\
o root user: root
|\\
| . main user: main
o side user: side
|\\
| . side-2 user: side-2
@ side-1 user: side-1
"
    );
}

#[test]
fn a_deep_chain_draws_in_one_column() {
    const N: usize = 50_000;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.jsonl");
    let mut text = Vec::new();
    writeln!(
        text,
        r#"{{"type":"session","version":3,"id":"deep","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}}"#
    )
    .unwrap();
    for i in 0..N {
        let parent = i
            .checked_sub(1)
            .map_or("null".to_owned(), |p| format!("\"e{p}\""));
        writeln!(
            text,
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2030-01-01T00:00:00.000Z","message":{{"role":"user","content":"m{i}","timestamp":1}}}}"#
        )
        .unwrap();
    }
    std::fs::write(&file, text).unwrap();
    let g = Grove::new();
    g.ok(&["import", file.to_str().unwrap()]);
    let tree = g.ok(&["tree", "deep", "--ascii"]);
    let lines: Vec<&str> = tree.lines().collect();
    assert_eq!(lines.len(), N);
    assert_eq!(lines[0], "o e0 user: m0");
    assert_eq!(lines[N - 1], format!("@ e{} user: m{}", N - 1, N - 1));
}
