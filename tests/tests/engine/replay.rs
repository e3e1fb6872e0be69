//! Replay: a session's history in order, each record with the change it makes to the active
//! context. The model test runs random sequences of every kind of operation, replays them,
//! and checks that applying each record's change to the context before it gives exactly the
//! context built from scratch at the record's leaf; that the operations replayed are the
//! operation log; that appends at the leaf are reported as appends (the one-pass property);
//! and that a replay from or until an operation agrees with the whole one.

use std::sync::mpsc;
use std::time::Duration;

use grove::{
    Context, ContextOptions, CreateSession, GroveError, ReplayEvent, ReplayOptions, Session, Store,
    StoreConfig,
};
use proptest::prelude::*;

use super::oplog::{apply, step, Step};
use super::{assistant, user};

/// A replay collected: the start context, then per record (op, leaf, context after it).
struct Replayed {
    start_op: u64,
    start: Context,
    ops: Vec<grove::OperationStart>,
    records: Vec<(u64, Option<String>, Context, grove::ReplayRecord)>,
}

fn collect(s: &Session, options: ReplayOptions) -> Replayed {
    let mut events = s.replay(options).unwrap();
    let Some(Ok(ReplayEvent::Start { op, context, .. })) = events.next() else {
        panic!("a replay starts with its start event");
    };
    let mut out = Replayed {
        start_op: op,
        start: context.clone(),
        ops: Vec::new(),
        records: Vec::new(),
    };
    let mut ctx = context;
    for event in events {
        match event.unwrap() {
            ReplayEvent::Start { .. } => panic!("a second start event"),
            ReplayEvent::Operation(op) => out.ops.push(op),
            ReplayEvent::Record(r) => {
                r.change.apply(&mut ctx);
                assert_eq!(r.change.messages, ctx.messages.len());
                out.records.push((r.op, r.leaf.clone(), ctx.clone(), *r));
            }
        }
    }
    out
}

/// A context as compared: its messages and settings (pi's JSON shape).
fn shown(ctx: &Context) -> String {
    ctx.to_json()
}

