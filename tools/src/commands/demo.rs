//! `grove demo`: builds the seed scenario (a conversation that branched) in the store.

use std::time::{SystemTime, UNIX_EPOCH};

use grove::{CreateSession, NewEntry};

use crate::env::Env;
use crate::error::{CmdResult, CommandError};

/// Create a demo session: a conversation that branched, then print its tree and context.
///
/// user "user 1" → assistant "assistant 1" → user "plan A" → assistant "assistant A"; then
/// the leaf moves back to "assistant 1" and the conversation continues with user "plan B" →
/// assistant "assistant B". Each run creates a new session (cwd: the current directory).
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, env: &mut Env<'_>) -> CmdResult {
    let store = env.open_store()?;
    let cwd = std::env::current_dir().map_err(|source| CommandError::File {
        path: ".".into(),
        source,
    })?;
    let session = store.create_session(CreateSession {
        cwd: cwd.display().to_string(),
        ..CreateSession::default()
    })?;
    let mut clock = now_ms();
    let mut say = |message: &dyn Fn(u64) -> String| -> CmdResult<String> {
        clock += 1;
        Ok(session.append(NewEntry::Message {
            message: message(clock),
        })?)
    };
    say(&|t| user("user 1", t))?;
    let assistant_1 = say(&|t| assistant("assistant 1", t))?;
    say(&|t| user("plan A", t))?;
    say(&|t| assistant("assistant A", t))?;
    session.move_to(Some(&assistant_1))?;
    say(&|t| user("plan B", t))?;
    say(&|t| assistant("assistant B", t))?;

    writeln!(env.out, "session {}", session.id())?;
    writeln!(env.out)?;
    let options = crate::graph::GraphOptions::for_stdout(false, false, env.escape);
    crate::graph::render(&session, &session.tree()?, options, env.out)?;
    writeln!(env.out)?;
    writeln!(env.out, "context at the leaf:")?;
    super::context::render(&session.build_context()?, env.out)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A pi user message, keys in pi's order.
fn user(text: &str, timestamp: u64) -> String {
    format!(
        r#"{{"role":"user","content":[{{"type":"text","text":{}}}],"timestamp":{timestamp}}}"#,
        json_string(text)
    )
}

/// A pi assistant message, keys in pi's order.
fn assistant(text: &str, timestamp: u64) -> String {
    const USAGE: &str = r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    format!(
        r#"{{"role":"assistant","content":[{{"type":"text","text":{}}}],"api":"demo","provider":"demo","model":"demo-model","usage":{USAGE},"stopReason":"stop","timestamp":{timestamp}}}"#,
        json_string(text)
    )
}

/// A JSON string literal.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}
