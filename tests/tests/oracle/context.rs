//! Context building against both pi implementations (spec §5.7).

use grove::codec::EntryKind;
use grove::{ContextOptions, Session};
use grove_tests::json;
use serde_json::Value;

use super::{cases, context_value, ids_value, strings_value, Report};

/// JavaScript truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The checkpoint of the active leaf on its full path (the last compaction), parsed, and
/// whether grove's default context emits a retained tail: the checkpoint's own, or that of a
/// nested compaction that is the first entry of its kept range (spec §5.2, §5.4).
fn checkpoint(session: &Session) -> Option<(Value, bool)> {
    let path = session.path_to_root(None).ok()?;
    let ci = path
        .iter()
        .rposition(|e| e.kind() == EntryKind::Compaction)?;
    let c = json::parse(&path[ci].line).ok()?;
    let has_tail = |v: &Value| v.get("retainedTail").is_some_and(truthy);
    let nested_tail = c["firstKeptEntryId"].as_str().is_some_and(|fk| {
        path[..ci].iter().any(|e| {
            e.id() == fk
                && e.kind() == EntryKind::Compaction
                && json::parse(&e.line).is_ok_and(|v| has_tail(&v))
        })
    });
    let emits = has_tail(&c) || nested_tail;
    Some((c, emits))
}

#[test]
fn harness_context() {
    let mut r = Report::new("context (pi harness)");
    for case in cases() {
        let Some((session, _, h)) = case.harness_pair() else {
            continue;
        };
        r.checked();
        let ctx = session.build_context_with(None, ContextOptions::pi_harness());
        r.outcome(
            &case.name,
            "harness.context",
            &h["context"],
            ctx.as_ref().map(context_value),
        );
        r.outcome(
            &case.name,
            "harness.contextEntryIds",
            &h["contextEntryIds"],
            ctx.as_ref().map(|c| strings_value(&c.entry_ids)),
        );
    }
    r.finish();
}

/// A pi_cli() context as pi-CLI's JSON: pi-CLI has no activeToolNames, and the preset must
/// report null (spec §5.6).
fn cli_value(ctx: &grove::Context) -> Value {
    let mut v = context_value(ctx);
    if let Some(obj) = v.as_object_mut() {
        if obj.remove("activeToolNames") != Some(Value::Null) {
            obj.insert("activeToolNames".into(), Value::String("<not null>".into()));
        }
    }
    v
}

#[test]
fn cli_context() {
    let mut r = Report::new("context (pi-CLI)");
    for case in cases() {
        let Some((session, _, s)) = case.sm_pair() else {
            continue;
        };
        r.checked();
        let ctx = session.build_context_with(None, ContextOptions::pi_cli());
        r.outcome(
            &case.name,
            "sessionManager.context",
            &s["context"],
            ctx.as_ref().map(cli_value),
        );
        // The same context from the harness-leaf import, with pi-CLI's leaf passed explicitly.
        let leaf = case.sm_leaf_as_grove(&s["leafId"]);
        if let (Some(leaf), Some((harness_session, _, _))) = (leaf.as_str(), case.harness_pair()) {
            let explicit = harness_session.build_context_with(Some(leaf), ContextOptions::pi_cli());
            r.outcome(
                &case.name,
                "sessionManager.context (explicit leaf)",
                &s["context"],
                explicit.as_ref().map(cli_value),
            );
        }
        // A final leaf line is on pi-CLI's path; grove stops at its parent (spec §3.5).
        let want = case.entry_ids_only(&s["contextEntryIds"]);
        if want != s["contextEntryIds"] {
            r.deviation(
                &case.name,
                "SM context path ends at a leaf line (spec §3.4 item 5, §3.5)",
            );
        }
        r.outcome(
            &case.name,
            "sessionManager.contextEntryIds",
            &want,
            ctx.as_ref().map(|c| strings_value(&c.entry_ids)),
        );
    }
    r.finish();
}

#[test]
fn default_context() {
    let mut r = Report::new("context (grove default)");
    for case in cases() {
        // Settings: pi-CLI's buildSessionContext (spec §5.5, §5.7).
        if let Some((session, _, s)) = case.sm_pair() {
            r.checked();
            match session.build_context() {
                Err(e) => r.fail(&case.name, "build_context()", e),
                Ok(ctx) => {
                    let v = context_value(&ctx);
                    let sc = &s["context"];
                    r.json(
                        &case.name,
                        "default.thinkingLevel",
                        &sc["thinkingLevel"],
                        &v["thinkingLevel"],
                    );
                    r.json(&case.name, "default.model", &sc["model"], &v["model"]);
                    // Messages: pi-CLI when no retained tail is emitted (spec §5.7). §5.7
                    // names only the last compaction's tail, but by §5.4 a nested compaction
                    // opening the kept range emits its tail too (r061-harness), so that
                    // case is compared with the harness below.
                    if !checkpoint(&session).is_some_and(|(_, emits)| emits) {
                        r.json(
                            &case.name,
                            "default.messages",
                            &sc["messages"],
                            &v["messages"],
                        );
                    }
                }
            }
        }
        // activeToolNames, and messages behind a retained tail: the harness (spec §5.7).
        if let Some((session, _, h)) = case.harness_pair() {
            let (Ok(ctx), Ok(branch), Ok(full)) = (
                session.build_context(),
                session.branch(None),
                session.path_to_root(None),
            ) else {
                continue;
            };
            r.checked();
            let v = context_value(&ctx);
            let hc = &h["context"];
            if ids_value(&branch) == ids_value(&full) {
                r.json(
                    &case.name,
                    "default.activeToolNames",
                    &hc["activeToolNames"],
                    &v["activeToolNames"],
                );
            }
            let Some((c, true)) = checkpoint(&session) else {
                continue;
            };
            // The provisos of §5.7: the checkpoint's kept range is on the harness branch (or
            // the checkpoint has its own tail, which stops both walks at it), and no message
            // has null content (Appendix A.6).
            let tail_own = c.get("retainedTail").is_some_and(truthy);
            let fk_on_branch = c["firstKeptEntryId"]
                .as_str()
                .is_some_and(|fk| branch.iter().any(|e| e.id() == fk));
            let null_content = hc["messages"].as_array().is_some_and(|m| {
                m.iter().any(|m| {
                    matches!(
                        m["role"].as_str(),
                        Some("user" | "assistant" | "toolResult" | "custom")
                    ) && m.get("content").is_none_or(Value::is_null)
                })
            });
            if (tail_own || fk_on_branch) && !null_content {
                r.json(
                    &case.name,
                    "default.messages (retained tail)",
                    &hc["messages"],
                    &v["messages"],
                );
            } else {
                r.deviation(
                    &case.name,
                    "default messages behind a tail not comparable (spec §5.7 provisos)",
                );
            }
        }
    }
    r.finish();
}
