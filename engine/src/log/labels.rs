//! Labels and the session name (spec §6.1, §6.2), read from their indexes.

use std::collections::BTreeMap;

use grove_codec::fields::Fields;
use grove_codec::jsstr::{self, JsString};
use grove_codec::record::{self, LabelRecord};
use grove_codec::writer::NewEntry;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::log::handle::Handle;

/// The current label of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// The trimmed label text (lone surrogates replaced by U+FFFD).
    pub label: String,
    /// The label as a JSON string literal, exact.
    pub label_json: String,
    /// Timestamp of the `label` entry that set it.
    pub timestamp: String,
    /// Id of that `label` entry.
    pub set_by: String,
}

/// The label a `label` entry's line sets, decoded and as a JSON string literal; `None` when
/// it clears (spec §6.1: trimmed; blank or non-string clears). The label index
/// ([`Handle::label_update`]) keeps the same value.
pub(crate) fn label_value(line: &str) -> Option<(String, String)> {
    let value = Fields::parse(line)
        .and_then(|f| f.label)
        .and_then(JsString::from_raw)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())?;
    Some((
        value.to_rust().unwrap_or_else(|| value.to_lossy()),
        value.to_json(),
    ))
}

/// The text of a label stored as the JSON string literal `json` (lone surrogates replaced
/// by U+FFFD): what a listing's label filter compares and the catalogue's label index keys.
pub(crate) fn label_text(json: &str) -> String {
    jsstr::decode_literal(json)
        .map(|s| s.to_rust().unwrap_or_else(|| s.to_lossy()))
        .unwrap_or_default()
}

impl Handle {
    /// Every current label, keyed by target id (spec §6.1: last in log order wins, trimmed,
    /// blank clears).
    pub fn labels(&self) -> Result<BTreeMap<String, Label>> {
        let start = keys::session_prefix(keys::T_LABEL, self.sid);
        let end = keys::prefix_end(&start);
        let mut out = BTreeMap::new();
        for pair in self.inner.kv.scan(&start, &end) {
            let (k, v) = pair?;
            let target = keys::string_suffix(&k, 9)
                .ok_or_else(|| GroveError::Corrupt("label key".into()))?;
            let rec: LabelRecord =
                record::decode(&v).map_err(|e| GroveError::Corrupt(format!("label: {e}")))?;
            let setter = self.entry_at(rec.set_by)?;
            let label = label_text(&rec.label);
            out.insert(
                target,
                Label {
                    label,
                    label_json: rec.label,
                    timestamp: setter.timestamp(),
                    set_by: setter.id().to_owned(),
                },
            );
        }
        Ok(out)
    }

    /// The label of one entry.
    pub fn label(&self, target: &str) -> Result<Option<Label>> {
        Ok(self.labels()?.remove(target))
    }

    /// Appends a `label` entry (`None` clears). The target must be an entry.
    pub fn set_label(&self, target: &str, label: Option<&str>) -> Result<String> {
        self.require_seq(target)?;
        self.append(NewEntry::Label {
            target_id: target.to_owned(),
            label: label.map(str::to_owned),
        })
    }

    /// Appends a `session_info` entry with the name normalized as pi does (CR/LF runs become
    /// one space, then trimmed); it is written even when empty.
    pub fn set_name(&self, name: &str) -> Result<String> {
        let mut normalized = String::with_capacity(name.len());
        let mut in_break = false;
        for c in name.chars() {
            if c == '\r' || c == '\n' {
                if !in_break {
                    normalized.push(' ');
                }
                in_break = true;
            } else {
                normalized.push(c);
                in_break = false;
            }
        }
        let trimmed = JsString::from_text(&normalized).trim().to_lossy();
        self.append(NewEntry::SessionInfo {
            name: Some(trimmed),
        })
    }

    /// The session name: the last `session_info` in log order, trimmed; `None` if empty.
    pub fn name(&self) -> Result<Option<String>> {
        let Some(seq) = self.head()?.name_at else {
            return Ok(None);
        };
        let line = self.line(seq)?;
        Ok(Fields::parse(&line)
            .and_then(|f| f.name)
            .and_then(JsString::from_raw)
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(|s| s.to_rust().unwrap_or_else(|| s.to_lossy())))
    }
}
