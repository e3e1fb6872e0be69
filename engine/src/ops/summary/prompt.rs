//! The summarization prompt and the final summary text (spec §5.8, §8.4, §8.5). The
//! structure follows pi; the wording is grove's own and versioned.

use grove_codec::fields::MessageFields;
use grove_codec::jsstr::JsString;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::blocks::{blocks, content_text, js};
use super::prepare::{PreparedBranch, SummaryMessage};

/// Version of the texts below; bump it when any of them changes.
pub const PROMPT_VERSION: u32 = 1;

/// The system prompt of a branch-summary request.
pub const SYSTEM_PROMPT: &str = "You write structured summaries of coding-agent conversations. \
Reply with the summary only, in the requested format. Do not continue the conversation, do not \
answer questions asked in it, and do not add commentary before or after the summary.";

/// The default instructions: the sections, in order, that the summary must have.
pub const DEFAULT_INSTRUCTIONS: &str = "Summarize the conversation branch above so that someone \
returning to this point later can pick up the thread. Use exactly these sections, in this order:

## Goal
What the user set out to achieve on this branch.

## Constraints & Preferences
Requirements, limits and preferences the user stated.

## Progress
### Done
- [x] Work that was completed.
### In Progress
- [ ] Work that was started but not finished.
### Blocked
Anything that could not proceed, and why.

## Key Decisions
- **Decision**: the reason it was made.

## Next Steps
1. What should happen next, in order.

Keep each section short. Quote file paths, function names and error messages exactly.";

/// The first line of every generated summary.
pub const PREAMBLE: &str =
    "Summary of a branch the user explored before returning to this point in the conversation:";

/// Maximum output tokens requested.
pub const MAX_TOKENS: u32 = 2048;

/// Tool results longer than this many UTF-16 units are cut in the prompt.
const TOOL_RESULT_LIMIT: usize = 2000;

#[derive(Deserialize, Default)]
struct Bash<'a> {
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    command: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    output: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    cancelled: Option<&'a RawValue>,
    #[serde(
        rename = "exitCode",
        default,
        borrow,
        deserialize_with = "grove_codec::entry::present"
    )]
    exit_code: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    truncated: Option<&'a RawValue>,
    #[serde(
        rename = "fullOutputPath",
        default,
        borrow,
        deserialize_with = "grove_codec::entry::present"
    )]
    full_output_path: Option<&'a RawValue>,
    #[serde(
        rename = "excludeFromContext",
        default,
        borrow,
        deserialize_with = "grove_codec::entry::present"
    )]
    exclude: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "grove_codec::entry::present")]
    summary: Option<&'a RawValue>,
}

fn text_of(v: Option<&RawValue>) -> String {
    js(v).map(|s| s.to_lossy()).unwrap_or_default()
}

/// A message converted for the model: user text, or the assistant/tool-result message as is.
enum LlmMessage<'a> {
    UserText(String),
    Stored(&'a SummaryMessage),
}

/// The LLM conversion of spec §5.8 (grove's wording).
fn convert(m: &SummaryMessage) -> Option<LlmMessage<'_>> {
    let f: Bash<'_> = serde_json::from_str(&m.json).unwrap_or_default();
    match m.role.as_str() {
        "user" | "assistant" | "toolResult" => Some(LlmMessage::Stored(m)),
        "bashExecution" => {
            if f.exclude.is_some_and(grove_codec::jsstr::truthy) {
                return None;
            }
            let mut t = format!("Shell command `{}`\n", text_of(f.command));
            let output = text_of(f.output);
            if output.is_empty() {
                t.push_str("(no output)");
            } else {
                t.push_str(&format!("```\n{output}\n```"));
            }
            if f.cancelled.is_some_and(grove_codec::jsstr::truthy) {
                t.push_str("\n\n(the command was cancelled)");
            } else if let Some(code) = f.exit_code.map(|c| c.get()).filter(|c| *c != "0" && *c != "null") {
                t.push_str(&format!("\n\nExit code {code}"));
            }
            if f.truncated.is_some_and(grove_codec::jsstr::truthy) && f.full_output_path.is_some() {
                t.push_str(&format!(
                    "\n\n[Output truncated; the full output is in {}]",
                    text_of(f.full_output_path)
                ));
            }
            Some(LlmMessage::UserText(t))
        }
        "custom" => {
            let content = MessageFields::parse(&m.json).and_then(|x| x.content);
            Some(LlmMessage::UserText(super::blocks::content_text(content, "").to_lossy()))
        }
        "branchSummary" => Some(LlmMessage::UserText(format!(
            "Summary of a branch this conversation came back from:\n\n<summary>\n{}</summary>",
            text_of(f.summary)
        ))),
        "compactionSummary" => Some(LlmMessage::UserText(format!(
            "Summary of the earlier conversation, which was compacted:\n\n<summary>\n{}\n</summary>",
            text_of(f.summary)
        ))),
        _ => None,
    }
}

