//! Opening: grove's strict import accepts exactly what the pi harness opens, apart from the
//! deviations the spec prescribes (see `Case::expected_open`).

use std::collections::BTreeSet;

use grove::codec::reader::Diagnostic;
use grove::{LeafRule, Strictness};

use super::{cases, Open, Report};

/// The cases where grove's open outcome differs from the harness by design. Kept as an
/// explicit list so that a new deviation cannot slip in unnoticed.
const DEVIATING: &[(&str, &str)] = &[
    (
        "edge-leaf-missing-target",
        "dangling final leaf fails at import (spec §3.5)",
    ),
    (
        "edge-mixed-sm-after-leaf",
        "entry attached to a leaf record (spec §3.5, A.16)",
    ),
    (
        "edge-moveto-leaf-entry",
        "entry attached to a leaf record (spec §3.5, A.16)",
    ),
    ("edge-torn-last-line", "torn tail excluded (spec §2.1, §12)"),
    ("edge-torn-utf8", "torn tail excluded (spec §2.1, §12)"),
    ("edge-v1", "legacy version migrated (spec §2.8)"),
    ("edge-v1-bad-index", "legacy version migrated (spec §2.8)"),
    ("edge-v2", "legacy version migrated (spec §2.8)"),
];

#[test]
fn open_and_refusal() {
    let mut r = Report::new("open/refusal");
    let mut deviating = BTreeSet::new();
    for case in cases() {
        r.checked();
        let (expect, why) = case.expected_open();
        if let Some(why) = why {
            deviating.insert((case.name.as_str(), why));
            r.deviation(&case.name, why);
        }
        let result = case.import(Strictness::Strict, LeafRule::Auto);
        match (&expect, &result) {
            (Open::Accept, Ok(_)) => {}
            (Open::Accept, Err(e)) => r.fail(
                &case.name,
                "open",
                format!("expected an import, got {} ({e})", e.code()),
            ),
            (Open::Refuse(code), Ok(_)) => r.fail(
                &case.name,
                "open",
                format!("expected error {code}, got an import"),
            ),
            (Open::Refuse(code), Err(e)) if e.code() != *code => r.fail(
                &case.name,
                "open",
                format!("expected error {code}, got {} ({e})", e.code()),
            ),
            (Open::Refuse(_), Err(_)) => {}
        }
        // pi-CLI refuses only files without a valid header; so does grove (spec §2.2).
        if case.sm().is_none() && result.is_ok() {
            r.fail(
                &case.name,
                "open",
                "SessionManager refuses this file, grove imported it",
            );
        }
        // Every file pi-CLI opens is compared with it through a lenient, last-line import
        // (`Case::sm_pair`), except: v1 files (random ids; migration.rs), a 0-byte file
        // (pi-CLI writes a header into it; grove never makes a header-less file a
        // session, spec §12), a non-numeric version, and entries attached to leaf lines
        // (spec §3.5, A.16).
        if case.sm().is_some() {
            let comparable =
                matches!(case.header_version(), Some(2 | 3)) && !case.attaches_to_leaf_line();
            if comparable && case.sm_pair().is_none() {
                let e = case.import(Strictness::Lenient, LeafRule::LastLine).err();
                r.fail(&case.name, "open (lenient, last line)", format!("{e:?}"));
            }
            if case.header.is_none() {
                r.deviation(
                    &case.name,
                    "pi-CLI writes a header into a header-less file (spec §12)",
                );
            } else if case.header_version().is_none() {
                // pi-CLI compares `version >= 3`, which "3" passes.
                r.deviation(
                    &case.name,
                    "non-numeric version refused, as the harness does (spec §2.2)",
                );
            }
        }
        let Ok((_, report)) = &result else {
            continue;
        };
        // What grove did differently must be reported.
        if case.torn_tail()
            && !report
                .diagnostics
                .iter()
                .any(|d| matches!(d, Diagnostic::TornTail { .. }))
        {
            r.fail(&case.name, "diagnostics", "torn tail not reported");
        }
        let migrated = report
            .diagnostics
            .iter()
            .any(|d| matches!(d, Diagnostic::Migrated { .. }));
        if migrated != matches!(case.header_version(), Some(1 | 2)) {
            r.fail(
                &case.name,
                "diagnostics",
                format!("migration reported: {migrated}"),
            );
        }
        // Blank lines are dropped and reported (spec §2.1): count the whitespace-only lines
        // (the empty text after a final LF is not a line).
        let text = case.bytes.strip_suffix(b"\n").unwrap_or(&case.bytes);
        let blank = text
            .split(|&c| c == b'\n')
            .filter(|l| l.iter().all(|c| b" \t\r\x0b\x0c".contains(c)))
            .count();
        let reported = report
            .diagnostics
            .iter()
            .filter(|d| matches!(d, Diagnostic::BlankLine { .. }))
            .count();
        if blank != reported {
            r.fail(
                &case.name,
                "diagnostics",
                format!("{blank} blank lines, {reported} reported"),
            );
        }
        if case.lines.iter().any(|l| l.ty.as_deref() == Some("leaf")) != (report.leaf_records > 0) {
            r.fail(
                &case.name,
                "leaf_records",
                format!("{} leaf records imported", report.leaf_records),
            );
        }
    }
    let want: BTreeSet<(&str, &str)> = DEVIATING.iter().copied().collect();
    if deviating != want {
        r.fail(
            "*",
            "deviations",
            format!("open deviations changed: expected {want:?}, applied {deviating:?}"),
        );
    }
    r.finish();
}
