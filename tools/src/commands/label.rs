//! `grove label`: set or clear the label of an entry.

use serde_json::json;

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::output::{describe_entry, ordered_object, ShortIds};

/// Set (or with --clear remove) the label of an entry.
///
/// Appends a `label` entry at the active leaf, as pi does; it becomes the leaf. The label is
/// trimmed; a blank one clears. Prints the entry with its label; with --json {"id":
/// LABEL_ENTRY_ID, "targetId": ID, "label": TEXT | null}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// The entry to label: an id or unique prefix, `@` or `@-`.
    #[arg(value_name = "ID")]
    target: String,
    /// The label.
    #[arg(
        value_name = "TEXT",
        required_unless_present = "clear",
        conflicts_with = "clear"
    )]
    text: Option<String>,
    /// Remove the label.
    #[arg(long)]
    clear: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.open_session(&args.session)?;
    let target = session.resolve_entry(&args.target)?.ok_or_else(|| {
        CommandError::invalid(
            "the root position cannot be labelled",
            "name an entry: an id or unique prefix, `@` or `@-`",
        )
    })?;
    let id = session.set_label(&target, args.text.as_deref())?;
    let label = session.label(&target)?.map(|l| l.label);
    if args.json {
        let pairs = [
            ("id", json!(id)),
            ("targetId", json!(target)),
            ("label", json!(label)),
        ];
        writeln!(env.out, "{}", ordered_object(&pairs))?;
        return Ok(());
    }
    let short = ShortIds::of_session(&session)?;
    let entry = describe_entry(&session, &short, Some(&target))?;
    match label {
        Some(l) => writeln!(env.out, "{entry} [{l}]")?,
        None => writeln!(env.out, "{entry} (no label)")?,
    }
    Ok(())
}
