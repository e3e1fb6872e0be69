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
    /// Also check that the session still extends this seal (`grove seal` printed it): what
    /// was sealed is unchanged, whatever was appended since. Needs SESSION.
    #[arg(long, value_name = "DIGEST", requires = "session")]
    seal: Option<String>,
    /// Print {"sessions": N, "records": N, "problems": [{"session", "entry"?, "problem"}]}
    /// (and "seal": {"extends", "operations"?, "records"?} with --seal).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let store = env.inspect_store()?;
    let mut seal = None;
    let mut report = match &args.session {
        Some(spec) => {
            let session = store.find_session(spec)?;
            if let Some(digest) = &args.seal {
                seal = Some((session.id().to_owned(), session.check_seal(digest)?));
            }
            session.verify()?
        }
        None => store.verify()?,
    };
    if let Some((id, grove::SealCheck::Diverged)) = &seal {
        // A failed seal is a problem like any other: listed, and the exit status says so.
        report.problems.push(grove::Problem {
            session: id.clone(),
            entry: None,
            what: "the session does not extend the seal given: what was sealed was changed \
                   (or the seal is another session's)"
                .to_owned(),
        });
    }
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
        let mut out = serde_json::json!({
            "sessions": report.sessions,
            "records": report.records,
            "problems": problems,
        });
        if let Some((_, check)) = &seal {
            out["seal"] = crate::output::seal_check_value(check);
        }
        writeln!(env.out, "{out}")?;
    } else {
        for p in &report.problems {
            writeln!(env.out, "problem: {p}")?;
        }
        if let Some((
            _,
            grove::SealCheck::Extends {
                operations,
                records,
            },
        )) = &seal
        {
            writeln!(
                env.out,
                "seal: the session extends it (sealed after {operations} operation(s), \
                 {records} record(s))"
            )?;
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
