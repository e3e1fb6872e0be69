//! Export to pi v3 JSONL in two flavors (spec §3.6): `harness` writes every log record,
//! leaf lines included; `cli` writes no leaf lines and puts the active leaf last, where
//! pi's SessionManager resumes, or refuses when that would change what pi shows. A session
//! imported from another tool's transcript (`exchange::foreign`) is also written back as that
//! file, byte for byte (`Foreign`).

use std::collections::HashMap;
use std::io::Write;

use grove_codec::fields::Fields;
use grove_codec::foreign::{self, Format};
use grove_codec::jsstr::{self, JsString};
use grove_codec::EntryKind;

use crate::core::error::{GroveError, Result};
use crate::log::handle::{Entry, Handle};

/// The export flavor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// Every record in log order, leaf lines included (the pi harness reads the leaf).
    #[default]
    Harness,
    /// No leaf lines; the active leaf is the last line (pi-CLI reads the leaf).
    Cli,
    /// The transcript file of another tool the session was imported from (a Claude Code
    /// transcript, a Codex rollout), byte for byte: its original lines in log order, the
    /// entries appended since and leaf lines left out. A session not imported from that
    /// format is [`GroveError::ExportIncompatible`].
    Foreign(Format),
}

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Lines written after the header.
    pub lines: u64,
    /// The entry moved to the end of a `cli` export, if any.
    pub relocated: Option<String>,
}

/// Writes the session as pi JSONL.
pub(crate) fn export(s: &Handle, flavor: Flavor, out: &mut dyn Write) -> Result<ExportReport> {
    let io = |source| GroveError::Io {
        path: "<export>".into(),
        source,
    };
    match flavor {
        Flavor::Harness => {
            writeln!(out, "{}", s.record.header).map_err(io)?;
            let mut lines = 0;
            for entry in s.log() {
                writeln!(out, "{}", entry?.line).map_err(io)?;
                lines += 1;
            }
            Ok(ExportReport {
                lines,
                relocated: None,
            })
        }
        Flavor::Foreign(format) => {
            let incompatible = |reason: String| GroveError::ExportIncompatible { reason };
            let final_newline = match foreign::header_format(&s.record.header) {
                Some((was, final_newline)) if was == format => final_newline,
                Some((was, _)) => {
                    return Err(incompatible(format!(
                        "session {} was imported from a {} transcript, not {}",
                        s.id(),
                        was.name(),
                        format.name()
                    )))
                }
                None => {
                    return Err(incompatible(format!(
                        "session {} was not imported from a {} transcript",
                        s.id(),
                        format.name()
                    )))
                }
            };
            // Each line is written once the next is found, so the last can go without its
            // newline when the file had none.
            let mut lines = 0;
            let mut held: Option<Vec<u8>> = None;
            for entry in s.entries() {
                let Some(line) = foreign::original_line(format, &entry?.line) else {
                    continue;
                };
                if let Some(previous) = held.replace(line) {
                    out.write_all(&previous).map_err(io)?;
                    out.write_all(b"\n").map_err(io)?;
                    lines += 1;
                }
            }
            if let Some(last) = held {
                out.write_all(&last).map_err(io)?;
                if final_newline {
                    out.write_all(b"\n").map_err(io)?;
                }
                lines += 1;
            }
            Ok(ExportReport {
                lines,
                relocated: None,
            })
        }
        Flavor::Cli => {
            // Checked first (one pass that keeps only the label and name entries), then
            // written as read (a second pass), the relocated leaf last.
            let (moved, relocated) = cli_order(s)?;
            writeln!(out, "{}", s.record.header).map_err(io)?;
            let mut lines = 0;
            for entry in s.entries() {
                let entry = entry?;
                if Some(entry.seq) != moved {
                    writeln!(out, "{}", entry.line).map_err(io)?;
                    lines += 1;
                }
            }
            if let Some(seq) = moved {
                writeln!(out, "{}", s.entry_at(seq)?.line).map_err(io)?;
                lines += 1;
            }
            Ok(ExportReport { lines, relocated })
        }
    }
}

