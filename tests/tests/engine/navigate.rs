//! Navigation with editing semantics, the busy rule, hooks and summarizers (spec §7, §8).

use std::sync::atomic::{AtomicUsize, Ordering};

use grove::summary::{
    AbortSignal, CommandSummarizer, SummarizeError, Summarizer, SummaryRequest, SummaryResponse,
};
use grove::{
    CreateSession, GroveError, HookDecision, HookSummary, NavigateEvent, NavigateHook,
    NavigateOptions, NavigateOutcome, Navigator, Store,
};

use super::{seed, texts};

fn session() -> (Store, grove::Session, Vec<String>) {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let ids = seed(&s);
    (store, s, ids)
}

/// Records the prompt and answers with a fixed text.
#[derive(Default)]
struct Echo {
    calls: AtomicUsize,
    prompt: parking_lot::Mutex<String>,
}

impl Summarizer for Echo {
    fn summarize(
        &self,
        r: &SummaryRequest,
        _: &AbortSignal,
    ) -> Result<SummaryResponse, SummarizeError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        *self.prompt.lock() = r.prompt.clone();
        Ok(SummaryResponse {
            text: "## Goal\nplan A".into(),
            usage: Some(r#"{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#.into()),
        })
    }
}

#[test]
fn navigating_to_a_user_message_puts_the_leaf_on_its_parent_and_returns_its_text() {
    let (_store, s, ids) = session();
    let out = s
        .navigate(&ids[2], &NavigateOptions::default(), &Navigator::default())
        .unwrap();
    let NavigateOutcome::Moved {
        old_leaf,
        new_leaf,
        editor_text,
        summary_entry,
        from_hook,
    } = out
    else {
        panic!("expected a move, got {out:?}");
    };
    assert_eq!(old_leaf.as_deref(), Some(ids[5].as_str()));
    assert_eq!(new_leaf.as_deref(), Some(ids[1].as_str()));
    assert_eq!(editor_text.as_deref(), Some("plan A"));
    assert_eq!(summary_entry, None);
    assert!(!from_hook);
    assert_eq!(texts(&s), ["user 1", "assistant 1"]);
    // Any other target becomes the leaf itself.
    s.navigate(&ids[3], &NavigateOptions::default(), &Navigator::default())
        .unwrap();
    assert_eq!(s.leaf().unwrap().as_deref(), Some(ids[3].as_str()));
    // The leaf itself is a no-op and writes nothing; unknown targets are invalid arguments.
    let before = s.log().count();
    assert_eq!(
        s.navigate(&ids[3], &NavigateOptions::default(), &Navigator::default())
            .unwrap(),
        NavigateOutcome::NoOp
    );
    assert_eq!(s.log().count(), before);
    let err = s
        .navigate("nope", &NavigateOptions::default(), &Navigator::default())
        .unwrap_err();
    assert!(matches!(err, GroveError::InvalidArgument(_)), "{err:?}");
}

