//! The operation log: every change is one numbered operation with its kind, actor and the
//! leaf before and after; undo moves the leaf back as an operation of its own; a point in
//! time answers as the session stood then. The model test records, after every operation of
//! a random sequence, the context, branch, path and tree as they were built then, and checks
//! that every earlier point in time still answers exactly that, before and after a reopen.

use grove::{
    ContextOptions, CreateSession, GroveError, NavigateOptions, Navigator, NewEntry, OpKind,
    SealCheck, Session, Store, StoreConfig,
};
use proptest::prelude::*;

use super::{assistant, user};

/// What a session looked like right after one operation.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    context: String,
    branch: Vec<String>,
    path: Vec<String>,
    tree: Vec<(String, Option<String>, Option<String>, bool)>,
    leaf: Option<String>,
}

fn tree_rows(tree: &grove::Tree) -> Vec<(String, Option<String>, Option<String>, bool)> {
    tree.preorder()
        .into_iter()
        .map(|(i, _)| {
            let n = &tree.nodes[i];
            (
                n.id.clone(),
                n.parent.clone(),
                n.label.clone(),
                n.on_active_path,
            )
        })
        .collect()
}

fn ids(entries: &[grove::Entry]) -> Vec<String> {
    entries.iter().map(|e| e.id().to_owned()).collect()
}

fn now(s: &Session) -> Snapshot {
    let leaf = s.leaf().unwrap();
    Snapshot {
        context: s
            .build_context_with(None, ContextOptions::grove())
            .unwrap()
            .to_json(),
        branch: ids(&s.branch(None).unwrap()),
        path: ids(&s.path_to_root(None).unwrap()),
        tree: tree_rows(&s.tree().unwrap()),
        leaf,
    }
}

fn then(s: &Session, op: u64) -> Snapshot {
    let at = s.at_op(op).unwrap();
    Snapshot {
        context: s
            .context_as_of(&at, ContextOptions::grove())
            .unwrap()
            .to_json(),
        branch: ids(&s.branch_as_of(&at).unwrap()),
        path: ids(&s.path_as_of(&at).unwrap()),
        tree: tree_rows(&s.tree_as_of(&at).unwrap()),
        leaf: at.leaf,
    }
}

#[derive(Debug, Clone)]
pub(super) enum Step {
    Append(u8),
    AppendMany(u8),
    /// Move to the n-th entry (mod count), or to the root position.
    Move(Option<u16>),
    Label(u16, Option<u8>),
    Name(u8),
    Compact(u16),
    Navigate(u16, bool),
    Undo(Option<u16>),
    /// A model, thinking level or active tools change.
    Setting(u8),
}

pub(super) fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => any::<u8>().prop_map(Step::Append),
        1 => (1u8..5).prop_map(Step::AppendMany),
        2 => proptest::option::of(any::<u16>()).prop_map(Step::Move),
        1 => (any::<u16>(), proptest::option::of(0u8..3)).prop_map(|(t, l)| Step::Label(t, l)),
        1 => any::<u8>().prop_map(Step::Name),
        1 => any::<u16>().prop_map(Step::Compact),
        1 => (any::<u16>(), any::<bool>()).prop_map(|(t, l)| Step::Navigate(t, l)),
        2 => proptest::option::of(any::<u16>()).prop_map(Step::Undo),
        1 => any::<u8>().prop_map(Step::Setting),
    ]
}

/// The tree entries of the session, in log order.
fn entry_ids(s: &Session) -> Vec<String> {
    s.entries().map(|e| e.unwrap().id().to_owned()).collect()
}

