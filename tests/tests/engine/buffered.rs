//! The write buffer (`grove::kv::BufferedKv`, docs/design.md "Write buffer"): random
//! operations against a plain `MemoryKv` oracle, log values coalesced when handed over, the
//! background hand-over, the hand-over on drop, and a failing backend.

use std::collections::BTreeMap;

use grove::kv::{BufferedKv, Kv, KvError, MemoryKv, WriteBatch, BUFFER_INTERVAL};
use grove::{CreateSession, Durability, Store, StoreConfig};
use grove_codec::pack::{LogPackWriter, LogValue};
use proptest::prelude::*;

use super::faulty::Faulty;

fn all(kv: &dyn Kv) -> Vec<(Vec<u8>, Vec<u8>)> {
    kv.scan(&[], &[0xFF; 20]).map(Result::unwrap).collect()
}

/// The log of every session as (sid, seq) → row, batches expanded; the other pairs as they are.
type Logical = (BTreeMap<(u64, u64), Vec<u8>>, Vec<(Vec<u8>, Vec<u8>)>);

fn logical(kv: &dyn Kv) -> Logical {
    let mut log = BTreeMap::new();
    let mut rest = Vec::new();
    for (k, v) in all(kv) {
        if k.len() == 17 && k[0] == grove::keys::T_LOG {
            let sid = u64::from_be_bytes(k[1..9].try_into().unwrap());
            let seq = u64::from_be_bytes(k[9..17].try_into().unwrap());
            let value = LogValue::parse(&v).unwrap();
            for i in 0..value.len() {
                log.insert((sid, seq + i as u64), value.row(i).unwrap().to_vec());
            }
        } else {
            rest.push((k, v));
        }
    }
    (log, rest)
}

/// A key of the small key space the random operations use (never a log key).
fn key(tag: u8, a: u8) -> Vec<u8> {
    vec![[0x01, 0x13, 0x15][tag as usize % 3], a % 12]
}

fn log_key(sid: u64, seq: u64) -> Vec<u8> {
    grove::keys::log(sid, seq)
}

/// A log row's value: any bytes whose first is not the batch mark.
fn row(sid: u64, seq: u64, len: usize) -> Vec<u8> {
    let mut r = vec![0u8];
    r.extend(std::iter::repeat_n((sid * 31 + seq) as u8, len));
    r
}

#[derive(Debug, Clone)]
enum Op {
    /// Puts (`Some` value length) and deletes, buffered or written through (`ordered` too).
    Write {
        ops: Vec<(u8, u8, Option<u8>)>,
        how: u8,
    },
    /// The next `rows` records of session `sid`: one row, or a batch of them; with `gap`, a
    /// seq is skipped first (an engine never leaves one; coalescing must not close it).
    Log {
        sid: u8,
        rows: u8,
        how: u8,
        gap: bool,
    },
    Flush,
    Get(u8, u8),
    ReadValue(u8, u8),
    Scan(u8, u8, u8, bool),
    ReadLast(u8, u8, u8),
    /// A floor lookup within one session's log.
    LogFloor(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            prop::collection::vec((0..3u8, any::<u8>(), prop::option::of(0..40u8)), 1..6),
            0..4u8
        )
            .prop_map(|(ops, how)| Op::Write { ops, how }),
        (0..3u8, 1..5u8, 0..4u8, prop::bool::weighted(0.25)).prop_map(|(sid, rows, how, gap)| {
            Op::Log {
                sid,
                rows,
                how,
                gap,
            }
        }),
        Just(Op::Flush),
        (0..3u8, any::<u8>()).prop_map(|(t, a)| Op::Get(t, a)),
        (0..3u8, any::<u8>()).prop_map(|(t, a)| Op::ReadValue(t, a)),
        (0..3u8, any::<u8>(), any::<u8>(), any::<bool>())
            .prop_map(|(t, a, b, r)| Op::Scan(t, a, b, r)),
        (0..3u8, any::<u8>(), any::<u8>()).prop_map(|(t, a, b)| Op::ReadLast(t, a, b)),
        (0..3u8, any::<u8>()).prop_map(|(sid, s)| Op::LogFloor(sid, s)),
    ]
}