/// Serializes messages as the prompt's conversation text (spec §8.4).
pub fn serialize_conversation(messages: &[SummaryMessage]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in messages {
        match convert(m) {
            None => {}
            Some(LlmMessage::UserText(t)) if !t.is_empty() => parts.push(format!("[User]: {t}")),
            Some(LlmMessage::UserText(_)) => {}
            Some(LlmMessage::Stored(s)) => {
                let content = MessageFields::parse(&s.json).and_then(|x| x.content);
                match s.role.as_str() {
                    "user" => {
                        let t = content_text(content, "").to_lossy();
                        if !t.is_empty() {
                            parts.push(format!("[User]: {t}"));
                        }
                    }
                    "assistant" => {
                        let bs = blocks(content);
                        let mut thinking = Vec::new();
                        let mut texts = Vec::new();
                        let mut calls = Vec::new();
                        for b in &bs {
                            match b.kind().as_deref() {
                                Some("thinking") => thinking.push(text_of(b.thinking)),
                                Some("text") => texts.push(text_of(b.text)),
                                Some("toolCall") => calls.push(tool_call(b.name, b.arguments)),
                                _ => {}
                            }
                        }
                        if !thinking.is_empty() {
                            parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                        }
                        if !texts.is_empty() {
                            parts.push(format!("[Assistant]: {}", texts.join("\n")));
                        }
                        if !calls.is_empty() {
                            parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                        }
                    }
                    _ => {
                        let t = content_text(content, "");
                        let text = if t.len() > TOOL_RESULT_LIMIT {
                            format!(
                                "{}\n\n[... {} more characters truncated]",
                                JsString(t.0[..TOOL_RESULT_LIMIT].to_vec()).to_lossy(),
                                t.len() - TOOL_RESULT_LIMIT
                            )
                        } else {
                            t.to_lossy()
                        };
                        parts.push(format!("[Tool result]: {text}"));
                    }
                }
            }
        }
    }
    parts.join("\n\n")
}

/// `name(k1=<json v1>, k2=<json v2>)`.
fn tool_call(name: Option<&RawValue>, arguments: Option<&RawValue>) -> String {
    let args: Vec<String> = arguments
        .and_then(|a| serde_json::from_str::<indexmap::IndexMap<String, &RawValue>>(a.get()).ok())
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", grove_codec::writer::compact(v.get())))
                .collect()
        })
        .unwrap_or_default();
    format!("{}({})", text_of(name), args.join(", "))
}

/// The prompt text: the conversation, then the instructions (spec §8.4).
pub fn build_prompt(prepared: &PreparedBranch, custom: Option<&str>, replace: bool) -> String {
    let instructions = match custom.filter(|c| !c.is_empty()) {
        Some(c) if replace => c.to_owned(),
        Some(c) => format!("{DEFAULT_INSTRUCTIONS}\n\nAdditional focus: {c}"),
        None => DEFAULT_INSTRUCTIONS.to_owned(),
    };
    format!(
        "<conversation>\n{}\n</conversation>\n\n{}",
        serialize_conversation(&prepared.messages),
        instructions
    )
}

/// The summary text written to the entry: preamble, the model's text, the file lists.
pub fn final_summary(model_text: &str, prepared: &PreparedBranch) -> String {
    let mut out = format!("{PREAMBLE}\n\n{model_text}");
    let mut sections = Vec::new();
    if !prepared.read_files.is_empty() {
        sections.push(format!(
            "<read-files>\n{}\n</read-files>",
            prepared.read_files.join("\n")
        ));
    }
    if !prepared.modified_files.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            prepared.modified_files.join("\n")
        ));
    }
    if !sections.is_empty() {
        out.push_str("\n\n");
        out.push_str(&sections.join("\n\n"));
    }
    out
}

/// The text written when there is nothing to summarize (no model call).
pub const NOTHING_TO_SUMMARIZE: &str = "No content to summarize";
