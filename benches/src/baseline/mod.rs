//! The two stores grove is compared with, and the context selection they share.
//!
//! Both select a context the way pi does (`buildSessionContext`): walk the path from the
//! leaf to the root; with a compaction on it, the latest compaction's summary comes first,
//! then the entries from its `firstKeptEntryId` up to it, then everything after it;
//! without one, every entry. Entries become messages as pi projects them (`message` →
//! its message, `compaction` / `branch_summary` / `custom_message` → synthetic messages).

pub mod jsonl;
pub mod sqlite;

use std::borrow::Cow;

use serde_json::{json, Value};

use crate::Result;

/// One entry of a root-first path; the parsed object lives for `'a` (borrowed from a store's
/// memory) or is parsed on demand (owned).
pub trait PathEntry<'a> {
    /// The entry id.
    fn id(&self) -> &str;
    /// The entry `type`.
    fn kind(&self) -> &str;
    /// The parsed entry object.
    fn value(&self) -> Result<Cow<'a, Value>>;
}

impl<'a> PathEntry<'a> for &'a Value {
    fn id(&self) -> &str {
        self.get("id").and_then(Value::as_str).unwrap_or_default()
    }

    fn kind(&self) -> &str {
        self.get("type").and_then(Value::as_str).unwrap_or_default()
    }

    fn value(&self) -> Result<Cow<'a, Value>> {
        Ok(Cow::Borrowed(*self))
    }
}

fn field<'a>(entry: Cow<'a, Value>, key: &str) -> Option<Cow<'a, Value>> {
    match entry {
        Cow::Borrowed(v) => v.get(key).map(Cow::Borrowed),
        Cow::Owned(mut v) => v.get_mut(key).map(|f| Cow::Owned(f.take())),
    }
}

fn ms(entry: &Value) -> Value {
    entry
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(grove_codec::time::parse_ms)
        .map_or(Value::Null, Value::from)
}

fn compaction_message(c: &Value) -> Value {
    json!({
        "role": "compactionSummary",
        "summary": c.get("summary"),
        "tokensBefore": c.get("tokensBefore"),
        "timestamp": ms(c),
    })
}

fn project<'a, E: PathEntry<'a>>(entry: &E, out: &mut Vec<Cow<'a, Value>>) -> Result<()> {
    match entry.kind() {
        "message" => {
            if let Some(m) = field(entry.value()?, "message") {
                out.push(m);
            }
        }
        "compaction" => out.push(Cow::Owned(compaction_message(entry.value()?.as_ref()))),
        "branch_summary" => {
            let v = entry.value()?;
            if v.get("summary")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
            {
                out.push(Cow::Owned(json!({
                    "role": "branchSummary",
                    "summary": v.get("summary"),
                    "fromId": v.get("fromId"),
                    "timestamp": ms(&v),
                })));
            }
        }
        "custom_message" => {
            let v = entry.value()?;
            out.push(Cow::Owned(json!({
                "role": "custom",
                "customType": v.get("customType"),
                "content": v.get("content").cloned().unwrap_or_else(|| json!([])),
                "display": v.get("display"),
                "details": v.get("details"),
                "timestamp": ms(&v),
            })));
        }
        _ => {}
    }
    Ok(())
}

/// The messages the model sees for a root-first `path` (pi's selection and projection).
pub fn context_messages<'a, E: PathEntry<'a>>(path: &[E]) -> Result<Vec<Cow<'a, Value>>> {
    let mut out = Vec::new();
    let Some(ci) = path.iter().rposition(|e| e.kind() == "compaction") else {
        for e in path {
            project(e, &mut out)?;
        }
        return Ok(out);
    };
    let compaction = path[ci].value()?;
    out.push(Cow::Owned(compaction_message(&compaction)));
    let first_kept = compaction.get("firstKeptEntryId").and_then(Value::as_str);
    if let Some(k) = first_kept.and_then(|fk| path[..ci].iter().position(|e| e.id() == fk)) {
        for e in &path[k..ci] {
            project(e, &mut out)?;
        }
    }
    for e in &path[ci + 1..] {
        project(e, &mut out)?;
    }
    Ok(out)
}
