//! Legacy files (spec §2.8): grove migrates v1/v2 in memory and exports what pi-CLI rewrites
//! the file to, apart from the fresh ids of v1 entries, which are random in both.

use grove::{Flavor, LeafRule, Strictness};
use serde_json::Value;

use super::{cases, context_value, log_ids, Report};

/// Replaces pi's ids by grove's in the id-valued fields of one line.
fn map_ids(v: &Value, map: &[(String, String)]) -> Value {
    let mut v = v.clone();
    if let Some(obj) = v.as_object_mut() {
        for key in ["id", "parentId", "firstKeptEntryId", "targetId", "fromId"] {
            if let Some(Value::String(id)) = obj.get(key) {
                if let Some((_, g)) = map.iter().find(|(p, _)| p == id) {
                    obj.insert(key.to_owned(), Value::String(g.clone()));
                }
            }
        }
    }
    v
}

#[test]
fn legacy_migration() {
    let mut r = Report::new("migration");
    for case in cases() {
        let Some(s) = case.sm() else { continue };
        if s["rewroteFile"] != Value::Bool(true) || !matches!(case.header_version(), Some(1 | 2)) {
            continue;
        }
        let (session, _) = match case.import(Strictness::Strict, LeafRule::Auto) {
            Ok(ok) => ok,
            Err(e) => {
                r.fail(&case.name, "import", e);
                continue;
            }
        };
        r.checked();
        // Entries correspond by position; v2 ids are kept, v1 ids are fresh on both sides.
        let grove_ids = log_ids(&session).unwrap_or_default();
        let pi_ids: Vec<String> = s["entryIds"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        if grove_ids.len() != pi_ids.len() {
            r.fail(
                &case.name,
                "entryIds",
                format!("expected {} entries, got {}", pi_ids.len(), grove_ids.len()),
            );
            continue;
        }
        let map: Vec<(String, String)> = pi_ids
            .iter()
            .cloned()
            .zip(grove_ids.iter().cloned())
            .collect();
        if case.header_version() == Some(2) && map.iter().any(|(p, g)| p != g) {
            r.fail(&case.name, "entryIds", "v2 ids must be kept");
        }
        // The exported file is pi-CLI's rewritten file.
        let mut out = Vec::new();
        if let Err(e) = session.export(Flavor::Harness, &mut out) {
            r.fail(&case.name, "export", e);
            continue;
        }
        let text = String::from_utf8_lossy(&out);
        let got: Vec<Value> = text
            .lines()
            .map(|l| grove_tests::json::parse(l).unwrap_or(Value::Null))
            .collect();
        let want: Vec<Value> = s["rewrittenFileLines"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| map_ids(l, &map))
            .collect();
        r.json(
            &case.name,
            "rewrittenFileLines",
            &Value::Array(want),
            &Value::Array(got),
        );
        // Leaf and pi-CLI context on the migrated session.
        let want_leaf = s["leafId"]
            .as_str()
            .and_then(|l| map.iter().find(|(p, _)| p == l))
            .map(|(_, g)| g.clone());
        r.json(
            &case.name,
            "leafId",
            &want_leaf.map_or(Value::Null, Value::String),
            &session
                .leaf()
                .ok()
                .flatten()
                .map_or(Value::Null, Value::String),
        );
        let mapped = |ids: &Value| {
            Value::Array(
                ids.as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| map_ids(&serde_json::json!({ "id": v }), &map)["id"].clone())
                    .collect(),
            )
        };
        match session.build_context_with(None, grove::ContextOptions::pi_cli()) {
            Err(e) => r.fail(&case.name, "context", e),
            Ok(ctx) => {
                let v = context_value(&ctx);
                r.json(
                    &case.name,
                    "context.messages",
                    &s["context"]["messages"],
                    &v["messages"],
                );
                r.json(
                    &case.name,
                    "context.model",
                    &s["context"]["model"],
                    &v["model"],
                );
                r.json(
                    &case.name,
                    "context.thinkingLevel",
                    &s["context"]["thinkingLevel"],
                    &v["thinkingLevel"],
                );
                r.json(
                    &case.name,
                    "contextEntryIds",
                    &mapped(&s["contextEntryIds"]),
                    &super::strings_value(&ctx.entry_ids),
                );
            }
        }
    }
    r.finish();
}
