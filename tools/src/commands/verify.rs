//! `grove verify`: recompute digest chains and indexes and report every problem.

use super::Env;
use crate::error::{CmdResult, CommandError};

/// Verify the store, or one session: recompute every entry's digest chain from the stored
/// lines and check every index (children, ids, leaf history, checkpoints, labels, views)
/// against the log.
///
/// Prints each problem with its session and entry, and exits non-zero when there is any.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this session (id or unique id prefix).
    session: Option<String>,
    /// Print {"sessions": N, "records": N, "problems": [{"session", "entry"?, "problem"}]}.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let store = env.inspect_store()?;
    let report = match &args.session {
        Some(spec) => store.find_session(spec)?.verify()?,
        None => store.verify()?,
    };
    if args.json {
        let problems: Vec<serde_json::Value> = report
            .problems
            .iter()
            .map(|p| {
                let mut v = serde_json::json!({ "session": p.session, "problem": p.what });
                if let Some(e) = &p.entry {
                    v["entry"] = serde_json::json!(e);
                }
                v
            })
            .collect();
        let out = serde_json::json!({
            "sessions": report.sessions,
            "records": report.records,
            "problems": problems,
        });
        writeln!(env.out, "{out}")?;
    } else {
        for p in &report.problems {
            writeln!(env.out, "problem: {p}")?;
        }
        writeln!(
            env.out,
            "{} session(s), {} record(s) verified, {} problem(s)",
            report.sessions,
            report.records,
            report.problems.len()
        )?;
    }
    if report.is_ok() {
        Ok(())
    } else {
        Err(CommandError::VerifyFailed(report.problems.len()))
    }
}
