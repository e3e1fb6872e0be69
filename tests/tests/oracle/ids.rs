//! Leaf, log ids, the harness branch and session metadata.

use grove::{LeafRule, Strictness};
use serde_json::Value;

use super::{cases, ids_value, log_ids, opt_value, strings_value, Report};

#[test]
fn leaf() {
    let mut r = Report::new("leaf");
    for case in cases() {
        if let Some(h) = case.harness() {
            if h["leafId"].get("error").is_some() {
                // spec §3.5: the harness fails lazily on a dangling final leaf; grove refuses
                // the import with invalid_session.
                r.checked();
                r.deviation(
                    &case.name,
                    "dangling final leaf fails at import (spec §3.5)",
                );
                match case.import(Strictness::Strict, LeafRule::Auto) {
                    Err(e) if e.code() == "invalid_session" => {}
                    Err(e) => r.fail(
                        &case.name,
                        "leafId",
                        format!("expected invalid_session, got {} ({e})", e.code()),
                    ),
                    Ok(_) => r.fail(
                        &case.name,
                        "leafId",
                        "expected invalid_session, got an import",
                    ),
                }
            } else if let Some((session, report, _)) = case.harness_pair() {
                r.checked();
                let leaf = session.leaf();
                r.outcome(
                    &case.name,
                    "harness.leafId",
                    &h["leafId"],
                    leaf.map(opt_value),
                );
                r.json(
                    &case.name,
                    "report.leaf",
                    &h["leafId"],
                    &opt_value(report.leaf),
                );
            }
        }
        // pi-CLI's leaf, through LeafRule::LastLine (spec §3.5).
        if let Some((session, report, s)) = case.sm_pair() {
            r.checked();
            let want = case.sm_leaf_as_grove(&s["leafId"]);
            if want != s["leafId"] {
                r.deviation(
                    &case.name,
                    "SM leaf is a leaf line; LastLine takes its parentId (spec §3.5)",
                );
                if !report
                    .warnings
                    .iter()
                    .any(|w| w.contains("ends with leaf line"))
                {
                    r.fail(
                        &case.name,
                        "sessionManager.leafId",
                        "leaf-line hazard not reported (spec §3.5)",
                    );
                }
            }
            r.outcome(
                &case.name,
                "sessionManager.leafId",
                &want,
                session.leaf().map(opt_value),
            );
        }
    }
    r.finish();
}

#[test]
fn entry_ids() {
    let mut r = Report::new("entryIds");
    for case in cases() {
        if let Some((session, report, h)) = case.harness_pair() {
            r.checked();
            r.outcome(
                &case.name,
                "harness.entryIds",
                &h["entryIds"],
                log_ids(&session).map(|v| strings_value(&v)),
            );
            // entries() leaves the leaf records out (spec §3.4 item 6).
            let entries: Result<Vec<grove::Entry>, _> = session.entries().collect();
            r.outcome(
                &case.name,
                "entries()",
                &case.entry_ids_only(&h["entryIds"]),
                entries.map(|e| ids_value(&e)),
            );
            let leaf_lines = h["entryIds"].as_array().map_or(0, |l| {
                l.iter()
                    .filter(|id| id.as_str().is_some_and(|id| case.is_leaf_line(id)))
                    .count()
            });
            if report.leaf_records != leaf_lines as u64 {
                r.fail(
                    &case.name,
                    "report.leaf_records",
                    format!("expected {leaf_lines}, got {}", report.leaf_records),
                );
            }
        }
        if let Some((session, _, s)) = case.sm_pair() {
            r.checked();
            // pi-CLI keeps non-object lines as id-less pseudo-entries (`null`); grove's
            // lenient import skips and reports them (spec §2.3, §12).
            let want = Value::Array(
                s["entryIds"]
                    .as_array()
                    .map(|l| l.iter().filter(|v| !v.is_null()).cloned().collect())
                    .unwrap_or_default(),
            );
            if want != s["entryIds"] {
                r.deviation(
                    &case.name,
                    "SM non-object pseudo-entries skipped (spec §2.3, §12)",
                );
            }
            r.outcome(
                &case.name,
                "sessionManager.entryIds",
                &want,
                log_ids(&session).map(|v| strings_value(&v)),
            );
            // Edge cases carry pi-CLI's full entry objects: grove's stored lines are the
            // same values (spec §2.9).
            if let Some(entries) = s.get("entries").and_then(Value::as_array) {
                let want: Vec<Value> = entries
                    .iter()
                    .filter(|e| !e.is_null() && e.is_object())
                    .cloned()
                    .collect();
                let got: Vec<Value> = session
                    .log()
                    .map(|e| e.map(|e| grove_tests::json::parse(&e.line).unwrap_or(Value::Null)))
                    .collect::<Result<_, _>>()
                    .unwrap_or_default();
                r.json(
                    &case.name,
                    "sessionManager.entries",
                    &Value::Array(want),
                    &Value::Array(got),
                );
            }
        }
        // Duplicate ids are reported, once per repeated occurrence (spec §2.6).
        if let Ok((_, report)) = case.import(Strictness::Lenient, LeafRule::Auto) {
            let mut seen = std::collections::HashSet::new();
            let dups: Vec<String> = case
                .lines
                .iter()
                .filter_map(|l| l.id.clone())
                .filter(|id| !seen.insert(id.clone()))
                .collect();
            if report.duplicate_ids != dups {
                r.fail(
                    &case.name,
                    "report.duplicate_ids",
                    format!("expected {dups:?}, got {:?}", report.duplicate_ids),
                );
            }
        }
    }
    r.finish();
}

