//! The tree view against pi-CLI's `getTree` (spec §6.3).

use std::collections::{BTreeMap, BTreeSet};

use grove::codec::time;
use serde_json::Value;

use super::{cases, id_set, Report};

/// One node of pi's flattened tree: id, children ids, label, label timestamp.
struct PiNode {
    id: String,
    children: Vec<String>,
    label: Option<Value>,
    label_timestamp: Option<Value>,
}

#[test]
fn tree() {
    let mut r = Report::new("tree");
    for case in cases() {
        let Some((session, report, s)) = case.sm_pair() else {
            continue;
        };
        r.checked();
        let tree = match session.tree() {
            Ok(t) => t,
            Err(e) => {
                r.fail(&case.name, "tree()", e);
                continue;
            }
        };
        // grove keeps one node per id; pi-CLI attaches the last duplicate's node once per
        // occurrence and loses the first (spec §2.6, §6.3): compare the node set only.
        let unique_ids: BTreeSet<&str> =
            case.lines.iter().filter_map(|l| l.id.as_deref()).collect();
        let grove_ids: Vec<&str> = tree.nodes.iter().map(|n| n.id.as_str()).collect();
        let grove_set: BTreeSet<&str> = grove_ids.iter().copied().collect();
        if grove_set.len() != grove_ids.len() {
            r.fail(&case.name, "tree.nodes", "an id appears twice");
        }
        let want_set: BTreeSet<&str> = unique_ids
            .iter()
            .copied()
            .filter(|id| !case.is_leaf_line(id))
            .collect();
        if grove_set != want_set {
            r.fail(
                &case.name,
                "tree.nodes",
                format!("node ids {grove_set:?}, expected the entry ids {want_set:?}"),
            );
        }
        // grove keeps one node per id, the last occurrence (spec §2.6, §6.3); pi-CLI
        // attaches that node once per occurrence. Only the first appearance of each id in
        // pi's pre-order and in each children list is compared.
        let dedupe = !report.duplicate_ids.is_empty();
        if dedupe {
            r.deviation(
                &case.name,
                "duplicate ids: pi-CLI lists the last duplicate once per occurrence (spec §6.3)",
            );
        }
        // pi-CLI shows leaf lines as nodes and non-object lines as id-less roots; grove
        // does neither (spec §3.4 item 5, §6.3, §12).
        let hidden = |id: &Value| id.as_str().is_none_or(|id| case.is_leaf_line(id));
        let pi_tree = &s["tree"];
        let mut pi_nodes: Vec<PiNode> = Vec::new();
        for n in pi_tree["nodes"].as_array().into_iter().flatten() {
            if hidden(&n["id"]) {
                r.deviation(
                    &case.name,
                    "pi-CLI tree shows leaf lines / pseudo-entries (spec §6.3)",
                );
                continue;
            }
            let id = n["id"].as_str().unwrap_or_default().to_owned();
            if dedupe && pi_nodes.iter().any(|p| p.id == id) {
                continue;
            }
            let mut children: Vec<String> = Vec::new();
            for c in n["children"].as_array().into_iter().flatten() {
                if let Some(c) = c.as_str().filter(|_| !hidden(c)) {
                    if !(dedupe && children.iter().any(|x| x == c)) {
                        children.push(c.to_owned());
                    }
                }
            }
            pi_nodes.push(PiNode {
                id,
                children,
                label: n.get("label").cloned(),
                label_timestamp: n.get("labelTimestamp").cloned(),
            });
        }
        let pi_roots: Vec<&str> = pi_tree["roots"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| !hidden(c))
            .filter_map(Value::as_str)
            .collect();
        let grove_roots: Vec<&str> = tree
            .roots
            .iter()
            .map(|&i| tree.nodes[i].id.as_str())
            .collect();
        if pi_roots != grove_roots {
            r.fail(
                &case.name,
                "tree.roots",
                format!("expected {pi_roots:?}, got {grove_roots:?}"),
            );
        }
        // Children, per node, in order.
        let grove_children: BTreeMap<&str, Vec<&str>> = tree
            .nodes
            .iter()
            .map(|n| {
                (
                    n.id.as_str(),
                    n.children
                        .iter()
                        .map(|&c| tree.nodes[c].id.as_str())
                        .collect(),
                )
            })
            .collect();
        let unparseable = |id: &str| {
            case.resolve(id)
                .and_then(|l| l.value.as_ref())
                .and_then(|v| v["timestamp"].as_str())
                .is_none_or(|t| time::parse_ms(t).is_none())
        };
        let mut order_defined = true;
        for n in &pi_nodes {
            let Some(got) = grove_children.get(n.id.as_str()) else {
                r.fail(
                    &case.name,
                    &format!("tree[{}]", n.id),
                    "missing in grove's tree",
                );
                continue;
            };
            let want: Vec<&str> = n.children.iter().map(String::as_str).collect();
            if want == *got {
                continue;
            }
            if want.iter().any(|c| unparseable(c)) {
                // pi's order of siblings with unparseable timestamps is V8's; grove sorts
                // them last (spec §6.3, Appendix A.14): only the set must agree.
                order_defined = false;
                r.deviation(
                    &case.name,
                    "siblings with unparseable timestamps compared as sets (spec §6.3, A.14)",
                );
                let (mut a, mut b) = (want.clone(), got.clone());
                a.sort_unstable();
                b.sort_unstable();
                if a == b {
                    continue;
                }
            }
            r.fail(
                &case.name,
                &format!("tree[{}].children", n.id),
                format!("expected {want:?}, got {got:?}"),
            );
        }
        if order_defined {
            let pre: Vec<&str> = tree
                .preorder()
                .iter()
                .map(|&(i, _)| tree.nodes[i].id.as_str())
                .collect();
            let want: Vec<&str> = pi_nodes.iter().map(|n| n.id.as_str()).collect();
            if pre != want {
                r.fail(
                    &case.name,
                    "tree.preorder",
                    format!(
                        "{} nodes, pi {}; first difference at {:?}",
                        pre.len(),
                        want.len(),
                        pre.iter().zip(&want).position(|(a, b)| a != b)
                    ),
                );
            }
        }
        // Labels: the harness values (spec §6.1); label timestamps: pi-CLI's, wherever both
        // readers show a label (the same label line set it).
        let harness_labels = case.harness().map(|h| &h["labels"]);
        let labels = session.labels().unwrap_or_default();
        for node in &tree.nodes {
            let from_map = labels.get(&node.id);
            if node.label != from_map.map(|l| l.label.clone()) {
                r.fail(
                    &case.name,
                    &format!("tree[{}].label", node.id),
                    "differs from labels()",
                );
            }
            if let Some(hl) = harness_labels {
                let want = hl.get(&node.id).unwrap_or(&Value::Null);
                let same = match (want.as_str(), &node.label) {
                    (None, None) => true,
                    // A label with a lone surrogate is U+FFFD in `TreeNode::label`; its
                    // exact value is compared through `labels()` in labels.rs.
                    (Some(w), Some(g)) => w == g || g.contains('\u{fffd}'),
                    _ => false,
                };
                if !same {
                    r.fail(
                        &case.name,
                        &format!("tree[{}].label", node.id),
                        format!("expected {want}, got {:?}", node.label),
                    );
                }
            }
            let pi = pi_nodes.iter().find(|n| n.id == node.id);
            if let (Some(pi), Some(_)) = (pi, &node.label) {
                if pi.label.is_some() {
                    let got = node
                        .label_timestamp
                        .clone()
                        .map_or(Value::Null, Value::String);
                    r.json(
                        &case.name,
                        &format!("tree[{}].labelTimestamp", node.id),
                        pi.label_timestamp.as_ref().unwrap_or(&Value::Null),
                        &got,
                    );
                }
            }
        }
        // The active path is the full path to the leaf (spec §6.3).
        let active: BTreeSet<String> = id_set(&case.entry_ids_only(&s["branchIds"]))
            .into_iter()
            .collect();
        let marked: BTreeSet<String> = tree
            .nodes
            .iter()
            .filter(|n| n.on_active_path)
            .map(|n| n.id.clone())
            .collect();
        if active != marked {
            r.fail(
                &case.name,
                "tree.on_active_path",
                format!("expected {active:?}, got {marked:?}"),
            );
        }
        let leaf = session.leaf().ok().flatten();
        let marked_leaf: Vec<&str> = tree
            .nodes
            .iter()
            .filter(|n| n.is_leaf)
            .map(|n| n.id.as_str())
            .collect();
        if marked_leaf != leaf.iter().map(String::as_str).collect::<Vec<_>>() {
            r.fail(
                &case.name,
                "tree.is_leaf",
                format!("expected {leaf:?}, got {marked_leaf:?}"),
            );
        }
    }
    r.finish();
}
