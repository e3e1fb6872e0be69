//! `grove seal`: the digest that `grove verify --seal` checks a session against later.

use crate::env::Env;
use crate::error::CmdResult;
use crate::output::seal_value;

/// Print a session's seal: one digest over its header, every record's bytes in log order and
/// its operation log (docs/format.md, "Seal").
///
/// Keep it somewhere the store's writers cannot change. `grove verify SESSION --seal DIGEST`
/// later tells whether the session still extends exactly what was sealed: appending more
/// keeps it valid; any change to what was sealed (an edited line, a dropped or reordered
/// record, a session re-imported under the same id) breaks it, even where every digest chain
/// verifies on its own. With --json: {"digest", "records", "operations"}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    let seal = session.seal()?;
    if args.json {
        writeln!(env.out, "{}", seal_value(&seal))?;
    } else {
        writeln!(env.out, "{}", seal.digest)?;
    }
    Ok(())
}
