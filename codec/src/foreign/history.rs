//! Codex's history: what Codex sends its model on resuming a rollout, folded over the rollout's
//! lines in order as Codex's own reconstruction does (`reconstruct_history_from_rollout` and
//! `ContextManager` in codex-rs; docs/format.md, "Foreign transcripts", states the rules):
//!
//! - a `response_item`'s payload (or, in an older rollout, an untyped line's object) is kept when
//!   Codex records it: every message but a `system` one, reasoning, the calls and their outputs,
//!   compaction items; ghost snapshots and types Codex does not know are left out;
//! - a `compacted` line with a `replacement_history` replaces the history with it; one without
//!   (rollouts before late 2025) rebuilds it as Codex's newest code does: the user messages so
//!   far (not the contextual ones, not earlier summaries), newest first within 20,000 tokens of
//!   about 4 bytes (the one that overflows cut in its middle, "…N tokens truncated…"), back in
//!   order, then the compaction's message (or "(no summary available)"), each a user message;
//! - an `event_msg` `thread_rolled_back` drops the last `num_turns` user turns (all of them, and
//!   what follows, when there are fewer);
//! - a `turn_context` sets the model and the reasoning effort, `session_meta` the provider.
//!
//! Before the model sees it, as on every request: a call without an output gets one (`"aborted"`)
//! right after it, and an output without its call is left out. Tool outputs are not cut to the
//! resuming model's limit (that depends on the model), nor images stripped.
//!
//! It owns those rules and calls nothing but serde_json.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{text, Fields, SessionMeta};

/// The rollout line types that wrap a payload.
const ROLLOUT_TYPES: [&str; 5] = [
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// The response item types Codex records (`is_api_message`), messages apart.
const RECORDED: [&str; 16] = [
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
    "web_search_call",
    "compaction",
    "compaction_summary",
    "context_compaction",
    "tool_search_call",
    "tool_search_output",
    "image_generation_call",
    "agent_message",
    "mcp_tool_call",
    "mcp_tool_call_output",
];

/// The budget of user messages a legacy compaction keeps (`COMPACT_USER_MESSAGE_MAX_TOKENS`).
const USER_MESSAGE_TOKENS: usize = 20_000;

/// The starts of a user message that Codex writes itself (environment, instructions, aborted
/// turns), lower-cased: such a message is not a user turn.
const CONTEXTUAL: [&str; 7] = [
    "<environment_context>",
    "<turn_aborted>",
    "<user_instructions>",
    "# agents.md instructions",
    "<skill>",
    "<user_shell_command>",
    "<subagent_notification>",
];

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    call_id: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Compacted<'a> {
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    replacement_history: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    num_turns: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct TurnContext<'a> {
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    effort: Option<&'a RawValue>,
}

/// One kept item: its JSON text, and what the rules read of it.
#[derive(Debug, Clone)]
struct Kept {
    json: String,
    ty: String,
    /// A message's role.
    role: Option<String>,
    /// A call's or an output's `call_id`.
    call_id: Option<String>,
    /// A user message's text parts, joined.
    user_text: Option<String>,
}

impl Kept {
    fn of(raw: &RawValue) -> Option<Kept> {
        let item: Item<'_> = serde_json::from_str(raw.get()).ok()?;
        let ty = text(item.ty)?;
        let role = text(item.role);
        let user_text = match (ty.as_str(), role.as_deref()) {
            ("message", Some("user")) => {
                let parts: Vec<Part<'_>> = item
                    .content
                    .and_then(|c| serde_json::from_str::<Vec<&RawValue>>(c.get()).ok())
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|p| serde_json::from_str(p.get()).ok())
                    .collect();
                Some(
                    parts
                        .iter()
                        .filter(|p| text(p.ty).as_deref() == Some("input_text"))
                        .filter_map(|p| text(p.text))
                        .collect::<String>(),
                )
            }
            _ => None,
        };
        Some(Kept {
            json: raw.get().to_owned(),
            call_id: text(item.call_id),
            ty,
            role,
            user_text,
        })
    }

    /// Whether Codex records it (`is_api_message`; ghost snapshots it drops before a request).
    fn recorded(&self) -> bool {
        match self.ty.as_str() {
            "message" => self.role.as_deref() != Some("system"),
            t => RECORDED.contains(&t),
        }
    }

    /// A user message that Codex wrote itself (its text starts with one of [`CONTEXTUAL`]).
    fn contextual(&self) -> bool {
        self.user_text.as_deref().is_some_and(|t| {
            let start = t.trim_start().to_lowercase();
            CONTEXTUAL.iter().any(|c| start.starts_with(c))
        })
    }

    /// A user turn's first message.
    fn user_turn(&self) -> bool {
        self.user_text.is_some() && !self.contextual()
    }
}

