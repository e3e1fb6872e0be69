//! `AgentHarness.navigateTree` with `summarize: false`, with and without a hook summary
//! (spec §7.2), each on a fresh copy of the case.

use grove::{
    HookDecision, HookSummary, NavigateEvent, NavigateHook, NavigateOptions, NavigateOutcome,
    Navigator,
};
use serde_json::{json, Value};

use super::{fresh, id_list};
use crate::oracle::{cases, Report};

struct FixedSummary;

impl NavigateHook for FixedSummary {
    fn before_navigate(&self, _: &NavigateEvent<'_>) -> Result<Option<HookDecision>, String> {
        Ok(Some(HookDecision {
            summary: Some(HookSummary {
                summary: "HOOK SUMMARY".into(),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }
}

/// The fields of an appended record that pi's generator does not randomize.
fn stable(v: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for k in [
        "type", "parentId", "targetId", "fromId", "summary", "details", "fromHook",
    ] {
        if let Some(x) = v.get(k) {
            out.insert(k.to_owned(), x.clone());
        }
    }
    Value::Object(out)
}

/// Replaces the (random) id of the summary entry in the leaf and branch with a placeholder.
fn mask(v: &mut Value, summary: Option<&str>) {
    let Some(id) = summary else { return };
    let placeholder = Value::String("<summary>".into());
    if v["newLeafId"].as_str() == Some(id) {
        v["newLeafId"] = placeholder.clone();
    }
    if let Some(list) = v["branchIdsAfter"].as_array_mut() {
        for x in list.iter_mut().filter(|x| x.as_str() == Some(id)) {
            *x = placeholder.clone();
        }
    }
}

#[test]
fn navigation_matches_the_harness() {
    let mut report = Report::new("navigateTree");
    for case in cases() {
        let Some(h) = case.harness() else { continue };
        let Some(items) = h.get("navigateTree").and_then(Value::as_array) else {
            continue;
        };
        if fresh(case).is_none() {
            continue;
        }
        report.checked();
        for item in items {
            let Some((_store, session)) = fresh(case) else {
                continue;
            };
            let Some(target) = item["targetId"].as_str() else {
                continue;
            };
            let field = format!("navigate({target})");
            if case.is_leaf_line(target) {
                report.deviation(&case.name, "leaf-record ids are not navigation targets");
                continue;
            }
            if item
                .get("error")
                .and_then(|e| e["causeCode"].as_str())
                .is_none()
                && item.get("error").and_then(|e| e["code"].as_str()) == Some("branch_summary")
            {
                // pi throws a TypeError on `content: null` even without summarizing; grove
                // treats the malformed value as absent (spec Appendix A.15).
                report.deviation(&case.name, "malformed message content");
                continue;
            }
            if item["result"]["editorText"]
                .as_str()
                .is_some_and(|t| t.contains("\\ud"))
            {
                // Editor text is a Rust string: lone surrogates become U+FFFD.
                report.deviation(&case.name, "lone surrogates in editor text");
                continue;
            }
            let hook = FixedSummary;
            // The harness collects with compaction-truncated paths (spec §8.1, A.11).
            let mut nav = Navigator {
                path_mode: grove::summary::PathMode::Branch,
                ..Default::default()
            };
            if item.get("hookSummary").is_some() {
                nav.hooks.push(&hook);
            }
            let before = session.log().count();
            let got = session.navigate(target, &NavigateOptions::default(), &nav);
            let appended: Vec<Value> = session
                .log()
                .skip(before)
                .map(|e| stable(&grove_tests::json::parse(&e.unwrap().line).unwrap()))
                .collect();
            let actual = got.map(|o| {
                let result = match &o {
                    NavigateOutcome::NoOp => json!({ "cancelled": false }),
                    NavigateOutcome::Cancelled { .. } => json!({ "cancelled": true }),
                    NavigateOutcome::Moved {
                        editor_text,
                        summary_entry,
                        ..
                    } => {
                        let mut r = json!({ "cancelled": false });
                        if let Some(t) = editor_text {
                            r["editorText"] = json!(t);
                        }
                        if let Some(s) = summary_entry {
                            r["summaryEntryId"] = json!(s);
                        }
                        r
                    }
                };
                let branch = match session.branch(None) {
                    Ok(b) => id_list(b.iter().map(|e| e.id())),
                    Err(e) => json!({ "error": { "code": e.code() } }),
                };
                json!({
                    "result": result,
                    "appended": appended,
                    "newLeafId": session.leaf().unwrap(),
                    "branchIdsAfter": branch,
                })
            });
            let expected = match item.get("error") {
                Some(e) => {
                    // The harness wraps session errors as `session` with the real code as
                    // `causeCode`; grove surfaces the inner error (spec §11).
                    let code = e.get("causeCode").unwrap_or(&e["code"]).clone();
                    json!({ "error": { "code": code } })
                }
                None => {
                    let mut result = item["result"].clone();
                    let summary = result["summaryEntryId"].as_str().map(str::to_owned);
                    // grove ids are random: compare whether a summary was written.
                    let appended: Vec<Value> = item["appended"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(stable)
                        .collect();
                    if let Some(r) = result.as_object_mut() {
                        r.remove("summaryEntryId");
                    }
                    let branch = match item["branchIdsAfter"].get("error") {
                        Some(e) => json!({ "error": { "code": e["code"] } }),
                        None => item["branchIdsAfter"].clone(),
                    };
                    let mut v = json!({
                        "result": result,
                        "appended": appended,
                        "newLeafId": item["newLeafId"],
                        "branchIdsAfter": branch,
                    });
                    mask(&mut v, summary.as_deref());
                    v
                }
            };
            let actual = actual.map(|mut v| {
                let summary = v["result"]["summaryEntryId"].as_str().map(str::to_owned);
                if let Some(r) = v["result"].as_object_mut() {
                    r.remove("summaryEntryId");
                }
                mask(&mut v, summary.as_deref());
                v
            });
            report.outcome(&case.name, &field, &expected, actual);
        }
    }
    report.finish();
}
