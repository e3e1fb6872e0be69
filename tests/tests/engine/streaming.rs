//! The streaming reads against the materializing ones on random trees written with exact
//! entries: random parents (roots included), settings of every kind, compactions keeping
//! from an ancestor, a non-ancestor, a compaction or an unknown id, with and without a
//! retained tail, and branch summaries. After every append, at the leaf and at every entry,
//! the streamed path, branch and context (every combination of options) equal the
//! materializing reads (`crate::oracle::streaming::differences`).

use std::collections::HashMap;

use grove::{CreateSession, Durability, Store};
use proptest::prelude::*;

use crate::oracle::streaming::{all_options, differences};

#[derive(Debug, Clone)]
enum Kind {
    User,
    Assistant,
    Model,
    Thinking,
    Tools,
    /// Keeps from an entry, or from an unknown id; with a tail.
    Compaction(Option<Keep>, bool),
    BranchSummary,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        5 => Just(Kind::User),
        5 => Just(Kind::Assistant),
        1 => Just(Kind::Model),
        1 => Just(Kind::Thinking),
        1 => Just(Kind::Tools),
        3 => (proptest::option::weighted(0.85, keep()), any::<bool>())
            .prop_map(|(k, t)| Kind::Compaction(k, t)),
        1 => Just(Kind::BranchSummary),
    ]
}

/// Which entry a compaction keeps from.
#[derive(Debug, Clone)]
enum Keep {
    /// The n-th ancestor of its parent (its parent itself for 0), or the root-most one.
    Ancestor(u8),
    /// The n-th entry written (modulo): often not an ancestor.
    Any(u16),
}

fn keep() -> impl Strategy<Value = Keep> {
    prop_oneof![
        3 => (0u8..6).prop_map(Keep::Ancestor),
        1 => any::<u16>().prop_map(Keep::Any),
    ]
}

/// The parent: the entry written just before (most often), another one, or none.
fn parent() -> impl Strategy<Value = Option<Option<u16>>> {
    prop_oneof![
        6 => Just(None),
        3 => any::<u16>().prop_map(|i| Some(Some(i))),
        1 => Just(Some(None)),
    ]
}

