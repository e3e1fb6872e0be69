//! `grove retain`: what a retention policy removes (`--plan`), removing it (`--apply`), the
//! store's record of its runs (`--log`), and pins.

use serde_json::json;

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::retain::{plan_value, run_value, store_op_value};

/// Remove old, large or surplus sessions by a policy: never silently.
///
/// A policy is rules; a rule takes the sessions whose id starts with --prefix (all without
/// it) for which each condition it gives holds: last activity older than --older-than (an
/// age such as 30d, 12h, 2w, or a time), an export larger than --larger-than (bytes, or 10KB,
/// 5MB, 1GB), or a place beyond the --keep-newest N by last activity. A session a rule takes
/// goes unless it is pinned (`--pin`, or `"pinned": true` in its header's metadata) or has a
/// label (unless --include-labelled). --policy FILE gives several rules as JSON: {"rules":
/// [{"prefix", "olderThan", "largerThan", "keepNewest", "spareLabelled"}], "archive": {"dir",
/// "format"}}.
///
/// --plan (the default) lists what would go, with sizes and reasons, and what is spared, and
/// changes nothing. --apply records the run in the store's operation log, archives each
/// session first when --archive DIR is given (its pi JSONL `ID.jsonl`, or with
/// --archive-format audit its audit file `ID.audit.jsonl`, written and synced before the
/// session is deleted), deletes it, and records what was done. --log lists the runs.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// List what the policy would remove (the default).
    #[arg(long, conflicts_with_all = ["apply", "log"])]
    plan: bool,
    /// Remove what the policy selects.
    #[arg(long, conflicts_with = "log")]
    apply: bool,
    /// List the store's operation log (retention runs).
    #[arg(long)]
    log: bool,
    /// Pin a session: retention spares it.
    #[arg(long, value_name = "SESSION", conflicts_with_all = ["plan", "apply", "log", "unpin"])]
    pin: Option<String>,
    /// Unpin a session.
    #[arg(long, value_name = "SESSION", conflicts_with_all = ["plan", "apply", "log"])]
    unpin: Option<String>,
    /// The policy as a JSON file (instead of the rule flags).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["prefix", "older_than", "larger_than", "keep_newest", "include_labelled", "archive", "archive_format"])]
    policy: Option<std::path::PathBuf>,
    /// Only sessions whose id starts with this.
    #[arg(long, value_name = "PREFIX")]
    prefix: Option<String>,
    /// Last active longer ago than this (30d, 12h, 2w, or a time).
    #[arg(long, value_name = "AGE")]
    older_than: Option<String>,
    /// An export larger than this (bytes, or 10KB, 5MB, 1GB).
    #[arg(long, value_name = "SIZE")]
    larger_than: Option<String>,
    /// Beyond the newest N by last activity.
    #[arg(long, value_name = "N")]
    keep_newest: Option<usize>,
    /// Do not spare sessions that have a label.
    #[arg(long)]
    include_labelled: bool,
    /// Archive each session into DIR before it is deleted.
    #[arg(long, value_name = "DIR")]
    archive: Option<std::path::PathBuf>,
    /// What the archive is: jsonl (pi JSONL, importable) or audit (an audit file).
    #[arg(long, value_name = "FORMAT", requires = "archive")]
    archive_format: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn invalid(message: String) -> CommandError {
    CommandError::invalid(message, "see `grove retain --help` for the policy's form")
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    if let Some(id) = args.pin.as_deref().or(args.unpin.as_deref()) {
        let store = env.open_store()?;
        let pinned = args.pin.is_some();
        store.set_pinned(id, pinned)?;
        if args.json {
            writeln!(env.out, "{}", json!({ "session": id, "pinned": pinned }))?;
        } else {
            writeln!(
                env.out,
                "{id} {}",
                if pinned { "pinned" } else { "unpinned" }
            )?;
        }
        return Ok(());
    }
    if args.log {
        let store = env.read_store()?;
        let ops = store.store_operations()?;
        if args.json {
            let list: Vec<_> = ops.iter().map(store_op_value).collect();
            writeln!(env.out, "{}", json!({ "operations": list }))?;
            return Ok(());
        }
        for op in &ops {
            let v = store_op_value(op);
            let removed = v["detail"]["removed"].as_array().map_or(0, Vec::len);
            let planned = v["detail"]["plan"]["remove"].as_array().map_or(0, Vec::len);
            writeln!(
                env.out,
                "op {}  {}  {}  {}  {}: {} of {} session(s) removed",
                op.op,
                v["time"].as_str().unwrap_or_default(),
                op.kind,
                op.actor,
                op.status,
                removed,
                planned
            )?;
        }
        writeln!(env.out, "{} store operation(s)", ops.len())?;
        return Ok(());
    }
    let now = crate::when::now_ms();
    let policy = match &args.policy {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| CommandError::File {
                path: path.clone(),
                source,
            })?;
            let json: crate::retain::PolicyJson = serde_json::from_str(&text)
                .map_err(|e| invalid(format!("{}: not a retention policy: {e}", path.display())))?;
            crate::retain::policy(json, now)
                .map_err(|e| invalid(format!("{}: {e}", path.display())))?
        }
        None => {
            let rule = crate::retain::rule(
                args.prefix.clone(),
                args.older_than.as_deref(),
                args.larger_than.as_deref(),
                args.keep_newest,
                !args.include_labelled,
                now,
            )
            .map_err(invalid)?;
            if rule.older_than_ms.is_none()
                && rule.larger_than_bytes.is_none()
                && rule.keep_newest.is_none()
            {
                return Err(invalid(
                    "a retention rule needs a condition: --older-than, --larger-than or \
                     --keep-newest (or --policy FILE)"
                        .to_owned(),
                ));
            }
            let archive = match &args.archive {
                None => None,
                Some(dir) => Some((
                    dir.clone(),
                    crate::retain::archive_format(args.archive_format.as_deref())
                        .map_err(invalid)?,
                )),
            };
            grove::RetentionPolicy {
                rules: vec![rule],
                archive,
            }
        }
    };
    if args.apply {
        let store = env.open_store()?;
        let run = store.retain(&policy)?;
        if args.json {
            writeln!(env.out, "{}", run_value(&run))?;
        } else {
            for (session, archive) in &run.removed {
                match archive {
                    Some(p) => {
                        writeln!(env.out, "removed {session} (archived to {})", p.display())?
                    }
                    None => writeln!(env.out, "removed {session}")?,
                }
            }
            for (session, error) in &run.failed {
                writeln!(env.out, "kept {session}: {error}")?;
            }
            writeln!(
                env.out,
                "op {}: {} session(s) removed ({} bytes), {} spared, {} failed",
                run.op,
                run.removed.len(),
                run.plan.bytes(),
                run.plan.spared.len(),
                run.failed.len()
            )?;
        }
        return if run.failed.is_empty() {
            Ok(())
        } else {
            Err(CommandError::invalid(
                format!("{} session(s) could not be removed", run.failed.len()),
                "see the lines above; they stay in the store",
            ))
        };
    }
    let store = env.read_store()?;
    let plan = store.retention_plan(&policy)?;
    if args.json {
        writeln!(env.out, "{}", plan_value(&plan))?;
        return Ok(());
    }
    for item in &plan.remove {
        writeln!(
            env.out,
            "remove {}  {} bytes  {} entries  ({})",
            item.session,
            item.bytes,
            item.entries,
            item.reasons.join("; ")
        )?;
    }
    for item in &plan.spared {
        writeln!(
            env.out,
            "spare  {}  {}  ({})",
            item.session,
            item.spared.as_deref().unwrap_or_default(),
            item.reasons.join("; ")
        )?;
    }
    writeln!(
        env.out,
        "{} session(s) would be removed ({} bytes), {} spared; nothing changed (--apply removes them)",
        plan.remove.len(),
        plan.bytes(),
        plan.spared.len()
    )?;
    Ok(())
}
