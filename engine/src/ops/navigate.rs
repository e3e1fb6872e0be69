//! Tree navigation with editing semantics (spec §7.2): compute the new leaf, consult hooks,
//! optionally summarize the branch being left, then move — all or nothing.

use grove_codec::fields::{Fields, MessageFields};
use grove_codec::writer::NewEntry;
use grove_codec::{EntryKind, Role};

use crate::core::error::{GroveError, Result};
use crate::log::handle::{Entry, Handle};
use crate::ops::lease::{self, Leases};
use crate::ops::summary::prepare;
use crate::ops::summary::prompt::{
    build_prompt, final_summary, MAX_TOKENS, NOTHING_TO_SUMMARIZE, SYSTEM_PROMPT,
};
use crate::ops::summary::{
    prepare_branch_entries, AbortSignal, PathMode, SummarizeError, Summarizer, SummaryRequest,
    DEFAULT_BUDGET,
};

/// `details` of a summary without file lists.
const EMPTY_DETAILS: &str = r#"{"readFiles":[],"modifiedFiles":[]}"#;

/// Options of `crate::ops::navigate::navigate`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NavigateOptions {
    /// Summarize the branch being left.
    pub summarize: bool,
    /// Extra (or, with `replace_instructions`, replacement) summary instructions.
    pub custom_instructions: Option<String>,
    /// Whether `custom_instructions` replace the default instructions.
    pub replace_instructions: bool,
    /// A label to put on the summary entry, or on the target when there is none.
    pub label: Option<String>,
}

/// What a hook sees before a navigation.
#[derive(Debug)]
pub struct NavigateEvent<'a> {
    /// The navigation target.
    pub target_id: &'a str,
    /// The leaf before the navigation.
    pub old_leaf_id: Option<&'a str>,
    /// Deepest common ancestor of the old leaf and the target.
    pub common_ancestor_id: Option<&'a str>,
    /// The entries a summary would cover, oldest first.
    pub entries_to_summarize: &'a [Entry],
    /// Whether the caller asked for a summary.
    pub user_wants_summary: bool,
    /// The caller's custom instructions.
    pub custom_instructions: Option<&'a str>,
    /// The caller's replace flag.
    pub replace_instructions: bool,
    /// The caller's label.
    pub label: Option<&'a str>,
}

/// A summary a hook supplies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookSummary {
    /// Summary text (used when non-empty, even if no summary was asked for).
    pub summary: String,
    /// `details` JSON.
    pub details: Option<String>,
    /// `usage` JSON.
    pub usage: Option<String>,
}

/// What a hook decides; every `None` leaves the caller's choice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookDecision {
    /// Cancel the navigation (nothing is written).
    pub cancel: bool,
    /// Supply the summary.
    pub summary: Option<HookSummary>,
    /// Override the custom instructions.
    pub custom_instructions: Option<String>,
    /// Override the replace flag.
    pub replace_instructions: Option<bool>,
    /// Override the label.
    pub label: Option<String>,
}

/// A hook run before every navigation.
pub trait NavigateHook: Send + Sync {
    /// Returns a decision, `None` to leave the navigation as asked, or an error that fails
    /// it with `Hook`.
    fn before_navigate(
        &self,
        event: &NavigateEvent<'_>,
    ) -> std::result::Result<Option<HookDecision>, String>;
}

/// The result of a navigation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NavigateOutcome {
    /// The target already was the leaf; nothing was written.
    NoOp,
    /// A hook cancelled (`aborted: false`) or the summarizer was aborted (`true`); nothing
    /// was written.
    Cancelled {
        /// Whether the summarizer call was aborted.
        aborted: bool,
    },
    /// The leaf moved.
    Moved {
        /// The leaf before.
        old_leaf: Option<String>,
        /// The leaf after the move (before any label entry).
        new_leaf: Option<String>,
        /// The branch summary written, if any.
        summary_entry: Option<String>,
        /// The text to put back in the editor (user and custom-message targets).
        editor_text: Option<String>,
        /// Whether the summary text came from a hook.
        from_hook: bool,
    },
}

/// The collaborators of a navigation: hooks, the summarizer and its abort signal.
#[derive(Default)]
pub struct Navigator<'a> {
    /// Hooks, in order; the last decision that is not `None` wins.
    pub hooks: Vec<&'a dyn NavigateHook>,
    /// The summarizer; without one, asking for a summary is `InvalidState`.
    pub summarizer: Option<&'a dyn Summarizer>,
    /// Aborts the summarizer call.
    pub abort: AbortSignal,
    /// Which walks collect the entries to summarize.
    pub path_mode: PathMode,
    /// Token budget of the preparation (`≤ 0`: no limit).
    pub budget: Option<i64>,
}