/// Runs one step; the operation kind it records, or `None` when it wrote nothing.
pub(super) fn apply(s: &Session, step: &Step, ops_so_far: u64) -> Option<OpKind> {
    let entries = entry_ids(s);
    let pick = |n: u16| entries.get(n as usize % entries.len().max(1)).cloned();
    match step {
        Step::Append(n) => {
            let e = if n % 2 == 0 {
                user(&format!("u{n}"))
            } else {
                assistant(&format!("a{n}"))
            };
            s.append(e).unwrap();
            Some(OpKind::Append)
        }
        Step::AppendMany(k) => {
            let batch: Vec<NewEntry> = (0..*k).map(|i| user(&format!("m{i}"))).collect();
            s.append_many(&batch).unwrap();
            Some(OpKind::AppendMany)
        }
        Step::Move(target) => {
            let target = match target {
                Some(n) => Some(pick(*n)?),
                None => None,
            };
            s.move_to(target.as_deref()).unwrap();
            Some(OpKind::Move)
        }
        Step::Label(t, l) => {
            let target = pick(*t)?;
            let label = l.map(|l| ["  keep ", "", "other"][l as usize].to_owned());
            s.set_label(&target, label.as_deref()).unwrap();
            Some(OpKind::Label)
        }
        Step::Name(n) => {
            s.set_name(&format!("name {n}")).unwrap();
            Some(OpKind::Name)
        }
        Step::Compact(k) => {
            let path = ids(&s.path_to_root(None).unwrap());
            let kept = path.get(*k as usize % path.len().max(1))?.clone();
            s.append(NewEntry::Compaction {
                summary: format!("summary {k}"),
                first_kept_entry_id: kept,
                tokens_before: 10,
                retained_tail: None,
                details: None,
                usage: None,
                from_hook: None,
            })
            .unwrap();
            Some(OpKind::Append)
        }
        Step::Navigate(t, labelled) => {
            let target = pick(*t)?;
            let options = NavigateOptions {
                label: labelled.then(|| "nav".to_owned()),
                ..NavigateOptions::default()
            };
            match s
                .navigate(&target, &options, &Navigator::default())
                .unwrap()
            {
                grove::NavigateOutcome::NoOp => None,
                _ => Some(OpKind::Navigate),
            }
        }
        Step::Setting(n) => {
            let e = match n % 3 {
                0 => NewEntry::ModelChange {
                    provider: format!("p{n}"),
                    model_id: format!("m{n}"),
                },
                1 => NewEntry::ThinkingLevelChange {
                    thinking_level: ["low", "high"][*n as usize % 2].to_owned(),
                },
                _ => NewEntry::ActiveToolsChange {
                    active_tool_names: vec![format!("tool{n}")],
                },
            };
            s.append(e).unwrap();
            Some(OpKind::Append)
        }
        Step::Undo(to) => {
            if ops_so_far == 0 {
                return None;
            }
            let to = to.map(|n| u64::from(n) % ops_so_far);
            let op = s.undo(to).unwrap();
            assert_eq!(op.kind, OpKind::Undo);
            Some(OpKind::Undo)
        }
    }
}

fn run(steps: &[Step]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let id = store
        .create_session(CreateSession::default())
        .unwrap()
        .id()
        .to_owned();
    let mut snaps: Vec<Snapshot> = Vec::new();
    let mut kinds: Vec<OpKind> = Vec::new();
    let mut leaves: Vec<Option<String>> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let s = store
            .session(&id)
            .unwrap()
            .with_actor(&format!("actor{}", i % 3));
        let before = s.leaf().unwrap();
        let Some(kind) = apply(&s, step, kinds.len() as u64) else {
            continue;
        };
        if let Step::Undo(to) = step {
            // The leaf went back to where it was before the operation undone.
            let n = to.map_or(kinds.len() as u64 - 1, |n| {
                u64::from(n) % kinds.len() as u64
            });
            let want = if n == 0 {
                None
            } else {
                leaves[n as usize - 1].clone()
            };
            prop_assert_eq!(s.leaf().unwrap(), want, "undo to before op {}", n);
        }
        kinds.push(kind);
        snaps.push(now(&s));
        leaves.push(s.leaf().unwrap());
        let ops = s.operations().unwrap();
        prop_assert_eq!(ops.len(), kinds.len(), "one operation per change");
        let last = ops.last().unwrap();
        prop_assert_eq!(last.number, kinds.len() as u64 - 1);
        prop_assert_eq!(last.leaf_before.clone(), before);
        prop_assert_eq!(last.leaf_after.clone(), s.leaf().unwrap());
        prop_assert_eq!(last.actor.clone(), Some(format!("actor{}", i % 3)));
        // Every earlier point in time still answers as it did then.
        for (n, snap) in snaps.iter().enumerate() {
            prop_assert_eq!(&then(&s, n as u64), snap, "at op {} after op {}", n, i);
        }
        if i % 7 == 6 {
            drop(s);
            drop(store);
            store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
        }
    }
    let s = store.session(&id).unwrap();
    let ops = s.operations().unwrap();
    let got: Vec<OpKind> = ops.iter().map(|o| o.kind).collect();
    prop_assert_eq!(got, kinds);
    // Operations tile the log.
    let mut next = 0;
    for op in &ops {
        prop_assert_eq!(op.first_seq, next);
        prop_assert!(op.end_seq > op.first_seq);
        next = op.end_seq;
    }
    for (n, snap) in snaps.iter().enumerate() {
        prop_assert_eq!(&then(&s, n as u64), snap, "at op {} after reopening", n);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_point_in_time_answers_as_it_did_then(steps in proptest::collection::vec(step(), 1..40)) {
        run(&steps)?;
    }
}