#[test]
fn a_summary_of_the_abandoned_branch_travels_along_and_history_remains() {
    let (_store, s, ids) = session();
    let echo = Echo::default();
    let nav = Navigator {
        summarizer: Some(&echo),
        ..Default::default()
    };
    let opts = NavigateOptions {
        summarize: true,
        label: Some("came back".into()),
        ..Default::default()
    };
    let out = s.navigate(&ids[2], &opts, &nav).unwrap();
    let NavigateOutcome::Moved {
        summary_entry: Some(summary),
        ..
    } = out
    else {
        panic!("expected a summary, got {out:?}");
    };
    assert_eq!(echo.calls.load(Ordering::SeqCst), 1);
    let prompt = echo.prompt.lock().clone();
    // The abandoned side (plan B) is summarized, not the side we return to.
    assert!(
        prompt.contains("plan B") && !prompt.contains("plan A"),
        "{prompt}"
    );
    for section in [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
    ] {
        assert!(prompt.contains(section), "missing {section}");
    }
    let entry = s.entry(&summary).unwrap();
    let v: serde_json::Value = serde_json::from_str(&entry.line).unwrap();
    assert_eq!(v["type"], "branch_summary");
    assert_eq!(
        v["parentId"],
        ids[1].as_str(),
        "attached at the navigation target's parent"
    );
    assert_eq!(v["fromId"], ids[1].as_str());
    assert_eq!(v["fromHook"], false);
    assert!(v["summary"].as_str().unwrap().ends_with("## Goal\nplan A"));
    assert_eq!(
        v["details"],
        serde_json::json!({"readFiles": [], "modifiedFiles": []})
    );
    assert_eq!(v["usage"]["totalTokens"], 3);
    assert_eq!(s.label(&summary).unwrap().unwrap().label, "came back");
    // The summary is in the context; the original history is all still there.
    let roles: Vec<String> = s
        .build_context()
        .unwrap()
        .messages
        .iter()
        .map(|m| {
            serde_json::from_str::<serde_json::Value>(m).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(roles, ["user", "assistant", "branchSummary"]);
    for id in &ids {
        s.entry(id).unwrap();
    }
}

struct Failing;
impl Summarizer for Failing {
    fn summarize(
        &self,
        _: &SummaryRequest,
        _: &AbortSignal,
    ) -> Result<SummaryResponse, SummarizeError> {
        Err(SummarizeError::Failed("model unavailable".into()))
    }
}

struct AbortsItself;
impl Summarizer for AbortsItself {
    fn summarize(
        &self,
        _: &SummaryRequest,
        abort: &AbortSignal,
    ) -> Result<SummaryResponse, SummarizeError> {
        abort.abort();
        Err(SummarizeError::Aborted)
    }
}

#[test]
fn summary_failure_and_cancellation_move_nothing_and_leave_the_session_idle() {
    let (_store, s, ids) = session();
    let opts = NavigateOptions {
        summarize: true,
        ..Default::default()
    };
    let before: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
    let err = s
        .navigate(
            &ids[2],
            &opts,
            &Navigator {
                summarizer: Some(&Failing),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, GroveError::BranchSummary(ref m) if m.contains("model unavailable")),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("Branch summary failed:"));
    let out = s
        .navigate(
            &ids[2],
            &opts,
            &Navigator {
                summarizer: Some(&AbortsItself),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(out, NavigateOutcome::Cancelled { aborted: true });
    let err = s
        .navigate(&ids[2], &opts, &Navigator::default())
        .unwrap_err();
    assert!(
        matches!(err, GroveError::InvalidState(_)),
        "no summarizer: {err:?}"
    );
    let after: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
    assert_eq!(before, after, "nothing was written");
    assert!(!s.is_busy());
    s.move_to(Some(&ids[0])).unwrap();
}

struct Hook(HookDecision, AtomicUsize);
impl NavigateHook for Hook {
    fn before_navigate(&self, e: &NavigateEvent<'_>) -> Result<Option<HookDecision>, String> {
        self.1.fetch_add(1, Ordering::SeqCst);
        assert_eq!(e.entries_to_summarize.len(), 2, "plan B and its answer");
        Ok(Some(self.0.clone()))
    }
}

#[test]
fn hooks_cancel_or_supply_the_summary() {
    let (_store, s, ids) = session();
    let cancel = Hook(
        HookDecision {
            cancel: true,
            ..Default::default()
        },
        AtomicUsize::new(0),
    );
    let nav = Navigator {
        hooks: vec![&cancel],
        ..Default::default()
    };
    assert_eq!(
        s.navigate(&ids[2], &NavigateOptions::default(), &nav)
            .unwrap(),
        NavigateOutcome::Cancelled { aborted: false }
    );
    assert_eq!(s.leaf().unwrap().as_deref(), Some(ids[5].as_str()));
    // A hook summary is used even without `summarize`, and no summarizer is called.
    let supply = Hook(
        HookDecision {
            summary: Some(HookSummary {
                summary: "from the hook".into(),
                ..Default::default()
            }),
            ..Default::default()
        },
        AtomicUsize::new(0),
    );
    let nav = Navigator {
        hooks: vec![&supply],
        summarizer: Some(&Failing),
        ..Default::default()
    };
    let out = s
        .navigate(&ids[2], &NavigateOptions::default(), &nav)
        .unwrap();
    let NavigateOutcome::Moved {
        summary_entry: Some(id),
        from_hook: true,
        ..
    } = out
    else {
        panic!("{out:?}");
    };
    assert!(s
        .entry(&id)
        .unwrap()
        .line
        .contains("\"summary\":\"from the hook\""));
    assert_eq!(supply.1.load(Ordering::SeqCst), 1);
}

#[test]
fn busy_rule_refuses_moves_during_a_turn_from_any_handle() {
    let (store, s, ids) = session();
    let turn = s.begin_turn().unwrap();
    let other = store.session(s.id()).unwrap();
    assert!(matches!(
        other.move_to(Some(&ids[0])),
        Err(GroveError::Busy(_))
    ));
    assert!(matches!(
        other.navigate(&ids[0], &NavigateOptions::default(), &Navigator::default()),
        Err(GroveError::Busy(_))
    ));
    let from_thread = std::thread::spawn({
        let other = other.clone();
        let target = ids[0].clone();
        move || other.move_to(Some(&target))
    })
    .join()
    .unwrap();
    assert!(matches!(from_thread, Err(GroveError::Busy(_))));
    assert!(matches!(other.begin_turn(), Err(GroveError::Busy(_))));
    // The holder may move; reads are never blocked.
    turn.move_to(Some(&ids[1])).unwrap();
    assert_eq!(other.leaf().unwrap().as_deref(), Some(ids[1].as_str()));
    drop(turn);
    other.move_to(Some(&ids[0])).unwrap();
}

#[test]
fn command_summarizer_runs_a_process_and_reports_failures() {
    let request = SummaryRequest {
        system: "sys".into(),
        prompt: "hello prompt".into(),
        max_tokens: 2048,
    };
    let ok = CommandSummarizer {
        command: "printf 'got: '; cat; printf ' %s' \"$GROVE_MAX_TOKENS\"".into(),
    };
    let r = ok.summarize(&request, &AbortSignal::new()).unwrap();
    assert_eq!(r.text, "got: hello prompt 2048");
    let bad = CommandSummarizer {
        command: "echo broken >&2; exit 3".into(),
    };
    let err = bad.summarize(&request, &AbortSignal::new()).unwrap_err();
    assert!(
        matches!(err, SummarizeError::Failed(ref m) if m.contains("broken")),
        "{err:?}"
    );
    let slow = CommandSummarizer {
        command: "sleep 30".into(),
    };
    let abort = AbortSignal::new();
    let a2 = abort.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        a2.abort();
    });
    let started = std::time::Instant::now();
    assert!(matches!(
        slow.summarize(&request, &abort),
        Err(SummarizeError::Aborted)
    ));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the process was killed"
    );
    t.join().unwrap();
}