fn write(kv: &dyn Kv, batch: WriteBatch, how: u8) {
    // Mostly buffered, so that the buffer holds several commits when it is handed over.
    match how % 4 {
        0 | 1 => kv.apply_buffered(batch, how == 0).unwrap(),
        2 => kv.apply(batch).unwrap(),
        _ => kv.apply_ordered(batch).unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_write_buffer_reads_and_writes_as_the_backend_alone(ops in prop::collection::vec(op(), 1..60)) {
        let base = Faulty::default();
        let buffered = BufferedKv::new(Box::new(base.clone()), std::sync::Arc::new(grove::LogCoalesce)).unwrap();
        let oracle = MemoryKv::new();
        let mut next_seq = [0u64; 3];
        for op in ops {
            match op {
                Op::Write { ops, how } => {
                    let mut batch = WriteBatch::new();
                    for (t, a, len) in ops {
                        match len {
                            Some(len) => batch.put(key(t, a), vec![a; len as usize]),
                            None => batch.delete(key(t, a)),
                        }
                    }
                    oracle.apply(batch.clone()).unwrap();
                    write(&buffered, batch, how);
                }
                Op::Log { sid, rows, how, gap } => {
                    let sid = u64::from(sid);
                    next_seq[sid as usize] += u64::from(gap);
                    let first = next_seq[sid as usize];
                    let value = if rows == 1 {
                        row(sid, first, 20)
                    } else {
                        let mut pack = LogPackWriter::new();
                        for seq in first..first + u64::from(rows) {
                            pack.push(&row(sid, seq, 20)).unwrap();
                        }
                        pack.take_batch()
                    };
                    next_seq[sid as usize] += u64::from(rows);
                    let mut batch = WriteBatch::new();
                    batch.put(log_key(sid, first), value);
                    oracle.apply(batch.clone()).unwrap();
                    write(&buffered, batch, how);
                }
                Op::Flush => {
                    buffered.flush().unwrap();
                    // Everything is in the backend now, log values perhaps coalesced.
                    prop_assert_eq!(logical(&base), logical(&oracle));
                }
                Op::Get(t, a) => {
                    prop_assert_eq!(buffered.get(&key(t, a)).unwrap(), oracle.get(&key(t, a)).unwrap());
                }
                Op::ReadValue(t, a) => {
                    let mut seen = None;
                    let found = buffered.read_value(&key(t, a), &mut |v| seen = Some(v.to_vec())).unwrap();
                    prop_assert_eq!(found, seen.is_some());
                    prop_assert_eq!(seen, oracle.get(&key(t, a)).unwrap());
                }
                Op::Scan(t, a, b, rev) => {
                    let (start, end) = (key(t, a), key(t, b));
                    let got: Vec<_> = if rev { buffered.scan_rev(&start, &end) } else { buffered.scan(&start, &end) }
                        .map(Result::unwrap).collect();
                    let want: Vec<_> = if rev { oracle.scan_rev(&start, &end) } else { oracle.scan(&start, &end) }
                        .map(Result::unwrap).collect();
                    prop_assert_eq!(got, want);
                }
                Op::ReadLast(t, a, b) => {
                    let (start, end) = (key(t, a), key(t, b));
                    let mut got = None;
                    buffered.read_last(&start, &end, &mut |k, v| got = Some((k.to_vec(), v.to_vec()))).unwrap();
                    let mut want = None;
                    oracle.read_last(&start, &end, &mut |k, v| want = Some((k.to_vec(), v.to_vec()))).unwrap();
                    prop_assert_eq!(got, want);
                }
                Op::LogFloor(sid, s) => {
                    // The row of record `seq` in the value holding it: the greatest log key
                    // ≤ it (absent in a gap or past the end).
                    let sid = u64::from(sid);
                    let seq = u64::from(s) % (next_seq[sid as usize] + 1);
                    let mut end = log_key(sid, seq);
                    end.push(0);
                    let floor = |kv: &dyn Kv| {
                        let mut found = None;
                        kv.read_last(&log_key(sid, 0), &end, &mut |k, v| {
                            let first = u64::from_be_bytes(k[9..17].try_into().unwrap());
                            found = LogValue::parse(v).unwrap().row((seq - first) as usize).map(<[u8]>::to_vec);
                        }).unwrap();
                        found
                    };
                    prop_assert_eq!(floor(&buffered), floor(&oracle));
                }
            }
            prop_assert_eq!(logical(&buffered), logical(&oracle));
        }
        drop(buffered);
        // Dropping the store hands the rest over.
        prop_assert_eq!(logical(&base), logical(&oracle));
    }
}

#[test]
fn consecutive_log_values_of_a_session_are_coalesced_within_the_pack_limits() {
    let base = Faulty::default();
    let buffered = BufferedKv::new(
        Box::new(base.clone()),
        std::sync::Arc::new(grove::LogCoalesce),
    )
    .unwrap();
    // 600 single rows of session 1 and 3 of session 2.
    // (One buffered write, so that the background thread cannot hand over a part of it.)
    let mut b = WriteBatch::new();
    for seq in 0..600 {
        b.put(log_key(1, seq), row(1, seq, 100));
    }
    for seq in 0..3 {
        b.put(log_key(2, seq), row(2, seq, 100));
    }
    buffered.apply_buffered(b, true).unwrap();
    buffered.flush().unwrap();
    let keys: Vec<Vec<u8>> = all(&base).into_iter().map(|(k, _)| k).collect();
    // 600 rows: packs of 256 records (the limit) → keys 0, 256, 512; session 2: one batch.
    assert_eq!(
        keys,
        vec![
            log_key(1, 0),
            log_key(1, 256),
            log_key(1, 512),
            log_key(2, 0)
        ]
    );
    let (log, _) = logical(&base);
    assert_eq!(log.len(), 603);
    assert_eq!(log[&(1, 300)], row(1, 300, 100));
    // Large rows: a pack closes once its rows reach 128 KiB.
    let base = Faulty::default();
    let buffered = BufferedKv::new(
        Box::new(base.clone()),
        std::sync::Arc::new(grove::LogCoalesce),
    )
    .unwrap();
    let mut b = WriteBatch::new();
    for seq in 0..10 {
        b.put(log_key(3, seq), row(3, seq, 40_000));
    }
    buffered.apply_buffered(b, true).unwrap();
    buffered.flush().unwrap();
    let values = all(&base);
    assert!(values.len() >= 3, "{} values", values.len());
    for (k, v) in &values {
        let value = LogValue::parse(v).unwrap();
        let bytes: usize = (0..value.len()).map(|i| value.row(i).unwrap().len()).sum();
        assert!(
            bytes < 128 * 1024 + 40_002,
            "{k:02x?}: {bytes} bytes in one value"
        );
    }
    assert_eq!(logical(&base).0.len(), 10);
}

#[test]
fn the_buffer_is_handed_over_in_the_background_and_on_drop() {
    let base = Faulty::default();
    let buffered = BufferedKv::new(
        Box::new(base.clone()),
        std::sync::Arc::new(grove::LogCoalesce),
    )
    .unwrap();
    let mut b = WriteBatch::new();
    b.put(vec![0x01, 1], b"one".to_vec());
    buffered.apply_buffered(b, false).unwrap();
    assert_eq!(
        buffered.get(&[0x01, 1]).unwrap().as_deref(),
        Some(&b"one"[..])
    );
    // No flush: the background thread hands it over within a few intervals.
    let deadline = std::time::Instant::now() + BUFFER_INTERVAL * 100;
    while base.get(&[0x01, 1]).unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "never handed over");
        std::thread::sleep(BUFFER_INTERVAL / 5);
    }
    let mut b = WriteBatch::new();
    b.put(vec![0x01, 2], b"two".to_vec());
    buffered.apply_buffered(b, false).unwrap();
    drop(buffered);
    assert_eq!(base.get(&[0x01, 2]).unwrap().as_deref(), Some(&b"two"[..]));
}

