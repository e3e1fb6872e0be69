//! The context of pi 0.84's lane-based file (and of 0.85–0.99's commit log): pi's own `buildSessionContext` (pi-agent-core
//! 0.84.4, dist/harness/session/context.js) over the branch from an entry back to the root.
//!
//! - The settings are the last of each on the branch: a `thinking_level_change`'s level (`"off"`
//!   before any), a `model_change`'s `{provider, modelId}` or an assistant message's `{provider,
//!   model}`, an `active_tools_change`'s names (`null` before any).
//! - The entries are the last compaction on the branch and what follows it, or all of them.
//! - The messages: a message entry's `message` (an assistant one whose `stopReason` is
//!   `deferred` gives none), a compaction's `{"role":"compactionSummary", summary, tokensBefore,
//!   timestamp}` then its `retainedTail`, a branch summary with a truthy `summary` its
//!   `{"role":"branchSummary", summary, fromId, timestamp}`; custom entries give none.
//!
//! Where a position is not an entry (a record, a fact, a lane move), the branch is the `main`
//! lane's as the file stood there.
//!
//! pi 0.85–0.99's commit logs ([`Lanes::commits`]) are read the same way, by 0.99.1's
//! `buildSessionContext`, which gives messages alone (the settings are values there: the
//! context's stay at their defaults) and leaves out an assistant message that stopped with
//! `error`, `aborted` or `deferred`, in a compaction's retained tail too; a commit's entries are
//! its `entry` writes, the `main` branch's tip its `pi.branch.tip` value.
//!
//! It owns those rules and calls nothing but serde_json.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{text, Fields};
use crate::jsstr::{self, object, push_raw};

#[derive(Deserialize)]
struct EntryFields<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    provider: Option<&'a RawValue>,
    #[serde(rename = "modelId", borrow)]
    model_id: Option<&'a RawValue>,
    #[serde(rename = "thinkingLevel", borrow)]
    thinking_level: Option<&'a RawValue>,
    #[serde(rename = "activeToolNames", borrow)]
    active_tool_names: Option<&'a RawValue>,
    #[serde(borrow)]
    summary: Option<&'a RawValue>,
    #[serde(rename = "tokensBefore", borrow)]
    tokens_before: Option<&'a RawValue>,
    #[serde(borrow)]
    timestamp: Option<&'a RawValue>,
    #[serde(rename = "retainedTail", borrow)]
    retained_tail: Option<&'a RawValue>,
    #[serde(rename = "fromId", borrow)]
    from_id: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    provider: Option<&'a RawValue>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(rename = "stopReason", borrow)]
    stop_reason: Option<&'a RawValue>,
}

/// A context: each field raw JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LanesContext {
    /// The messages.
    pub messages: Vec<String>,
    /// The ids of the context's entries.
    pub entry_ids: Vec<String>,
    /// `(provider, modelId)`, each when present; `None`: no model.
    pub model: Option<(Option<String>, Option<String>)>,
    /// The thinking level (`"off"` before any).
    pub thinking_level: String,
    /// The active tools' names, `None` before any.
    pub active_tool_names: Option<String>,
}

/// The entries of a file read so far, and its `main` lane's leaf (or branch's tip).
#[derive(Debug, Clone, Default)]
pub struct Lanes {
    /// A 0.85–0.99 commit log rather than a 0.84 lane file.
    commits: bool,
    /// Each entry's object text, by id.
    entries: HashMap<String, String>,
    /// Each entry's parent id.
    parents: HashMap<String, Option<String>>,
    main: Option<String>,
}

impl Lanes {
    /// For pi 0.84's lane files.
    pub fn new() -> Lanes {
        Lanes::default()
    }

    /// For pi 0.85–0.99's commit logs: entries are a commit's `entry` writes, the `main`
    /// branch's tip its `pi.branch.tip` value; the context is the messages alone.
    pub fn commits() -> Lanes {
        Lanes {
            commits: true,
            ..Lanes::default()
        }
    }

