//! Model-based test: random sequences of append, append_many, move, navigate, fork, label, compaction
//! and restart run against the engine and against a plain in-memory model, compared after
//! every step. A failure found here becomes a named regression test below.

use std::collections::BTreeMap;

use grove::{
    CreateSession, ForkMode, ForkOptions, ForkPosition, HookDecision, HookSummary, NavigateEvent,
    NavigateHook, NavigateOptions, Navigator, NewEntry, Session, Store, StoreConfig,
};
use proptest::prelude::*;

/// One entry of the model.
#[derive(Debug, Clone)]
struct MEntry {
    id: String,
    parent: Option<usize>,
    /// "user", "assistant", "compaction", "branch_summary", "label"
    kind: &'static str,
    text: String,
    /// Compactions: index of the first kept entry.
    first_kept: Option<usize>,
}

/// The plain model of one session: a vector of entries, a leaf and a label map.
#[derive(Debug, Clone, Default)]
struct Model {
    entries: Vec<MEntry>,
    leaf: Option<usize>,
    labels: BTreeMap<String, String>,
}

impl Model {
    fn path(&self, from: Option<usize>) -> Vec<usize> {
        let mut out = Vec::new();
        let mut cur = from;
        while let Some(i) = cur {
            out.push(i);
            cur = self.entries[i].parent;
        }
        out.reverse();
        out
    }

    /// Spec §5.2/§5.4 on the model, for entries without retained tails.
    fn context(&self) -> Vec<String> {
        let path = self.path(self.leaf);
        let last_c = path
            .iter()
            .rposition(|&i| self.entries[i].kind == "compaction");
        let selected: Vec<usize> = match last_c {
            None => path.clone(),
            Some(ci) => {
                let c = path[ci];
                let mut sel = vec![c];
                if let Some(k) = self.entries[c]
                    .first_kept
                    .and_then(|fk| path[..ci].iter().position(|&i| i == fk))
                {
                    sel.extend(&path[k..ci]);
                }
                sel.extend(&path[ci + 1..]);
                sel
            }
        };
        selected
            .iter()
            .filter_map(|&i| {
                let e = &self.entries[i];
                match e.kind {
                    "user" | "assistant" => Some(e.text.clone()),
                    "compaction" => Some(format!("C:{}", e.text)),
                    "branch_summary" => Some(format!("B:{}", e.text)),
                    _ => None,
                }
            })
            .collect()
    }

    fn push(&mut self, e: MEntry) -> usize {
        self.entries.push(e);
        let i = self.entries.len() - 1;
        self.leaf = Some(i);
        i
    }
}

#[derive(Debug, Clone)]
pub(super) enum Op {
    Append(bool),
    /// `append_many` of 1 ..= 6 messages (2 or more are stored as one batch).
    AppendMany(u8),
    Move(Option<u16>),
    Navigate(u16, bool),
    Label(u16, bool),
    Compact(u8),
    Fork(u16, u8),
    Restart,
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => any::<bool>().prop_map(Op::Append),
        2 => (1u8..=6).prop_map(Op::AppendMany),
        2 => proptest::option::weighted(0.9, any::<u16>()).prop_map(Op::Move),
        2 => (any::<u16>(), any::<bool>()).prop_map(|(t, h)| Op::Navigate(t, h)),
        1 => (any::<u16>(), any::<bool>()).prop_map(|(t, s)| Op::Label(t, s)),
        1 => (0u8..5).prop_map(Op::Compact),
        1 => (any::<u16>(), 0u8..3).prop_map(|(t, m)| Op::Fork(t, m)),
        1 => Just(Op::Restart),
    ]
}

fn msg(role: &str, text: &str) -> NewEntry {
    NewEntry::Message {
        message: format!(
            r#"{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}"#
        ),
    }
}

