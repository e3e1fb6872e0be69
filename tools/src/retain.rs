//! What `grove retain`, `grove serve --retain` and `POST /v1/retain` share (docs/cli.md,
//! docs/api.md): a retention policy's JSON form, sizes and ages as people write them, and the
//! JSON of a plan, a run and the store's operations.
//!
//! It owns those forms and calls the engine's retention types and `crate::when`'s reading of
//! times and durations.

use std::path::PathBuf;

use grove::{
    ArchiveFormat, RetentionItem, RetentionPlan, RetentionPolicy, RetentionRule, RetentionRun,
    StoreOperation,
};
use serde::Deserialize;
use serde_json::{json, Value};

/// A policy as JSON: `{"rules": [RULE...], "archive"?: {"dir", "format"?: "jsonl"|"audit"}}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyJson {
    rules: Vec<RuleJson>,
    archive: Option<ArchiveJson>,
}

/// RULE: `{"prefix"?, "olderThan"?: "30d" | TIME, "largerThan"?: N | "10MB", "keepNewest"?: N,
/// "spareLabelled"?: bool}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleJson {
    prefix: Option<String>,
    older_than: Option<String>,
    larger_than: Option<Value>,
    keep_newest: Option<usize>,
    spare_labelled: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchiveJson {
    dir: PathBuf,
    format: Option<String>,
}

impl PolicyJson {
    /// Whether the policy archives (writes files where its `dir` says).
    pub fn archives(&self) -> bool {
        self.archive.is_some()
    }
}

/// `text` as bytes: a number, optionally followed by `B`, `K`/`KB`/`KiB`, `M`/`MB`/`MiB` or
/// `G`/`GB`/`GiB` (powers of 1024).
pub fn bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size: a number of bytes, or 10KB, 5MB, 1GB"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "'{text}' is not a size: a number of bytes, or 10KB, 5MB, 1GB"
            ))
        }
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("'{text}' is too large a size"))
}

/// An age as people write it (`30d`, `12h`, or a time: "not since then") in milliseconds
/// before `now_ms`.
pub fn age_ms(text: &str, now_ms: i64) -> Result<u64, String> {
    let since = crate::when::since_ms(text, now_ms)?;
    u64::try_from(now_ms.saturating_sub(since))
        .map_err(|_| format!("'{text}' is in the future: give an age such as 30d, or a past time"))
}

/// One rule from its parts.
pub fn rule(
    prefix: Option<String>,
    older_than: Option<&str>,
    larger_than: Option<&str>,
    keep_newest: Option<usize>,
    spare_labelled: bool,
    now_ms: i64,
) -> Result<RetentionRule, String> {
    Ok(RetentionRule {
        prefix,
        older_than_ms: older_than.map(|t| age_ms(t, now_ms)).transpose()?,
        larger_than_bytes: larger_than.map(bytes).transpose()?,
        keep_newest,
        spare_labelled,
    })
}

/// The archive format named `name` (`jsonl`, default, or `audit`).
pub fn archive_format(name: Option<&str>) -> Result<ArchiveFormat, String> {
    match name.unwrap_or("jsonl") {
        "jsonl" => Ok(ArchiveFormat::Jsonl),
        "audit" => Ok(ArchiveFormat::Audit),
        other => Err(format!(
            "unknown archive format '{other}': jsonl (pi JSONL) or audit (an audit file)"
        )),
    }
}

/// The policy `json` describes, ages measured back from `now_ms`.
pub fn policy(json: PolicyJson, now_ms: i64) -> Result<RetentionPolicy, String> {
    if json.rules.is_empty() {
        return Err("a retention policy needs at least one rule".to_owned());
    }
    let mut rules = Vec::new();
    for (i, r) in json.rules.into_iter().enumerate() {
        let larger = match &r.larger_than {
            None => None,
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(format!(
                    "rule {i}: largerThan {other} is not a size (a number of bytes or \"10MB\")"
                ))
            }
        };
        let made = rule(
            r.prefix,
            r.older_than.as_deref(),
            larger.as_deref(),
            r.keep_newest,
            r.spare_labelled.unwrap_or(true),
            now_ms,
        )
        .map_err(|e| format!("rule {i}: {e}"))?;
        if made.older_than_ms.is_none()
            && made.larger_than_bytes.is_none()
            && made.keep_newest.is_none()
        {
            return Err(format!(
                "rule {i} has no condition: give olderThan, largerThan or keepNewest"
            ));
        }
        rules.push(made);
    }
    let archive = match json.archive {
        None => None,
        Some(a) => Some((a.dir, archive_format(a.format.as_deref())?)),
    };
    Ok(RetentionPolicy { rules, archive })
}