    /// Takes in the file's next line; the id of the (last) entry it holds, if it holds one.
    pub fn line(&mut self, line: &[u8]) -> Option<String> {
        let text_of_line = std::str::from_utf8(line).ok()?;
        if !self.commits {
            let l: Fields<'_> = serde_json::from_str(text_of_line).ok()?;
            return self.write(&l, text_of_line, text(l.lane).as_deref() == Some("main"));
        }
        let writes: Vec<&RawValue> = match serde_json::from_str::<Vec<&RawValue>>(text_of_line) {
            Ok(writes) => writes,
            Err(_) => vec![serde_json::from_str::<&RawValue>(text_of_line).ok()?],
        };
        let mut held = None;
        for w in writes {
            let Ok(f) = serde_json::from_str::<Fields<'_>>(w.get()) else {
                continue;
            };
            if text(f.kind).as_deref() == Some("value")
                && text(f.namespace).as_deref() == Some("pi.branch.tip")
                && text(f.key).as_deref() == Some("main")
            {
                self.main = text(f.value);
                continue;
            }
            if let Some(id) = self.write(&f, w.get(), false) {
                held = Some(id);
            }
        }
        held
    }

    /// One write of an entry, a lane move (0.84) or anything else.
    fn write(&mut self, f: &Fields<'_>, object: &str, main: bool) -> Option<String> {
        match text(f.kind).as_deref() {
            Some("entry") => {
                let id = text(f.id)?;
                self.parents.insert(id.clone(), text(f.parent_id));
                self.entries.insert(id.clone(), object.to_owned());
                if main {
                    self.main = Some(id.clone());
                }
                Some(id)
            }
            Some("lane") if main && !self.commits => {
                self.main = text(f.leaf_id);
                None
            }
            _ => None,
        }
    }

    /// The `main` lane's leaf now.
    pub fn main_leaf(&self) -> Option<&str> {
        self.main.as_deref()
    }

    /// pi's `buildSessionContext` of the branch from `start` (none: the empty context).
    pub fn context(&self, start: Option<&str>) -> LanesContext {
        let mut path = Vec::new();
        let mut at = start.map(str::to_owned);
        while let Some(id) = at {
            if path.len() > self.entries.len() {
                break;
            }
            let Some(line) = self.entries.get(&id) else {
                break;
            };
            path.push((id.clone(), line.as_str()));
            at = self.parents.get(&id).cloned().flatten();
        }
        path.reverse();
        let parsed: Vec<(String, EntryFields<'_>)> = path
            .iter()
            .filter_map(|(id, line)| Some((id.clone(), serde_json::from_str(line).ok()?)))
            .collect();
        let mut ctx = LanesContext {
            thinking_level: "\"off\"".to_owned(),
            ..LanesContext::default()
        };
        for (_, f) in parsed.iter().filter(|_| !self.commits) {
            match text(f.ty).as_deref() {
                Some("thinking_level_change") => {
                    if let Some(t) = f.thinking_level {
                        ctx.thinking_level = t.get().to_owned();
                    }
                }
                Some("model_change") => ctx.model = Some((raw(f.provider), raw(f.model_id))),
                Some("message") => {
                    if let Some(m) = message(f) {
                        if text(m.role).as_deref() == Some("assistant") {
                            ctx.model = Some((raw(m.provider), raw(m.model)));
                        }
                    }
                }
                Some("active_tools_change") => ctx.active_tool_names = raw(f.active_tool_names),
                _ => {}
            }
        }
        let from = parsed
            .iter()
            .rposition(|(_, f)| text(f.ty).as_deref() == Some("compaction"))
            .unwrap_or(0);
        for (id, f) in &parsed[from..] {
            ctx.entry_ids.push(id.clone());
            match text(f.ty).as_deref() {
                Some("message") => {
                    if let Some(m) = f.message.filter(|m| self.in_context(m)) {
                        ctx.messages.push(m.get().to_owned());
                    }
                }
                Some("compaction") => {
                    let mut parts = vec![("role", "\"compactionSummary\"".to_owned())];
                    push_raw(&mut parts, "summary", f.summary);
                    push_raw(&mut parts, "tokensBefore", f.tokens_before);
                    push_raw(&mut parts, "timestamp", f.timestamp);
                    ctx.messages.push(object(&parts));
                    if let Some(tail) = f
                        .retained_tail
                        .and_then(|t| serde_json::from_str::<Vec<&RawValue>>(t.get()).ok())
                    {
                        ctx.messages.extend(
                            tail.iter()
                                .filter(|m| !self.commits || self.in_context(m))
                                .map(|m| m.get().to_owned()),
                        );
                    }
                }
                Some("branch_summary") if f.summary.is_some_and(jsstr::truthy) => {
                    let mut parts = vec![("role", "\"branchSummary\"".to_owned())];
                    push_raw(&mut parts, "summary", f.summary);
                    push_raw(&mut parts, "fromId", f.from_id);
                    push_raw(&mut parts, "timestamp", f.timestamp);
                    ctx.messages.push(object(&parts));
                }
                _ => {}
            }
        }
        ctx
    }
}

