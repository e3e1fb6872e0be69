//! `collectEntriesForBranchSummary` and `prepareBranchEntries` (spec §8.1, §8.2).

use grove::summary::{prepare_branch_entries, PathMode, DEFAULT_BUDGET};
use serde_json::{json, Value};

use super::{fresh, id_list, resolve_leaf};
use crate::oracle::{cases, Report};

#[test]
fn branch_summary_collection_and_preparation_match_the_harness() {
    let mut report = Report::new("collectEntriesForBranchSummary");
    for case in cases() {
        let Some(h) = case.harness() else { continue };
        let Some(items) = h
            .get("collectEntriesForBranchSummary")
            .and_then(Value::as_array)
        else {
            continue;
        };
        let Some((_store, session)) = fresh(case) else {
            continue;
        };
        report.checked();
        for item in items {
            let old = resolve_leaf(&item["oldLeafId"], &session);
            let target = item["targetId"].as_str().unwrap_or_default();
            let field = format!("collect({old:?} -> {target})");
            let touches_leaf_line =
                old.as_deref().is_some_and(|o| case.is_leaf_line(o)) || case.is_leaf_line(target);
            if touches_leaf_line {
                // Leaf records are not entries in grove (spec §3.4 item 5, Appendix A.16).
                report.deviation(&case.name, "leaf-record ids are not navigation endpoints");
                continue;
            }
            full_mode_matches_reference(&mut report, &case.name, &session, old.as_deref(), target);
            let got = session.collect_entries_for_branch_summary(
                old.as_deref(),
                target,
                PathMode::Branch,
            );
            let actual = got.as_ref().map(|(entries, common)| {
                json!({
                    "entryIds": id_list(entries.iter().map(|e| e.id())),
                    "commonAncestorId": common,
                })
            });
            let mut expected = json!({
                "entryIds": item.get("entryIds").cloned().unwrap_or(Value::Null),
                "commonAncestorId": item.get("commonAncestorId").cloned().unwrap_or(Value::Null),
            });
            if let Some(e) = item.get("error") {
                expected = json!({ "error": e });
            }
            report.outcome(&case.name, &field, &expected, actual);
            let (Ok((entries, _)), Some(prepared)) = (got, item.get("prepared")) else {
                continue;
            };
            if prepared.get("error").is_some() {
                // pi throws on `content: null` (a TypeError); grove treats the malformed
                // value as absent (spec Appendix A.15).
                report.deviation(
                    &case.name,
                    "prepareBranchEntries throws on malformed content",
                );
                continue;
            }
            let p = prepare_branch_entries(&entries, DEFAULT_BUDGET);
            let actual = json!({
                "messageRoles": p.messages.iter().map(|m| m.role.clone()).collect::<Vec<_>>(),
                "totalTokens": p.total_tokens,
                "readFiles": p.read_files,
                "modifiedFiles": p.modified_files,
            });
            report.json(
                &case.name,
                &format!("prepared({target})"),
                prepared,
                &actual,
            );
        }
    }
    report.finish();
}

/// Full mode (grove's default) uses jump pointers; it must equal the definition of spec
/// §8.1 computed naively from `path_to_root` lists.
fn full_mode_matches_reference(
    report: &mut Report,
    case: &str,
    s: &grove::Session,
    old: Option<&str>,
    target: &str,
) {
    let got = s.collect_entries_for_branch_summary(old, target, PathMode::Full);
    let reference = (|| -> Result<(Vec<String>, Option<String>), grove::GroveError> {
        let Some(old) = old else {
            return Ok((Vec::new(), None));
        };
        let o: Vec<String> = s
            .path_to_root(Some(old))?
            .iter()
            .map(|e| e.id().to_owned())
            .collect();
        let t: Vec<String> = s
            .path_to_root(Some(target))?
            .iter()
            .map(|e| e.id().to_owned())
            .collect();
        let common = t.iter().rev().find(|id| o.contains(id)).cloned();
        let from = common
            .as_ref()
            .and_then(|c| o.iter().position(|x| x == c))
            .map_or(0, |p| p + 1);
        Ok((o[from..].to_vec(), common))
    })();
    let actual = got.map(|(e, c)| json!({"ids": e.iter().map(|x| x.id().to_owned()).collect::<Vec<_>>(), "common": c}));
    let expected = match reference {
        Ok((ids, common)) => json!({"ids": ids, "common": common}),
        Err(e) => json!({"error": {"code": e.code()}}),
    };
    report.outcome(
        case,
        &format!("full-mode collect({old:?} -> {target})"),
        &expected,
        actual,
    );
}
