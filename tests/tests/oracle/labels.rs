//! Labels and the session name (spec §6.1, §6.2).

use std::collections::BTreeMap;

use grove::Session;
use grove_tests::json;
use serde_json::{Map, Value};

use super::{cases, Report};

/// grove's labels as pi's `{target: label}` map, each label read from its exact JSON.
fn grove_labels(session: &Session) -> Result<BTreeMap<String, Value>, grove::GroveError> {
    Ok(session
        .labels()?
        .into_iter()
        .map(|(target, l)| {
            let v = json::parse(&l.label_json).unwrap_or_else(|e| panic!("label {target}: {e}"));
            (target, v)
        })
        .collect())
}

/// Compares pi's `{target: label|null}` with grove's labels: every key pi lists must have
/// the same label (null: none), and grove has no label on a target pi does not list.
fn compare(
    r: &mut Report,
    case: &str,
    field: &str,
    want: &Map<String, Value>,
    got: &BTreeMap<String, Value>,
) {
    for (target, label) in want {
        let actual = got.get(target).cloned().unwrap_or(Value::Null);
        r.json(case, &format!("{field}[{target}]"), label, &actual);
    }
    for target in got.keys().filter(|t| !want.contains_key(*t)) {
        r.fail(
            case,
            &format!("{field}[{target}]"),
            format!(
                "grove has label {}, pi has no label line for it",
                got[target]
            ),
        );
    }
}

/// grove's session name as a JSON value, read from the exact `name` of the last
/// `session_info` (so lone surrogates compare exactly), trimmed as pi does.
fn grove_name(session: &Session) -> Result<Value, grove::GroveError> {
    Ok(match session.name()? {
        None => Value::Null,
        Some(name) if !name.contains('\u{fffd}') => Value::String(name),
        // A lone surrogate became U+FFFD: read the exact value instead.
        Some(_) => {
            let last = session
                .entries()
                .filter_map(Result::ok)
                .filter(|e| e.kind() == grove::codec::EntryKind::SessionInfo)
                .last()
                .map(|e| json::parse(&e.line).unwrap_or_default());
            last.and_then(|v| {
                v["name"]
                    .as_str()
                    .map(|s| Value::String(js_trim(s).to_owned()))
            })
            .unwrap_or(Value::Null)
        }
    })
}

/// JavaScript `String.prototype.trim` (WhiteSpace and LineTerminator, BOM included).
fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| {
        matches!(
            c,
            '\u{9}'..='\u{d}'
                | ' '
                | '\u{a0}'
                | '\u{1680}'
                | '\u{2000}'..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
        )
    })
}

#[test]
fn labels_and_session_name() {
    let mut r = Report::new("labels/sessionName");
    for case in cases() {
        if let Some((session, _, h)) = case.harness_pair() {
            r.checked();
            match grove_labels(&session) {
                Err(e) => r.fail(&case.name, "labels()", e),
                Ok(got) => compare(
                    &mut r,
                    &case.name,
                    "harness.labels",
                    h["labels"].as_object().unwrap_or(&Map::new()),
                    &got,
                ),
            }
            r.outcome(
                &case.name,
                "harness.sessionName",
                &h["sessionName"],
                grove_name(&session),
            );
            // The single-target accessor agrees with the map.
            if let Ok(all) = session.labels() {
                for (target, l) in &all {
                    if session.label(target).ok().flatten().as_ref() != Some(l) {
                        r.fail(
                            &case.name,
                            &format!("label({target})"),
                            "differs from labels()",
                        );
                    }
                }
            }
        }
        if let Some((session, _, s)) = case.sm_pair() {
            r.checked();
            // Appendix A.8: pi-CLI keeps labels untrimmed and a blank one set; grove trims
            // and clears blanks (spec §6.1).
            let mut want = Map::new();
            for (target, label) in s["labels"].as_object().into_iter().flatten() {
                let trimmed = match label.as_str().map(js_trim) {
                    Some("") => {
                        r.deviation(
                            &case.name,
                            "SM blank label is cleared in grove (spec §6.1, A.8)",
                        );
                        Value::Null
                    }
                    Some(t) => Value::String(t.to_owned()),
                    None => label.clone(),
                };
                want.insert(target.clone(), trimmed);
            }
            match grove_labels(&session) {
                Err(e) => r.fail(&case.name, "labels()", e),
                Ok(got) => compare(&mut r, &case.name, "sessionManager.labels", &want, &got),
            }
            r.outcome(
                &case.name,
                "sessionManager.sessionName",
                &s["sessionName"],
                grove_name(&session),
            );
        }
    }
    r.finish();
}
