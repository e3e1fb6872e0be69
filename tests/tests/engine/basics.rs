//! Appends, leaf moves, paths and contexts on a fresh session.

use grove::{CreateSession, GroveError, NewEntry, Store};

use super::{assistant, seed, texts, user};

fn ids(entries: Vec<grove::Entry>) -> Vec<String> {
    entries.into_iter().map(|e| e.id().to_owned()).collect()
}

#[test]
fn seed_scenario_branches_and_keeps_everything() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let [u1, a1, pa, aa, pb, ab] = <[String; 6]>::try_from(seed(&s)).unwrap();
    assert_eq!(s.leaf().unwrap().as_deref(), Some(ab.as_str()));
    assert_eq!(
        texts(&s),
        ["user 1", "assistant 1", "plan B", "assistant B"]
    );
    assert_eq!(
        ids(s.path_to_root(None).unwrap()),
        [u1.clone(), a1.clone(), pb.clone(), ab.clone()]
    );
    assert_eq!(
        ids(s.branch(Some(&aa)).unwrap()),
        [u1.clone(), a1.clone(), pa.clone(), aa.clone()]
    );
    // Nothing was deleted: both branches hang under assistant 1.
    assert_eq!(
        ids(s.children(Some(&a1)).unwrap()),
        [pa.clone(), pb.clone()]
    );
    assert_eq!(s.entries().count(), 6);
    assert_eq!(s.log().count(), 7, "the move is a leaf record in the log");
    let history = s.leaf_history().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].1.as_deref(), Some(a1.as_str()));
    // Going back to plan A shows its context again.
    s.move_to(Some(&aa)).unwrap();
    assert_eq!(
        texts(&s),
        ["user 1", "assistant 1", "plan A", "assistant A"]
    );
}

#[test]
fn new_ids_are_8_lowercase_hex_and_unique() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let mut seen = std::collections::HashSet::new();
    for i in 0..500 {
        let id = s.append(user(&format!("m{i}"))).unwrap();
        assert_eq!(id.len(), 8);
        assert!(id
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert!(seen.insert(id));
    }
}

#[test]
fn caller_ids_are_used_and_duplicates_refused() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let opts = |id: &str| grove::AppendOptions {
        id: Some(id.to_owned()),
        ..Default::default()
    };
    assert_eq!(
        s.append_with(user("x"), opts("entry-1")).unwrap(),
        "entry-1"
    );
    let err = s.append_with(user("y"), opts("entry-1")).unwrap_err();
    assert!(matches!(err, GroveError::DuplicateId(ref id) if id == "entry-1"));
    assert_eq!(s.entries().count(), 1, "the refused append wrote nothing");
}

#[test]
fn move_to_null_starts_a_new_root_and_unknown_targets_fail() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let first = s.append(user("one")).unwrap();
    s.move_to(None).unwrap();
    assert_eq!(s.leaf().unwrap(), None);
    assert!(s.build_context().unwrap().messages.is_empty());
    let second = s.append(user("two")).unwrap();
    assert_eq!(s.entry(&second).unwrap().parent_id(), None);
    let roots = ids(s.children(None).unwrap());
    assert_eq!(roots, [first, second]);
    let err = s.move_to(Some("nope")).unwrap_err();
    assert!(matches!(err, GroveError::EntryNotFound(ref id) if id == "nope"));
    assert_eq!(err.code(), "not_found");
}

#[test]
fn leaf_records_are_not_entries() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let a = s.append(user("a")).unwrap();
    s.move_to(Some(&a)).unwrap();
    let leaf_record = s.log().last().unwrap().unwrap();
    assert!(leaf_record.is_leaf_record());
    let id = leaf_record.id().to_owned();
    assert!(matches!(s.entry(&id), Err(GroveError::EntryNotFound(_))));
    assert!(matches!(
        s.move_to(Some(&id)),
        Err(GroveError::EntryNotFound(_))
    ));
    assert!(matches!(
        s.branch(Some(&id)),
        Err(GroveError::EntryNotFound(_))
    ));
}

