//! `grove append`: one entry or message, read as JSON from stdin, appended at the leaf.

use std::io::Read;

use grove::{AppendOptions, NewEntry};
use serde_json::Value;

use super::Env;
use crate::error::{CmdResult, CommandError};

/// Append one entry at the active leaf; it becomes the new leaf. Prints its id.
///
/// Reads ONE JSON object on stdin. An object with a "type" key is an entry (its fields are
/// kept in order; an "id" field is used as the entry id, "parentId" and "timestamp" are set
/// by grove). An object with a "role" key is a message, wrapped in a `message` entry.
///
/// Example: echo '{"role":"user","content":"hi","timestamp":0}' | grove append SESSION
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Print {"id": ID} instead of the bare id.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|source| CommandError::File {
            path: "<stdin>".into(),
            source,
        })?;
    let (entry, options) = parse_input(&text)?;
    let (_store, session) = env.open_session(&args.session)?;
    let id = session.append_with(entry, options)?;
    if args.json {
        writeln!(env.out, "{}", serde_json::json!({ "id": id }))?;
    } else {
        writeln!(env.out, "{id}")?;
    }
    Ok(())
}

const SHAPE_HINT: &str = "give one JSON object with a \"type\" key (an entry) or a \"role\" key \
                          (a message)";

/// Classifies the input: an entry object (`type`) or a message object (`role`).
fn parse_input(text: &str) -> CmdResult<(NewEntry, AppendOptions)> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        CommandError::invalid(format!("stdin is not one JSON value: {e}"), SHAPE_HINT)
    })?;
    let Value::Object(obj) = &value else {
        return Err(CommandError::invalid(
            "stdin is not a JSON object",
            SHAPE_HINT,
        ));
    };
    let object = text.trim().to_owned();
    if obj.contains_key("type") {
        let id = match obj.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(CommandError::invalid(
                    "the entry's \"id\" is not a string",
                    "leave \"id\" out to get a fresh id",
                ))
            }
        };
        if obj.get("parentId").is_some_and(|p| !p.is_null()) {
            eprintln!("note: \"parentId\" is ignored; the entry is appended at the active leaf");
        }
        let options = AppendOptions {
            id,
            ..AppendOptions::default()
        };
        Ok((NewEntry::Raw { object }, options))
    } else if obj.contains_key("role") {
        Ok((
            NewEntry::Message { message: object },
            AppendOptions::default(),
        ))
    } else {
        Err(CommandError::invalid(
            "the object has neither a \"type\" nor a \"role\" key",
            SHAPE_HINT,
        ))
    }
}