fn line(
    n: usize,
    kind: &Kind,
    parent: Option<&str>,
    ids: &[String],
    parents: &HashMap<String, Option<String>>,
) -> String {
    let parent_json = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    let head = format!(
        r#""id":"e{n}","parentId":{parent_json},"timestamp":"2026-01-01T00:00:{:02}.000Z""#,
        n % 60
    );
    match kind {
        Kind::User => format!(
            r#"{{"type":"message",{head},"message":{{"role":"user","content":"u{n}","timestamp":{n}}}}}"#
        ),
        Kind::Assistant => format!(
            r#"{{"type":"message",{head},"message":{{"role":"assistant","content":[],"provider":"p{n}","model":"m{n}","timestamp":{n}}}}}"#
        ),
        Kind::Model => {
            format!(r#"{{"type":"model_change",{head},"provider":"x","modelId":"y{n}"}}"#)
        }
        Kind::Thinking => {
            format!(r#"{{"type":"thinking_level_change",{head},"thinkingLevel":"t{n}"}}"#)
        }
        Kind::Tools => {
            format!(r#"{{"type":"active_tools_change",{head},"activeToolNames":["tool{n}"]}}"#)
        }
        Kind::Compaction(keep, tail) => {
            let fk = match (keep, parent) {
                (Some(Keep::Any(k)), _) if !ids.is_empty() => {
                    ids[usize::from(*k) % ids.len()].clone()
                }
                (Some(Keep::Ancestor(k)), Some(p)) => {
                    let mut at = p.to_owned();
                    for _ in 0..*k {
                        match parents.get(&at).cloned().flatten() {
                            Some(up) => at = up,
                            None => break,
                        }
                    }
                    at
                }
                _ => "nowhere".to_owned(),
            };
            let tail = if *tail {
                format!(r#","retainedTail":[{{"role":"user","content":"kept{n}","timestamp":1}}]"#)
            } else {
                String::new()
            };
            format!(
                r#"{{"type":"compaction",{head},"summary":"s{n}","firstKeptEntryId":"{fk}","tokensBefore":{n}{tail}}}"#
            )
        }
        Kind::BranchSummary => {
            format!(r#"{{"type":"branch_summary",{head},"summary":"b{n}","fromId":"root"}}"#)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn streaming_reads_equal_the_materializing_ones_on_random_trees(
        steps in proptest::collection::vec((kind(), parent()), 1..40)
    ) {
        let store = Store::in_memory().unwrap();
        let session = store.create_session(CreateSession::default()).unwrap();
        let every = all_options();
        let mut ids: Vec<String> = Vec::new();
        let mut parents: HashMap<String, Option<String>> = HashMap::new();
        for (n, (kind, parent)) in steps.iter().enumerate() {
            let parent = match parent {
                None => ids.last().cloned(),
                Some(None) => None,
                Some(Some(i)) if !ids.is_empty() => Some(ids[usize::from(*i) % ids.len()].clone()),
                Some(Some(_)) => None,
            };
            let text = line(n, kind, parent.as_deref(), &ids, &parents);
            parents.insert(format!("e{n}"), parent.clone());
            session.append_exact(&text, Some(Durability::None)).unwrap();
            ids.push(format!("e{n}"));
            let mut found = differences(&session, None, &every);
            if n + 1 == steps.len() {
                for id in &ids {
                    found.extend(differences(&session, Some(id), &every));
                    found.extend(split_differences(&session, id));
                }
            }
            prop_assert!(found.is_empty(), "step {}: {}", n, found.join("\n"));
        }
    }
}

/// Where a walk (branch and path) from `id` planned and cut in two at any point
/// (`Walk::split_at`) reads otherwise than the walk read whole: other entries, or a head of
/// another length.
fn split_differences(session: &grove::Session, id: &str) -> Vec<String> {
    let ids = |walk: grove::Walk| {
        let mut out = Vec::new();
        walk.for_each(&mut |e| {
            out.push(e.id().to_owned());
            Ok(())
        })
        .map(|()| out)
    };
    let mut found = Vec::new();
    for path in [false, true] {
        let plan = || match path {
            true => session.plan_path(Some(id)),
            false => session.plan_branch(Some(id)),
        };
        let (Ok(whole_plan), Ok(whole)) = (plan(), plan().and_then(ids)) else {
            continue; // an error of the walk, raised alike by the reads compared above
        };
        let len = whole_plan.len();
        if len != whole.len() as u64 {
            found.push(format!(
                "{id} (path {path}): len {len} of {} entries",
                whole.len()
            ));
        }
        for k in 0..=len + 1 {
            let Ok(planned) = plan() else { continue };
            let (head, tail) = planned.split_at(k);
            let head_len = head.len();
            let read = ids(head).and_then(|mut h| {
                h.extend(ids(tail)?);
                Ok(h)
            });
            match read {
                Ok(read) if read == whole && head_len == k.min(len) => {}
                other => found.push(format!("{id} (path {path}) cut at {k}: {other:?}")),
            }
        }
    }
    found
}

/// A compaction that keeps from an older compaction: the branch stops at the older one (it
/// is the stop entry before it is a compaction), spec §4.1.
#[test]
fn a_branch_stops_at_a_kept_compaction() {
    let store = Store::in_memory().unwrap();
    let session = store.create_session(CreateSession::default()).unwrap();
    let every = all_options();
    let lines = [
        line(0, &Kind::User, None, &[], &HashMap::new()),
        line(
            1,
            &Kind::Compaction(Some(Keep::Ancestor(0)), false),
            Some("e0"),
            &[],
            &HashMap::new(),
        ),
        line(2, &Kind::User, Some("e1"), &[], &HashMap::new()),
        line(
            3,
            &Kind::Compaction(Some(Keep::Any(1)), false),
            Some("e2"),
            &["e0".into(), "e1".into()],
            &HashMap::new(),
        ),
        line(4, &Kind::User, Some("e3"), &[], &HashMap::new()),
    ];
    for text in &lines {
        session.append_exact(text, Some(Durability::None)).unwrap();
    }
    let mut branch = Vec::new();
    session
        .for_each_on_branch(None, &mut |e| {
            branch.push(e.id().to_owned());
            Ok(())
        })
        .unwrap();
    assert_eq!(branch, ["e1", "e2", "e3", "e4"]);
    assert_eq!(differences(&session, None, &every), Vec::<String>::new());
}

/// A `cli` export is written as it is read: the leaf moved to the end when it is not the last
/// entry, the other entries in log order, and the refusal decided before any byte.
#[test]
fn a_cli_export_moves_the_leaf_last_and_refuses_before_writing() {
    use grove::{Flavor, NewEntry};
    let store = Store::in_memory().unwrap();
    let session = store.create_session(CreateSession::default()).unwrap();
    let user = |text: &str| NewEntry::Message {
        message: format!(r#"{{"role":"user","content":"{text}","timestamp":1}}"#),
    };
    let a = session.append(user("a")).unwrap();
    let b = session.append(user("b")).unwrap();
    session.move_to(Some(&a)).unwrap();
    let c = session.append(user("c")).unwrap();
    session.move_to(Some(&b)).unwrap();
    let mut out = Vec::new();
    let report = session.export(Flavor::Cli, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let ids: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids, [a.clone(), c.clone(), b.clone()]);
    assert_eq!(report.relocated.as_deref(), Some(b.as_str()));
    assert_eq!(report.lines, 3);

    // The leaf on an older session_info entry: moving it last would change the session's
    // name, so the export is refused, and before any byte is written.
    session.set_name("first").unwrap();
    let named = session.leaf().unwrap().unwrap();
    session.move_to(Some(&c)).unwrap();
    session.append(user("d")).unwrap();
    session.set_name("second").unwrap();
    session.move_to(Some(&named)).unwrap();
    let mut out = Vec::new();
    let err = session.export(Flavor::Cli, &mut out).unwrap_err();
    assert_eq!(err.code(), "export_incompatible", "{err}");
    assert!(err.to_string().contains("session name"), "{err}");
    assert!(out.is_empty());
}