#[test]
fn a_write_past_the_buffer_comes_after_everything_buffered() {
    let base = Faulty::default();
    let buffered = BufferedKv::new(
        Box::new(base.clone()),
        std::sync::Arc::new(grove::LogCoalesce),
    )
    .unwrap();
    // Counted before the buffered write: the background thread may hand it over first.
    let applies = Faulty::count(&base.applies);
    let mut b = WriteBatch::new();
    b.put(vec![0x01, 1], b"buffered".to_vec());
    buffered.apply_buffered(b, false).unwrap();
    let mut b = WriteBatch::new();
    b.put(vec![0x01, 1], b"through".to_vec());
    buffered.apply(b).unwrap();
    // Two writes reached the backend, in order: the buffer, then the write.
    assert_eq!(Faulty::count(&base.applies), applies + 2);
    assert_eq!(
        base.get(&[0x01, 1]).unwrap().as_deref(),
        Some(&b"through"[..])
    );
    assert_eq!(
        buffered.get(&[0x01, 1]).unwrap().as_deref(),
        Some(&b"through"[..])
    );
}

#[test]
fn a_failed_hand_over_keeps_the_writes_readable_and_refuses_more() {
    let base = Faulty::default();
    let buffered = BufferedKv::new(
        Box::new(base.clone()),
        std::sync::Arc::new(grove::LogCoalesce),
    )
    .unwrap();
    let mut b = WriteBatch::new();
    b.put(vec![0x01, 1], b"kept".to_vec());
    buffered.apply_buffered(b, false).unwrap();
    Faulty::set(&base.fail_apply, true);
    assert!(buffered.flush().is_err());
    assert_eq!(
        buffered.get(&[0x01, 1]).unwrap().as_deref(),
        Some(&b"kept"[..])
    );
    let mut b = WriteBatch::new();
    b.put(vec![0x01, 2], b"refused".to_vec());
    assert!(matches!(
        buffered.apply_buffered(b, false),
        Err(KvError::Buffer(_))
    ));
    assert!(matches!(buffered.flush(), Err(KvError::Buffer(_))));
}