#[test]
fn settings_come_from_the_full_path_and_survive_compaction() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    s.append(NewEntry::ModelChange {
        provider: "anthropic".into(),
        model_id: "claude".into(),
    })
    .unwrap();
    s.append(NewEntry::ThinkingLevelChange {
        thinking_level: "high".into(),
    })
    .unwrap();
    s.append(NewEntry::ActiveToolsChange {
        active_tool_names: vec!["read".into(), "bash".into()],
    })
    .unwrap();
    let u = s.append(user("question")).unwrap();
    s.append(NewEntry::Compaction {
        summary: "earlier work".into(),
        first_kept_entry_id: u.clone(),
        tokens_before: 100,
        retained_tail: None,
        details: None,
        usage: None,
        from_hook: None,
    })
    .unwrap();
    s.append(user("after")).unwrap();
    let full = s.build_context().unwrap();
    assert_eq!(full.thinking_level, "\"high\"");
    assert_eq!(
        full.active_tool_names.as_deref(),
        Some(r#"["read","bash"]"#)
    );
    let model = full.model.unwrap();
    assert_eq!(model.provider.as_deref(), Some("\"anthropic\""));
    assert_eq!(model.model_id.as_deref(), Some("\"claude\""));
    let roles: Vec<String> = full
        .messages
        .iter()
        .map(|m| {
            serde_json::from_str::<serde_json::Value>(m).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(roles, ["compactionSummary", "user", "user"]);
    // The harness preset loses settings written before the kept range (spec §5.5).
    let harness = s
        .build_context_with(None, grove::ContextOptions::pi_harness())
        .unwrap();
    assert_eq!(harness.thinking_level, "\"off\"");
    assert_eq!(harness.model, None);
    assert_eq!(harness.active_tool_names, None);
    // An assistant reply after a model_change overrides it.
    s.append(assistant("reply")).unwrap();
    let m = s.build_context().unwrap().model.unwrap();
    assert_eq!(m.provider.as_deref(), Some("\"p\""));
}

#[test]
fn labels_trim_and_clear_and_names_normalize() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let a = s.append(user("a")).unwrap();
    s.set_label(&a, Some("  checkpoint  ")).unwrap();
    assert_eq!(s.label(&a).unwrap().unwrap().label, "checkpoint");
    s.set_label(&a, Some("   ")).unwrap();
    assert_eq!(s.label(&a).unwrap(), None, "a blank label clears");
    assert!(matches!(
        s.set_label("zzz", Some("x")),
        Err(GroveError::EntryNotFound(_))
    ));
    s.set_name(" my\r\n\nsession ").unwrap();
    assert_eq!(s.name().unwrap().as_deref(), Some("my session"));
    s.set_name("  ").unwrap();
    assert_eq!(s.name().unwrap(), None);
    // Labels and names are tree nodes and move the leaf; the context is unchanged.
    assert_eq!(texts(&s), ["a"]);
}

#[test]
fn sessions_are_listed_found_by_prefix_and_deleted() {
    let store = Store::in_memory().unwrap();
    let make = |id: &str| {
        store
            .create_session(CreateSession {
                id: Some(id.to_owned()),
                cwd: "/w".into(),
                ..Default::default()
            })
            .unwrap()
    };
    let s1 = make("alpha-1");
    make("alpha-2");
    make("beta");
    s1.append(user("x")).unwrap();
    let list = store.sessions().unwrap();
    let names: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(names, ["alpha-1", "alpha-2", "beta"]);
    assert_eq!(list[0].entries, 1);
    assert_eq!(store.find_session("b").unwrap().id(), "beta");
    assert!(matches!(
        store.find_session("alpha"),
        Err(GroveError::AmbiguousPrefix { .. })
    ));
    assert!(matches!(
        store.find_session("gamma"),
        Err(GroveError::SessionNotFound(_))
    ));
    assert!(matches!(
        store.create_session(CreateSession {
            id: Some("beta".into()),
            ..Default::default()
        }),
        Err(GroveError::SessionExists(_))
    ));
    assert!(matches!(
        store.create_session(CreateSession {
            id: Some("-bad".into()),
            ..Default::default()
        }),
        Err(GroveError::InvalidArgument(_))
    ));
    store.delete_session("alpha-1").unwrap();
    assert_eq!(store.sessions().unwrap().len(), 2);
    assert!(matches!(
        store.session("alpha-1"),
        Err(GroveError::SessionNotFound(_))
    ));
    // A new session with the same id starts empty.
    let again = make("alpha-1");
    assert_eq!(again.entries().count(), 0);
}

#[test]
fn entry_prefixes_resolve_uniquely() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let opts = |id: &str| grove::AppendOptions {
        id: Some(id.to_owned()),
        ..Default::default()
    };
    s.append_with(user("1"), opts("abc111")).unwrap();
    s.append_with(user("2"), opts("abc222")).unwrap();
    assert_eq!(s.resolve_entry("abc1").unwrap().as_deref(), Some("abc111"));
    assert_eq!(s.resolve_entry("@").unwrap().as_deref(), Some("abc222"));
    assert_eq!(s.resolve_entry("@-").unwrap().as_deref(), Some("abc111"));
    assert_eq!(s.resolve_entry("root").unwrap(), None);
    assert!(matches!(
        s.resolve_entry("abc"),
        Err(GroveError::AmbiguousPrefix { .. })
    ));
    assert!(matches!(
        s.resolve_entry("x"),
        Err(GroveError::EntryNotFound(_))
    ));
}

#[test]
fn children_include_the_implicit_run_child_but_never_leaf_records() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let a = s.append(user("a")).unwrap();
    // A leaf record right after `a` whose previous leaf is `a` must not count as a child.
    s.move_to(Some(&a)).unwrap();
    assert!(s.children(Some(&a)).unwrap().is_empty());
    let b = s.append(user("b")).unwrap();
    let c = s.append(user("c")).unwrap();
    assert_eq!(ids(s.children(Some(&a)).unwrap()), std::slice::from_ref(&b));
    assert_eq!(
        ids(s.children(Some(&b)).unwrap()),
        std::slice::from_ref(&c),
        "implicit: c continues b's run"
    );
    s.move_to(Some(&b)).unwrap();
    let d = s.append(user("d")).unwrap();
    assert_eq!(ids(s.children(Some(&b)).unwrap()), [c, d]);
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn listing_while_sessions_are_deleted_never_fails() {
    let store = Store::in_memory().unwrap();
    let ids: Vec<String> = (0..120)
        .map(|i| {
            let s = store.create_session(CreateSession::default()).unwrap();
            for k in 0..(i % 7) * 40 {
                s.append(user(&format!("{i}.{k}"))).unwrap();
            }
            s.id().to_owned()
        })
        .collect();
    let listed_once = std::sync::Barrier::new(2);
    std::thread::scope(|scope| {
        let lister = scope.spawn(|| {
            let mut listings = 0;
            loop {
                let listed = store.sessions().unwrap();
                listings += 1;
                if listings == 1 {
                    listed_once.wait();
                }
                if listed.is_empty() {
                    return listings;
                }
            }
        });
        // Deletions start once a listing has run, and go on while the next ones run.
        listed_once.wait();
        for id in &ids {
            store.delete_session(id).unwrap();
        }
        assert!(lister.join().unwrap() > 1);
    });
}
