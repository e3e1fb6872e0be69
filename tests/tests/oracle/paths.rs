//! `path_to_root`, the full walk, against pi-CLI's `getBranch` (spec §4.2).

use serde_json::Value;

use super::{cases, ids_value, Report};

#[test]
fn path_to_root() {
    let mut r = Report::new("path_to_root");
    for case in cases() {
        let Some((session, _, s)) = case.sm_pair() else {
            continue;
        };
        r.checked();
        // At the leaf: pi-CLI's path ends at a final leaf line, grove's at that line's parent
        // (spec §3.5), so the leaf line is dropped from pi's list.
        let want = case.entry_ids_only(&s["branchIds"]);
        if want != s["branchIds"] {
            r.deviation(
                &case.name,
                "SM path ends at a leaf line (spec §3.4 item 5, §3.5)",
            );
        }
        r.outcome(
            &case.name,
            "sessionManager.branchIds",
            &want,
            session.path_to_root(None).map(|p| ids_value(&p)),
        );
        for item in s["branchFrom"].as_array().into_iter().flatten() {
            let from = item["fromId"].as_str().unwrap_or_default();
            let field = format!("sessionManager.branchFrom[{from}]");
            let actual = session.path_to_root(Some(from)).map(|p| ids_value(&p));
            let not_found = |r: &mut Report, why: &str| {
                r.deviation(&case.name, why);
                match &actual {
                    Err(e) if e.code() == "not_found" => {}
                    other => r.fail(
                        &case.name,
                        &field,
                        format!("expected not_found, got {other:?}"),
                    ),
                }
            };
            if case.is_leaf_line(from) {
                // spec §3.4 item 5, Appendix A.16: leaf records are not entries.
                not_found(
                    &mut r,
                    "path from a leaf-record id is not_found (spec §3.4, A.16)",
                );
            } else if case.resolve(from).is_none() {
                // spec §4.2, Appendix A.13: pi-CLI returns [] for an unknown id.
                if item["ids"] != Value::Array(Vec::new()) {
                    r.fail(
                        &case.name,
                        &field,
                        format!("pi gave {} for an unknown id", item["ids"]),
                    );
                }
                not_found(
                    &mut r,
                    "path from an unknown id is not_found, pi [] (spec §4.2, A.13)",
                );
            } else {
                r.outcome(&case.name, &field, &item["ids"], actual);
            }
        }
    }
    r.finish();
}