fn grove_context(s: &Session) -> Vec<String> {
    s.build_context()
        .unwrap()
        .messages
        .iter()
        .map(|m| {
            let v: serde_json::Value = serde_json::from_str(m).unwrap();
            match v["role"].as_str().unwrap() {
                "compactionSummary" => format!("C:{}", v["summary"].as_str().unwrap()),
                "branchSummary" => format!("B:{}", v["summary"].as_str().unwrap()),
                _ => v["content"][0]["text"].as_str().unwrap().to_owned(),
            }
        })
        .collect()
}

fn compare(s: &Session, m: &Model, step: usize) -> Result<(), TestCaseError> {
    let ids: Vec<String> = s.entries().map(|e| e.unwrap().id().to_owned()).collect();
    let mids: Vec<String> = m.entries.iter().map(|e| e.id.clone()).collect();
    prop_assert_eq!(&ids, &mids, "entries at step {}", step);
    // Every entry by id, wherever it is stored (its own row, inside a batch).
    for e in &m.entries {
        let stored = s.entry(&e.id).unwrap();
        let parent = e.parent.map(|p| m.entries[p].id.clone());
        prop_assert_eq!(
            stored.envelope().unwrap().parent_id,
            parent,
            "parent of {} at step {}",
            e.id,
            step
        );
    }
    prop_assert_eq!(
        s.leaf().unwrap(),
        m.leaf.map(|i| m.entries[i].id.clone()),
        "leaf at step {}",
        step
    );
    let path: Vec<String> = s
        .path_to_root(None)
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    let mpath: Vec<String> = m
        .path(m.leaf)
        .iter()
        .map(|&i| m.entries[i].id.clone())
        .collect();
    prop_assert_eq!(path, mpath, "path at step {}", step);
    prop_assert_eq!(grove_context(s), m.context(), "context at step {}", step);
    let labels: BTreeMap<String, String> = s
        .labels()
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.label))
        .collect();
    prop_assert_eq!(&labels, &m.labels, "labels at step {}", step);
    Ok(())
}