#[test]
fn single_appends_reach_sled_as_batches_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = || StoreConfig::new(dir.path()).durability(Durability::None);
    let (id, ids) = {
        let store = Store::open_with(config()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        // 100 records handed over first: the batches of the next ones (256 records each)
        // then straddle the id runs' bounds and head checkpoints (multiples of 256).
        let mut ids: Vec<String> = (0..100)
            .map(|i| s.append(super::user(&format!("entry {i}"))).unwrap())
            .collect();
        store.flush().unwrap();
        ids.extend((100..1000).map(|i| s.append(super::user(&format!("entry {i}"))).unwrap()));
        store.flush().unwrap();
        let sid = super::sid_of(&store, s.id());
        let start = grove::keys::session_prefix(grove::keys::T_LOG, sid);
        let keys = store
            .kv()
            .scan(&start, &grove::keys::prefix_end(&start))
            .count();
        assert!(keys < 100, "{keys} log keys for 1,000 single appends");
        (s.id().to_owned(), ids)
    };
    let store = Store::open_with(config()).unwrap();
    let s = store.session(&id).unwrap();
    assert_eq!(s.entries().count(), 1000);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(s.entry(id).unwrap().seq, i as u64);
    }
    let texts = super::texts(&s);
    assert_eq!(texts.len(), 1000);
    assert_eq!(texts[999], "entry 999");
    assert_eq!(s.leaf().unwrap().as_deref(), Some(ids[999].as_str()));
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn without_the_write_buffer_each_append_reaches_the_backend_as_it_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let log_keys = |buffer: bool| {
        let path = dir.path().join(format!("buffer-{buffer}"));
        let store = Store::open_with(
            StoreConfig::new(&path)
                .durability(Durability::None)
                .write_buffer(buffer),
        )
        .unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        for i in 0..300 {
            s.append(super::user(&format!("entry {i}"))).unwrap();
        }
        store.flush().unwrap();
        let start = grove::keys::session_prefix(grove::keys::T_LOG, super::sid_of(&store, s.id()));
        let keys = store
            .kv()
            .scan(&start, &grove::keys::prefix_end(&start))
            .count();
        assert_eq!(s.entries().count(), 300);
        keys
    };
    // One log key per append, against a few batches.
    assert_eq!(log_keys(false), 300);
    assert!(log_keys(true) < 30);
}

