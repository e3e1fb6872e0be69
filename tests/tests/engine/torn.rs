//! The commit protocol of writes whose records fit one log value (docs/design.md, "Commit
//! protocol"): the log value (a row, or a batch of several records) first, then its index
//! rows, as ordered single writes (the head is a fold of the log). A backend that stops after
//! any prefix of those writes (what a crash leaves, given prefix recovery) must reopen to a
//! store that verifies clean and holds either the old state or the new one — the new one
//! exactly when the log value was written.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use grove::kv::{Kv, KvError, MemoryKv, Scan, WriteBatch};
use grove::{
    CreateSession, Durability, HookDecision, HookSummary, NavigateEvent, NavigateHook,
    NavigateOptions, Navigator, NewEntry, Session, Store,
};

use super::{assistant, user};

/// A memory backend shared between store instances (a "disk" that outlives the process).
#[derive(Clone, Default)]
struct Disk(Arc<MemoryKv>);

/// Applies ordered writes only while its budget lasts, then fails: the process "dies".
struct Torn {
    disk: Disk,
    budget: Arc<AtomicUsize>,
}

const UNLIMITED: usize = usize::MAX;

impl Torn {
    fn take(&self) -> bool {
        self.budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| match b {
                0 => None,
                UNLIMITED => Some(UNLIMITED),
                b => Some(b - 1),
            })
            .is_ok()
    }
}

fn died() -> KvError {
    KvError::Io {
        context: "torn".into(),
        source: std::io::Error::other("process killed"),
    }
}

impl Kv for Disk {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        self.0.get(key)
    }
    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.0.scan(start, end)
    }
    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.0.scan_rev(start, end)
    }
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.0.apply(batch)
    }
    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }
    fn name(&self) -> &'static str {
        "disk"
    }
}

impl Kv for Torn {
    grove_tests::forward_reads!(disk);
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        // Atomic batches survive whole or not at all.
        if !self.take() {
            return Err(died());
        }
        self.disk.apply(batch)
    }
    fn apply_ordered(&self, batch: WriteBatch) -> Result<(), KvError> {
        for (k, v) in batch.into_ops() {
            if !self.take() {
                return Err(died());
            }
            let mut one = WriteBatch::new();
            match v {
                Some(v) => one.put(k, v),
                None => one.delete(k),
            }
            self.disk.apply(one)?;
        }
        Ok(())
    }
    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }
    fn name(&self) -> &'static str {
        "torn"
    }
}

/// What a reader can observe of a session.
#[derive(Debug, PartialEq)]
struct Observed {
    log: Vec<String>,
    leaf: Option<String>,
    entries: u64,
    labels: BTreeMap<String, String>,
    name: Option<String>,
    children_of_first: Vec<String>,
    context: Vec<String>,
}

fn observe(s: &Session) -> Observed {
    let log: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
    let first = "e1";
    Observed {
        leaf: s.leaf().unwrap(),
        entries: s.head().unwrap().entries,
        labels: s
            .labels()
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, v.label))
            .collect(),
        name: s.name().unwrap(),
        children_of_first: s
            .children(Some(first))
            .unwrap()
            .into_iter()
            // Ids the engine generated differ between runs: only their place is compared.
            .map(|e| {
                if e.node.id.len() <= 2 {
                    e.node.id.to_string()
                } else {
                    "*".into()
                }
            })
            .collect(),
        context: s
            .build_context()
            .unwrap()
            .messages
            .iter()
            .map(|m| {
                // A branch summary's timestamp is the time it was written: it differs between
                // runs.
                let mut v: serde_json::Value = serde_json::from_str(m).unwrap();
                if v["role"] == "branchSummary" {
                    v["timestamp"] = serde_json::Value::Null;
                }
                v.to_string()
            })
            .collect(),
        log,
    }
}

type Op = Box<dyn Fn(&Session) -> grove::Result<()>>;

