//! Durability of everything the conformance tests read: import into a sled store, close it,
//! reopen it, and read the same answers.

use grove::{ContextOptions, ImportOptions, LeafRule, Session, Store, Strictness};
use serde_json::{json, Value};

use super::{cases, context_value, ids_value, log_ids, Report};

/// Everything read from a session, as one value (errors as their codes).
fn snapshot(session: &Session) -> Value {
    let code = |e: grove::GroveError| json!({ "error": e.code() });
    let lines: Vec<String> = session
        .log()
        .filter_map(Result::ok)
        .map(|e| e.line)
        .collect();
    let labels: Vec<Value> = session
        .labels()
        .map(|m| {
            m.into_iter()
                .map(|(t, l)| json!([t, l.label_json, l.timestamp, l.set_by]))
                .collect()
        })
        .unwrap_or_default();
    let tree = session.tree().map_or_else(code, |t| {
        let pre: Vec<Value> = t
            .preorder()
            .iter()
            .map(|&(i, depth)| {
                let n = &t.nodes[i];
                json!([n.id, depth, n.label, n.on_active_path, n.is_leaf])
            })
            .collect();
        Value::Array(pre)
    });
    json!({
        "leaf": session.leaf().map_or_else(code, |l| json!(l)),
        "log": log_ids(session).map_or_else(code, |l| json!(l)),
        "lines": lines,
        "branch": session.branch(None).map_or_else(code, |p| ids_value(&p)),
        "path": session.path_to_root(None).map_or_else(code, |p| ids_value(&p)),
        "harness": session.build_context_with(None, ContextOptions::pi_harness()).map_or_else(code, |c| context_value(&c)),
        "cli": session.build_context_with(None, ContextOptions::pi_cli()).map_or_else(code, |c| context_value(&c)),
        "grove": session.build_context().map_or_else(code, |c| context_value(&c)),
        "labels": labels,
        "name": session.name().map_or_else(code, |n| json!(n)),
        "tree": tree,
        "history": session.leaf_history().map_or_else(code, |h| json!(h)),
    })
}

#[test]
fn reopen() {
    let mut r = Report::new("reopen");
    let picked: Vec<_> = cases()
        .iter()
        .filter(|c| {
            matches!(
                c.name.as_str(),
                "edge-seed-harness"
                    | "edge-leaf-last"
                    | "edge-leaf-last-null"
                    | "edge-duplicate-ids"
                    | "edge-labels"
                    | "edge-retained-tail"
                    | "edge-orphan-side"
                    | "edge-lone-surrogate"
                    | "edge-v2"
                    | "edge-nested-compaction-deeper"
                    | "r000-harness"
                    | "r003-mixed"
                    | "r061-harness"
                    | "r090-sm-large"
            )
        })
        .collect();
    assert_eq!(
        picked.len(),
        14,
        "a reopen case is missing from the fixtures"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let mut before = Vec::new();
    {
        let store = Store::open(dir.path()).expect("open sled store");
        for case in &picked {
            let report = store
                .import_file(
                    &case.path,
                    ImportOptions {
                        strictness: Strictness::Strict,
                        leaf_rule: LeafRule::Auto,
                        ..Default::default()
                    },
                )
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let session = store.session(&report.session).expect("session");
            before.push((report.session, snapshot(&session)));
        }
    }
    let store = Store::open(dir.path()).expect("reopen sled store");
    for (case, (id, snap)) in picked.iter().zip(&before) {
        r.checked();
        match store.session(id) {
            Err(e) => r.fail(&case.name, "session", e),
            Ok(session) => r.json(&case.name, "after reopen", snap, &snapshot(&session)),
        }
    }
    r.finish();
}
