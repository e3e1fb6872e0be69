//! `grove show`: one entry with the digests that prove it.

use grove::codec::digest::hex;

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::output::{describe_line, proof_json, ShortIds};

/// Show one entry, its digest and its path digest.
///
/// The digest is blake3 of the entry's stored line; the path digest (its chain digest) is
/// derived from the parent's path digest and the digest, so it authenticates every line on
/// the entry's path to the root (docs/format.md, "Chain digest"). Both are recomputed from the
/// stored bytes and checked before they are printed: a line or chain that no longer matches is
/// an error (exit 4), as `grove verify` would report. With --json: {"entry": OBJECT, "seq",
/// "depth", "digest", "pathDigest", "parentPathDigest"} (hex), the entry exactly as stored.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// The entry: an id or unique prefix, `@` (the leaf) or `@-` (its parent).
    #[arg(value_name = "ID")]
    entry: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    let id = session.resolve_entry(&args.entry)?.ok_or_else(|| {
        CommandError::invalid(
            "the root position is not an entry",
            "name an entry: an id or unique prefix, `@` or `@-`",
        )
    })?;
    let proof = session.proof(&id)?;
    let entry = &proof.entry;
    if args.json {
        writeln!(env.out, "{}", proof_json(&proof))?;
        return Ok(());
    }
    let short = ShortIds::of_session(&session)?;
    let (kind, preview) = describe_line(&entry.line);
    let parent = entry
        .parent_id()
        .map_or_else(|| "(root)".to_owned(), |p| short.get(&p).to_owned());
    writeln!(
        env.out,
        "entry        {} {kind} {preview}",
        short.get(entry.id())
    )?;
    writeln!(env.out, "id           {}", entry.id())?;
    writeln!(env.out, "parent       {parent}")?;
    writeln!(
        env.out,
        "record       {} (depth {})",
        entry.seq, entry.node.depth
    )?;
    writeln!(
        env.out,
        "digest       {} (blake3 of the line's {} bytes)",
        hex(&proof.content()),
        entry.line.len()
    )?;
    writeln!(env.out, "path digest  {}", hex(&proof.digest()))?;
    writeln!(env.out, "parent path  {}", hex(&proof.parent_digest))?;
    writeln!(env.out, "{}", entry.line)?;
    Ok(())
}
