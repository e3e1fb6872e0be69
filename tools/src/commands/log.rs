//! `grove log`: a session's operation log, newest first (like `jj op log`).

use crate::env::Env;
use crate::error::CmdResult;
use crate::output::{operation_value, ShortIds};

/// Show the operations of a session, newest first: every change (append, append_many, move,
/// navigate, summary, label, name, import, fork, undo) with its number, time, who made it
/// (`cli`, the server client's name, or the library caller's), the leaf before and after it
/// and the records it wrote.
///
/// Operation numbers are what `grove undo --to-op`, `--at-op` and the server take. Records
/// written by store layouts up to 9 carry no stamp and show as one `legacy` operation.
/// With --json: one JSON object per line, {"op", "kind", "time", "timeMs", "actor",
/// "leafBefore", "leafAfter", "records", "firstSeq", "firstId", "lastId"}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Show at most N operations (the newest).
    #[arg(long, short = 'n', value_name = "N")]
    limit: Option<usize>,
    /// Oldest first (after --limit has picked the newest, as `jj op log --reversed`).
    #[arg(long)]
    reverse: bool,
    /// Print JSON lines.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    let ops = session.operations()?;
    let mut shown: Vec<&grove::Operation> = ops.iter().rev().collect();
    if let Some(n) = args.limit {
        shown.truncate(n);
    }
    if args.reverse {
        shown.reverse();
    }
    if args.json {
        for op in shown {
            writeln!(env.out, "{}", operation_value(op))?;
        }
        return Ok(());
    }
    let short = ShortIds::of_session(&session)?;
    let leaf = |id: &Option<String>| id.as_deref().map_or("root", |i| short.get(i)).to_owned();
    for op in shown {
        let records = match op.records() {
            1 => format!("1 record ({})", short.get(&op.first_id)),
            n => format!(
                "{n} records ({}..{})",
                short.get(&op.first_id),
                short.get(&op.last_id)
            ),
        };
        writeln!(
            env.out,
            "op {:<5} {:<11} {}  {}",
            op.number,
            op.kind.name(),
            op.time().as_deref().unwrap_or("(time unknown)"),
            op.actor.as_deref().unwrap_or("(unknown)"),
        )?;
        writeln!(
            env.out,
            "         leaf {} -> {}, {records}",
            leaf(&op.leaf_before),
            leaf(&op.leaf_after)
        )?;
    }
    Ok(())
}
