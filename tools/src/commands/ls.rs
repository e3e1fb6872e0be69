//! `grove ls`: the sessions of the store.

use std::collections::{HashMap, HashSet};

use grove::SessionSummary;
use serde_json::{json, Value};

use crate::env::Env;
use crate::error::CmdResult;

/// List the sessions of the store, ordered by id.
///
/// Each session shows its id, creation time, entry count, working directory and its parent
/// lineage (the session it was forked from, that one's parent, and so on).
///
/// With --json: an array of {"id", "created", "cwd", "entries", "name", "parentSessionId",
/// "parentSession", "lineage"}, where name, parentSessionId and parentSession may be null
/// and lineage is the list of ancestor session ids, nearest first.
///
/// --limit N lists one page of at most N sessions, from the first id after --after ID (before
/// it with --order desc, which lists from the last id); a page reads only its sessions, so it
/// costs the page whatever the store holds. Pass the last id printed as --after for the next
/// page. --cwd, --name, --label and the --created-/--updated- bounds list only the sessions
/// that pass every one given (a filtered page reads sessions until it is full).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// List from the first id after this one (before it, with --order desc).
    #[arg(long, value_name = "ID")]
    after: Option<String>,
    /// At most N sessions.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
    /// asc (by id, the default) or desc (from the last id).
    #[arg(long, value_name = "ORDER", default_value = "asc", value_parser = ["asc", "desc"])]
    order: String,
    /// Only sessions with this working directory.
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// Only sessions whose name contains this (case-insensitive).
    #[arg(long, value_name = "TEXT")]
    name: Option<String>,
    /// Only sessions with an entry carrying this label.
    #[arg(long, value_name = "TEXT")]
    label: Option<String>,
    /// Only sessions created at or after this time (2026-12-01, or how long ago: 7d).
    #[arg(long, value_name = "TIME")]
    created_after: Option<String>,
    /// Only sessions created before this time.
    #[arg(long, value_name = "TIME")]
    created_before: Option<String>,
    /// Only sessions last active at or after this time.
    #[arg(long, value_name = "TIME")]
    updated_after: Option<String>,
    /// Only sessions last active before this time.
    #[arg(long, value_name = "TIME")]
    updated_before: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let store = env.read_store()?;
    let filter = crate::listing::filter(
        &crate::listing::FilterText {
            cwd: args.cwd.as_deref(),
            name: args.name.as_deref(),
            label: args.label.as_deref(),
            created_after: args.created_after.as_deref(),
            created_before: args.created_before.as_deref(),
            updated_after: args.updated_after.as_deref(),
            updated_before: args.updated_before.as_deref(),
        },
        crate::when::now_ms(),
    )
    .map_err(|e| {
        crate::error::CommandError::invalid(e, "give a time (2026-12-01) or how long ago (7d)")
    })?;
    let paged =
        args.after.is_some() || args.limit.is_some() || args.order == "desc" || !filter.is_empty();
    let sessions = if paged {
        let limit = args
            .limit
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        store.sessions_page_where(args.after.as_deref(), limit, args.order == "desc", &filter)?
    } else {
        store.sessions()?
    };
    let by_id: HashMap<&str, &SessionSummary> =
        sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    // A page's sessions may descend from sessions outside it: those are read as they come.
    let parent_of = |id: &str| match by_id.get(id) {
        Some(p) => p.parent_session_id.clone(),
        None => store
            .session(id)
            .ok()
            .and_then(|p| p.record().parent_session_id.clone()),
    };
    let ancestry = |s: &SessionSummary| lineage(s, parent_of);
    if args.json {
        let mut rows = Vec::with_capacity(sessions.len());
        for s in &sessions {
            let name = store.session(&s.id)?.name()?;
            rows.push(json!({
                "id": s.id,
                "created": s.created,
                "cwd": s.cwd,
                "entries": s.entries,
                "name": name,
                "parentSessionId": s.parent_session_id,
                "parentSession": s.parent_session,
                "lineage": ancestry(s),
            }));
        }
        writeln!(env.out, "{}", Value::Array(rows))?;
        return Ok(());
    }
    if sessions.is_empty() {
        writeln!(env.out, "no sessions (import one with `grove import FILE`)")?;
        return Ok(());
    }
    for s in &sessions {
        let name = store.session(&s.id)?.name()?;
        let mut line = format!(
            "{}  {}  {:>6} entries  {}",
            s.id, s.created, s.entries, s.cwd
        );
        if let Some(n) = name {
            line.push_str(&format!("  {:?}", crate::output::clip(&n)));
        }
        let ancestors = ancestry(s);
        if !ancestors.is_empty() {
            line.push_str("  <- ");
            line.push_str(&ancestors.join(" <- "));
        }
        writeln!(env.out, "{line}")?;
    }
    Ok(())
}

/// The ancestor session ids of `s`, nearest first, each parent's found by `parent_of` (its
/// parent's id, `None` for a root or a session the store does not hold, which ends the list,
/// as does a cycle).
pub fn lineage(s: &SessionSummary, parent_of: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: HashSet<String> = HashSet::from([s.id.clone()]);
    let mut next = s.parent_session_id.clone();
    while let Some(id) = next {
        if !seen.insert(id.clone()) {
            break;
        }
        next = parent_of(&id);
        out.push(id);
    }
    out
}
