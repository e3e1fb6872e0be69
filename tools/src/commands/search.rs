//! `grove search`: the entries of every session whose text matches a query.

use grove::SearchOptions;

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::search::{self, MAX_LIMIT};

/// Find the entries whose text matches QUERY, across every session of the store.
///
/// The text of an entry is what a person would look for in it: a message's text and
/// thinking, a tool call's name and arguments, a tool result, a bash command and its output,
/// summaries, labels and session names (docs/design.md, "Search"). Every word of QUERY must
/// occur unless the words are joined by OR; "a phrase" in quotes matches the words in order;
/// a word may end in * to match its prefix. Entries written before the search are always
/// found: the index catches up with the log first.
///
/// Prints one hit per line, best first: the session, the entry, its type, `*` when it is on
/// the session's active path, and a snippet with the matches in [brackets]. With --json one
/// object, {"hits": [{"session", "entry", "seq", "type", "role", "timestamp", "score",
/// "active", "snippet", "marked", "highlights"}], "total", "indexed"}, where marked is the
/// snippet as HTML with <mark> around each match and highlights its byte ranges.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to look for (optional with --reindex).
    #[arg(required_unless_present = "reindex")]
    query: Option<String>,
    /// Only this session's entries (an id or a unique prefix).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Only entries of these types (message, compaction, branch_summary, label, session_info,
    /// custom_message, …) or message roles (user, assistant, toolResult, bashExecution, …);
    /// repeat it or separate them by commas.
    #[arg(long = "type", value_name = "T")]
    types: Vec<String>,
    /// Only entries written at or after this time: 2026-12-01, 2026-12-01T10:00:00Z, or how
    /// long ago (90s, 30m, 12h, 7d, 2w).
    #[arg(long, value_name = "T")]
    since: Option<String>,
    /// The most hits to print (at most 1000).
    #[arg(long, value_name = "N", default_value_t = 20)]
    limit: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Build the index again from the log first (it is derived from the log and rebuilt
    /// without loss).
    #[arg(long)]
    reindex: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    if args.limit == 0 || args.limit > MAX_LIMIT {
        return Err(CommandError::invalid(
            format!("--limit must be from 1 to {MAX_LIMIT}, not {}", args.limit),
            "give a --limit of 1 to 1000 (20 by default)",
        ));
    }
    let since_ms = match &args.since {
        Some(text) => Some(search::since_ms(text, search::now_ms()).map_err(|message| {
            CommandError::InvalidInput {
                message,
                hint: None,
            }
        })?),
        None => None,
    };
    let store = env.open_store()?;
    if args.reindex {
        let report = store.search_reindex()?;
        if args.query.is_none() {
            if args.json {
                let value = serde_json::json!({
                    "indexed": report.indexed,
                    "sessions": report.sessions,
                });
                writeln!(env.out, "{value}")?;
            } else {
                writeln!(
                    env.out,
                    "indexed {} entries of {} sessions",
                    report.indexed, report.sessions
                )?;
            }
            return Ok(());
        }
    }
    let session = match &args.session {
        Some(spec) => Some(store.find_session(spec)?.id().to_owned()),
        None => None,
    };
    let options = SearchOptions {
        session,
        types: search::types(&args.types),
        since_ms,
        limit: args.limit,
    };
    let query = args.query.unwrap_or_default();
    let results = store.search(&query, &options)?;
    if args.json {
        writeln!(env.out, "{}", search::results_value(&results))?;
        return Ok(());
    }
    for hit in &results.hits {
        let kind = match &hit.role {
            Some(role) => format!("{}/{role}", hit.entry_type),
            None => hit.entry_type.clone(),
        };
        let snippet = search::marked(hit, "[", "]", str::to_owned).replace('\n', " ");
        writeln!(
            env.out,
            "{}  {}  {}{}  {}",
            hit.session,
            hit.entry,
            kind,
            if hit.active { " *" } else { "" },
            snippet
        )?;
    }
    if results.total > results.hits.len() {
        writeln!(
            env.out,
            "{} of {} hits (--limit to see more)",
            results.hits.len(),
            results.total
        )?;
    } else if results.hits.is_empty() {
        writeln!(env.out, "no hits")?;
    }
    Ok(())
}