fn run(steps: &[Step]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let mut done = 0;
    for st in steps {
        if apply(&s, st, done).is_some() {
            done += 1;
        }
    }
    let ops = s.operations().unwrap();
    let all = collect(&s, ReplayOptions::default());
    prop_assert_eq!(all.start_op, 0);
    prop_assert_eq!(shown(&all.start), shown(&Context::empty()));
    // The operations replayed are the operation log.
    prop_assert_eq!(all.ops.len(), ops.len());
    for (got, want) in all.ops.iter().zip(&ops) {
        prop_assert_eq!(got.number, want.number);
        prop_assert_eq!(got.kind, want.kind);
        prop_assert_eq!(&got.actor, &want.actor);
        prop_assert_eq!(got.time_ms, want.time_ms);
        prop_assert_eq!(got.first_seq, want.first_seq);
        prop_assert_eq!(&got.leaf_before, &want.leaf_before);
    }
    prop_assert_eq!(
        all.records.len() as u64,
        ops.last().map_or(0, |o| o.end_seq)
    );
    let mut prev: Option<&grove::ReplayRecord> = None;
    let mut prev_leaf: Option<String> = None;
    let mut prev_len = 0;
    for (i, (op, leaf, ctx, r)) in all.records.iter().enumerate() {
        prop_assert_eq!(r.entry.seq, i as u64);
        let want_op = &ops[*op as usize];
        prop_assert!(want_op.first_seq <= r.entry.seq && r.entry.seq < want_op.end_seq);
        if r.entry.seq + 1 == want_op.end_seq {
            prop_assert_eq!(leaf, &want_op.leaf_after, "leaf after op {}", op);
        }
        // What the model saw at this step, carried along: the context built at the leaf.
        let built = match leaf {
            Some(l) => s
                .build_context_from_scratch(Some(l), ContextOptions::grove())
                .unwrap(),
            None => Context::empty(),
        };
        prop_assert_eq!(shown(ctx), shown(&built), "after record {}", i);
        // An entry appended at the leaf is an append: nothing of the context is rebuilt.
        let at_leaf = r.entry.parent_id().is_some() && r.entry.parent_id() == prev_leaf;
        if at_leaf && r.entry.kind() == grove::codec::EntryKind::Message(grove::codec::Role::User) {
            prop_assert_eq!(r.change.keep, prev_len, "record {} appends", i);
            prop_assert_eq!(r.change.append.len(), 1);
        }
        prev = Some(r);
        prev_leaf = leaf.clone();
        prev_len = ctx.messages.len();
    }
    let _ = prev;
    // From and until an operation: the same records, the start context as it stood then.
    for from in [1, ops.len() as u64 / 2, ops.len() as u64] {
        if from > ops.len() as u64 {
            continue;
        }
        let until = (from + 2).min(ops.len().saturating_sub(1) as u64).max(from);
        let part = collect(
            &s,
            ReplayOptions {
                from_op: Some(from),
                until_op: Some(until),
                ..ReplayOptions::default()
            },
        );
        prop_assert_eq!(part.start_op, from);
        let before = if from == 0 {
            Context::empty()
        } else {
            s.context_as_of(&s.at_op(from - 1).unwrap(), ContextOptions::grove())
                .unwrap()
        };
        prop_assert_eq!(shown(&part.start), shown(&before));
        let want: Vec<_> = all
            .records
            .iter()
            .filter(|(op, ..)| (from..=until).contains(op))
            .map(|(op, leaf, ctx, r)| (*op, leaf.clone(), shown(ctx), r.entry.seq))
            .collect();
        let got: Vec<_> = part
            .records
            .iter()
            .map(|(op, leaf, ctx, r)| (*op, leaf.clone(), shown(ctx), r.entry.seq))
            .collect();
        prop_assert_eq!(got, want, "from op {} until op {}", from, until);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_record_carries_the_context_the_model_saw(steps in proptest::collection::vec(step(), 1..50)) {
        run(&steps)?;
    }
}

#[test]
fn a_followed_replay_sees_writes_as_they_land() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    s.append(user("before")).unwrap();
    let from = s.operations().unwrap().len() as u64;
    let follower = s
        .replay(ReplayOptions {
            from_op: Some(from),
            until_op: Some(from + 4),
            follow: true,
            ..ReplayOptions::default()
        })
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for event in follower {
            let done = tx.send(event.map(|e| e.to_json())).is_err();
            if done {
                break;
            }
        }
    });
    // The start event comes at once; then nothing until something is written.
    let start = rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap();
    assert!(start.starts_with("{\"type\":\"start\""), "{start}");
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    for i in 0..5 {
        let text = format!("live {i}");
        if i % 2 == 0 {
            s.append(user(&text)).unwrap();
        } else {
            s.append(assistant(&text)).unwrap();
        }
        let op = rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap();
        assert!(op.contains("\"type\":\"operation\""), "{op}");
        assert!(op.contains(&format!("\"op\":{}", from + i)), "{op}");
        let rec = rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_str(&rec).unwrap();
        assert_eq!(v["type"], "record");
        assert_eq!(v["context"]["keep"], i + 1, "{rec}");
        assert_eq!(v["context"]["append"][0]["content"][0]["text"], text);
    }
    // Past --until-op the replay ends by itself.
    reader.join().unwrap();
    assert!(rx.recv_timeout(Duration::from_secs(5)).is_err());
}

