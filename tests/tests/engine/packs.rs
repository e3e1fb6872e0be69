//! Imported sessions keep their records in log packs and their ids in id packs; entries
//! appended afterwards use single rows. Every id lookup, prefix resolution, path and log read
//! must see one log, whichever way each record is stored — checked against a plain map.

use std::collections::BTreeMap;
use std::io::Write;

use grove::{AppendOptions, GroveError, ImportOptions, Session, Store, StoreConfig};

use super::user;

/// Ids that are prefixes of one another across pack boundaries: hex numbers of varied length.
pub(super) fn id_of(i: usize) -> String {
    format!("{:x}", (i * 7919) % 5003)
}

pub(super) fn line(id: &str, parent: Option<&str>) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2030-01-01T00:00:00.000Z","message":{{"role":"user","content":"text of {id}","timestamp":1}}}}"#
    )
}

/// The oracle: each id's last occurrence, as a line.
pub(super) type Oracle = BTreeMap<String, String>;

pub(super) fn check(s: &Session, oracle: &Oracle) {
    for (id, expected) in oracle {
        assert_eq!(&s.entry(id).unwrap().line, expected, "entry {id}");
    }
    for absent in ["", "zz", "fffff", "10000"] {
        if !oracle.contains_key(absent) {
            assert!(matches!(s.entry(absent), Err(GroveError::EntryNotFound(_))));
        }
    }
    // Every prefix of one or two characters, and of three for the first few.
    let hex = "0123456789abcdef".chars();
    let mut prefixes: Vec<String> = hex.clone().map(String::from).collect();
    for a in hex.clone() {
        for b in hex.clone() {
            prefixes.push(format!("{a}{b}"));
        }
    }
    prefixes.extend(["1a0", "100", "12f", "fff"].map(String::from));
    for p in prefixes {
        let matching: Vec<&String> = oracle.keys().filter(|id| id.starts_with(&p)).collect();
        let got = s.resolve_entry(&p);
        if oracle.contains_key(&p) {
            assert_eq!(got.unwrap(), Some(p.clone()));
            continue;
        }
        match matching.len() {
            0 => assert!(
                matches!(got, Err(GroveError::EntryNotFound(_))),
                "{p}: {got:?}"
            ),
            1 => assert_eq!(got.unwrap().as_ref(), Some(matching[0]), "{p}"),
            _ => assert!(
                matches!(got, Err(GroveError::AmbiguousPrefix { .. })),
                "{p}: {got:?}"
            ),
        }
    }
}

