//! `grove undo`: put the leaf back where it was before an operation.

use crate::env::Env;
use crate::error::CmdResult;
use crate::output::{describe_entry, operation_value, ShortIds};

/// Put the leaf back where it was before the last operation (or before operation N).
///
/// Undo is itself an operation (kind `undo`, a leaf move): nothing is removed or rewritten,
/// `grove log` shows it, and undoing an undo puts the leaf back again. Refused while a turn
/// or a navigation holds the session. With --json: the undo operation as `grove log --json`
/// prints it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Undo back to before operation N (`grove log` numbers them) instead of the last one.
    #[arg(long, value_name = "N")]
    to_op: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.open_session(&args.session)?;
    let op = session.undo(args.to_op)?;
    if args.json {
        writeln!(env.out, "{}", operation_value(&op))?;
        return Ok(());
    }
    let short = ShortIds::of_session(&session)?;
    writeln!(
        env.out,
        "op {}: leaf is now {}",
        op.number,
        describe_entry(&session, &short, op.leaf_after.as_deref())?
    )?;
    Ok(())
}