impl Lanes {
    /// Whether a message goes into the context: not an assistant one that stopped `deferred`
    /// (0.84), or `error`, `aborted` or `deferred` (0.85+).
    fn in_context(&self, m: &RawValue) -> bool {
        let Ok(m) = serde_json::from_str::<Message<'_>>(m.get()) else {
            return true;
        };
        if text(m.role).as_deref() != Some("assistant") {
            return true;
        }
        let stop = text(m.stop_reason);
        let out: &[&str] = if self.commits {
            &["error", "aborted", "deferred"]
        } else {
            &["deferred"]
        };
        !stop.is_some_and(|s| out.contains(&s.as_str()))
    }
}

fn raw(v: Option<&RawValue>) -> Option<String> {
    v.map(|r| r.get().to_owned())
}

fn message<'a>(f: &EntryFields<'a>) -> Option<Message<'a>> {
    f.message.and_then(|m| serde_json::from_str(m.get()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_selection_and_messages_are_pi_s() {
        let mut l = Lanes::new();
        for line in [
            r#"{"kind":"header","version":4,"id":"s","createdAt":1,"cwd":"/"}"#,
            r#"{"kind":"entry","lane":"main","type":"thinking_level_change","id":"t","thinkingLevel":"high","parentId":null,"seq":1,"timestamp":1}"#,
            r#"{"kind":"entry","lane":"main","type":"message","id":"u","message":{"role":"user","content":"a"},"parentId":"t","seq":2,"timestamp":2}"#,
            r#"{"kind":"entry","lane":"main","type":"message","id":"a","message":{"role":"assistant","content":[],"provider":"p","model":"m","stopReason":"deferred"},"parentId":"u","seq":3,"timestamp":3}"#,
            r#"{"kind":"entry","lane":"main","type":"compaction","id":"c","summary":"S","tokensBefore":9,"retainedTail":[{"role":"user","content":"kept"}],"parentId":"a","seq":4,"timestamp":4}"#,
            r#"{"kind":"entry","lane":"main","type":"branch_summary","id":"b","summary":"B","fromId":"u","parentId":"c","seq":5,"timestamp":5}"#,
            r#"{"kind":"record","type":"usage","id":"r","lane":"main","seq":6,"timestamp":6}"#,
        ] {
            l.line(line.as_bytes());
        }
        assert_eq!(l.main_leaf(), Some("b"));
        let ctx = l.context(l.main_leaf());
        assert_eq!(ctx.thinking_level, "\"high\"");
        assert_eq!(
            ctx.model,
            Some((Some("\"p\"".to_owned()), Some("\"m\"".to_owned())))
        );
        assert_eq!(ctx.entry_ids, ["c", "b"]);
        assert_eq!(
            ctx.messages,
            [
                r#"{"role":"compactionSummary","summary":"S","tokensBefore":9,"timestamp":4}"#,
                r#"{"role":"user","content":"kept"}"#,
                r#"{"role":"branchSummary","summary":"B","fromId":"u","timestamp":5}"#,
            ]
        );
        // Before the compaction: the deferred answer gives no message.
        let early = l.context(Some("a"));
        assert_eq!(early.messages, [r#"{"role":"user","content":"a"}"#]);
        assert_eq!(
            l.context(None),
            LanesContext {
                thinking_level: "\"off\"".to_owned(),
                ..LanesContext::default()
            }
        );
    }
}
