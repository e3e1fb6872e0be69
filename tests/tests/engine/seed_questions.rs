//! The seed chapter's self-test questions, answered as executable tests on the plan A /
//! plan B scenario.

use grove::{
    CreateSession, ForkOptions, ForkPosition, GroveError, NavigateOptions, NavigateOutcome,
    Navigator, Store,
};

use super::{seed, texts};

fn scenario() -> (Store, grove::Session, Vec<String>) {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let ids = seed(&s);
    (store, s, ids)
}

/// parentId is structure (fixed forever, per entry); the leaf is position (one per session,
/// it moves). Moving the leaf changes no parentId.
#[test]
fn parent_id_is_structure_and_the_leaf_is_position() {
    let (_store, s, ids) = scenario();
    let parents: Vec<Option<String>> = ids
        .iter()
        .map(|id| s.entry(id).unwrap().parent_id())
        .collect();
    s.move_to(Some(&ids[0])).unwrap();
    s.move_to(None).unwrap();
    let after: Vec<Option<String>> = ids
        .iter()
        .map(|id| s.entry(id).unwrap().parent_id())
        .collect();
    assert_eq!(parents, after);
    assert_eq!(s.leaf().unwrap(), None);
    // plan A and plan B share a parent; only the leaf says which one continues.
    assert_eq!(parents[2], parents[4]);
}

/// The entries are every branch ever explored; the context is one path through them.
#[test]
fn entries_are_not_the_context() {
    let (_store, s, _ids) = scenario();
    assert_eq!(s.entries().count(), 6);
    assert_eq!(
        texts(&s),
        ["user 1", "assistant 1", "plan B", "assistant B"]
    );
}

/// Editing an old user message puts the leaf on that message's parent, and the old text
/// comes back for editing; the next message becomes a sibling.
#[test]
fn editing_an_old_user_message_puts_the_leaf_on_its_parent() {
    let (_store, s, ids) = scenario();
    let out = s
        .navigate(&ids[2], &NavigateOptions::default(), &Navigator::default())
        .unwrap();
    assert!(
        matches!(out, NavigateOutcome::Moved { ref new_leaf, ref editor_text, .. }
        if new_leaf.as_deref() == Some(ids[1].as_str()) && editor_text.as_deref() == Some("plan A"))
    );
    let edited = s.append(super::user("plan A, edited")).unwrap();
    assert_eq!(
        s.entry(&edited).unwrap().parent_id().as_deref(),
        Some(ids[1].as_str())
    );
    assert_eq!(s.children(Some(&ids[1])).unwrap().len(), 3);
}

/// move_to writes a leaf record and deletes nothing.
#[test]
fn move_to_deletes_nothing() {
    let (_store, s, ids) = scenario();
    let before: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
    s.move_to(Some(&ids[0])).unwrap();
    let after: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(&after[..before.len()], &before[..], "the log only grew");
}

/// A branch (a move) stores one leaf record in the same session; a fork stores a new session
/// with a copy of the path and a pointer to its parent session.
#[test]
fn branch_and_fork_store_different_things() {
    let (store, s, ids) = scenario();
    let sessions = store.sessions().unwrap().len();
    let log = s.log().count();
    s.move_to(Some(&ids[3])).unwrap();
    assert_eq!(s.log().count(), log + 1);
    assert!(s.log().last().unwrap().unwrap().is_leaf_record());
    assert_eq!(store.sessions().unwrap().len(), sessions);
    let fork = store
        .fork(
            &s,
            ForkOptions {
                entry: Some(ids[3].clone()),
                position: ForkPosition::At,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(store.sessions().unwrap().len(), sessions + 1);
    assert_eq!(fork.record().parent_session_id.as_deref(), Some(s.id()));
    assert_eq!(fork.entries().count(), 4);
    assert_eq!(s.log().count(), log + 1, "the source is untouched");
}

/// `before` requires a user message: the new session ends just before it.
#[test]
fn before_requires_a_user_message() {
    let (store, s, ids) = scenario();
    let err = store
        .fork(
            &s,
            ForkOptions {
                entry: Some(ids[1].clone()),
                position: ForkPosition::Before,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(err, GroveError::InvalidForkTarget(_)));
    let ok = store
        .fork(
            &s,
            ForkOptions {
                entry: Some(ids[2].clone()),
                position: ForkPosition::Before,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(ok.leaf().unwrap().as_deref(), Some(ids[1].as_str()));
}

/// The summary covers the side being left: from the old leaf up to, not including, the
/// deepest common ancestor.
#[test]
fn the_abandoned_side_of_the_common_ancestor_is_summarized() {
    let (_store, s, ids) = scenario();
    let (entries, common) = s
        .collect_entries_for_branch_summary(Some(&ids[5]), &ids[3], Default::default())
        .unwrap();
    assert_eq!(common.as_deref(), Some(ids[1].as_str()));
    let covered: Vec<&str> = entries.iter().map(|e| e.id()).collect();
    assert_eq!(
        covered,
        [ids[4].as_str(), ids[5].as_str()],
        "plan B side, oldest first"
    );
    // Moving forward (old leaf is an ancestor of the target) summarizes nothing.
    let (none, _) = s
        .collect_entries_for_branch_summary(Some(&ids[1]), &ids[5], Default::default())
        .unwrap();
    assert!(none.is_empty());
}

/// After a summarized navigation, the summary and the original branch both remain.
#[test]
fn summary_and_original_history_both_remain() {
    let (_store, s, ids) = scenario();
    let hook = FixedHook;
    let nav = Navigator {
        hooks: vec![&hook],
        ..Default::default()
    };
    let out = s
        .navigate(
            &ids[3],
            &NavigateOptions {
                summarize: true,
                ..Default::default()
            },
            &nav,
        )
        .unwrap();
    let NavigateOutcome::Moved {
        summary_entry: Some(summary),
        ..
    } = out
    else {
        panic!("{out:?}")
    };
    assert!(s.entry(&summary).is_ok());
    for id in &ids {
        assert!(s.entry(id).is_ok(), "{id} is still stored");
    }
    s.move_to(Some(&ids[5])).unwrap();
    assert_eq!(
        texts(&s),
        ["user 1", "assistant 1", "plan B", "assistant B"]
    );
}

struct FixedHook;
impl grove::NavigateHook for FixedHook {
    fn before_navigate(
        &self,
        _: &grove::NavigateEvent<'_>,
    ) -> Result<Option<grove::HookDecision>, String> {
        Ok(Some(grove::HookDecision {
            summary: Some(grove::HookSummary {
                summary: "explored plan B".into(),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }
}
