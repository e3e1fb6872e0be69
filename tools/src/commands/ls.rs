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
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let store = env.read_store()?;
    let sessions = store.sessions()?;
    let by_id: HashMap<&str, &SessionSummary> =
        sessions.iter().map(|s| (s.id.as_str(), s)).collect();
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
                "lineage": lineage(s, &by_id),
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
        let ancestors = lineage(s, &by_id);
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
