//! Harness forks (`repo.fork`, spec §9.1) and whole-session copies.

use grove::{ForkMode, ForkOptions, ForkPosition, GroveError};
use serde_json::{json, Value};

use super::{fresh, id_list};
use crate::oracle::{cases, Case, Report};

fn fork_result(
    case: &Case,
    entry: Option<&str>,
    position: ForkPosition,
) -> Result<Value, GroveError> {
    let (store, session) = fresh(case).expect("case imports");
    let forked = store.fork(
        &session,
        ForkOptions {
            entry: entry.map(str::to_owned),
            position,
            mode: ForkMode::Path,
            cwd: Some("/fork/target".into()),
            ..Default::default()
        },
    )?;
    let ids: Vec<String> = forked.log().map(|e| e.unwrap().id().to_owned()).collect();
    assert_eq!(
        forked.record().parent_session_id.as_deref(),
        Some(session.id())
    );
    assert!(forked.record().header.contains("\"cwd\":\"/fork/target\""));
    Ok(json!({ "ids": id_list(ids.iter().map(String::as_str)), "leafId": forked.leaf()? }))
}

#[test]
fn forks_match_the_harness() {
    let mut report = Report::new("fork");
    for case in cases() {
        let Some(h) = case.harness() else { continue };
        if fresh(case).is_none() {
            continue;
        }
        report.checked();
        let mut items: Vec<(&Value, Option<&str>)> = h
            .get("fork")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|i| (i, i["entryId"].as_str())).collect())
            .unwrap_or_default();
        if let Some(all) = h.get("forkAll") {
            items.push((all, None));
        }
        for (item, entry) in items {
            let position = match item["position"].as_str() {
                Some("before") => ForkPosition::Before,
                _ => ForkPosition::At,
            };
            let field = format!("fork({entry:?}, {position:?})");
            if entry.is_some_and(|e| case.is_leaf_line(e)) {
                // A leaf record is not a fork target in grove (spec §9.1, Appendix A.16).
                let got = fork_result(case, entry, position);
                if !matches!(got, Err(GroveError::InvalidForkTarget(_))) {
                    report.fail(
                        &case.name,
                        &field,
                        format!("expected InvalidForkTarget, got {got:?}"),
                    );
                }
                report.deviation(&case.name, "fork at a leaf record is InvalidForkTarget");
                continue;
            }
            if let Some(err) = item.get("leafIdError") {
                // pi writes the fork and then cannot resolve its leaf; grove refuses to
                // create a session whose leaf names no entry (spec §3.5).
                let got = fork_result(case, entry, position);
                match got {
                    Err(e) if Some(e.code()) == err["code"].as_str() => {}
                    other => {
                        report.fail(&case.name, &field, format!("expected {err}, got {other:?}"))
                    }
                }
                continue;
            }
            let expected = match item.get("error") {
                Some(e) => json!({ "error": e }),
                None => json!({ "ids": item["ids"], "leafId": item["leafId"] }),
            };
            report.outcome(
                &case.name,
                &field,
                &expected,
                fork_result(case, entry, position),
            );
        }
    }
    report.finish();
}
