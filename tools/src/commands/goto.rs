//! `grove goto`: move the active leaf.

use crate::env::Env;
use crate::error::CmdResult;
use crate::output::{describe_line, ShortIds};

/// Move the active leaf to an entry (or to the root position); the next append continues
/// from there, starting a new branch when the entry already has children.
///
/// The move is recorded in the session log as a leaf record, as the pi harness does.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// The new leaf: an entry id or unique prefix, `@-` (the leaf's parent), `@` (stay) or
    /// `root` (the root position, before the first entry).
    #[arg(value_name = "ID|root")]
    target: String,
    /// Print {"leaf": ID | null}.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.open_session(&args.session)?;
    let target = session.resolve_entry(&args.target)?;
    session.move_to(target.as_deref())?;
    if args.json {
        writeln!(env.out, "{}", serde_json::json!({ "leaf": target }))?;
        return Ok(());
    }
    match target {
        None => writeln!(env.out, "leaf: root")?,
        Some(id) => {
            let short = ShortIds::of_session(&session)?;
            let (kind, preview) = describe_line(&session.entry(&id)?.line);
            writeln!(env.out, "leaf: {} {kind}: {preview}", short.get(&id))?;
        }
    }
    Ok(())
}