#[test]
fn branch_and_branch_from() {
    let mut r = Report::new("branchIds/branchFrom");
    for case in cases() {
        let Some((session, _, h)) = case.harness_pair() else {
            continue;
        };
        r.checked();
        r.outcome(
            &case.name,
            "branchIds",
            &h["branchIds"],
            session.branch(None).map(|p| ids_value(&p)),
        );
        for item in h["branchFrom"].as_array().into_iter().flatten() {
            let from = item["fromId"].as_str().unwrap_or_default();
            let field = format!("branchFrom[{from}]");
            let actual = session.branch(Some(from)).map(|p| ids_value(&p));
            if case.is_leaf_line(from) {
                // spec §3.4 item 5, Appendix A.16: leaf records are not entries; grove
                // answers not_found where the harness walks from the leaf line.
                r.deviation(
                    &case.name,
                    "branch from a leaf-record id is not_found (spec §3.4, A.16)",
                );
                match actual {
                    Err(e) if e.code() == "not_found" => {}
                    other => r.fail(
                        &case.name,
                        &field,
                        format!("expected not_found, got {other:?}"),
                    ),
                }
                continue;
            }
            let want = item.get("ids").unwrap_or(item);
            r.outcome(&case.name, &field, want, actual);
        }
    }
    r.finish();
}

#[test]
fn metadata() {
    let mut r = Report::new("metadata");
    for case in cases() {
        let Some((session, _, h)) = case.harness_pair() else {
            continue;
        };
        r.checked();
        let m = &h["metadata"];
        let rec = session.record();
        r.json(
            &case.name,
            "metadata.id",
            &m["id"],
            &Value::String(rec.id.clone()),
        );
        r.json(
            &case.name,
            "metadata.createdAt",
            &m["createdAt"],
            &Value::String(rec.created.clone()),
        );
        r.json(
            &case.name,
            "metadata.cwd",
            &m["cwd"],
            &Value::String(rec.cwd.clone()),
        );
        r.json(
            &case.name,
            "metadata.parentSessionPath",
            m.get("parentSessionPath").unwrap_or(&Value::Null),
            &opt_value(rec.parent_session.clone()),
        );
        let header = grove_tests::json::parse(&rec.header).unwrap_or_default();
        r.json(
            &case.name,
            "metadata.metadata",
            m.get("metadata").unwrap_or(&Value::Null),
            header.get("metadata").unwrap_or(&Value::Null),
        );
    }
    // pi-CLI's getHeader(): the header as stored, extra keys kept (spec §2.2, §2.9).
    for case in cases() {
        let Some((session, _, s)) = case.sm_pair() else {
            continue;
        };
        r.checked();
        let header = grove_tests::json::parse(&session.record().header).unwrap_or_default();
        r.json(&case.name, "sessionManager.header", &s["header"], &header);
    }
    r.finish();
}
