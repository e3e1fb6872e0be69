//! Retention (`Store::retention_plan`, `Store::retain`): which sessions a policy removes and
//! which it spares (pinned, labelled), the archives written before a session goes (pi JSONL
//! that imports back, audit files that verify), and the store's operation log that records
//! each run.

use grove::{
    ArchiveFormat, CreateSession, Flavor, GroveError, ImportOptions, RetentionPolicy,
    RetentionRule, Store,
};

use super::user;

/// A pi session file of `n` user messages, all at `time` (an ISO date), each `text` long.
fn session_file(id: &str, time: &str, n: usize, text: &str) -> String {
    let mut out =
        format!(r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{time}","cwd":"/w"}}"#);
    out.push('\n');
    let mut parent = "null".to_owned();
    for i in 0..n {
        let eid = format!("{:08x}", i + 1);
        out.push_str(&format!(
            r#"{{"type":"message","id":"{eid}","parentId":{parent},"timestamp":"{time}","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
        ));
        out.push('\n');
        parent = format!("\"{eid}\"");
    }
    out
}

fn import(store: &Store, dir: &std::path::Path, id: &str, time: &str, n: usize, text: &str) {
    let path = dir.join(format!("{id}.in.jsonl"));
    std::fs::write(&path, session_file(id, time, n, text)).unwrap();
    store.import_file(&path, ImportOptions::default()).unwrap();
}

fn rule() -> RetentionRule {
    RetentionRule {
        prefix: None,
        older_than_ms: None,
        larger_than_bytes: None,
        keep_newest: None,
        spare_labelled: true,
    }
}

const DAY: u64 = 86_400_000;

#[test]
fn a_policy_plans_archives_and_removes_what_it_selects_sparing_pins_and_labels() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store"))
        .unwrap()
        .with_actor("janitor");
    let old = "2020-01-02T03:04:05.000Z";
    import(&store, scratch.path(), "old-a", old, 3, "hello");
    // Labelled in the file (a label now would be activity now).
    let labelled = session_file("old-b", old, 3, "labelled")
        + &format!(
            r#"{{"type":"label","id":"0000000a","parentId":"00000003","timestamp":"{old}","targetId":"00000001","label":"keep me"}}"#
        )
        + "\n";
    std::fs::write(scratch.path().join("old-b.in.jsonl"), labelled).unwrap();
    store
        .import_file(
            &scratch.path().join("old-b.in.jsonl"),
            ImportOptions::default(),
        )
        .unwrap();
    import(&store, scratch.path(), "old-c", old, 3, "pinned");
    import(&store, scratch.path(), "big-e", old, 40, &"x".repeat(500));
    import(
        &store,
        scratch.path(),
        "bench-1",
        "2021-01-01T00:00:00.000Z",
        1,
        "one",
    );
    import(
        &store,
        scratch.path(),
        "bench-2",
        "2022-01-01T00:00:00.000Z",
        1,
        "two",
    );
    import(
        &store,
        scratch.path(),
        "bench-3",
        "2023-01-01T00:00:00.000Z",
        1,
        "three",
    );
    let fresh = store
        .create_session(CreateSession {
            id: Some("new-d".into()),
            ..CreateSession::default()
        })
        .unwrap();
    fresh.append(user("just now")).unwrap();
    store.set_pinned("old-c", true).unwrap();
    assert!(store.is_pinned("old-c").unwrap());

    let policy = RetentionPolicy {
        rules: vec![
            // Old sessions, but not the benchmark ones (their own rule keeps the newest).
            RetentionRule {
                prefix: Some("old-".into()),
                older_than_ms: Some(365 * DAY),
                ..rule()
            },
            RetentionRule {
                prefix: Some("big-".into()),
                larger_than_bytes: Some(10_000),
                ..rule()
            },
            RetentionRule {
                prefix: Some("bench-".into()),
                keep_newest: Some(1),
                ..rule()
            },
        ],
        archive: Some((scratch.path().join("archive"), ArchiveFormat::Jsonl)),
    };
    let plan = store.retention_plan(&policy).unwrap();
    let mut gone: Vec<&str> = plan.remove.iter().map(|i| i.session.as_str()).collect();
    gone.sort_unstable();
    assert_eq!(gone, ["bench-1", "bench-2", "big-e", "old-a"]);
    let spared: Vec<(&str, Option<&str>)> = plan
        .spared
        .iter()
        .map(|i| (i.session.as_str(), i.spared.as_deref()))
        .collect();
    assert_eq!(
        spared,
        [("old-b", Some("labelled")), ("old-c", Some("pinned"))]
    );
    // Sizes are the sessions' exports.
    for item in &plan.remove {
        let mut out = Vec::new();
        store
            .session(&item.session)
            .unwrap()
            .export(Flavor::Harness, &mut out)
            .unwrap();
        assert_eq!(item.bytes, out.len() as u64, "{}", item.session);
        assert!(!item.reasons.is_empty());
    }
    let big = plan.remove.iter().find(|i| i.session == "big-e").unwrap();
    assert!(big.reasons[0].starts_with("rule 1:"), "{:?}", big.reasons);
    assert_eq!(store.sessions().unwrap().len(), 8, "a plan changes nothing");
    // The exports, kept to compare with the archives.
    let exports: Vec<(String, Vec<u8>)> = gone
        .iter()
        .map(|id| {
            let mut out = Vec::new();
            store
                .session(id)
                .unwrap()
                .export(Flavor::Harness, &mut out)
                .unwrap();
            ((*id).to_owned(), out)
        })
        .collect();

    let run = store.retain(&policy).unwrap();
    assert_eq!(run.removed.len(), 4);
    assert!(run.failed.is_empty());
    let left: Vec<String> = store
        .sessions()
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, ["bench-3", "new-d", "old-b", "old-c"]);
    for (id, bytes) in &exports {
        let archived =
            std::fs::read(scratch.path().join("archive").join(format!("{id}.jsonl"))).unwrap();
        assert_eq!(&archived, bytes, "{id}: the archive is its export");
    }
    // Recorded, never silent.
    let ops = store.store_operations().unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0].kind, "retain");
    assert_eq!(ops[0].status, "done");
    assert_eq!(ops[0].actor, "janitor");
    let detail: serde_json::Value = serde_json::from_str(&ops[0].detail).unwrap();
    assert_eq!(detail["removed"].as_array().unwrap().len(), 4);
    assert_eq!(detail["plan"]["spared"].as_array().unwrap().len(), 2);
    assert_eq!(detail["archive"]["format"], "jsonl");
    // Nothing more to do; an archive imports back.
    assert!(store.retention_plan(&policy).unwrap().remove.is_empty());
    let back = store
        .import_file(
            &scratch.path().join("archive").join("old-a.jsonl"),
            ImportOptions::default(),
        )
        .unwrap();
    assert_eq!(back.session, "old-a");
    // Audit archives verify without the store.
    let audit_policy = RetentionPolicy {
        rules: vec![RetentionRule {
            prefix: Some("old-a".into()),
            keep_newest: Some(0),
            ..rule()
        }],
        archive: Some((scratch.path().join("audit"), ArchiveFormat::Audit)),
    };
    let run = store.retain(&audit_policy).unwrap();
    assert_eq!(run.op, 1);
    let audit = std::fs::read(scratch.path().join("audit").join("old-a.audit.jsonl")).unwrap();
    assert_eq!(grove::verify_audit(&audit, None).unwrap().session, "old-a");
    // Unpinned, a pinned session goes like any other; a labelled one with a rule that does
    // not spare labels.
    store.set_pinned("old-c", false).unwrap();
    let policy = RetentionPolicy {
        rules: vec![RetentionRule {
            prefix: Some("old-".into()),
            older_than_ms: Some(DAY),
            spare_labelled: false,
            ..rule()
        }],
        archive: None,
    };
    let plan = store.retention_plan(&policy).unwrap();
    assert_eq!(plan.remove.len(), 2);
    assert!(plan.spared.is_empty());
}

#[test]
fn a_rule_without_a_condition_and_an_unknown_pin_are_refused() {
    let store = Store::temporary().unwrap();
    let policy = RetentionPolicy {
        rules: vec![rule()],
        archive: None,
    };
    assert!(matches!(
        store.retention_plan(&policy).unwrap_err(),
        GroveError::InvalidArgument(_)
    ));
    assert!(matches!(
        store.set_pinned("nobody", true).unwrap_err(),
        GroveError::SessionNotFound(_)
    ));
    assert!(store.store_operations().unwrap().is_empty());
}
