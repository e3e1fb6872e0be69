//! Views are a pure fold over the path: after every operation of a random sequence, the
//! context served through the view cache (and, across restarts, through the persisted view)
//! equals a from-scratch build, for every preset.

use grove::{ContextOptions, CreateSession, NewEntry, Store, StoreConfig};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    User,
    Assistant,
    Settings(u8),
    /// Compaction keeping from the n-th ancestor of the leaf, with or without a tail.
    Compact(u8, bool),
    /// Move to the i-th entry (modulo the entry count), or to the root position.
    Move(Option<u16>),
    Label(u16),
    BranchSummary,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::User),
        6 => Just(Op::Assistant),
        1 => (0u8..3).prop_map(Op::Settings),
        2 => (0u8..6, any::<bool>()).prop_map(|(n, t)| Op::Compact(n, t)),
        3 => proptest::option::weighted(0.9, any::<u16>()).prop_map(Op::Move),
        1 => any::<u16>().prop_map(Op::Label),
        1 => Just(Op::BranchSummary),
        1 => Just(Op::Restart),
    ]
}

fn message(role: &str, n: usize) -> NewEntry {
    let extra = if role == "assistant" {
        r#","provider":"p","model":"m""#
    } else {
        ""
    };
    NewEntry::Message {
        message: format!(
            r#"{{"role":"{role}","content":[{{"type":"text","text":"m{n}"}}],"timestamp":{n}{extra}}}"#
        ),
    }
}

fn check(session: &grove::Session, step: usize) -> Result<(), TestCaseError> {
    for options in [
        ContextOptions::grove(),
        ContextOptions::pi_harness(),
        ContextOptions::pi_cli(),
    ] {
        let served = session.build_context_with(None, options);
        let reference = session.build_context_from_scratch(None, options);
        match (served, reference) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "step {} options {:?}", step, options),
            (Err(a), Err(b)) => prop_assert_eq!(a.code(), b.code()),
            (a, b) => prop_assert!(false, "step {step}: {a:?} vs {b:?}"),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn views_equal_a_from_scratch_build_after_every_operation(ops in proptest::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let open = || Store::open_with(StoreConfig::new(dir.path()).durability(grove::Durability::None)).unwrap();
        let mut store = open();
        let id = store.create_session(CreateSession::default()).unwrap().id().to_owned();
        let mut session = store.session(&id).unwrap();
        for (step, op) in ops.into_iter().enumerate() {
            let ids: Vec<String> = session.entries().map(|e| e.unwrap().id().to_owned()).collect();
            match op {
                Op::User => { session.append(message("user", step)).unwrap(); }
                Op::Assistant => { session.append(message("assistant", step)).unwrap(); }
                Op::Settings(k) => {
                    let e = match k {
                        0 => NewEntry::ModelChange { provider: "x".into(), model_id: format!("m{step}") },
                        1 => NewEntry::ThinkingLevelChange { thinking_level: "high".into() },
                        _ => NewEntry::ActiveToolsChange { active_tool_names: vec![format!("t{step}")] },
                    };
                    session.append(e).unwrap();
                }
                Op::Compact(back, tail) => {
                    let path = session.path_to_root(None).unwrap();
                    if let Some(keep) = path.iter().rev().nth(back as usize) {
                        session.append(NewEntry::Compaction {
                            summary: format!("summary {step}"),
                            first_kept_entry_id: keep.id().to_owned(),
                            tokens_before: 10,
                            retained_tail: tail.then(|| r#"[{"role":"user","content":"kept","timestamp":1}]"#.to_owned()),
                            details: None,
                            usage: None,
                            from_hook: None,
                        }).unwrap();
                    }
                }
                Op::Move(target) => {
                    let t = target.and_then(|i| (!ids.is_empty()).then(|| ids[i as usize % ids.len()].clone()));
                    session.move_to(t.as_deref()).unwrap();
                }
                Op::Label(i) => {
                    if !ids.is_empty() {
                        session.set_label(&ids[i as usize % ids.len()], Some("l")).unwrap();
                    }
                }
                Op::BranchSummary => {
                    session.append(NewEntry::BranchSummary {
                        from_id: "root".into(), summary: format!("b{step}"), details: None, usage: None, from_hook: Some(false),
                    }).unwrap();
                }
                Op::Restart => {
                    drop(session);
                    drop(store);
                    store = open();
                    session = store.session(&id).unwrap();
                }
            }
            check(&session, step)?;
        }
    }
}

/// Regression (found by the property test above): a persisted view at a compaction, moved to
/// a leaf below it through the common-ancestor path, lost the compaction's kept range.
#[test]
fn moving_below_the_checkpoint_keeps_the_kept_range() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let u0 = s.append(message("user", 0)).unwrap();
    s.append(NewEntry::Compaction {
        summary: "s".into(),
        first_kept_entry_id: u0.clone(),
        tokens_before: 1,
        retained_tail: None,
        details: None,
        usage: None,
        from_hook: None,
    })
    .unwrap();
    // Alternate presets so the grove view is reloaded from its persisted form each time.
    let _ = s.build_context().unwrap();
    let _ = s
        .build_context_with(None, ContextOptions::pi_cli())
        .unwrap();
    s.set_label(&u0, Some("l")).unwrap();
    s.append(message("user", 3)).unwrap();
    let _ = s
        .build_context_with(None, ContextOptions::pi_cli())
        .unwrap();
    let ctx = s.build_context().unwrap();
    assert_eq!(
        ctx,
        s.build_context_from_scratch(None, ContextOptions::grove())
            .unwrap()
    );
    assert_eq!(
        ctx.messages.len(),
        3,
        "summary, the kept message, the new message"
    );
}
