//! What verification reports ([`VerifyReport`], [`Problem`]) and the checker that collects
//! a session's problems, and what it compares: index packs against the rows they should hold,
//! a set against the set it should be, a stored head against the head the log folds to.
//!
//! May call: [`crate::log`], [`crate::core`], [`crate::kv`].

use std::collections::BTreeSet;

use grove_codec::record::HeadRecord;

use crate::core::error::Result;
use crate::core::keys;
use crate::core::util;
use crate::log::handle::Handle;

/// One problem found by verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The session (id, or `sid N` when the id is unreadable).
    pub session: String,
    /// The entry, when the problem is about one.
    pub entry: Option<String>,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.entry {
            Some(e) => write!(f, "session {}, entry {}: {}", self.session, e, self.what),
            None => write!(f, "session {}: {}", self.session, self.what),
        }
    }
}

/// The result of a verification.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Sessions checked.
    pub sessions: u64,
    /// Records (entries and leaf records) checked.
    pub records: u64,
    /// Every problem found; empty when the store is sound.
    pub problems: Vec<Problem>,
    /// Records whose lines differ from their content digests because redactions recorded in
    /// their sessions' logs explain it (not problems: docs/design.md, "Redaction").
    pub redacted: u64,
}

impl VerifyReport {
    /// Whether nothing was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

pub(crate) struct Checker<'r> {
    pub(crate) session: String,
    pub(crate) report: &'r mut VerifyReport,
}

impl Checker<'_> {
    pub(crate) fn fail(&mut self, entry: Option<&str>, what: impl Into<String>) {
        self.report.problems.push(Problem {
            session: self.session.clone(),
            entry: entry.map(str::to_owned),
            what: what.into(),
        });
    }
}

/// The rows of a session's index packs in `table`, checking that each pack decodes, is keyed
/// by its first row, holds only rows that `imported` accepts (rows of records below the packed
/// count), and that rows ascend within and across packs.
pub(crate) fn pack_rows<T: Ord + Copy + std::fmt::Debug>(
    c: &mut Checker<'_>,
    s: &Handle,
    table: u8,
    name: &str,
    key_row: impl Fn(&[u8]) -> Option<T>,
    decode: impl Fn(&[u8], &[u8]) -> Result<Vec<T>>,
    imported: impl Fn(&T) -> bool,
) -> Result<BTreeSet<T>> {
    let start = keys::session_prefix(table, s.sid);
    let mut out = BTreeSet::new();
    let mut last: Option<T> = None;
    for pair in s.inner.kv.scan(&start, &keys::prefix_end(&start)) {
        let (k, v) = pair?;
        let rows = match decode(&k, &v) {
            Ok(rows) => rows,
            Err(e) => {
                c.fail(None, e.to_string());
                continue;
            }
        };
        if rows.is_empty() || rows.first().copied() != key_row(&k) {
            c.fail(
                None,
                format!("{name} {}: its key is not its first row", util::hex(&k)),
            );
        }
        for row in rows {
            if last.is_some_and(|l| l >= row) {
                c.fail(None, format!("{name}s: row {row:?} out of order"));
            }
            if !imported(&row) {
                c.fail(
                    None,
                    format!("{name}s: row {row:?} is not of an imported record"),
                );
            }
            last = Some(row);
            out.insert(row);
        }
    }
    Ok(out)
}

/// Compares the rows of `table` and those of its packs (`packed`) with the expected set; a
/// row stored both ways is a problem too.
pub(crate) fn compare_set<T: Ord + Copy + std::fmt::Debug>(
    c: &mut Checker<'_>,
    s: &Handle,
    table: u8,
    name: &str,
    parse: impl Fn(&[u8]) -> Option<T>,
    expected: &BTreeSet<T>,
    packed: BTreeSet<T>,
) -> Result<()> {
    let start = keys::session_prefix(table, s.sid);
    let mut found = packed;
    for pair in s.inner.kv.scan(&start, &keys::prefix_end(&start)) {
        let (k, v) = pair?;
        if !v.is_empty() {
            c.fail(None, format!("{name} row has a value"));
        }
        match parse(&k) {
            Some(x) => {
                if !found.insert(x) {
                    c.fail(
                        None,
                        format!("{name}: row {x:?} is both a key and in a pack"),
                    );
                }
            }
            None => c.fail(None, format!("{name} key is malformed")),
        }
    }
    if &found != expected {
        let missing = expected.difference(&found).count();
        let extra = found.difference(expected).count();
        c.fail(
            None,
            format!("{name}: {missing} rows missing, {extra} unexpected"),
        );
    }
    Ok(())
}

/// Whether a head equals the fold of the log (`replay`); a head written without a timestamp
/// (by an import) agrees with any.
pub(crate) fn head_agrees(head: &HeadRecord, replay: &HeadRecord) -> bool {
    head.next_seq == replay.next_seq
        && head.entries == replay.entries
        && head.name_at == replay.name_at
        && head.leaf == replay.leaf
        && head
            .last_timestamp
            .as_ref()
            .is_none_or(|t| Some(t) == replay.last_timestamp.as_ref())
}
