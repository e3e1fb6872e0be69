//! `grove gc`: removes the payloads no session references, and says which.

use crate::env::Env;
use crate::error::CmdResult;

/// Remove the payloads no session references any more (the large string values stored once by
/// their blake3; deleting a session leaves its payloads for this), and list each one removed.
///
/// Nothing else is removed, and a payload any session still references is kept. Prints one
/// line per removed payload (`removed HASH BYTES`) and a summary; with --json one object,
/// {"payloads", "payloadBytes", "referenced", "removed": [{"hash", "bytes"}], "removedBytes"}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let store = env.open_store()?;
    let report = store.gc()?;
    if args.json {
        writeln!(env.out, "{}", crate::output::gc_value(&report))?;
        return Ok(());
    }
    for (hash, bytes) in &report.removed {
        writeln!(env.out, "removed {hash} {bytes}")?;
    }
    writeln!(
        env.out,
        "{} payload(s) of {} kept (referenced), {} removed ({} bytes)",
        report.referenced,
        report.payloads,
        report.removed.len(),
        report.removed_bytes()
    )?;
    Ok(())
}