#[test]
fn replay_json_lines_and_bad_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let ids = super::seed(&s);
    let lines: Vec<serde_json::Value> = s
        .replay(ReplayOptions::default())
        .unwrap()
        .map(|e| serde_json::from_str(&e.unwrap().to_json()).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "start");
    assert_eq!(lines[0]["context"]["messages"], serde_json::json!([]));
    // The move back to assistant 1 keeps its two messages and drops plan A's.
    let moved = lines
        .iter()
        .find(|l| l["type"] == "record" && l["entry"]["type"] == "leaf")
        .unwrap();
    assert_eq!(moved["leaf"], ids[1]);
    assert_eq!(moved["context"]["keep"], 2);
    assert_eq!(moved["context"]["append"], serde_json::json!([]));
    assert_eq!(moved["context"]["messages"], 2);
    let ops: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "operation").collect();
    assert_eq!(ops.len(), s.operations().unwrap().len());
    assert_eq!(ops[0]["kind"], "append");
    assert_eq!(ops[0]["actor"], "library");
    assert_eq!(ops[4]["kind"], "move");
    assert_eq!(ops[4]["leafBefore"], ids[3]);
    // The first assistant message sets the model.
    let first_assistant = lines
        .iter()
        .find(|l| l["type"] == "record" && l["id"] == ids[1])
        .unwrap();
    assert_eq!(
        first_assistant["context"]["model"],
        serde_json::json!({"provider": "p", "modelId": "m"})
    );
    let count = ops.len() as u64;
    match s.replay(ReplayOptions {
        from_op: Some(count + 1),
        ..ReplayOptions::default()
    }) {
        Err(GroveError::OperationNotFound { op, count: c, .. }) => {
            assert_eq!((op, c), (count + 1, count))
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert!(matches!(
        s.replay(ReplayOptions {
            from_op: Some(3),
            until_op: Some(2),
            ..ReplayOptions::default()
        }),
        Err(GroveError::InvalidArgument(_))
    ));
    // From the operation count: only the start, at the leaf now.
    let tail: Vec<ReplayEvent> = s
        .replay(ReplayOptions {
            from_op: Some(count),
            ..ReplayOptions::default()
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(tail.len(), 1);
    let ReplayEvent::Start { leaf, context, .. } = &tail[0] else {
        panic!("{tail:?}")
    };
    assert_eq!(leaf.as_deref(), Some(ids[5].as_str()));
    assert_eq!(context.messages.len(), 4);
}

#[test]
fn every_oracle_fixture_replays_to_the_contexts_built_from_scratch() {
    let store = Store::in_memory().unwrap();
    let mut checked = 0;
    let mut refused = 0;
    let dir = grove_tests::oracle::fixtures_dir();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let options = grove::ImportOptions {
            strictness: grove::Strictness::Lenient,
            ..grove::ImportOptions::default()
        };
        let Ok(report) = store.import_file(&path, options) else {
            continue;
        };
        let s = store.session(&report.session).unwrap();
        // The leaf after every record, from the default replay.
        let leaves: Vec<Option<String>> = collect(&s, ReplayOptions::default())
            .records
            .into_iter()
            .map(|(_, leaf, ..)| leaf)
            .collect();
        // An id written twice names its last record now, so a context built from it today
        // is not the one of an earlier record with that id.
        let mut seen = std::collections::HashMap::<String, u32>::new();
        for e in s.log() {
            *seen.entry(e.unwrap().id().to_owned()).or_default() += 1;
        }
        let reused = |leaf: &Option<String>| leaf.as_ref().is_some_and(|l| seen[l] > 1);
        for options in [ContextOptions::grove(), ContextOptions::pi_harness()] {
            let mut events = s
                .replay(ReplayOptions {
                    context: options,
                    ..ReplayOptions::default()
                })
                .unwrap();
            let Some(Ok(ReplayEvent::Start { context, .. })) = events.next() else {
                panic!("no start");
            };
            let mut ctx = context;
            let mut next_seq = 0;
            for event in events {
                let record = match event {
                    Ok(ReplayEvent::Record(r)) => r,
                    Ok(_) => continue,
                    Err(e) => {
                        // A context pi refuses to build (the harness on an orphan's path):
                        // the replay ends with the error that building it gives.
                        let want = s
                            .build_context_from_scratch(leaves[next_seq].as_deref(), options)
                            .map(|_| ())
                            .unwrap_err();
                        assert_eq!(want.to_string(), e.to_string(), "{}", path.display());
                        refused += 1;
                        break;
                    }
                };
                assert_eq!(record.entry.seq as usize, next_seq);
                assert_eq!(record.leaf, leaves[next_seq]);
                next_seq += 1;
                let appended = record.change.keep == ctx.messages.len();
                record.change.apply(&mut ctx);
                // Every jump and rebuild; of the appends in a large fixture, every stride-th.
                let stride = (leaves.len() / 300).max(1);
                if reused(&record.leaf)
                    || (appended && !(record.entry.seq as usize).is_multiple_of(stride))
                {
                    continue;
                }
                let built = match &record.leaf {
                    Some(l) => s.build_context_from_scratch(Some(l), options).unwrap(),
                    None => Context::empty(),
                };
                assert_eq!(
                    shown(&ctx),
                    shown(&built),
                    "{} record {}",
                    path.display(),
                    record.entry.seq
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 20, "{checked} fixtures");
    assert!(refused >= 1, "the harness refuses an orphan's context");
}
