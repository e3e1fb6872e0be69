//! `grove navigate`: tree navigation with editing semantics, optionally leaving a summary
//! of the branch being left.

use clap::ValueEnum;
use grove::summary::PathMode;
use grove::{
    HookDecision, HookSummary, NavigateEvent, NavigateHook, NavigateOptions, NavigateOutcome,
    Navigator,
};
use serde_json::{json, Value};

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::output::{describe_entry, ordered_object, ShortIds};
use crate::summarizer_args::SummarizerArgs;

/// Navigate to an entry as pi's tree view does, all or nothing.
///
/// A user message (or custom message) target puts its text back in the editor and moves the
/// leaf to its parent; any other target becomes the leaf. With a summary, a branch_summary
/// entry describing the branch being left is written at the new position and becomes the
/// leaf. The summary comes from --summary (as a navigation hook would supply it), or, with
/// --summarize, from a summarizer: --summarizer-cmd or an OpenAI-compatible endpoint.
///
/// Human output: `leaf: OLD -> NEW`, the summary entry (if any), then the editor text (if
/// any). With --json: {"oldLeafId", "newLeafId", "editorText"?, "summaryEntryId"?}, or
/// {"cancelled": true, "aborted": BOOL}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// The target: an entry id or unique prefix, `@` or `@-`.
    #[arg(value_name = "ID")]
    target: String,
    /// Summarize the branch being left with the summarizer (--summarizer-cmd or
    /// --openai-url/--openai-model).
    #[arg(long)]
    summarize: bool,
    /// Extra summary instructions (added to the default ones).
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// Use --instructions instead of the default instructions.
    #[arg(long, requires = "instructions")]
    replace_instructions: bool,
    /// Label the summary entry (or the target, when no summary is written).
    #[arg(long, value_name = "TEXT")]
    label: Option<String>,
    #[command(flatten)]
    summarizer: SummarizerArgs,
    /// The summary text itself, supplied as a navigation hook would (no summarizer runs;
    /// written even without --summarize; an empty text writes none).
    #[arg(long, value_name = "TEXT", conflicts_with = "summarizer")]
    summary: Option<String>,
    /// Which walks collect the entries to summarize: `grove` (full paths) or `harness` (paths
    /// cut at compactions, as pi's harness).
    #[arg(long, value_enum, default_value_t = Preset::Grove)]
    preset: Preset,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

/// `--preset` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Preset {
    Grove,
    Harness,
}

impl Preset {
    /// The collection walks of the preset.
    pub fn path_mode(self) -> PathMode {
        match self {
            Preset::Grove => PathMode::Full,
            Preset::Harness => PathMode::Branch,
        }
    }
}

/// The hook of `--summary`: supplies the text, changes nothing else.
struct GivenSummary(String);

impl NavigateHook for GivenSummary {
    fn before_navigate(&self, _event: &NavigateEvent<'_>) -> Result<Option<HookDecision>, String> {
        Ok(Some(HookDecision {
            summary: Some(HookSummary {
                summary: self.0.clone(),
                ..HookSummary::default()
            }),
            ..HookDecision::default()
        }))
    }
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.open_session(&args.session)?;
    let target = session.resolve_entry(&args.target)?.ok_or_else(|| {
        CommandError::invalid(
            "navigate needs an entry, not the root position",
            format!(
                "use `grove goto {} root` to move the leaf there",
                args.session
            ),
        )
    })?;
    let summarizer = args.summarizer.summarizer();
    let hook = args.summary.clone().map(GivenSummary);
    let navigator = Navigator {
        hooks: hook.iter().map(|h| h as &dyn NavigateHook).collect(),
        summarizer: summarizer.as_deref(),
        path_mode: args.preset.path_mode(),
        ..Navigator::default()
    };
    let options = NavigateOptions {
        summarize: args.summarize,
        custom_instructions: args.instructions.clone(),
        replace_instructions: args.replace_instructions,
        label: args.label.clone(),
    };
    let outcome = session.navigate(&target, &options, &navigator)?;
    match outcome {
        NavigateOutcome::NoOp => {
            let leaf = session.leaf()?;
            if args.json {
                let pairs = [("oldLeafId", json!(leaf)), ("newLeafId", json!(leaf))];
                writeln!(env.out, "{}", ordered_object(&pairs))?;
            } else {
                let short = ShortIds::of_session(&session)?;
                let here = describe_entry(&session, &short, leaf.as_deref())?;
                writeln!(env.out, "leaf: {here} (already the leaf; nothing written)")?;
            }
        }
        NavigateOutcome::Cancelled { aborted } => {
            if args.json {
                let pairs = [("cancelled", json!(true)), ("aborted", json!(aborted))];
                writeln!(env.out, "{}", ordered_object(&pairs))?;
            } else if aborted {
                writeln!(env.out, "summary aborted; nothing written")?;
            } else {
                writeln!(env.out, "navigation cancelled; nothing written")?;
            }
        }
        NavigateOutcome::Moved {
            old_leaf,
            new_leaf,
            summary_entry,
            editor_text,
            ..
        } => {
            if args.json {
                let mut pairs = vec![
                    ("oldLeafId", json!(old_leaf)),
                    ("newLeafId", json!(new_leaf)),
                ];
                if let Some(text) = &editor_text {
                    pairs.push(("editorText", Value::String(text.clone())));
                }
                if let Some(id) = &summary_entry {
                    pairs.push(("summaryEntryId", Value::String(id.clone())));
                }
                writeln!(env.out, "{}", ordered_object(&pairs))?;
                return Ok(());
            }
            let short = ShortIds::of_session(&session)?;
            let from = old_leaf.as_deref().map_or("root", |id| short.get(id));
            let to = describe_entry(&session, &short, new_leaf.as_deref())?;
            writeln!(env.out, "leaf: {from} -> {to}")?;
            if let Some(id) = &summary_entry {
                let summary = describe_entry(&session, &short, Some(id))?;
                writeln!(env.out, "summary: {summary}")?;
            }
            if let Some(text) = &editor_text {
                writeln!(env.out, "editor text:")?;
                writeln!(env.out, "{text}")?;
            }
        }
    }
    Ok(())
}