/// The history folded so far, and the settings.
#[derive(Debug, Clone, Default)]
pub struct History {
    items: Vec<Kept>,
    /// The compactions' messages so far (earlier summaries are not user messages).
    summaries: HashSet<String>,
    /// The last turn context's `model`.
    pub model: Option<String>,
    /// The last turn context's `effort`.
    pub effort: Option<String>,
    /// `session_meta`'s `model_provider`.
    pub provider: Option<String>,
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// Folds one original line of the rollout in (a line that is not a JSON object changes
    /// nothing).
    pub fn line(&mut self, line: &[u8]) {
        let Ok(l) = serde_json::from_slice::<Fields<'_>>(line) else {
            return;
        };
        if l.record_type.is_some() {
            return;
        }
        let ty = text(l.ty);
        let rollout = ty.as_deref().is_some_and(|t| ROLLOUT_TYPES.contains(&t));
        match (ty.as_deref(), l.payload) {
            (Some("response_item"), Some(p)) => self.record(p),
            (Some("compacted"), Some(p)) => self.compacted(p),
            (Some("event_msg"), Some(p)) => self.event(p),
            (Some("turn_context"), Some(p)) => {
                if let Ok(t) = serde_json::from_str::<TurnContext<'_>>(p.get()) {
                    self.model = text(t.model).or(self.model.take());
                    self.effort = text(t.effort);
                }
            }
            (Some("session_meta"), Some(p)) => {
                if let Ok(m) = serde_json::from_str::<SessionMeta<'_>>(p.get()) {
                    self.provider = text(m.model_provider).or(self.provider.take());
                }
            }
            // An older rollout's item lines are the items themselves.
            (Some(_), None) if !rollout => {
                if let Ok(raw) = serde_json::from_slice::<&RawValue>(line) {
                    self.record(raw);
                }
            }
            _ => {}
        }
    }

    fn record(&mut self, raw: &RawValue) {
        if let Some(item) = Kept::of(raw).filter(Kept::recorded) {
            self.items.push(item);
        }
    }

    fn compacted(&mut self, payload: &RawValue) {
        let Ok(c) = serde_json::from_str::<Compacted<'_>>(payload.get()) else {
            return;
        };
        let message = text(c.message).unwrap_or_default();
        if let Some(replacement) = c
            .replacement_history
            .and_then(|r| serde_json::from_str::<Vec<&RawValue>>(r.get()).ok())
        {
            self.items = replacement.into_iter().filter_map(Kept::of).collect();
        } else {
            let users: Vec<String> = self
                .items
                .iter()
                .filter(|i| i.user_turn())
                .filter_map(|i| i.user_text.clone())
                .filter(|t| !self.summaries.contains(t))
                .collect();
            let mut remaining = USER_MESSAGE_TOKENS;
            let mut selected = Vec::new();
            for m in users.iter().rev() {
                if remaining == 0 {
                    break;
                }
                let tokens = m.len().div_ceil(4);
                if tokens <= remaining {
                    selected.push(m.clone());
                    remaining -= tokens;
                } else {
                    selected.push(truncate_middle(m, remaining));
                    break;
                }
            }
            selected.reverse();
            let summary = if message.is_empty() {
                "(no summary available)".to_owned()
            } else {
                message.clone()
            };
            selected.push(summary);
            self.items = selected
                .iter()
                .filter_map(|t| {
                    let json = user_message(t);
                    serde_json::from_str::<&RawValue>(&json)
                        .ok()
                        .and_then(Kept::of)
                })
                .collect();
        }
        self.summaries.insert(message);
    }

    fn event(&mut self, payload: &RawValue) {
        let Ok(e) = serde_json::from_str::<Event<'_>>(payload.get()) else {
            return;
        };
        if text(e.ty).as_deref() != Some("thread_rolled_back") {
            return;
        }
        let n = e
            .num_turns
            .and_then(|n| n.get().parse::<usize>().ok())
            .unwrap_or(0);
        let turns: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.items[i].user_turn())
            .collect();
        let Some(&first) = turns.first() else {
            return;
        };
        if n == 0 {
            return;
        }
        let cut = if n >= turns.len() {
            first
        } else {
            turns[turns.len() - n]
        };
        self.items.truncate(cut);
    }

    /// The items as the model sees them: every call answered (`"aborted"` when it was not),
    /// no output without its call.
    pub fn items(&self) -> Vec<String> {
        let mut calls: HashSet<(&str, &str)> = HashSet::new();
        let mut outputs: HashSet<(&str, &str)> = HashSet::new();
        for i in &self.items {
            if let Some(id) = i.call_id.as_deref() {
                match i.ty.as_str() {
                    "function_call" | "local_shell_call" => {
                        calls.insert(("function_call_output", id));
                    }
                    "custom_tool_call" => {
                        calls.insert(("custom_tool_call_output", id));
                    }
                    "function_call_output" | "custom_tool_call_output" => {
                        outputs.insert((i.ty.as_str(), id));
                    }
                    _ => {}
                }
            }
        }
        let mut out = Vec::with_capacity(self.items.len());
        for i in &self.items {
            let id = i.call_id.as_deref();
            match (i.ty.as_str(), id) {
                ("function_call_output" | "custom_tool_call_output", Some(id))
                    if !calls.contains(&(i.ty.as_str(), id)) =>
                {
                    continue;
                }
                ("function_call_output" | "custom_tool_call_output", None) => continue,
                _ => {}
            }
            out.push(i.json.clone());
            let answer = match (i.ty.as_str(), id) {
                ("function_call" | "local_shell_call", Some(id)) => {
                    Some(("function_call_output", id))
                }
                ("custom_tool_call", Some(id)) => Some(("custom_tool_call_output", id)),
                _ => None,
            };
            if let Some((kind, id)) = answer {
                if !outputs.contains(&(kind, id)) {
                    out.push(format!(
                        "{{\"type\":{},\"call_id\":{},\"output\":\"aborted\"}}",
                        json_string(kind),
                        json_string(id)
                    ));
                }
            }
        }
        out
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A user message of one text part.
fn user_message(text: &str) -> String {
    format!(
        "{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":{}}}]}}",
        json_string(text)
    )
}

