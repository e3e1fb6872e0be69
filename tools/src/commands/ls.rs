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
/// page.
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
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let store = env.read_store()?;
    let paged = args.after.is_some() || args.limit.is_some() || args.order == "desc";
    let sessions = if paged {
        let limit = args
            .limit
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        store.sessions_page(args.after.as_deref(), limit, args.order == "desc")?
    } else {
        store.sessions()?
    };
    let by_id: HashMap<&str, &SessionSummary> =
        sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    // A page's sessions may descend from sessions outside it: those are read as they come.
    let ancestry = |s: &SessionSummary| -> Vec<String> {
        let mut out = Vec::new();
        let mut seen: HashSet<String> = HashSet::from([s.id.clone()]);
        let mut next = s.parent_session_id.clone();
        while let Some(id) = next {
            if !seen.insert(id.clone()) {
                break;
            }
            next = match by_id.get(id.as_str()) {
                Some(p) => p.parent_session_id.clone(),
                None => store
                    .session(&id)
                    .ok()
                    .and_then(|p| p.record().parent_session_id.clone()),
            };
            out.push(id);
        }
        out
    };
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

/// The ancestor session ids of `s`, nearest first, followed through the store; a parent
/// the store does not hold ends the list, as does a cycle.
pub fn lineage(s: &SessionSummary, by_id: &HashMap<&str, &SessionSummary>) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::from([s.id.as_str()]);
    let mut next = s.parent_session_id.as_deref();
    while let Some(id) = next {
        if !seen.insert(id) {
            break;
        }
        out.push(id.to_owned());
        next = by_id.get(id).and_then(|p| p.parent_session_id.as_deref());
    }
    out
}