fn item_value(i: &RetentionItem) -> Value {
    json!({
        "session": i.session,
        "bytes": i.bytes,
        "entries": i.entries,
        "lastActivity": i.last_activity_ms.map(grove::codec::time::format_ms),
        "reasons": i.reasons,
        "spared": i.spared,
    })
}

/// A plan as JSON: `{"remove": [ITEM...], "spared": [ITEM...], "bytes"}`, ITEM `{"session",
/// "bytes", "entries", "lastActivity", "reasons", "spared"}`.
pub fn plan_value(plan: &RetentionPlan) -> Value {
    json!({
        "remove": plan.remove.iter().map(item_value).collect::<Vec<_>>(),
        "spared": plan.spared.iter().map(item_value).collect::<Vec<_>>(),
        "bytes": plan.bytes(),
    })
}

/// A run as JSON: the plan's fields, with `"op"`, `"removed": [{"session", "archive"}]` and
/// `"failed": [{"session", "error"}]`.
pub fn run_value(run: &RetentionRun) -> Value {
    let mut v = plan_value(&run.plan);
    v["op"] = json!(run.op);
    v["removed"] = run
        .removed
        .iter()
        .map(|(s, p)| json!({ "session": s, "archive": p.as_ref().map(|p| p.display().to_string()) }))
        .collect();
    v["failed"] = run
        .failed
        .iter()
        .map(|(s, e)| json!({ "session": s, "error": e }))
        .collect();
    v
}

/// A store operation as JSON: `{"op", "kind", "time", "actor", "status", "detail"}`.
pub fn store_op_value(op: &StoreOperation) -> Value {
    json!({
        "op": op.op,
        "kind": op.kind,
        "time": grove::codec::time::format_ms(i64::try_from(op.time_ms).unwrap_or(i64::MAX)),
        "actor": op.actor,
        "status": op.status,
        "detail": serde_json::from_str::<Value>(&op.detail).unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages_read_as_people_write_them() {
        assert_eq!(bytes("10"), Ok(10));
        assert_eq!(bytes("10KB"), Ok(10 << 10));
        assert_eq!(bytes("5 MiB"), Ok(5 << 20));
        assert_eq!(bytes("1g"), Ok(1 << 30));
        assert!(bytes("ten").is_err());
        assert!(bytes("10 parsecs").is_err());
        let now = 10 * 86_400_000;
        assert_eq!(age_ms("2d", now), Ok(2 * 86_400_000));
        assert_eq!(age_ms("1970-01-02", now), Ok(9 * 86_400_000));
        assert!(age_ms("1970-02-01", now).is_err());
    }

    #[test]
    fn a_policy_reads_from_json_and_refuses_what_it_cannot_mean() {
        let now = 100 * 86_400_000;
        let json: PolicyJson = serde_json::from_str(
            r#"{"rules":[{"prefix":"bench-","keepNewest":10},{"olderThan":"30d","largerThan":"1MB","spareLabelled":false}],"archive":{"dir":"/tmp/a","format":"audit"}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let p = policy(json, now).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.rules.len(), 2);
        assert_eq!(p.rules[0].keep_newest, Some(10));
        assert_eq!(p.rules[1].older_than_ms, Some(30 * 86_400_000));
        assert_eq!(p.rules[1].larger_than_bytes, Some(1 << 20));
        assert!(!p.rules[1].spare_labelled);
        assert_eq!(
            p.archive,
            Some((PathBuf::from("/tmp/a"), ArchiveFormat::Audit))
        );
        for bad in [
            r#"{"rules":[]}"#,
            r#"{"rules":[{"prefix":"x"}]}"#,
            r#"{"rules":[{"olderThan":"soon"}]}"#,
            r#"{"rules":[{"largerThan":true}]}"#,
            r#"{"rules":[{"keepNewest":1}],"archive":{"dir":"/a","format":"zip"}}"#,
        ] {
            let json: PolicyJson = serde_json::from_str(bad).unwrap_or_else(|e| panic!("{e}"));
            assert!(policy(json, now).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<PolicyJson>(r#"{"rules":[],"other":1}"#).is_err());
    }
}
