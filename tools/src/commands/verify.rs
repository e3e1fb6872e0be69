//! `grove verify`: recompute digest chains and indexes and report every problem.

use crate::env::Env;
use crate::error::{CmdResult, CommandError};

/// Verify the store, or one session: recompute every entry's digest chain from the stored
/// lines and check every index (children, ids, leaf history, checkpoints, labels, views)
/// against the log.
///
/// Prints each problem with its session and entry, and exits non-zero when there is any.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this session (id or unique id prefix).
    #[arg(conflicts_with = "file")]
    session: Option<String>,
    /// Check an audit file (`grove export --audit`) instead of the store: no store is opened.
    #[arg(long, value_name = "FILE")]
    file: Option<std::path::PathBuf>,
    /// With --file: the file must be signed by this public key (64 hex digits, or a file
    /// holding them).
    #[arg(long, value_name = "KEY", requires = "file")]
    pubkey: Option<String>,
    /// Also check that the session still extends this seal (`grove seal` printed it): what
    /// was sealed is unchanged, whatever was appended since. Needs SESSION.
    #[arg(long, value_name = "DIGEST", requires = "session")]
    seal: Option<String>,
    /// Print {"sessions": N, "records": N, "redacted": N, "problems": [{"session", "entry"?,
    /// "problem"}]}
    /// (and "seal": {"extends", "operations"?, "records"?} with --seal).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    if let Some(path) = &args.file {
        return verify_file(path, args.pubkey.as_deref(), args.json, env);
    }
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
            "redacted": report.redacted,
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
        if report.redacted > 0 {
            writeln!(
                env.out,
                "{} record(s) redacted, each by a redaction its session records",
                report.redacted
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

/// `--file`: checks an audit file without a store.
fn verify_file(
    path: &std::path::Path,
    pubkey: Option<&str>,
    json: bool,
    env: &mut Env<'_>,
) -> CmdResult {
    let file_err = |p: &std::path::Path| {
        let p = p.to_owned();
        move |source| CommandError::File { path: p, source }
    };
    let bytes = std::fs::read(path).map_err(file_err(path))?;
    let key = match pubkey {
        None => None,
        Some(k) if k.len() == 64 && k.bytes().all(|b| b.is_ascii_hexdigit()) => Some(k.to_owned()),
        Some(k) => {
            let p = std::path::Path::new(k);
            Some(
                std::fs::read_to_string(p)
                    .map_err(file_err(p))?
                    .trim()
                    .to_owned(),
            )
        }
    };
    let report = grove::verify_audit(&bytes, key.as_deref()).map_err(|e| match e {
        grove::GroveError::InvalidSession { reason, .. } => grove::GroveError::InvalidSession {
            file: Some(path.to_owned()),
            reason,
        },
        other => other,
    })?;
    if json {
        let out = serde_json::json!({
            "session": report.session,
            "records": report.records,
            "operations": report.operations,
            "seal": report.seal,
            "signedBy": report.signed_by,
            "redacted": report.redacted.iter().map(|(seq, by)| serde_json::json!({"seq": seq, "by": by})).collect::<Vec<_>>(),
        });
        writeln!(env.out, "{out}")?;
    } else {
        writeln!(
            env.out,
            "audit file of session {}: {} record(s), {} operation(s), seal {}, {}",
            report.session,
            report.records,
            report.operations,
            report.seal,
            match &report.signed_by {
                Some(k) => format!("signed by {k}"),
                None => "not signed".to_owned(),
            }
        )?;
    }
    Ok(())
}