/// Codex's middle truncation to a budget of `tokens` (4 bytes each): the first half and the
/// last half of the budget kept at character boundaries, `…N tokens truncated…` between them.
fn truncate_middle(s: &str, tokens: usize) -> String {
    let budget = tokens * 4;
    if s.len() <= budget {
        return s.to_owned();
    }
    let mut left = budget / 2;
    while !s.is_char_boundary(left) {
        left -= 1;
    }
    let mut right = s.len() - (budget - budget / 2);
    while !s.is_char_boundary(right) {
        right += 1;
    }
    let removed = (right - left).div_ceil(4);
    format!("{}…{removed} tokens truncated…{}", &s[..left], &s[right..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn middle_truncation_is_codex_s() {
        // codex-rs's own cases (truncate_middle_with_token_budget).
        assert_eq!(truncate_middle("abcdef", 0), "…2 tokens truncated…");
        assert_eq!(
            truncate_middle("😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n", 8),
            "😀😀😀😀…8 tokens truncated… line with text\n"
        );
        assert_eq!(truncate_middle("short output", 100), "short output");
    }

    fn fold(lines: &[&str]) -> History {
        let mut h = History::new();
        for l in lines {
            h.line(l.as_bytes());
        }
        h
    }

    const USER: &str = r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"U"}]}}"#;

    #[test]
    fn items_compactions_rollbacks_and_calls() {
        let h = fold(&[
            r#"{"type":"session_meta","payload":{"id":"s","model_provider":"openai"}}"#,
            r#"{"type":"turn_context","payload":{"model":"gpt-5","effort":"high"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"system","content":[]}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}"#,
            USER,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c9","output":"orphan"}}"#,
            r#"{"type":"response_item","payload":{"type":"ghost_snapshot","ghost_commit":{}}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message","message":"x"}}"#,
        ]);
        assert_eq!(h.model.as_deref(), Some("gpt-5"));
        assert_eq!(h.effort.as_deref(), Some("high"));
        assert_eq!(h.provider.as_deref(), Some("openai"));
        let items = h.items();
        assert_eq!(items.len(), 4, "{items:?}");
        assert!(items[0].contains("environment_context"));
        assert_eq!(
            items[3],
            r#"{"type":"function_call_output","call_id":"c1","output":"aborted"}"#
        );

        // A rollback of one turn cuts at the last user turn; of more, at the first.
        let mut two = fold(&[USER, USER, USER]);
        two.line(br#"{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":1}}"#);
        assert_eq!(two.items().len(), 2);
        two.line(br#"{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":9}}"#);
        assert_eq!(two.items().len(), 0);

        // A legacy compaction keeps the user messages and the summary; a replacement replaces.
        let mut c = fold(&[
            USER,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[]}}"#,
        ]);
        c.line(br#"{"type":"compacted","payload":{"message":"S"}}"#);
        let items = c.items();
        assert_eq!(items.len(), 2);
        assert!(items[1].contains("\"text\":\"S\""));
        c.line(br#"{"type":"compacted","payload":{"message":"T","replacement_history":[{"type":"compaction","encrypted_content":"e"}]}}"#);
        assert_eq!(
            c.items(),
            [r#"{"type":"compaction","encrypted_content":"e"}"#]
        );

        // An older rollout's lines are the items.
        let old = fold(&[
            r#"{"id":"s","timestamp":"2025-05-07T17:24:21.123Z","instructions":null}"#,
            r#"{"record_type":"state"}"#,
            r#"{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"hello"}]}"#,
        ]);
        assert_eq!(old.items().len(), 1);
    }
}
