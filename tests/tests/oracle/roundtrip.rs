//! The round-trip guarantee (spec §3.7): for every file strict import accepts, with every
//! line LF-terminated, no blank line and no migration, the harness export is the file byte
//! for byte; without leaf lines, so is the cli export, unless a label is whitespace-only.

use std::collections::HashMap;

use grove::{Flavor, LeafRule, Strictness};
use serde_json::Value;

use super::{cases, Case, Report};

/// Whether the §3.7 preconditions hold for the file's bytes.
fn clean(case: &Case) -> bool {
    let b = &case.bytes;
    b.ends_with(b"\n")
        && !b.contains(&b'\r')
        && b[..b.len() - 1]
            .split(|&c| c == b'\n')
            .all(|l| !l.iter().all(|c| b" \t\x0b\x0c".contains(c)))
        && case.header_version() == Some(3)
}

/// Whether pi-CLI, reading the file in order, ends with a label that grove would not show
/// the same way: a truthy value whose JavaScript trim is empty, or that is not a string
/// (spec §3.6, §6.1).
fn cli_label_incompatible(case: &Case) -> bool {
    let mut labels: HashMap<&str, &Value> = HashMap::new();
    for l in case
        .lines
        .iter()
        .filter(|l| l.ty.as_deref() == Some("label"))
    {
        let Some(v) = &l.value else { continue };
        let Some(target) = v["targetId"].as_str() else {
            continue;
        };
        let label = &v["label"];
        let truthy = match label {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            Value::String(s) => !s.is_empty(),
            _ => true,
        };
        if truthy {
            labels.insert(target, label);
        } else {
            labels.remove(target);
        }
    }
    labels
        .values()
        .any(|v| v.as_str().is_none_or(|s| s.trim().is_empty()))
}

/// The first line where two exports differ, for the report.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    let w: Vec<&[u8]> = want.split(|&c| c == b'\n').collect();
    let g: Vec<&[u8]> = got.split(|&c| c == b'\n').collect();
    match w.iter().zip(&g).position(|(a, b)| a != b) {
        Some(i) => format!(
            "line {}: expected {:?}, got {:?}",
            i + 1,
            String::from_utf8_lossy(&w[i][..w[i].len().min(160)]),
            String::from_utf8_lossy(&g[i][..g[i].len().min(160)])
        ),
        None => format!("{} lines expected, {} written", w.len(), g.len()),
    }
}

#[test]
fn round_trip() {
    let mut r = Report::new("round trip");
    for case in cases() {
        if !clean(case) {
            // Outside §3.7's preconditions (blank lines, CR, a missing final LF, a torn
            // tail), every kept line is still exported as its exact bytes (spec §2.1, §2.9):
            // the file's non-blank lines, torn tail excluded, each followed by LF. Migrated
            // files are compared in migration.rs.
            if case.header_version() != Some(3) {
                continue;
            }
            let Ok((session, _)) = case.import(Strictness::Strict, LeafRule::Auto) else {
                continue;
            };
            r.checked();
            let mut want = Vec::new();
            let mut lines: Vec<&[u8]> = case
                .bytes
                .split(|&c| c == b'\n')
                .filter(|l| !l.iter().all(|c| b" \t\r\x0b\x0c".contains(c)))
                .collect();
            if case.torn_tail() {
                lines.pop();
            }
            for l in lines {
                want.extend_from_slice(l);
                want.push(b'\n');
            }
            let mut out = Vec::new();
            match session.export(Flavor::Harness, &mut out) {
                Err(e) => r.fail(&case.name, "export(harness), normalized", e),
                Ok(_) if out != want => r.fail(
                    &case.name,
                    "export(harness), normalized",
                    first_difference(&want, &out),
                ),
                Ok(_) => {}
            }
            continue;
        }
        let Ok((session, report)) = case.import(Strictness::Strict, LeafRule::Auto) else {
            continue;
        };
        r.checked();
        if !report.diagnostics.is_empty() {
            r.fail(
                &case.name,
                "diagnostics",
                format!("{:?}", report.diagnostics),
            );
        }
        let mut out = Vec::new();
        match session.export(Flavor::Harness, &mut out) {
            Err(e) => r.fail(&case.name, "export(harness)", e),
            Ok(_) if out != case.bytes => r.fail(
                &case.name,
                "export(harness)",
                first_difference(&case.bytes, &out),
            ),
            Ok(_) => {}
        }
        if case.has_leaf_lines() {
            continue;
        }
        let mut out = Vec::new();
        let result = session.export(Flavor::Cli, &mut out);
        if cli_label_incompatible(case) {
            r.deviation(
                &case.name,
                "whitespace-only pi-CLI label: cli export refused (spec §3.6, §3.7)",
            );
            match result {
                Err(e) if e.code() == "export_incompatible" => {}
                other => r.fail(
                    &case.name,
                    "export(cli)",
                    format!("expected ExportIncompatible, got {other:?}"),
                ),
            }
            continue;
        }
        match result {
            Err(e) => r.fail(&case.name, "export(cli)", e),
            Ok(rep) if rep.relocated.is_some() => {
                r.fail(&case.name, "export(cli)", format!("relocated {rep:?}"))
            }
            Ok(_) if out != case.bytes => r.fail(
                &case.name,
                "export(cli)",
                first_difference(&case.bytes, &out),
            ),
            Ok(_) => {}
        }
    }
    r.finish();
}