#[test]
fn kinds_actors_and_times() {
    let store = Store::in_memory().unwrap().with_actor("tester");
    let s = store.create_session(CreateSession::default()).unwrap();
    assert_eq!(s.actor(), "tester");
    let a = s.append(user("one")).unwrap();
    s.append_many(&[assistant("two"), user("three")]).unwrap();
    s.set_label(&a, Some("start")).unwrap();
    s.set_name("named").unwrap();
    s.move_to(Some(&a)).unwrap();
    s.append_exact(
        r#"{"type":"leaf","id":"cafe0001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","targetId":null}"#,
        None,
    )
    .unwrap();
    let undone = s.undo(None).unwrap();
    let ops = s.operations().unwrap();
    let kinds: Vec<&str> = ops.iter().map(|o| o.kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "append",
            "append_many",
            "label",
            "name",
            "move",
            "move",
            "undo"
        ]
    );
    assert!(ops.iter().all(|o| o.actor.as_deref() == Some("tester")));
    assert_eq!(ops[1].records(), 2);
    assert_eq!(undone.leaf_after.as_deref(), Some(a.as_str()));
    assert_eq!(s.leaf().unwrap().as_deref(), Some(a.as_str()));
    // Times never run backwards within one process's operations here, and parse back.
    let t = ops[3].time().unwrap();
    assert!(s.at_time(&t).unwrap().op >= 3);
    assert!(matches!(
        s.at_time("1990-01-01T00:00:00Z"),
        Err(GroveError::BeforeFirstOperation { .. })
    ));
    assert!(matches!(
        s.at_op(99),
        Err(GroveError::OperationNotFound {
            op: 99,
            count: 7,
            ..
        })
    ));
    assert!(matches!(
        s.undo(Some(7)),
        Err(GroveError::OperationNotFound { .. })
    ));
    assert!(matches!(
        s.at_time("yesterday"),
        Err(GroveError::InvalidArgument(_))
    ));
    // An import and a fork are one operation each.
    let fork = store.fork(&s, grove::ForkOptions::default()).unwrap();
    let fops = fork.operations().unwrap();
    assert_eq!(fops.len(), 1);
    assert_eq!(fops[0].kind, OpKind::Fork);
    assert_eq!(fops[0].actor.as_deref(), Some("tester"));
    // A session with no operation has nothing to undo.
    let empty = store.create_session(CreateSession::default()).unwrap();
    assert!(empty.operations().unwrap().is_empty());
    assert!(matches!(empty.undo(None), Err(GroveError::InvalidState(_))));
}

#[test]
fn a_copy_imported_with_the_source_stamps_keeps_its_operations_and_seal() {
    let store = Store::in_memory().unwrap().with_actor("writer");
    let s = store
        .create_session(CreateSession {
            id: Some("copied".into()),
            ..CreateSession::default()
        })
        .unwrap();
    let a = s.append(user("one")).unwrap();
    s.append_many(&[assistant("two"), user("three")]).unwrap();
    s.set_label(&a, Some("start")).unwrap();
    s.set_name("named").unwrap();
    s.move_to(Some(&a)).unwrap();
    s.append(user("again")).unwrap();
    s.undo(None).unwrap();
    let mut jsonl = Vec::new();
    s.export(grove::Flavor::Harness, &mut jsonl).unwrap();
    let stamps = s.stamps().unwrap();
    let ops = s.operations().unwrap();
    assert_eq!(
        stamps.iter().map(|(at, _)| *at).collect::<Vec<_>>(),
        ops.iter().map(|o| o.first_seq).collect::<Vec<_>>()
    );
    // Copied by another actor, later: the source's kinds, times and actors, and its seal.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let other = Store::in_memory().unwrap().with_actor("mover");
    let copy = |stamps| {
        let other = Store::in_memory().unwrap().with_actor("mover");
        let options = grove::ImportOptions {
            stamps,
            ..grove::ImportOptions::default()
        };
        other.import_reader(&jsonl[..], options).map(|_| other)
    };
    other
        .import_reader(
            &jsonl[..],
            grove::ImportOptions {
                stamps: Some(stamps.clone()),
                ..grove::ImportOptions::default()
            },
        )
        .unwrap();
    let again = other.session("copied").unwrap();
    assert_eq!(again.operations().unwrap(), ops);
    assert_eq!(again.stamps().unwrap(), stamps);
    assert_eq!(again.seal().unwrap(), s.seal().unwrap());
    assert!(again.verify().unwrap().is_ok());
    // Without them, the copy is one import by the mover, with another seal.
    let plain = copy(None).unwrap().session("copied").unwrap();
    let plain_ops = plain.operations().unwrap();
    assert_eq!(plain_ops.len(), 1);
    assert_eq!(
        (plain_ops[0].kind, plain_ops[0].actor.as_deref()),
        (OpKind::Import, Some("mover"))
    );
    assert_ne!(plain.seal().unwrap().digest, s.seal().unwrap().digest);
    // Stamps that name no record, or out of order, are refused and nothing is stored.
    let records = s.seal().unwrap().records;
    let bad = [
        vec![(records, stamps[0].1.clone())],
        vec![stamps[1].clone(), stamps[0].clone()],
        vec![stamps[0].clone(), stamps[0].clone()],
    ];
    for stamps in bad {
        let other = Store::in_memory().unwrap();
        let options = grove::ImportOptions {
            stamps: Some(stamps.clone()),
            ..grove::ImportOptions::default()
        };
        let err = other.import_reader(&jsonl[..], options).unwrap_err();
        assert!(
            matches!(err, GroveError::InvalidArgument(_)),
            "{stamps:?}: {err}"
        );
        assert!(other.sessions().unwrap().is_empty(), "{stamps:?}");
    }
}

