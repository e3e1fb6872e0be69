//! Forks in the three modes (spec §9).

use grove::{CreateSession, ForkMode, ForkOptions, ForkPosition, GroveError, Store};

use super::{seed, texts};

fn ids_of(s: &grove::Session) -> Vec<String> {
    s.log().map(|e| e.unwrap().id().to_owned()).collect()
}

#[test]
fn path_fork_before_a_user_message_copies_its_branch_verbatim() {
    let store = Store::in_memory().unwrap();
    let src = store
        .create_session(CreateSession {
            cwd: "/src".into(),
            ..Default::default()
        })
        .unwrap();
    let ids = seed(&src);
    let fork = store
        .fork(
            &src,
            ForkOptions {
                entry: Some(ids[4].clone()),
                position: ForkPosition::Before,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(ids_of(&fork), [ids[0].clone(), ids[1].clone()]);
    assert_eq!(fork.leaf().unwrap().as_deref(), Some(ids[1].as_str()));
    for (a, b) in fork.log().zip(src.path_to_root(Some(&ids[1])).unwrap()) {
        assert_eq!(a.unwrap().line, b.line, "bytes are copied verbatim");
    }
    assert_eq!(fork.record().parent_session_id.as_deref(), Some(src.id()));
    assert_eq!(fork.record().cwd, "/src");
    let listed = store.sessions().unwrap();
    let row = listed.iter().find(|s| s.id == fork.id()).unwrap();
    assert_eq!(
        row.parent_session_id.as_deref(),
        Some(src.id()),
        "ls shows lineage"
    );
    // `At` keeps the entry; `Before` on a non-user entry is refused.
    let at = store
        .fork(
            &src,
            ForkOptions {
                entry: Some(ids[3].clone()),
                position: ForkPosition::At,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        texts(&at),
        ["user 1", "assistant 1", "plan A", "assistant A"]
    );
    let err = store
        .fork(
            &src,
            ForkOptions {
                entry: Some(ids[3].clone()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, GroveError::InvalidForkTarget(ref m) if m.contains("not a user message")),
        "{err:?}"
    );
    let err = store
        .fork(
            &src,
            ForkOptions {
                entry: Some("zz".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, GroveError::InvalidForkTarget(ref m) if m.contains("not found")),
        "{err:?}"
    );
    // Before the first message: an empty session.
    let empty = store
        .fork(
            &src,
            ForkOptions {
                entry: Some(ids[0].clone()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(empty.log().count(), 0);
    assert_eq!(empty.leaf().unwrap(), None);
}

#[test]
fn rechained_fork_removes_labels_rechains_and_re_emits_them() {
    let store = Store::in_memory().unwrap();
    let src = store.create_session(CreateSession::default()).unwrap();
    let ids = seed(&src);
    src.set_label(&ids[1], Some("base")).unwrap();
    src.set_label(&ids[4], Some("B")).unwrap();
    let leaf = src.append(super::user("more")).unwrap();
    let fork = store
        .fork(
            &src,
            ForkOptions {
                entry: Some(leaf.clone()),
                position: ForkPosition::At,
                mode: ForkMode::Rechained,
                ..Default::default()
            },
        )
        .unwrap();
    let entries: Vec<grove::Entry> = fork.log().map(|e| e.unwrap()).collect();
    let kinds: Vec<bool> = entries
        .iter()
        .map(|e| e.kind() == grove::codec::EntryKind::Label)
        .collect();
    assert_eq!(
        kinds,
        [false, false, false, false, false, true, true],
        "path without labels, then the labels"
    );
    // Re-chained: each entry's parent is the previous one.
    for w in entries.windows(2) {
        assert_eq!(w[1].parent_id().as_deref(), Some(w[0].id()));
    }
    assert_eq!(fork.label(&ids[1]).unwrap().unwrap().label, "base");
    assert_eq!(fork.label(&ids[4]).unwrap().unwrap().label, "B");
    assert_eq!(texts(&fork), texts(&src));
    assert_eq!(fork.leaf().unwrap().as_deref(), Some(entries[6].id()));
}

#[test]
fn copy_fork_takes_every_record_and_the_leaf() {
    let store = Store::in_memory().unwrap();
    let src = store.create_session(CreateSession::default()).unwrap();
    let ids = seed(&src);
    src.move_to(Some(&ids[3])).unwrap();
    let fork = store
        .fork(
            &src,
            ForkOptions {
                mode: ForkMode::Copy,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(ids_of(&fork), ids_of(&src));
    assert_eq!(fork.leaf().unwrap(), src.leaf().unwrap());
    let dup = store
        .fork(
            &src,
            ForkOptions {
                mode: ForkMode::Copy,
                id: Some(fork.id().to_owned()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(dup, GroveError::SessionExists(_)));
}
