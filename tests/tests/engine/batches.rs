//! Batches (docs/format.md, "Batches"): a transaction of several records stores their rows
//! under one log key per pack, keyed by the first record's seq; one record keeps its own row.
//! Every read finds a record inside a batch as it finds a single row.

use grove::keys;
use grove::{CreateSession, Store};
use grove_codec::pack::{LogValue, BATCH_MARK, LOG_PACK_RECORDS};

use super::{sid_of, user};

/// The log keys of session `sid`: (first seq, records held).
fn log_keys(store: &Store, sid: u64) -> Vec<(u64, usize)> {
    let table = keys::session_prefix(keys::T_LOG, sid);
    store
        .kv()
        .scan(&table, &keys::prefix_end(&table))
        .map(|pair| {
            let (k, v) = pair.unwrap();
            let held = LogValue::parse(&v).unwrap().len();
            assert_eq!(
                held > 1,
                v[0] == BATCH_MARK,
                "value at {:?}",
                keys::last_u64(&k)
            );
            (keys::last_u64(&k).unwrap(), held)
        })
        .collect()
}

#[test]
fn append_many_writes_one_log_key_per_pack_and_every_record_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let (id, ids) = {
        let store = Store::open(dir.path()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        let mut ids = vec![s.append(user("single")).unwrap()];
        let batch: Vec<_> = (0..600).map(|i| user(&format!("b{i}"))).collect();
        ids.extend(s.append_many(&batch).unwrap());
        ids.push(s.append(user("after")).unwrap());
        let sid = sid_of(&store, s.id());
        // The single rows, and the batch in packs of LOG_PACK_RECORDS (small rows).
        assert_eq!(
            log_keys(&store, sid),
            vec![
                (0, 1),
                (1, LOG_PACK_RECORDS),
                (1 + LOG_PACK_RECORDS as u64, LOG_PACK_RECORDS),
                (1 + 2 * LOG_PACK_RECORDS as u64, 600 - 2 * LOG_PACK_RECORDS),
                (601, 1)
            ]
        );
        (s.id().to_owned(), ids)
    };
    // A new process: ids, seqs, lines, paths and the listing, from inside batches too.
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.sessions().unwrap()[0].entries, 602);
    let s = store.session(&id).unwrap();
    for (seq, id) in ids.iter().enumerate() {
        let e = s.entry(id).unwrap();
        assert_eq!(e.seq, seq as u64);
        assert_eq!(s.entry_at(seq as u64).unwrap().id(), id);
    }
    // A branch from the middle of the second pack: its path runs back through two packs
    // and the first row.
    s.move_to(Some(&ids[300])).unwrap();
    let tip = s.append(user("branch")).unwrap();
    let path: Vec<String> = s
        .path_to_root(Some(&tip))
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    let expected: Vec<String> = ids[..=300].iter().cloned().chain([tip]).collect();
    assert_eq!(path, expected);
    assert_eq!(super::texts(&s).len(), 302);
    assert_eq!(s.entries().count(), 603);
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn a_damaged_batch_is_reported_not_misread() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    let ids = s.append_many(&[user("a"), user("b"), user("c")]).unwrap();
    let key = keys::log(sid_of(&store, s.id()), 0);
    let mut value = store.kv().get(&key).unwrap().unwrap();
    // Flip a byte of the batch's table (its count).
    value[3] ^= 0x10;
    let mut b = grove::kv::WriteBatch::new();
    b.put(key, value);
    store.kv().apply(b).unwrap();
    let report = store.verify().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.what.contains("log value at record 0")),
        "{:?}",
        report.problems
    );
    assert!(matches!(
        s.entry(&ids[1]),
        Err(grove::GroveError::Corrupt(m)) if m.contains("log value at record 0")
    ));
}
