//! Conformance with pi's own code: every case of tests/fixtures/pi-oracle (see its README)
//! is imported into grove and compared, field by field, with what pi v0.83 computed from
//! the same bytes. Which pi implementation each grove call is compared with follows §5.7 of
//! the pi session specification (pi-sessions.md; "spec §" below): the harness for leaf,
//! branch, labels and the harness-preset context; `SessionManager` (pi-CLI) for full paths,
//! the pi-CLI-preset context, settings of the default context and the tree.
//!
//! Each test covers one category, loops over every case, collects every mismatch and fails
//! once with a readable list. Where grove differs from pi by design, the test encodes the
//! difference as an explicit expected deviation, citing the spec section.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod context;
mod ids;
mod labels;
mod migration;
mod open;
mod paths;
mod reopen;
mod roundtrip;
pub(crate) mod streaming;
mod tree;

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Display;
use std::path::PathBuf;
use std::sync::OnceLock;

use grove::{GroveError, ImportOptions, ImportReport, LeafRule, Session, Store, Strictness};
use grove_tests::json;
use serde_json::Value;

/// One body line of a fixture file, parsed leniently (`None` fields: absent or not a
/// string; `value` is `None` when the line is not a JSON object).
#[derive(Debug, Clone)]
pub(crate) struct LineInfo {
    pub(crate) value: Option<Value>,
    pub(crate) ty: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) parent_id: Option<String>,
}

/// One fixture case.
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) bytes: Vec<u8>,
    pub(crate) expected: Value,
    /// The non-blank lines after the header, in file order.
    pub(crate) lines: Vec<LineInfo>,
    /// The header line, parsed leniently.
    pub(crate) header: Option<Value>,
}

/// Every fixture case, loaded once per test binary.
pub(crate) fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let dir = grove_tests::oracle::fixtures_dir();
        let found = grove_tests::oracle::discover(&dir).expect("fixture discovery");
        assert!(
            found.len() >= 150,
            "only {} pi-oracle cases found in {}",
            found.len(),
            dir.display()
        );
        found.into_iter().map(load_case).collect()
    })
}

