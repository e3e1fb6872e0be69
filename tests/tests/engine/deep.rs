//! Every walk, tree build and export is iterative: a linear session 1,000,000 entries deep
//! and a bushy tree of 100,000 nodes go through without recursion (spec §12).

use std::io::Write;

use grove::{ImportOptions, Store};

fn message(id: usize, parent: Option<usize>, role: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"e{p}\""));
    format!(
        r#"{{"type":"message","id":"e{id}","parentId":{parent},"timestamp":"2030-01-01T00:00:00.000Z","message":{{"role":"{role}","content":"m{id}","timestamp":1}}}}"#
    )
}

fn import(lines: impl Iterator<Item = String>) -> grove::Session {
    let mut text = Vec::new();
    writeln!(text, r#"{{"type":"session","version":3,"id":"deep","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}}"#).unwrap();
    for l in lines {
        writeln!(text, "{l}").unwrap();
    }
    let store = Store::in_memory().unwrap();
    let report = store
        .import_reader(std::io::Cursor::new(text), ImportOptions::default())
        .unwrap();
    store.session(&report.session).unwrap()
}

#[test]
fn a_million_entry_deep_session_walks_without_recursion() {
    const N: usize = 1_000_000;
    let s = import((0..N).map(|i| {
        message(
            i,
            i.checked_sub(1),
            if i % 2 == 0 { "user" } else { "assistant" },
        )
    }));
    assert_eq!(s.path_to_root(None).unwrap().len(), N);
    assert_eq!(s.branch(None).unwrap().len(), N);
    let tree = s.tree().unwrap();
    let order = tree.preorder();
    assert_eq!(order.len(), N);
    assert_eq!(order.last().map(|&(_, depth)| depth), Some(N - 1));
    let ctx = s.build_context().unwrap();
    assert_eq!(ctx.messages.len(), N);
}

#[test]
fn a_bushy_tree_of_100k_nodes_builds() {
    const N: usize = 100_000;
    // Node i hangs under i / 8: a wide, shallow tree.
    let s = import((0..N).map(|i| message(i, if i == 0 { None } else { Some(i / 8) }, "user")));
    let tree = s.tree().unwrap();
    assert_eq!(tree.preorder().len(), N);
    assert_eq!(tree.roots.len(), 1);
    assert_eq!(tree.nodes[0].children.len(), 7);
    assert_eq!(s.children(Some("e1")).unwrap().len(), 8);
}
