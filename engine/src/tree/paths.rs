//! Paths through the tree (spec §4): `path_to_root`, the full walk, and `branch`, the pi
//! harness's compaction-truncated `getBranch`. Both walks are iterative and return
//! root-first lists; both detect cycles (pi would loop forever).

use std::collections::HashSet;

use grove_codec::fields::Fields;
use grove_codec::jsstr::{self, JsString};
use grove_codec::record::Parent;
use grove_codec::EntryKind;

use crate::core::error::{GroveError, Result};
use crate::log::handle::{Entry, Handle};
use crate::tree::ancestors;

/// The compaction fields that steer the harness walk.
pub(crate) struct CompactionStop {
    /// `retainedTail` is truthy.
    pub tail: bool,
    /// `firstKeptEntryId` when present and a string.
    pub first_kept: Option<JsString>,
}

pub(crate) fn compaction_stop(line: &str) -> CompactionStop {
    let fields = Fields::parse(line).unwrap_or_default();
    CompactionStop {
        tail: fields.retained_tail.is_some_and(jsstr::truthy),
        first_kept: fields.first_kept_entry_id.and_then(JsString::from_raw),
    }
}

/// Where a walk starts: `from`, or the active leaf when `None` (`None` again: null leaf).
pub(crate) fn start_seq(s: &Handle, from: Option<&str>) -> Result<Option<u64>> {
    match from {
        Some(id) => Ok(Some(s.require_seq(id)?.0)),
        None => s.leaf_seq(),
    }
}

/// The full path from the root to `from` (default: the active leaf), root first. It never
/// stops at a compaction; a missing parent, a self-parent or a cycle ends it quietly.
pub(crate) fn path_to_root(s: &Handle, from: Option<&str>) -> Result<Vec<Entry>> {
    match start_seq(s, from)? {
        None => Ok(Vec::new()),
        Some(seq) => path_to_root_seq(s, seq),
    }
}

pub(crate) fn path_to_root_seq(s: &Handle, start: u64) -> Result<Vec<Entry>> {
    path_up_to(s, start, None)
}

/// The path from `start` up to the ancestor `stop` (included), or to the root when
/// `stop` is `None`; root first. Cycles end the walk quietly at the first revisit.
pub(crate) fn path_up_to(s: &Handle, start: u64, stop: Option<u64>) -> Result<Vec<Entry>> {
    let mut path = Vec::new();
    let mut visited: Option<HashSet<u64>> = None;
    for entry in ancestors::ancestors(s, start) {
        let entry = entry?;
        if let Some(v) = visited.as_mut() {
            if !v.insert(entry.seq) {
                break;
            }
        }
        let cycle_link = matches!(entry.node.parent, Parent::Cycle(_));
        let at_stop = stop == Some(entry.seq);
        path.push(entry);
        if at_stop {
            break;
        }
        if cycle_link && visited.is_none() {
            visited = Some(path.iter().map(|e| e.seq).collect());
        }
    }
    path.reverse();
    Ok(path)
}

/// pi harness `getBranch(from)` (spec §4.1): the path cut at the compaction boundary,
/// root first. A missing parent or a cycle is `InvalidSession`.
pub(crate) fn branch(s: &Handle, from: Option<&str>) -> Result<Vec<Entry>> {
    match start_seq(s, from)? {
        None => Ok(Vec::new()),
        Some(seq) => branch_seq(s, seq),
    }
}

pub(crate) fn branch_seq(s: &Handle, start: u64) -> Result<Vec<Entry>> {
    let mut path: Vec<Entry> = Vec::new();
    let mut stop_at: Option<JsString> = None;
    let mut visited: Option<HashSet<u64>> = None;
    for entry in ancestors::ancestors(s, start) {
        let entry = entry?;
        if let Some(v) = visited.as_mut() {
            if !v.insert(entry.seq) {
                return Err(GroveError::InvalidSession {
                    file: None,
                    reason: format!("cycle at {}", entry.id()),
                });
            }
        }
        let parent = entry.node.parent;
        let is_stop = stop_at
            .as_ref()
            .is_some_and(|s| JsString::from_text(entry.id()) == *s);
        let stop = (entry.kind() == EntryKind::Compaction && !is_stop)
            .then(|| compaction_stop(&entry.line));
        let missing_parent = match parent {
            Parent::Missing => Some(entry.parent_id().unwrap_or_default()),
            _ => None,
        };
        path.push(entry);
        if is_stop {
            break;
        }
        if let Some(stop) = stop {
            if stop.tail {
                break;
            }
            stop_at = stop.first_kept;
        }
        match parent {
            Parent::Root | Parent::SelfRef => break,
            Parent::Missing => {
                return Err(GroveError::InvalidSession {
                    file: None,
                    reason: format!("Entry {} not found", missing_parent.unwrap_or_default()),
                })
            }
            Parent::Cycle(_) => {
                if visited.is_none() {
                    visited = Some(path.iter().map(|e| e.seq).collect());
                }
            }
            Parent::Seq(_) => {}
        }
    }
    path.reverse();
    Ok(path)
}