/// Navigates to `target` (spec §7.2).
pub(crate) fn navigate(
    s: &Handle,
    leases: &Leases,
    target: &str,
    options: &NavigateOptions,
    nav: &Navigator<'_>,
) -> Result<NavigateOutcome> {
    let lease = lease::lease_operation(s, leases)?;
    let old_leaf = s.leaf()?;
    if old_leaf.as_deref() == Some(target) {
        return Ok(NavigateOutcome::NoOp);
    }
    let target_entry = s
        .seq_of(target)?
        .map(|(seq, _)| s.entry_at(seq))
        .transpose()?
        .ok_or_else(|| GroveError::InvalidArgument(format!("Entry {target} not found")))?;
    let (entries, common) =
        prepare::collect_entries_for_branch_summary(s, old_leaf.as_deref(), target, nav.path_mode)?;
    let mut custom = options.custom_instructions.clone();
    let mut replace = options.replace_instructions;
    let mut label = options.label.clone();
    let mut hook_summary: Option<HookSummary> = None;
    let event = NavigateEvent {
        target_id: target,
        old_leaf_id: old_leaf.as_deref(),
        common_ancestor_id: common.as_deref(),
        entries_to_summarize: &entries,
        user_wants_summary: options.summarize,
        custom_instructions: options.custom_instructions.as_deref(),
        replace_instructions: options.replace_instructions,
        label: options.label.as_deref(),
    };
    let mut decision: Option<HookDecision> = None;
    for hook in &nav.hooks {
        if let Some(d) = hook.before_navigate(&event).map_err(GroveError::Hook)? {
            decision = Some(d);
        }
    }
    if let Some(d) = decision {
        if d.cancel {
            return Ok(NavigateOutcome::Cancelled { aborted: false });
        }
        hook_summary = d.summary.filter(|s| !s.summary.is_empty());
        custom = d.custom_instructions.or(custom);
        replace = d.replace_instructions.unwrap_or(replace);
        label = d.label.or(label);
    }
    let from_hook = hook_summary.is_some();
    let summary = match hook_summary {
        // Without hook details the entry records empty file lists, as pi does.
        Some(h) => Some((
            h.summary,
            h.details.or_else(|| Some(EMPTY_DETAILS.to_owned())),
            h.usage,
        )),
        None if options.summarize && !entries.is_empty() => {
            let summarizer = nav.summarizer.ok_or_else(|| {
                GroveError::InvalidState("No model set for branch summary".into())
            })?;
            let prepared = prepare_branch_entries(&entries, nav.budget.unwrap_or(DEFAULT_BUDGET));
            if prepared.messages.is_empty() {
                Some((
                    NOTHING_TO_SUMMARIZE.to_owned(),
                    Some(prepared.details_json()),
                    None,
                ))
            } else {
                let request = SummaryRequest {
                    system: SYSTEM_PROMPT.to_owned(),
                    prompt: build_prompt(&prepared, custom.as_deref(), replace),
                    max_tokens: MAX_TOKENS,
                };
                match summarizer.summarize(&request, &nav.abort) {
                    Ok(r) => Some((
                        final_summary(&r.text, &prepared),
                        Some(prepared.details_json()),
                        r.usage,
                    )),
                    Err(SummarizeError::Aborted) => {
                        return Ok(NavigateOutcome::Cancelled { aborted: true })
                    }
                    Err(SummarizeError::Failed(m)) => {
                        let m = if m.is_empty() {
                            "Unknown error".to_owned()
                        } else {
                            m
                        };
                        return Err(GroveError::BranchSummary(m));
                    }
                }
            }
        }
        None => None,
    };
    if nav.abort.is_aborted() && summary.is_some() && !from_hook {
        return Ok(NavigateOutcome::Cancelled { aborted: true });
    }
    let (new_leaf, editor_text) = match target_entry.kind() {
        EntryKind::Message(Role::User) => {
            let content = Fields::parse(&target_entry.line)
                .and_then(|f| f.message)
                .and_then(|m| MessageFields::parse(m.get()))
                .and_then(|m| m.content);
            (target_entry.parent_id(), Some(editor_text(content)))
        }
        EntryKind::CustomMessage => {
            let content = Fields::parse(&target_entry.line).and_then(|f| f.content);
            (target_entry.parent_id(), Some(editor_text(content)))
        }
        _ => (Some(target.to_owned()), None),
    };
    let summary_entry = summary.map(|(text, details, usage)| NewEntry::BranchSummary {
        from_id: new_leaf.clone().unwrap_or_else(|| "root".to_owned()),
        summary: text,
        details,
        usage,
        from_hook: Some(from_hook),
    });
    // The move, its summary and its label are one operation, one atomic write.
    let summary_id = s.move_to_with(
        new_leaf.as_deref(),
        summary_entry.as_ref(),
        label.map(|l| {
            move |summary: Option<&str>| NewEntry::Label {
                target_id: summary.unwrap_or(target).to_owned(),
                label: Some(l.clone()),
            }
        }),
        None,
        grove_codec::op::OpKind::Navigate,
        &|tries| {
            lease::held_lease(
                s,
                leases,
                &lease.token,
                crate::ops::lease::Holder::Operation,
                tries,
            )
        },
    )?;
    Ok(NavigateOutcome::Moved {
        old_leaf,
        new_leaf,
        summary_entry: summary_id,
        editor_text,
        from_hook,
    })
}

/// The editor text of a message content: a string, or its text blocks joined with "".
fn editor_text(content: Option<&serde_json::value::RawValue>) -> String {
    crate::ops::summary::blocks_text(content)
}
