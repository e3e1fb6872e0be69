//! `grove fork`: a new session from all or part of an existing one.

use std::collections::HashMap;

use clap::ValueEnum;
use grove::{ForkMode, ForkOptions, ForkPosition, SessionSummary};
use serde_json::json;

use super::ls::lineage;
use crate::env::Env;
use crate::error::{CmdResult, CommandError};

/// Fork a session into a new one, whose parent session is the source.
///
/// With an entry ID the new session ends just before it (--before, the default: ID must be
/// a user message, as pi's "fork from here") or at it (--at). Without ID the whole session
/// is copied. Modes: `path` (pi harness `fork`: the branch to the cut, ids kept; without ID
/// every record), `rechained` (pi-CLI `/fork`: the full path, labels dropped and re-emitted
/// at the end) and `copy` (pi-CLI `--fork`: every record, verbatim, whatever ID says).
///
/// Prints the new session id and its lineage; with --json {"session": NEW_ID}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session to fork (id or unique id prefix).
    session: String,
    /// Where to cut: an entry id or unique prefix, `@` or `@-`. Default: copy everything.
    #[arg(value_name = "ID")]
    entry: Option<String>,
    /// Cut at the entry: it is the new session's leaf.
    #[arg(long, conflicts_with = "before")]
    at: bool,
    /// Cut just before the entry, a user message (the default).
    #[arg(long)]
    before: bool,
    /// What to copy.
    #[arg(long, value_enum, default_value_t = Mode::Path)]
    mode: Mode,
    /// The new session's working directory (default: the source's).
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// The new session's id (default: a fresh UUIDv7).
    #[arg(long = "id", value_name = "NEW_ID")]
    id: Option<String>,
    /// Print {"session": NEW_ID}.
    #[arg(long)]
    json: bool,
}

/// `--mode` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    Path,
    Rechained,
    Copy,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (store, source) = env.open_session(&args.session)?;
    let entry = match &args.entry {
        None => None,
        Some(spec) => Some(source.resolve_entry(spec)?.ok_or_else(|| {
            CommandError::invalid(
                "fork needs an entry, not the root position",
                "leave ID out to copy the whole session",
            )
        })?),
    };
    let options = ForkOptions {
        entry,
        position: if args.at {
            ForkPosition::At
        } else {
            ForkPosition::Before
        },
        mode: match args.mode {
            Mode::Path => ForkMode::Path,
            Mode::Rechained => ForkMode::Rechained,
            Mode::Copy => ForkMode::Copy,
        },
        cwd: args.cwd.clone(),
        id: args.id.clone(),
        ..ForkOptions::default()
    };
    let forked = store.fork(&source, options)?;
    if args.json {
        writeln!(env.out, "{}", json!({ "session": forked.id() }))?;
        return Ok(());
    }
    let sessions = store.sessions()?;
    let by_id: HashMap<&str, &SessionSummary> =
        sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let entries = by_id.get(forked.id()).map_or(0, |s| s.entries);
    let leaf = forked.leaf()?;
    writeln!(
        env.out,
        "session {} ({entries} entries, leaf {})",
        forked.id(),
        leaf.as_deref().unwrap_or("root")
    )?;
    let mut chain = vec![forked.id().to_owned()];
    if let Some(s) = by_id.get(forked.id()) {
        chain.extend(lineage(s, |id| {
            by_id.get(id).and_then(|p| p.parent_session_id.clone())
        }));
    }
    writeln!(env.out, "lineage: {}", chain.join(" <- "))?;
    Ok(())
}
