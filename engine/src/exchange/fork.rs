//! Forks: a new session from all or part of an existing one (spec §9), in the three named
//! modes of pi. The new session is written through the import path, so a fork is atomic
//! (published last) and indexed exactly like an imported file.

use grove_codec::fields::Fields;
use grove_codec::header::Header;
use grove_codec::jsstr;
use grove_codec::{EntryKind, Role};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;

use crate::core::error::{GroveError, Result};
use crate::core::util;
use crate::exchange::import::ImportOptions;
use crate::log::handle::{Entry, Handle};
use crate::log::shared::Logs;
use crate::tree::paths;

/// Where a fork cuts relative to its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForkPosition {
    /// Just before the entry, which must be a user message (its text goes back to the editor).
    #[default]
    Before,
    /// At the entry: the entry is the new leaf.
    At,
}

/// What a fork copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForkMode {
    /// pi harness `repo.fork`: the branch path cut at the compaction boundary, ids kept
    /// verbatim; without an entry, every log record.
    #[default]
    Path,
    /// pi-CLI `/fork` (`createBranchedSession`): the full path, labels removed and the rest
    /// re-chained, current labels re-emitted at the end.
    Rechained,
    /// pi-CLI `--fork` (`forkFrom`): every log record, verbatim.
    Copy,
}

/// Options of [`crate::Store::fork`].
#[derive(Debug, Clone, Default)]
pub struct ForkOptions {
    /// The entry to fork at or before; `None` copies the whole session.
    pub entry: Option<String>,
    /// Before or at the entry.
    pub position: ForkPosition,
    /// The mode.
    pub mode: ForkMode,
    /// The new session's cwd (default: the source's).
    pub cwd: Option<String>,
    /// Header `metadata` (JSON object text).
    pub metadata: Option<String>,
    /// The new session's id (default: a fresh UUIDv7).
    pub id: Option<String>,
    /// Header `parentSession` (default: the source's file, when it came from one).
    pub parent_session: Option<String>,
}

#[derive(Deserialize)]
struct ParentField<'a> {
    #[serde(
        rename = "parentId",
        default,
        borrow,
        deserialize_with = "grove_codec::entry::present"
    )]
    parent_id: Option<&'a RawValue>,
}

/// Rewrites only the bytes of a line's top-level `parentId` value.
fn replace_parent(line: &str, parent: Option<&str>) -> Option<String> {
    let f: ParentField<'_> = serde_json::from_str(line).ok()?;
    let raw = f.parent_id?.get();
    let start = raw.as_ptr() as usize - line.as_ptr() as usize;
    let end = start + raw.len();
    let value = parent.map_or("null".to_owned(), jsstr::quote);
    Some(format!("{}{}{}", &line[..start], value, &line[end..]))
}

/// Forks `source` into a new session (spec §9).
pub(crate) fn fork(
    logs: &Arc<Logs>,
    actor: &str,
    source: &Handle,
    options: ForkOptions,
) -> Result<Handle> {
    let rec = source.record();
    let id = match &options.id {
        Some(id) => {
            util::check_session_id(id)?;
            id.clone()
        }
        None => util::new_session_id(),
    };
    let from_file = rec.source_path.clone();
    let parent_session = options.parent_session.clone().or(from_file);
    let cwd = options.cwd.clone().unwrap_or_else(|| rec.cwd.clone());
    let metadata = match options.mode {
        ForkMode::Path => options.metadata.clone().or_else(|| {
            grove_codec::header::Header::parse(&rec.header)
                .ok()
                .and_then(|h| h.metadata)
        }),
        _ => options.metadata.clone(),
    };
    let lines = fork_lines(logs, source, &options)?;
    let header = Header::create(
        &id,
        &util::now_iso(),
        &cwd,
        parent_session.as_deref(),
        metadata.as_deref(),
    );
    let mut text = header.raw;
    text.push('\n');
    for l in &lines {
        text.push_str(l);
        text.push('\n');
    }
    let report = crate::exchange::import::import_reader(
        logs,
        actor,
        std::io::Cursor::new(text.into_bytes()),
        ImportOptions {
            parent_session_id: Some(rec.id.clone()),
            operation: grove_codec::op::OpKind::Fork,
            ..ImportOptions::default()
        },
    )?;
    logs.session(&report.session)
}

