//! `grove summary-preview`: what a navigation's branch summary would cover, and its prompt,
//! without running a summarizer or writing anything.

use grove::summary::prompt::build_prompt;
use grove::summary::{prepare_branch_entries, DEFAULT_BUDGET};
use serde_json::{json, Value};

use super::at::resolve_from;
use super::navigate::Preset;
use super::print::print_entries;
use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::output::{ordered_object, ShortIds};

/// Show what `grove navigate --summarize` to TARGET would summarize, and the prompt.
///
/// The entries are those from the old leaf back to (not including) the deepest common
/// ancestor with TARGET, oldest first; they are prepared within the default token budget
/// (newest first) and turned into the prompt a summarizer would get. Nothing is written.
///
/// Human output: the entries (short id, role or type, preview), the totals, the file lists,
/// then the prompt. With --json: {"entryIds", "commonAncestorId", "messageRoles",
/// "totalTokens", "readFiles", "modifiedFiles", "prompt"}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// The navigation target: an entry id or unique prefix, `@` or `@-`.
    #[arg(value_name = "TARGET")]
    target: String,
    /// The leaf being left (default: the active leaf): an entry id or unique prefix, `@`,
    /// `@-` or `root`.
    #[arg(long, value_name = "OLD_LEAF")]
    from: Option<String>,
    /// Which walks collect the entries: `grove` (full paths) or `harness` (paths cut at
    /// compactions, as pi's harness).
    #[arg(long, value_enum, default_value_t = Preset::Grove)]
    preset: Preset,
    /// Extra summary instructions, as `navigate --instructions`.
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// Use --instructions instead of the default instructions.
    #[arg(long, requires = "instructions")]
    replace_instructions: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    let target = session.resolve_entry(&args.target)?.ok_or_else(|| {
        CommandError::invalid(
            "the target must be an entry, not the root position",
            "name an entry: an id or unique prefix, `@` or `@-`",
        )
    })?;
    let old_leaf = resolve_from(&session, args.from.as_deref())?;
    let (entries, common) = session.collect_entries_for_branch_summary(
        old_leaf.as_deref(),
        &target,
        args.preset.path_mode(),
    )?;
    let prepared = prepare_branch_entries(&entries, DEFAULT_BUDGET);
    let prompt = build_prompt(
        &prepared,
        args.instructions.as_deref(),
        args.replace_instructions,
    );
    if args.json {
        let ids: Vec<&str> = entries.iter().map(grove::Entry::id).collect();
        let roles: Vec<&str> = prepared.messages.iter().map(|m| m.role.as_str()).collect();
        let pairs = [
            ("entryIds", json!(ids)),
            ("commonAncestorId", json!(common)),
            ("messageRoles", json!(roles)),
            ("totalTokens", json!(prepared.total_tokens)),
            ("readFiles", json!(prepared.read_files)),
            ("modifiedFiles", json!(prepared.modified_files)),
            ("prompt", Value::String(prompt)),
        ];
        writeln!(env.out, "{}", ordered_object(&pairs))?;
        return Ok(());
    }
    let short = ShortIds::of_session(&session)?;
    let name = |id: Option<&str>| id.map_or("root", |id| short.get(id)).to_owned();
    writeln!(
        env.out,
        "leaving {} for {}; common ancestor {}",
        name(old_leaf.as_deref()),
        name(Some(&target)),
        name(common.as_deref())
    )?;
    if entries.is_empty() {
        writeln!(env.out, "nothing to summarize")?;
        return Ok(());
    }
    writeln!(env.out, "entries to summarize:")?;
    print_entries(env.out, &session, &entries)?;
    writeln!(
        env.out,
        "{} entries, {} messages, ~{} tokens (budget {DEFAULT_BUDGET})",
        entries.len(),
        prepared.messages.len(),
        prepared.total_tokens
    )?;
    let list = |files: &[String]| {
        if files.is_empty() {
            "(none)".to_owned()
        } else {
            files.join(", ")
        }
    };
    writeln!(env.out, "read files: {}", list(&prepared.read_files))?;
    writeln!(
        env.out,
        "modified files: {}",
        list(&prepared.modified_files)
    )?;
    writeln!(env.out, "prompt:")?;
    writeln!(env.out, "{prompt}")?;
    Ok(())
}