#[test]
fn a_seal_is_extended_by_later_operations_and_broken_by_a_rewritten_history() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let store = Store::in_memory().unwrap();
    let s = store
        .create_session(CreateSession {
            id: Some("sealed".into()),
            ..CreateSession::default()
        })
        .unwrap();
    let a = s.append(user("one")).unwrap();
    s.append(assistant("two")).unwrap();
    let seal = s.seal().unwrap();
    assert_eq!((seal.records, seal.operations), (2, 2));
    assert_eq!(
        s.check_seal(&seal.digest).unwrap(),
        SealCheck::Extends {
            operations: 2,
            records: 2
        }
    );
    s.append(user("three")).unwrap();
    s.move_to(Some(&a)).unwrap();
    assert_ne!(s.seal().unwrap().digest, seal.digest);
    assert_eq!(
        s.check_seal(&seal.digest.to_uppercase()).unwrap(),
        SealCheck::Extends {
            operations: 2,
            records: 2
        }
    );
    assert!(matches!(
        s.check_seal("abc"),
        Err(GroveError::InvalidArgument(_))
    ));
    // The same history exported, edited and imported again under the same id: every chain
    // verifies on its own, the seal does not.
    let mut out = Vec::new();
    s.export(grove::Flavor::Harness, &mut out).unwrap();
    let text = String::from_utf8(out)
        .unwrap()
        .replace("\"one\"", "\"0ne\"");
    std::fs::write(&file, &text).unwrap();
    let other = Store::in_memory().unwrap();
    other
        .import_file(&file, grove::ImportOptions::default())
        .unwrap();
    let again = other.session("sealed").unwrap();
    assert!(again.verify().unwrap().problems.is_empty());
    assert_eq!(again.check_seal(&seal.digest).unwrap(), SealCheck::Diverged);
    // A session sealed elsewhere does not extend this one's seal either.
    let empty_seal = store
        .create_session(CreateSession::default())
        .unwrap()
        .seal()
        .unwrap();
    assert_eq!(empty_seal.records, 0);
    assert_eq!(
        s.check_seal(&empty_seal.digest).unwrap(),
        SealCheck::Diverged
    );
}

#[test]
fn a_layout_9_session_reads_as_one_legacy_operation_then_stamped_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (id, first) = {
        let store = Store::open(dir.path()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        let first = s.append(user("old one")).unwrap();
        s.append(assistant("old two")).unwrap();
        s.move_to(Some(&first)).unwrap();
        store.flush().unwrap();
        let sid = super::sid_of(&store, s.id());
        assert_eq!(grove_tests::rows::as_layout_9(&store, sid).unwrap(), 3);
        (s.id().to_owned(), first)
    };
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store
            .kv()
            .get(&grove::keys::meta(grove::keys::META_FORMAT))
            .unwrap(),
        Some(b"grove\x00\x0f".to_vec()),
        "opening for writing rewrites the marker"
    );
    let s = store.session(&id).unwrap().with_actor("cli");
    let ops = s.operations().unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0].kind, OpKind::Legacy);
    assert_eq!(ops[0].actor, None);
    assert_eq!((ops[0].first_seq, ops[0].end_seq), (0, 3));
    assert_eq!(ops[0].leaf_after.as_deref(), Some(first.as_str()));
    assert!(ops[0].time_ms.is_some(), "the first record's timestamp");
    let sealed = s.seal().unwrap();
    s.append(user("new")).unwrap();
    let ops = s.operations().unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[1].kind, OpKind::Append);
    assert_eq!(ops[1].actor.as_deref(), Some("cli"));
    assert_eq!(
        s.check_seal(&sealed.digest).unwrap(),
        SealCheck::Extends {
            operations: 1,
            records: 3
        }
    );
    // Undo of the legacy operation puts the leaf at the root position.
    s.undo(Some(0)).unwrap();
    assert_eq!(s.leaf().unwrap(), None);
    assert!(store.verify().unwrap().is_ok());
}