fn load_case(f: grove_tests::oracle::FixturePaths) -> Case {
    let bytes = std::fs::read(&f.jsonl).expect("read fixture");
    let expected_text = std::fs::read_to_string(&f.expected).expect("read expected.json");
    let expected =
        json::parse(&expected_text).unwrap_or_else(|e| panic!("{}: {e}", f.expected.display()));
    let mut header = None;
    let mut lines = Vec::new();
    for raw in bytes.split(|&b| b == b'\n') {
        if raw.iter().all(|b| b" \t\r\x0b\x0c".contains(b)) {
            continue;
        }
        let value = std::str::from_utf8(raw)
            .ok()
            .and_then(|t| json::parse(t).ok())
            .filter(Value::is_object);
        if header.is_none() {
            header = Some(value);
            continue;
        }
        let text = |k: &str| {
            value
                .as_ref()
                .and_then(|v| v.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        lines.push(LineInfo {
            ty: text("type"),
            id: text("id"),
            parent_id: text("parentId").filter(|p| !p.is_empty()),
            value,
        });
    }
    Case {
        name: f.name,
        path: f.jsonl,
        bytes,
        expected,
        lines,
        header: header.flatten(),
    }
}

/// How grove's strict import of a case must end (spec §2, §3.5, §12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Open {
    /// The import succeeds.
    Accept,
    /// The import fails with this pi error code.
    Refuse(&'static str),
}

impl Case {
    /// The harness section, unless the harness refused the file.
    pub(crate) fn harness(&self) -> Option<&Value> {
        let h = &self.expected["harness"];
        (h.is_object() && h.get("openError").is_none()).then_some(h)
    }

    /// The SessionManager section, unless SessionManager refused the file.
    pub(crate) fn sm(&self) -> Option<&Value> {
        let s = &self.expected["sessionManager"];
        (s.is_object() && s.get("openError").is_none()).then_some(s)
    }

    /// The header `version` as declared (1 when absent); `None` without a session header.
    pub(crate) fn header_version(&self) -> Option<u64> {
        let h = self.header.as_ref().filter(|h| h["type"] == "session")?;
        match h.get("version") {
            None => Some(1),
            Some(v) => v.as_u64(),
        }
    }

    /// The line an id resolves to (pi: the last occurrence wins).
    pub(crate) fn resolve(&self, id: &str) -> Option<&LineInfo> {
        self.lines
            .iter()
            .rev()
            .find(|l| l.id.as_deref() == Some(id))
    }

    /// Whether `id` resolves to a `leaf` line (a leaf record in grove, not an entry).
    pub(crate) fn is_leaf_line(&self, id: &str) -> bool {
        self.resolve(id)
            .is_some_and(|l| l.ty.as_deref() == Some("leaf"))
    }

    /// Whether the file has any `leaf` line.
    pub(crate) fn has_leaf_lines(&self) -> bool {
        self.lines.iter().any(|l| l.ty.as_deref() == Some("leaf"))
    }

    /// Whether an entry's `parentId`, or a leaf line's `targetId`, names a leaf line:
    /// grove refuses such files (spec §3.5, Appendix A.16).
    pub(crate) fn attaches_to_leaf_line(&self) -> bool {
        self.lines.iter().any(|l| {
            let named = if l.ty.as_deref() == Some("leaf") {
                l.value.as_ref().and_then(|v| v["targetId"].as_str())
            } else {
                l.parent_id
                    .as_deref()
                    .filter(|p| l.id.as_deref() != Some(*p))
            };
            named.is_some_and(|n| self.is_leaf_line(n))
        })
    }

    /// Whether the file ends in a torn tail: no final LF and a last line that does not parse
    /// (spec §2.1, §12), while every other line parses.
    pub(crate) fn torn_tail(&self) -> bool {
        if self.bytes.ends_with(b"\n") {
            return false;
        }
        let n = self.lines.len();
        n > 0
            && self.lines[n - 1].value.is_none()
            && self.lines[..n - 1].iter().all(|l| l.value.is_some())
    }

    /// How grove's strict import must end. Every difference from the pi harness is listed
    /// here, with its reason.
    pub(crate) fn expected_open(&self) -> (Open, Option<&'static str>) {
        if let Some(err) = self.expected["harness"].get("openError") {
            // spec §2.1, §12: grove excludes an unterminated final line that does not parse
            // (a torn tail) and imports the rest; the harness refuses the whole file.
            if self.torn_tail() {
                return (Open::Accept, Some("torn tail excluded (spec §2.1, §12)"));
            }
            // spec §2.8: grove migrates v1/v2 files in memory; the harness rejects them.
            if matches!(self.header_version(), Some(1 | 2)) {
                return (Open::Accept, Some("legacy version migrated (spec §2.8)"));
            }
            let code = match err["code"].as_str() {
                Some("invalid_session") => "invalid_session",
                Some("invalid_entry") => "invalid_entry",
                Some("not_found") => "not_found",
                other => panic!(
                    "{}: unexpected harness open error code {other:?}",
                    self.name
                ),
            };
            return (Open::Refuse(code), None);
        }
        // spec §3.5: a final leaf line naming no entry fails the import (the harness fails
        // lazily, on getLeafId).
        if self.expected["harness"]["leafId"].get("error").is_some() {
            return (
                Open::Refuse("invalid_session"),
                Some("dangling final leaf fails at import (spec §3.5)"),
            );
        }
        // spec §3.5, Appendix A.16: an entry attached to a leaf line is refused.
        if self.attaches_to_leaf_line() {
            return (
                Open::Refuse("invalid_session"),
                Some("entry attached to a leaf record (spec §3.5, A.16)"),
            );
        }
        (Open::Accept, None)
    }

    /// Imports the case into a fresh in-memory store.
    pub(crate) fn import(
        &self,
        strictness: Strictness,
        leaf_rule: LeafRule,
    ) -> Result<(Session, ImportReport), GroveError> {
        let store = Store::in_memory()?;
        let report = store.import_file(
            &self.path,
            ImportOptions {
                strictness,
                leaf_rule,
                ..Default::default()
            },
        )?;
        let session = store.session(&report.session)?;
        Ok((session, report))
    }

    /// The strict, default-rule import when it succeeds and the harness opened the file:
    /// the session compared with the harness section.
    pub(crate) fn harness_pair(&self) -> Option<(Session, ImportReport, &Value)> {
        let h = self.harness()?;
        let (s, r) = self.import(Strictness::Strict, LeafRule::Auto).ok()?;
        Some((s, r, h))
    }

    /// The session compared with the SessionManager section: lenient (pi-CLI skips bad
    /// lines; grove reports them, spec §12) and with the last-line leaf rule (spec §3.5).
    /// `None` for v1 files, whose migrated ids are random in both pi and grove (README),
    /// and for files grove refuses.
    pub(crate) fn sm_pair(&self) -> Option<(Session, ImportReport, &Value)> {
        let s = self.sm()?;
        if self.header_version() == Some(1) {
            return None;
        }
        let (session, r) = self.import(Strictness::Lenient, LeafRule::LastLine).ok()?;
        Some((session, r, s))
    }

    /// Removes from a pi id list the ids grove does not treat as entries: leaf lines (spec
    /// §3.4 item 5, Appendix A.16) and the id-less pseudo-entries pi-CLI makes of non-object
    /// lines (`null`; grove skips those lines, spec §2.3, §12).
    pub(crate) fn entry_ids_only(&self, ids: &Value) -> Value {
        match ids.as_array() {
            Some(list) => Value::Array(
                list.iter()
                    .filter(|v| v.as_str().is_some_and(|id| !self.is_leaf_line(id)))
                    .cloned()
                    .collect(),
            ),
            None => ids.clone(),
        }
    }

    /// pi-CLI's leaf as grove's `LeafRule::LastLine` sees it: a final leaf line stands for
    /// its `parentId` (spec §3.5).
    pub(crate) fn sm_leaf_as_grove(&self, sm_leaf: &Value) -> Value {
        match sm_leaf.as_str() {
            Some(id) if self.is_leaf_line(id) => self
                .resolve(id)
                .and_then(|l| l.parent_id.clone())
                .map_or(Value::Null, Value::String),
            _ => sm_leaf.clone(),
        }
    }
}

/// The mismatches of one check category.
pub(crate) struct Report {
    title: &'static str,
    checked: usize,
    compared: usize,
    items: Vec<String>,
    deviations: BTreeMap<String, BTreeSet<String>>,
}

impl Report {
    pub(crate) fn new(title: &'static str) -> Report {
        Report {
            title,
            checked: 0,
            compared: 0,
            items: Vec::new(),
            deviations: BTreeMap::new(),
        }
    }

    /// Counts one case (or one reader's section of a case) taking part in the check.
    pub(crate) fn checked(&mut self) {
        self.checked += 1;
    }

    /// Records a mismatch.
    pub(crate) fn fail(&mut self, case: &str, field: &str, detail: impl Display) {
        self.items.push(format!("{case} / {field}: {detail}"));
    }

    /// Records that an expected deviation was applied (listed when the test fails).
    pub(crate) fn deviation(&mut self, case: &str, why: &str) {
        self.deviations
            .entry(why.to_owned())
            .or_default()
            .insert(case.to_owned());
    }

    /// Compares two JSON values.
    pub(crate) fn json(&mut self, case: &str, field: &str, expected: &Value, actual: &Value) {
        self.compared += 1;
        if let Some(d) = json::diff(expected, actual) {
            self.fail(case, field, d);
        }
    }

    /// Compares a pi result (a value, or `{error:{code}}`) with grove's.
    pub(crate) fn outcome<E: Borrow<GroveError>>(
        &mut self,
        case: &str,
        field: &str,
        expected: &Value,
        actual: Result<Value, E>,
    ) {
        let want_error = expected
            .get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_str);
        let actual = actual.as_ref().map_err(Borrow::borrow);
        self.compared += 1;
        match (want_error, actual) {
            (Some(code), Err(e)) if e.code() == code => {}
            (Some(code), Err(e)) => self.fail(
                case,
                field,
                format!("expected error {code}, got {} ({e})", e.code()),
            ),
            (Some(code), Ok(v)) => self.fail(
                case,
                field,
                format!("expected error {code}, got {}", json::short(v)),
            ),
            (None, Err(e)) => self.fail(
                case,
                field,
                format!(
                    "expected {}, got error {} ({e})",
                    json::short(expected),
                    e.code()
                ),
            ),
            (None, Ok(v)) => {
                if let Some(d) = json::diff(expected, v) {
                    self.fail(case, field, d);
                }
            }
        }
    }

    /// Fails the test with every mismatch, if there is any.
    pub(crate) fn finish(self) {
        assert!(self.checked > 0, "{}: no case was compared", self.title);
        let applied: Vec<String> = self
            .deviations
            .iter()
            .map(|(why, cases)| {
                format!(
                    "  - {why}: {}",
                    cases.iter().cloned().collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        // Shown with --nocapture: what was compared and which deviations applied.
        eprintln!(
            "{}: {} case sections, {} value comparisons, {} mismatches\n{}",
            self.title,
            self.checked,
            self.compared,
            self.items.len(),
            applied.join("\n")
        );
        if self.items.is_empty() {
            return;
        }
        panic!(
            "{}: {} mismatch(es) over {} case sections:\n{}\nexpected deviations applied:\n{}",
            self.title,
            self.items.len(),
            self.checked,
            self.items
                .iter()
                .map(|i| format!("  * {i}"))
                .collect::<Vec<_>>()
                .join("\n"),
            applied.join("\n")
        );
    }
}

/// Ids of entries as a JSON array.
pub(crate) fn ids_value(entries: &[grove::Entry]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|e| Value::String(e.id().to_owned()))
            .collect(),
    )
}

/// Ids as a JSON array.
pub(crate) fn strings_value(ids: &[String]) -> Value {
    Value::Array(ids.iter().cloned().map(Value::String).collect())
}

/// An optional id as JSON (`null` for `None`).
pub(crate) fn opt_value(id: Option<String>) -> Value {
    id.map_or(Value::Null, Value::String)
}

/// A context as pi's JSON object (lenient parse of grove's text).
pub(crate) fn context_value(ctx: &grove::Context) -> Value {
    json::parse(&ctx.to_json()).unwrap_or_else(|e| panic!("grove context is not JSON: {e}"))
}

/// The ids of a session's log, in order.
pub(crate) fn log_ids(session: &Session) -> Result<Vec<String>, GroveError> {
    session
        .log()
        .map(|e| e.map(|e| e.id().to_owned()))
        .collect()
}

/// The set of ids of a JSON id list.
pub(crate) fn id_set(ids: &Value) -> HashSet<String> {
    ids.as_array()
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