struct Hook(String);
impl NavigateHook for Hook {
    fn before_navigate(&self, _: &NavigateEvent<'_>) -> Result<Option<HookDecision>, String> {
        Ok(Some(HookDecision {
            summary: Some(HookSummary {
                summary: self.0.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    run_on(ops, || {
        StoreConfig::new(dir.path()).durability(grove::Durability::None)
    })
}

/// The model test on the store `config` opens (it is reopened along the way).
pub(super) fn run_on(ops: Vec<Op>, config: impl Fn() -> StoreConfig) -> Result<(), TestCaseError> {
    let open = || Store::open_with(config()).unwrap();
    let mut store = open();
    let mut sessions: Vec<(String, Model)> = vec![(
        store
            .create_session(CreateSession::default())
            .unwrap()
            .id()
            .to_owned(),
        Model::default(),
    )];
    for (step, op) in ops.into_iter().enumerate() {
        let current = sessions.len() - 1;
        let s = store.session(&sessions[current].0).unwrap();
        let m = &mut sessions[current].1;
        let pick =
            |m: &Model, t: u16| (!m.entries.is_empty()).then(|| t as usize % m.entries.len());
        match op {
            Op::Append(user) => {
                let (role, text) = if user {
                    ("user", format!("u{step}"))
                } else {
                    ("assistant", format!("a{step}"))
                };
                let id = s.append(msg(role, &text)).unwrap();
                m.push(MEntry {
                    id,
                    parent: m.leaf,
                    kind: if user { "user" } else { "assistant" },
                    text,
                    first_kept: None,
                });
            }
            Op::AppendMany(n) => {
                let texts: Vec<String> = (0..n).map(|i| format!("m{step}.{i}")).collect();
                let batch: Vec<NewEntry> = texts.iter().map(|t| msg("user", t)).collect();
                let ids = s.append_many(&batch).unwrap();
                for (id, text) in ids.into_iter().zip(texts) {
                    let parent = m.leaf;
                    m.push(MEntry {
                        id,
                        parent,
                        kind: "user",
                        text,
                        first_kept: None,
                    });
                }
            }
            Op::Move(t) => {
                let target = t.and_then(|t| pick(m, t));
                s.move_to(target.map(|i| m.entries[i].id.as_str())).unwrap();
                m.leaf = target;
            }
            Op::Navigate(t, hook) => {
                let Some(target) = pick(m, t) else { continue };
                if m.leaf == Some(target) {
                    continue;
                }
                let h = Hook(format!("s{step}"));
                let nav = Navigator {
                    hooks: if hook { vec![&h] } else { vec![] },
                    ..Default::default()
                };
                // The model: user targets put the leaf on their parent (spec §7.2).
                let new_leaf = if m.entries[target].kind == "user" {
                    m.entries[target].parent
                } else {
                    Some(target)
                };
                let out = s
                    .navigate(&m.entries[target].id, &NavigateOptions::default(), &nav)
                    .unwrap();
                m.leaf = new_leaf;
                if let grove::NavigateOutcome::Moved {
                    summary_entry: Some(id),
                    ..
                } = out
                {
                    m.push(MEntry {
                        id,
                        parent: new_leaf,
                        kind: "branch_summary",
                        text: format!("s{step}"),
                        first_kept: None,
                    });
                }
            }
            Op::Label(t, set) => {
                let Some(target) = pick(m, t) else { continue };
                let tid = m.entries[target].id.clone();
                let label = set.then(|| format!("l{step}"));
                let id = s.set_label(&tid, label.as_deref()).unwrap();
                match label {
                    Some(l) => m.labels.insert(tid, l),
                    None => m.labels.remove(&tid),
                };
                m.push(MEntry {
                    id,
                    parent: m.leaf,
                    kind: "label",
                    text: String::new(),
                    first_kept: None,
                });
            }
            Op::Compact(back) => {
                let path = m.path(m.leaf);
                let Some(&keep) = path.iter().rev().nth(back as usize) else {
                    continue;
                };
                let id = s
                    .append(NewEntry::Compaction {
                        summary: format!("c{step}"),
                        first_kept_entry_id: m.entries[keep].id.clone(),
                        tokens_before: 1,
                        retained_tail: None,
                        details: None,
                        usage: None,
                        from_hook: None,
                    })
                    .unwrap();
                m.push(MEntry {
                    id,
                    parent: m.leaf,
                    kind: "compaction",
                    text: format!("c{step}"),
                    first_kept: Some(keep),
                });
            }
            Op::Fork(t, mode) => {
                let Some(target) = pick(m, t) else { continue };
                // Fork at the entry with the full path (Rechained without labels = a copy of
                // the path); Copy takes everything. Only label-free models fork rechained.
                let mode = match mode {
                    0 if m.entries.iter().all(|e| e.kind != "label") => ForkMode::Rechained,
                    _ => ForkMode::Copy,
                };
                let fork = store
                    .fork(
                        &s,
                        ForkOptions {
                            entry: Some(m.entries[target].id.clone()),
                            position: ForkPosition::At,
                            mode,
                            ..Default::default()
                        },
                    )
                    .unwrap();
                let mut fm = Model::default();
                if mode == ForkMode::Copy {
                    fm = m.clone();
                } else {
                    let mut prev = None;
                    for i in m.path(Some(target)) {
                        let mut e = m.entries[i].clone();
                        e.parent = prev;
                        e.first_kept = e.first_kept.and_then(|fk| {
                            fm.entries.iter().position(|x| x.id == m.entries[fk].id)
                        });
                        prev = Some(fm.push(e));
                    }
                }
                sessions.push((fork.id().to_owned(), fm));
            }
            Op::Restart => {
                drop(s);
                drop(store);
                store = open();
            }
        }
        let (id, model) = sessions.last().unwrap();
        compare(&store.session(id).unwrap(), model, step)?;
    }
    let report = store.verify().unwrap();
    prop_assert!(report.is_ok(), "verify: {:?}", report.problems);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_the_model(ops in proptest::collection::vec(op(), 1..50)) {
        run(ops)?;
    }
}
