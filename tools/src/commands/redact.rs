//! `grove redact`: replace an entry's value, or its whole content, by a redaction marker.

use serde_json::json;

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::output::redaction_value;

/// Redact an entry: the value at --path (a JSON pointer), or the entry's whole content, reads
/// as "[redacted]" from now on, everywhere (context, export, search, labels).
///
/// The line's other bytes stay as they were, and the entry keeps its place in the tree. The
/// redaction is an operation of its own (`grove log` shows it as `redact`): who, when, the
/// reason, and the blake3 digests of what was removed and of the line before and after, so
/// seals taken before still hold and `grove verify` (and `grove verify --file` on an audit
/// file) tells a redacted line from a tampered one. The original bytes leave the log at once;
/// run `grove gc` next (with no other process holding the store) to remove the payloads,
/// search-index words and old file pages that may still hold them.
///
/// The whole content of a message is its content (text, thinking, tool calls, tool results),
/// a bash execution's command and output, and any summary, details or error text; of a
/// compaction or branch summary, its summary and details; of a label, its label; of a
/// session name, the name; of a custom entry, its data. --list prints the session's
/// redactions instead. With --json: {"entryId", "paths", "reason", "removed", "before",
/// "after", "recordId", "actor", "timeMs"} (--list: {"redactions": [...]}).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// The entry to redact (id or unique prefix, `@` for the leaf).
    #[arg(required_unless_present = "list")]
    entry: Option<String>,
    /// A JSON pointer to the value to redact, such as /message/content/0/text (default: the
    /// entry's whole content).
    #[arg(long, value_name = "POINTER", conflicts_with = "list")]
    path: Option<String>,
    /// Why: recorded with the redaction.
    #[arg(long, required_unless_present = "list", conflicts_with = "list")]
    reason: Option<String>,
    /// List the session's redactions.
    #[arg(long)]
    list: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.open_session(&args.session)?;
    if args.list {
        let found = session.redactions()?;
        if args.json {
            let list: Vec<_> = found.iter().map(redaction_value).collect();
            writeln!(env.out, "{}", json!({ "redactions": list }))?;
            return Ok(());
        }
        for r in &found {
            writeln!(
                env.out,
                "{} {} by {} at {}: {} (removed {})",
                r.entry_id,
                r.paths.join(","),
                r.actor.as_deref().unwrap_or("?"),
                r.time_ms
                    .and_then(|t| i64::try_from(t).ok())
                    .map(grove::codec::time::format_ms)
                    .unwrap_or_default(),
                r.reason,
                r.removed
            )?;
        }
        writeln!(env.out, "{} redaction(s)", found.len())?;
        return Ok(());
    }
    let spec = args.entry.unwrap_or_default();
    let entry = session.resolve_entry(&spec)?.ok_or_else(|| {
        CommandError::invalid(
            "the root position is not an entry",
            "name an entry: an id or unique prefix, or `@` for the leaf",
        )
    })?;
    let reason = args.reason.unwrap_or_default();
    let redaction = session.redact(&entry, args.path.as_deref(), &reason)?;
    if args.json {
        writeln!(env.out, "{}", redaction_value(&redaction))?;
        return Ok(());
    }
    writeln!(
        env.out,
        "redacted {} of entry {} (removed {}); run `grove gc` to clear the store's files",
        redaction.paths.join(", "),
        redaction.entry_id,
        redaction.removed
    )?;
    Ok(())
}