/// A hook that supplies the branch summary of every navigation.
struct Summary;
impl NavigateHook for Summary {
    fn before_navigate(&self, _: &NavigateEvent<'_>) -> Result<Option<HookDecision>, String> {
        Ok(Some(HookDecision {
            summary: Some(HookSummary {
                summary: "left behind".into(),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }
}

/// The operations under test, each one log value written with the ordered protocol, and what
/// to do before each (not torn).
fn operations() -> Vec<(&'static str, Op, Op)> {
    let nothing = || -> Op { Box::new(|_| Ok(())) };
    vec![
        (
            "append_many",
            nothing(),
            Box::new(|s| {
                s.append_many(&[user("m1"), assistant("m2"), user("m3")])
                    .map(drop)
            }),
        ),
        (
            "append_many at a branch point, labelling twice",
            Box::new(|s| s.move_to(Some("e1"))),
            Box::new(|s| {
                let label = |l: &str| NewEntry::Label {
                    target_id: "e1".into(),
                    label: Some(l.into()),
                };
                s.append_many(&[assistant("sibling"), label("first"), label("second")])
                    .map(drop)
            }),
        ),
        (
            "move with a branch summary",
            nothing(),
            Box::new(|s| {
                let nav = Navigator {
                    hooks: vec![&Summary],
                    ..Default::default()
                };
                s.navigate("e1", &NavigateOptions::default(), &nav)
                    .map(drop)
            }),
        ),
        (
            "append",
            nothing(),
            Box::new(|s| s.append_with(user("next"), id("n1")).map(drop)),
        ),
        (
            "append at a branch point",
            Box::new(|s| s.move_to(Some("e1"))),
            Box::new(|s| s.append_with(assistant("sibling"), id("n2")).map(drop)),
        ),
        ("move", nothing(), Box::new(|s| s.move_to(Some("e1")))),
        (
            "label",
            nothing(),
            Box::new(|s| s.set_label("e1", Some("checkpoint")).map(drop)),
        ),
        (
            "clear label",
            nothing(),
            Box::new(|s| s.set_label("e1", None).map(drop)),
        ),
        (
            "name",
            nothing(),
            Box::new(|s| s.set_name("renamed").map(drop)),
        ),
        (
            "compaction",
            nothing(),
            Box::new(|s| {
                s.append_with(
                    NewEntry::Compaction {
                        summary: "so far".into(),
                        first_kept_entry_id: "e2".into(),
                        tokens_before: 10,
                        retained_tail: None,
                        details: None,
                        usage: None,
                        from_hook: None,
                    },
                    id("n3"),
                )
                .map(drop)
            }),
        ),
    ]
}

fn id(id: &str) -> grove::AppendOptions {
    grove::AppendOptions {
        id: Some(id.to_owned()),
        timestamp: Some("2026-11-29T12:00:00.000Z".to_owned()),
        ..grove::AppendOptions::default()
    }
}

/// A session with some history, written without tearing.
fn setup(store: &Store) -> Session {
    let s = store
        .create_session(CreateSession {
            id: Some("torn".into()),
            ..CreateSession::default()
        })
        .unwrap();
    s.append_with(user("one"), id("e1")).unwrap();
    s.append_with(assistant("two"), id("e2")).unwrap();
    s.append_with(user("three"), id("e3")).unwrap();
    s.set_label("e1", Some("start")).unwrap();
    s.set_name("before").unwrap();
    s.move_to(Some("e2")).unwrap();
    s
}

#[test]
fn every_prefix_of_a_one_value_commit_recovers_to_before_or_after() {
    for (name, prep, op) in operations() {
        // The states before and after the operation, written without tearing.
        let reference = Store::in_memory().unwrap();
        let r = setup(&reference);
        prep(&r).unwrap();
        let before = observe(&r);
        op(&r).unwrap();
        let after = observe(&r);
        // Count the writes of the operation on a torn store, one more each round.
        let mut tried = 0usize;
        let mut saw_after = false;
        loop {
            let disk = Disk::default();
            let budget = Arc::new(AtomicUsize::new(UNLIMITED));
            let store = Store::from_kv(
                Box::new(Torn {
                    disk: disk.clone(),
                    budget: budget.clone(),
                }),
                Durability::None,
            )
            .unwrap();
            let s = setup(&store);
            prep(&s).unwrap();
            let first_seq = s.head().unwrap().next_seq;
            budget.store(tried, Ordering::SeqCst);
            let completed = op(&s).is_ok();
            // The store is poisoned when the operation failed: a new handle still opens, and
            // reads go on — from the log, as the restart below will.
            let in_process = (!completed).then(|| {
                assert!(store.poisoned().is_some());
                let again = store.session("torn").unwrap();
                again.build_context().unwrap();
                again.leaf().unwrap()
            });
            drop(s);
            drop(store);
            // "Restart" on what reached the disk.
            let store = Store::from_kv(Box::new(disk.clone()), Durability::None).unwrap();
            // The listing counts entries before anything loads (and completes) the session.
            let listed = store.sessions().unwrap()[0].entries;
            let report = store.verify().unwrap();
            assert!(report.is_ok(), "{name}, {tried} writes: {report:?}");
            let s = store.session("torn").unwrap();
            let now = observe(&s);
            assert_eq!(
                listed, now.entries,
                "{name}, {tried} writes: listed entries"
            );
            if let Some(leaf) = in_process {
                assert_eq!(leaf, now.leaf, "{name}, {tried} writes: poisoned view");
            }
            let sid = disk.get(&grove::keys::session_id("torn")).unwrap().unwrap();
            let sid = u64::from_be_bytes(sid.as_slice().try_into().unwrap());
            let logged = disk
                .get(&grove::keys::log(sid, first_seq))
                .unwrap()
                .is_some();
            if logged {
                // The log row reached the disk: the operation took effect, entirely.
                // Leaf records and labels get generated ids: compare what does not
                // depend on them.
                if after.leaf.as_deref().is_none_or(|l| l.len() <= 2) {
                    assert_eq!(now.leaf, after.leaf, "{name}, {tried} writes");
                } else {
                    // A generated id (label and session_info entries): the last one logged.
                    let last: serde_json::Value =
                        serde_json::from_str(now.log.last().unwrap()).unwrap();
                    assert_eq!(now.leaf.as_deref(), last["id"].as_str(), "{name}");
                }
                assert_eq!(now.log.len(), after.log.len(), "{name}, {tried} writes");
                assert_eq!(now.entries, after.entries, "{name}, {tried} writes");
                assert_eq!(now.labels, after.labels, "{name}, {tried} writes");
                assert_eq!(now.name, after.name, "{name}, {tried} writes");
                assert_eq!(now.context, after.context, "{name}, {tried} writes");
                assert_eq!(now.children_of_first, after.children_of_first);
                saw_after = true;
            } else {
                assert!(!completed, "{name}: completed without its log row");
                assert_eq!(now.log.len(), before.log.len(), "{name}, {tried} writes");
                assert_eq!(now.leaf, before.leaf, "{name}, {tried} writes");
                assert_eq!(now.entries, before.entries);
                assert_eq!(now.labels, before.labels);
                assert_eq!(now.name, before.name);
                assert_eq!(now.children_of_first, before.children_of_first);
                assert_eq!(now.context, before.context);
            }
            // The store keeps working after recovery.
            s.append(user("after recovery")).unwrap();
            assert!(store.verify().unwrap().is_ok());
            if completed {
                break;
            }
            tried += 1;
            assert!(tried < 100, "{name} never completed");
        }
        assert!(saw_after && tried >= 2, "{name}: {tried} writes");
    }
}
