//! `grove append`: one entry or message, read as JSON from stdin, appended at the leaf.

use std::io::Read;

use grove::codec::reader::DEFAULT_MAX_LINE_BYTES;
use grove::{AppendOptions, NewEntry};
use serde_json::Value;

use crate::env::Env;
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
    /// The longest input accepted, in bytes (default 268435456, 256 MiB): a longer one is
    /// refused with InputTooLong, having read at most this much of it into memory.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_line_bytes: u64,
    /// Print {"id": ID} instead of the bare id.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let limit = usize::try_from(args.max_line_bytes).unwrap_or(usize::MAX);
    let stdin_err = |source| CommandError::File {
        path: STDIN.into(),
        source,
    };
    let bytes = read_bounded(&mut std::io::stdin().lock(), limit)
        .map_err(stdin_err)?
        .ok_or_else(|| CommandError::InputTooLong {
            path: STDIN.into(),
            limit,
        })?;
    let text = String::from_utf8(bytes)
        .map_err(|e| CommandError::invalid(format!("stdin is not UTF-8: {e}"), SHAPE_HINT))?;
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

/// How stdin is named in errors.
const STDIN: &str = "<stdin>";

/// Reads all of `input`, or `None` as soon as it holds more than `limit` bytes; never holds
/// more than `limit` bytes and a read's worth.
fn read_bounded(input: &mut dyn Read, limit: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => return Ok(Some(out)),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let needed = out.len().saturating_add(n);
        if needed > limit {
            return Ok(None);
        }
        if needed > out.capacity() {
            // Grow as `Vec` would, but never past the limit.
            let cap = out.capacity().saturating_mul(2).clamp(needed, limit);
            out.reserve_exact(cap - out.len());
        }
        out.extend_from_slice(&chunk[..n]);
    }
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