/// Writers on several sessions and readers at once, through hand-overs (by size, by the
/// background thread, by `Sync` writes that go past the buffer): an entry once read stays
/// readable with the same bytes, every session reads back whole, and the reopened store
/// verifies clean.
#[test]
fn concurrent_writers_and_readers_see_every_entry_through_hand_overs() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let config = || StoreConfig::new(dir.path()).durability(Durability::None);
    let store = Store::open_with(config()).unwrap();
    let sessions: Vec<String> = (0..3)
        .map(|_| {
            store
                .create_session(CreateSession::default())
                .unwrap()
                .id()
                .to_owned()
        })
        .collect();
    let written: Vec<parking_lot::Mutex<Vec<(String, String)>>> =
        sessions.iter().map(|_| Default::default()).collect();
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let mut writers = Vec::new();
        for (w, id) in sessions.iter().enumerate() {
            let (store, written) = (&store, &written);
            writers.push(scope.spawn(move || {
                let s = store.session(id).unwrap();
                for i in 0..1500 {
                    let text = format!("s{w} entry {i}");
                    let new = if i % 50 == 49 {
                        // A write that goes past the buffer: it is handed over first.
                        s.append_with(
                            super::user(&text),
                            grove::AppendOptions {
                                durability: Some(Durability::Sync),
                                ..Default::default()
                            },
                        )
                        .unwrap()
                    } else if i % 7 == 0 {
                        s.append_many(&[super::user(&text)]).unwrap().remove(0)
                    } else {
                        s.append(super::user(&text)).unwrap()
                    };
                    let line = s.entry(&new).unwrap().line;
                    written[w].lock().push((new, line));
                }
            }));
        }
        for r in 0..2 {
            let (store, written, sessions, done) = (&store, &written, &sessions, &done);
            scope.spawn(move || {
                let mut rounds = 0;
                while !done.load(Ordering::SeqCst) || rounds < 3 {
                    rounds += 1;
                    for (w, id) in sessions.iter().enumerate() {
                        let s = store.session(id).unwrap();
                        // Everything written before this read began is readable, unchanged.
                        let seen: Vec<(String, String)> = written[w].lock().clone();
                        for (entry, line) in seen.iter().skip(r).step_by(3) {
                            assert_eq!(&s.entry(entry).unwrap().line, line, "{entry}");
                        }
                        let log: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
                        assert!(log.len() >= seen.len());
                        for ((_, line), stored) in seen.iter().zip(&log) {
                            assert_eq!(line, stored);
                        }
                        // A backward walk from the leaf (descending log scans), root first.
                        let path = s.path_to_root(None).unwrap();
                        assert!(path.len() >= seen.len());
                        for ((_, line), stored) in seen.iter().zip(&path) {
                            assert_eq!(line, &stored.line);
                        }
                        s.build_context().unwrap();
                    }
                }
            });
        }
        // The writers end first (a failed one fails the test); then the readers take their
        // last rounds.
        let failed = writers.into_iter().any(|w| w.join().is_err());
        done.store(true, Ordering::SeqCst);
        assert!(!failed, "a writer failed");
    });
    drop(store);
    let store = Store::open_with(config()).unwrap();
    for (w, id) in sessions.iter().enumerate() {
        let s = store.session(id).unwrap();
        let lines: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
        let expected: Vec<String> = written[w].lock().iter().map(|(_, l)| l.clone()).collect();
        assert_eq!(lines, expected);
    }
    assert!(store.verify().unwrap().is_ok());
}