/// The entry a `cli` export moves to the end (its seq and id), or why there is no `cli`
/// export. Reads the entries once, keeping only those pi-CLI's labels and name come from
/// (and the leaf): the checks below look at nothing else.
fn cli_order(s: &Handle) -> Result<(Option<u64>, Option<String>)> {
    let incompatible = |reason: String| GroveError::ExportIncompatible { reason };
    let leaf = s.head()?.leaf;
    let (mut count, mut last) = (0u64, None);
    let mut order: Vec<Entry> = Vec::new();
    for entry in s.entries() {
        let entry = entry?;
        count += 1;
        last = Some(entry.seq);
        if matches!(entry.kind(), EntryKind::Label | EntryKind::SessionInfo)
            || Some(entry.seq) == leaf
        {
            order.push(entry);
        }
    }
    let Some(leaf) = leaf else {
        if count == 0 {
            return Ok((None, None));
        }
        return Err(incompatible(format!(
            "active leaf is the root position (null) but the session has {count} entries; \
             pi's SessionManager always resumes at the last entry line; export with \
             flavor=harness or append an entry first"
        )));
    };
    let mut relocated = None;
    if last != Some(leaf) {
        let before_labels = cli_labels(&order);
        let before_name = cli_name(&order);
        let pos = order
            .iter()
            .position(|e| e.seq == leaf)
            .ok_or_else(|| GroveError::Corrupt("leaf is not in the log".into()))?;
        let moved = order.remove(pos);
        let kind = moved.kind();
        let leaf_id = moved.id().to_owned();
        order.push(moved);
        let after_labels = cli_labels(&order);
        if after_labels != before_labels {
            let target = before_labels
                .keys()
                .chain(after_labels.keys())
                .find(|k| before_labels.get(*k) != after_labels.get(*k))
                .cloned()
                .unwrap_or_default();
            return Err(incompatible(format!(
                "active leaf {leaf_id} is a {} entry; moving it to the end of the file, where \
                 pi's SessionManager resumes, would change the label of {target} from {} to {}",
                type_name(kind),
                before_labels
                    .get(&target)
                    .map_or("none".into(), |s| format!("'{s}'")),
                after_labels
                    .get(&target)
                    .map_or("none".into(), |s| format!("'{s}'"))
            )));
        }
        let after_name = cli_name(&order);
        if after_name != before_name {
            return Err(incompatible(format!(
                "active leaf {leaf_id} is a {} entry; moving it to the end of the file, where \
                 pi's SessionManager resumes, would change the session name from '{}' to '{}'",
                type_name(kind),
                before_name.unwrap_or_default(),
                after_name.unwrap_or_default()
            )));
        }
        relocated = Some((leaf, leaf_id));
    }
    let cli = cli_labels(&order);
    let grove = s.labels()?;
    let mut targets: Vec<&String> = cli.keys().chain(grove.keys()).collect();
    targets.sort();
    targets.dedup();
    for t in targets {
        let raw = cli.get(t);
        let ok = match (raw, grove.get(t)) {
            (Some(CliLabel::Text(s)), Some(g)) => {
                !s.trim().is_empty() && Some(s.trim()) == jsstr::decode_literal(&g.label_json)
            }
            _ => false,
        };
        if !ok {
            return Err(incompatible(format!(
                "the label of {t} is {}; pi's SessionManager would show it, but grove treats a \
                 whitespace-only label as cleared",
                raw.map_or("absent".into(), |l| format!("'{l}'"))
            )));
        }
    }
    Ok(match relocated {
        Some((seq, id)) => (Some(seq), Some(id)),
        None => (None, None),
    })
}

/// A pi-CLI label value: a string, or another truthy JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CliLabel {
    Text(JsString),
    Other(String),
}

impl std::fmt::Display for CliLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliLabel::Text(s) => write!(f, "{}", s.to_lossy()),
            CliLabel::Other(s) => write!(f, "{s}"),
        }
    }
}

/// pi-CLI's label map over a line order: truthy values set (untrimmed), others clear.
fn cli_labels(order: &[Entry]) -> HashMap<String, CliLabel> {
    let mut map = HashMap::new();
    for e in order.iter().filter(|e| e.kind() == EntryKind::Label) {
        let Some(fields) = Fields::parse(&e.line) else {
            continue;
        };
        let Some(target) = fields.target_id.and_then(grove_codec::entry::string_field) else {
            continue;
        };
        match fields.label {
            Some(v) if jsstr::truthy(v) => {
                let value = JsString::from_raw(v)
                    .map_or_else(|| CliLabel::Other(v.get().to_owned()), CliLabel::Text);
                map.insert(target, value);
            }
            _ => {
                map.remove(&target);
            }
        }
    }
    map
}

/// The session name pi sees over a line order.
fn cli_name(order: &[Entry]) -> Option<String> {
    let last = order
        .iter()
        .rev()
        .find(|e| e.kind() == EntryKind::SessionInfo)?;
    Fields::parse(&last.line)
        .and_then(|f| f.name)
        .and_then(JsString::from_raw)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| s.to_lossy())
}

fn type_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Message(_) => "message",
        EntryKind::ModelChange => "model_change",
        EntryKind::ThinkingLevelChange => "thinking_level_change",
        EntryKind::ActiveToolsChange => "active_tools_change",
        EntryKind::Compaction => "compaction",
        EntryKind::BranchSummary => "branch_summary",
        EntryKind::Custom => "custom",
        EntryKind::CustomMessage => "custom_message",
        EntryKind::Label => "label",
        EntryKind::SessionInfo => "session_info",
        EntryKind::Leaf => "leaf",
        EntryKind::Unknown => "unknown",
    }
}