#[test]
fn ids_and_prefixes_resolve_across_packs_and_single_rows() {
    const N: usize = 1_500;
    let dir = tempfile::tempdir().unwrap();
    let open = || Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let mut text = Vec::new();
    writeln!(text, r#"{{"type":"session","version":3,"id":"packs","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}}"#).unwrap();
    let mut oracle = Oracle::new();
    let mut order = Vec::new();
    let mut parent: Option<String> = None;
    for i in 0..N {
        // Every 97th record repeats an earlier id: the last occurrence wins.
        let id = if i % 97 == 96 { id_of(i / 2) } else { id_of(i) };
        let l = line(&id, parent.as_deref());
        writeln!(text, "{l}").unwrap();
        oracle.insert(id.clone(), l.clone());
        order.push(l);
        parent = Some(id);
    }
    let store = open();
    store
        .import_reader(std::io::Cursor::new(text), ImportOptions::default())
        .unwrap();
    let s = store.session("packs").unwrap();
    check(&s, &oracle);
    // The whole log reads back in order, packs and all.
    let log: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
    assert_eq!(log, order);
    // An imported id cannot be appended again; new ids go to single rows.
    for taken in [id_of(0), id_of(N / 2), id_of(N - 1)] {
        let again = s.append_with(
            user("again"),
            AppendOptions {
                id: Some(taken.clone()),
                ..Default::default()
            },
        );
        assert!(matches!(again, Err(GroveError::DuplicateId(_))), "{taken}");
    }
    // An id the filter cannot rule out, yet not in the session, is still free: the id packs
    // decide.
    let filter =
        grove_codec::pack::IdFilter::build(oracle.len(), oracle.keys().map(String::as_str));
    let false_positive = (0..100_000)
        .map(|i| format!("fp-{i}"))
        .find(|id| filter.may_contain(id))
        .unwrap();
    s.append_with(
        user("false positive"),
        AppendOptions {
            id: Some(false_positive.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    oracle.insert(
        false_positive.clone(),
        s.entry(&false_positive).unwrap().line,
    );
    for new in ["1000a", "fff0", "zz", "1"] {
        if oracle.contains_key(new) {
            continue;
        }
        s.append_with(
            user(new),
            AppendOptions {
                id: Some(new.to_owned()),
                ..Default::default()
            },
        )
        .unwrap();
        oracle.insert(new.to_owned(), s.entry(new).unwrap().line);
    }
    check(&s, &oracle);
    drop(s);
    drop(store);
    let store = open();
    check(&store.session("packs").unwrap(), &oracle);
    assert!(store.verify().unwrap().is_ok());
}

/// An in-memory store holding session `id` imported from a chain of 300 entries (two log
/// packs), and its internal number.
fn imported_chain(id: &str) -> (Store, u64) {
    let mut text = Vec::new();
    writeln!(text, r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}}"#).unwrap();
    let mut parent = None;
    for i in 0..300 {
        let entry = format!("e{i}");
        writeln!(text, "{}", line(&entry, parent.as_deref())).unwrap();
        parent = Some(entry);
    }
    let store = Store::in_memory().unwrap();
    store
        .import_reader(std::io::Cursor::new(text), ImportOptions::default())
        .unwrap();
    let sid = store
        .kv()
        .get(&grove::keys::session_id(id))
        .unwrap()
        .unwrap();
    let sid = u64::from_be_bytes(sid.try_into().unwrap());
    (store, sid)
}

#[test]
fn verify_reports_a_log_that_breaks_the_pack_layout() {
    use grove::kv::WriteBatch;
    /// Damage done through the key-value layer to the session `sid`.
    type Damage = fn(u64, &Store) -> WriteBatch;
    let damage: [(&str, Damage); 3] = [
        ("log row 0 below the packed count", |sid, store| {
            // A single row where packs hold the record.
            let row = store
                .kv()
                .get(&grove::keys::log_pack(sid, 0))
                .unwrap()
                .unwrap();
            let mut b = WriteBatch::new();
            b.put(grove::keys::log(sid, 0), row);
            b
        }),
        ("log pack at 256 does not follow record 0", |sid, _| {
            let mut b = WriteBatch::new();
            b.delete(grove::keys::log_pack(sid, 0));
            b
        }),
        ("packed count 301 exceeds next_seq 300", |sid, _| {
            let mut b = WriteBatch::new();
            b.put(grove::keys::packed(sid), 301u64.to_be_bytes().to_vec());
            b
        }),
    ];
    for (expected, damage) in damage {
        let (store, sid) = imported_chain("layout");
        assert!(store.verify().unwrap().is_ok());
        store.kv().apply(damage(sid, &store)).unwrap();
        let report = store.verify().unwrap();
        assert!(
            report.problems.iter().any(|p| p.what.contains(expected)),
            "{expected}: {:?}",
            report.problems
        );
    }
}

#[test]
fn a_missing_record_is_reported_by_every_log_read() {
    use grove::kv::WriteBatch;
    let (store, sid) = imported_chain("gap");
    let s = store.session("gap").unwrap();
    for i in 0..20 {
        s.append(user(&format!("appended {i}"))).unwrap();
        // Each handed to the backend alone: a single row (the write buffer coalesces the
        // rows it holds into batches).
        store.flush().unwrap();
    }
    // Record 310, a single row after the 300 packed records, disappears.
    let mut b = WriteBatch::new();
    b.delete(grove::keys::log(sid, 310));
    store.kv().apply(b).unwrap();
    let missing = |r: Result<(), GroveError>| {
        assert!(
            matches!(&r, Err(GroveError::Corrupt(m)) if m.contains("310")),
            "{r:?}"
        );
    };
    missing(s.log().try_for_each(|e| e.map(drop)));
    missing(s.path_to_root(None).map(drop));
    let report = store.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.what.contains("310")));
}
