//! `grove name`: set the session's display name.

use serde_json::json;

use crate::env::Env;
use crate::error::CmdResult;
use crate::output::ordered_object;

/// Set the session's name (shown by `grove ls`).
///
/// Appends a `session_info` entry at the active leaf, as pi does; it becomes the leaf. Line
/// breaks become spaces and the name is trimmed; an empty name clears it. Prints the name;
/// with --json {"id": ENTRY_ID, "name": NAME | null}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// The name.
    #[arg(value_name = "TEXT")]
    text: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.open_session(&args.session)?;
    let id = session.set_name(&args.text)?;
    let name = session.name()?;
    if args.json {
        let pairs = [("id", json!(id)), ("name", json!(name))];
        writeln!(env.out, "{}", ordered_object(&pairs))?;
        return Ok(());
    }
    match name {
        Some(n) => writeln!(env.out, "name: {n}")?,
        None => writeln!(env.out, "name cleared")?,
    }
    Ok(())
}
