//! `grove branch`: the pi harness's `getBranch`, the path cut at the compaction boundary.

use super::print::{print_walk, Walk};
use crate::env::Env;
use crate::error::CmdResult;

/// Show the branch ending at an entry: the path from the root, cut at the nearest
/// compaction boundary (pi harness `getBranch`), root first.
///
/// One line per entry: short id, type or role, preview. With --json: the JSON array of
/// the entry objects exactly as stored (the file's lines, not re-serialized).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Where the branch ends: an entry id or unique prefix, `@` (the leaf, the default),
    /// `@-` (its parent) or `root` (empty).
    #[arg(long, value_name = "ID")]
    from: Option<String>,
    #[command(flatten)]
    at: super::at::AtArgs,
    /// Print the entries as a JSON array.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    let from = super::at::resolve_from_at(&session, args.from.as_deref(), &args.at)?;
    print_walk(env.out, &session, args.json, Walk::Branch, from.as_deref())
}