fn fork_lines(_logs: &Arc<Logs>, source: &Handle, options: &ForkOptions) -> Result<Vec<String>> {
    let all = |s: &Handle| -> Result<Vec<String>> { s.log().map(|e| e.map(|e| e.line)).collect() };
    let entry = options.entry.as_deref().filter(|e| !e.is_empty());
    let Some(entry_id) = entry else {
        return all(source);
    };
    if options.mode == ForkMode::Copy {
        return all(source);
    }
    let target = source
        .entry(entry_id)
        .map_err(|_| GroveError::InvalidForkTarget(format!("Entry {entry_id} not found")))?;
    let effective: Option<String> = match options.position {
        ForkPosition::At => Some(target.id().to_owned()),
        ForkPosition::Before => {
            if target.kind() != EntryKind::Message(Role::User) {
                return Err(GroveError::InvalidForkTarget(format!(
                    "Entry {entry_id} is not a user message"
                )));
            }
            target.parent_id()
        }
    };
    let Some(effective) = effective else {
        return Ok(Vec::new());
    };
    match options.mode {
        ForkMode::Path => Ok(paths::branch(source, Some(&effective))?
            .into_iter()
            .map(|e| e.line)
            .collect()),
        _ => rechained(source, &effective),
    }
}

/// pi-CLI's label map: truthy values set (untrimmed; a new target goes last, an overwrite
/// keeps its place), falsy values clear. Values are raw JSON with the setter's timestamp.
fn cli_label_map(source: &Handle) -> Result<IndexMap<String, (String, String)>> {
    let mut map: IndexMap<String, (String, String)> = IndexMap::new();
    for e in source.entries() {
        let e = e?;
        if e.kind() != EntryKind::Label {
            continue;
        }
        let Some(f) = Fields::parse(&e.line) else {
            continue;
        };
        let Some(target) = f.target_id.and_then(grove_codec::entry::string_field) else {
            continue;
        };
        match f.label {
            Some(v) if jsstr::truthy(v) => {
                let value = (v.get().to_owned(), e.timestamp());
                match map.get_mut(&target) {
                    Some(slot) => *slot = value,
                    None => {
                        map.insert(target, value);
                    }
                }
            }
            _ => {
                map.shift_remove(&target);
            }
        }
    }
    Ok(map)
}

/// The lines of a CLI branched session (spec §9.2).
fn rechained(source: &Handle, target: &str) -> Result<Vec<String>> {
    let path: Vec<Entry> = paths::path_to_root(source, Some(target))?
        .into_iter()
        .filter(|e| e.kind() != EntryKind::Label)
        .collect();
    let mut out = Vec::with_capacity(path.len());
    let mut used: std::collections::HashSet<String> =
        path.iter().map(|e| e.id().to_owned()).collect();
    let mut previous: Option<String> = None;
    for e in &path {
        let line = replace_parent(&e.line, previous.as_deref())
            .ok_or_else(|| GroveError::Corrupt(format!("entry {} has no parentId", e.id())))?;
        out.push(line);
        previous = Some(e.id().to_owned());
    }
    for (t, (label, timestamp)) in cli_label_map(source)? {
        if !path.iter().any(|e| e.id() == t) {
            continue;
        }
        let mut id = util::random_entry_id();
        while used.contains(&id) {
            id = util::random_entry_id();
        }
        used.insert(id.clone());
        out.push(format!(
            "{{\"type\":\"label\",\"id\":{},\"parentId\":{},\"timestamp\":{},\"targetId\":{},\"label\":{}}}",
            jsstr::quote(&id),
            previous.as_deref().map_or("null".to_owned(), jsstr::quote),
            jsstr::quote(&timestamp),
            jsstr::quote(&t),
            label
        ));
        previous = Some(id);
    }
    Ok(out)
}
