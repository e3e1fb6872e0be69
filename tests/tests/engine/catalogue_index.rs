//! The catalogue indexes (layout 15: working directory `0x09`, creation time `0x0A`, label
//! `0x0B`) that filtered listings read (`Store::sessions_page_where`, docs/design.md, "The
//! catalogue"): against an oracle of every session's own attributes through creations,
//! imports, forks, labels set, changed and cleared, redactions and deletions, reopened and
//! collected; built when a store of layout 14 opens; read, not scanned (a row removed by hand
//! hides its session, and `verify` says so).

use std::io::Cursor;

use grove::{keys, CreateSession, ForkOptions, ImportOptions, SessionFilter, Store, StoreConfig};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const CWDS: [&str; 4] = ["/w/a", "/w/b", "/w/c", "/w/d"];
const LABELS: [&str; 3] = ["keep", "review", "bug"];

fn day(d: u64) -> i64 {
    grove::codec::time::parse_ms(&format!("2025-03-{d:02}T00:00:00.000Z")).unwrap()
}

/// pi JSONL of a session created on day `d` of March 2025 in `cwd`, one message, labelled
/// `label` when given.
fn jsonl(id: &str, d: u64, cwd: &str, label: Option<&str>) -> String {
    let t = format!("2025-03-{d:02}T00:00:00.000Z");
    let mut lines = vec![
        format!(r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{t}","cwd":"{cwd}"}}"#),
        format!(
            r#"{{"type":"message","id":"00000001","parentId":null,"timestamp":"{t}","message":{{"role":"user","content":"hi","timestamp":1}}}}"#
        ),
    ];
    if let Some(l) = label {
        lines.push(format!(
            r#"{{"type":"label","id":"00000002","parentId":"00000001","timestamp":"{t}","targetId":"00000001","label":"{l}"}}"#
        ));
    }
    lines.join("\n") + "\n"
}

/// The filters the oracle checks: each indexed condition alone, each with a condition weighed
/// on the candidates, and the creation range open at either end.
fn filters() -> Vec<SessionFilter> {
    let mut out = Vec::new();
    for cwd in CWDS {
        out.push(SessionFilter {
            cwd: Some(cwd.into()),
            ..SessionFilter::default()
        });
    }
    for label in LABELS {
        out.push(SessionFilter {
            label: Some(format!(" {label} ")),
            ..SessionFilter::default()
        });
        out.push(SessionFilter {
            label: Some(label.into()),
            cwd: Some("/w/b".into()),
            ..SessionFilter::default()
        });
    }
    out.push(SessionFilter {
        label: Some("[redacted]".into()),
        ..SessionFilter::default()
    });
    for (from, until) in [(Some(3), Some(9)), (Some(20), None), (None, Some(5))] {
        out.push(SessionFilter {
            created_from: from.map(day),
            created_until: until.map(day),
            ..SessionFilter::default()
        });
    }
    out.push(SessionFilter {
        created_from: Some(day(10)),
        label: Some("keep".into()),
        ..SessionFilter::default()
    });
    // Last activity: ranges over the imported days, and the last hour (what was written now).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let hour_ago = i64::try_from(now.as_millis()).unwrap() - 3_600_000;
    for (from, until) in [
        (Some(day(10)), Some(day(20))),
        (None, Some(day(7))),
        (Some(hour_ago), None),
    ] {
        out.push(SessionFilter {
            updated_from: from,
            updated_until: until,
            ..SessionFilter::default()
        });
    }
    out.push(SessionFilter {
        updated_from: Some(hour_ago),
        cwd: Some("/w/a".into()),
        ..SessionFilter::default()
    });
    out
}

/// What a filter should list: every session whose own record and labels pass, in id order.
fn oracle(store: &Store, filter: &SessionFilter) -> Vec<String> {
    let mut out = Vec::new();
    for summary in store.sessions().unwrap() {
        let s = store.session(&summary.id).unwrap();
        let created = grove::codec::time::parse_ms(&summary.created);
        let passes = filter.cwd.as_ref().is_none_or(|c| *c == summary.cwd)
            && filter.label.as_ref().is_none_or(|l| {
                s.labels()
                    .unwrap()
                    .values()
                    .any(|have| have.label == l.trim())
            })
            && filter
                .created_from
                .is_none_or(|f| created.is_some_and(|c| c >= f))
            && filter
                .created_until
                .is_none_or(|u| created.is_some_and(|c| c < u))
            && {
                let last = s.head().unwrap().last_timestamp;
                let updated = last
                    .as_deref()
                    .and_then(grove::codec::time::parse_ms)
                    .or(created);
                filter
                    .updated_from
                    .is_none_or(|f| updated.is_some_and(|t| t >= f))
                    && filter
                        .updated_until
                        .is_none_or(|u| updated.is_some_and(|t| t < u))
            };
        if passes {
            out.push(summary.id);
        }
    }
    out.sort();
    out
}

/// Every page of `filter` walked from the start with pages of `limit`, both ways, equals the
/// oracle; how many sessions it lists.
fn check(store: &Store, filter: &SessionFilter, when: &str) -> usize {
    let want = oracle(store, filter);
    for descending in [false, true] {
        for limit in [2, 7] {
            let mut walked = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = store
                    .sessions_page_where(after.as_deref(), limit, descending, filter)
                    .unwrap();
                walked.extend(page.iter().map(|s| s.id.clone()));
                if page.len() < limit {
                    break;
                }
                after = walked.last().cloned();
            }
            let mut expected = want.clone();
            if descending {
                expected.reverse();
            }
            assert_eq!(
                walked, expected,
                "{when}: {filter:?}, limit {limit}, descending {descending}"
            );
        }
    }
    want.len()
}

fn check_all(store: &Store, when: &str) {
    let listed: usize = filters().iter().map(|f| check(store, f, when)).sum();
    assert!(
        listed > 20,
        "{when}: the filters list {listed} sessions in all"
    );
}

/// Catalogue index rows of the store.
fn index_rows(store: &Store) -> usize {
    store
        .kv()
        .scan(&[keys::T_BY_CWD], &[keys::T_BY_UPDATED + 1])
        .count()
}

/// A store built by random operations, with the oracle checked along the way.
fn build(store: &Store, seed: u64) {
    let mut rng = Rng(seed);
    let mut n = 0;
    for step in 0..160 {
        let ids: Vec<String> = store
            .sessions()
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        let pick = |rng: &mut Rng| ids[rng.below(ids.len() as u64) as usize].clone();
        match rng.below(10) {
            0..=2 => {
                n += 1;
                let label = (rng.below(2) == 0).then(|| LABELS[rng.below(3) as usize]);
                let text = jsonl(
                    &format!("imp-{n:03}"),
                    1 + rng.below(28),
                    CWDS[rng.below(4) as usize],
                    label,
                );
                store
                    .import_reader(Cursor::new(text), ImportOptions::default())
                    .unwrap();
            }
            3 => {
                n += 1;
                let s = store
                    .create_session(CreateSession {
                        id: Some(format!("new-{n:03}")),
                        cwd: CWDS[rng.below(4) as usize].into(),
                        ..CreateSession::default()
                    })
                    .unwrap();
                s.append(super::user("hello")).unwrap();
            }
            4..=6 if !ids.is_empty() => {
                // Set, change or clear a label of one of the session's entries.
                let s = store.session(&pick(&mut rng)).unwrap();
                let entries: Vec<String> =
                    s.entries().map(|e| e.unwrap().id().to_owned()).collect();
                let Some(target) = entries.first() else {
                    continue;
                };
                let label = match rng.below(4) {
                    0 => None,
                    k => Some(LABELS[(k - 1) as usize]),
                };
                s.set_label(target, label).unwrap();
            }
            7 if !ids.is_empty() => {
                n += 1;
                let source = store.session(&pick(&mut rng)).unwrap();
                store
                    .fork(
                        &source,
                        ForkOptions {
                            id: Some(format!("fork-{n:03}")),
                            cwd: (rng.below(2) == 0).then(|| CWDS[rng.below(4) as usize].into()),
                            ..ForkOptions::default()
                        },
                    )
                    .unwrap();
            }
            8 if !ids.is_empty() => {
                // Redact the label entry that set a current label.
                let s = store.session(&pick(&mut rng)).unwrap();
                let labels = s.labels().unwrap();
                let setter = labels
                    .values()
                    .find(|l| l.label != "[redacted]")
                    .map(|l| l.set_by.clone());
                if let Some(setter) = setter {
                    s.redact(&setter, None, "test").unwrap();
                }
            }
            9 if ids.len() > 5 => store.delete_session(&pick(&mut rng)).unwrap(),
            _ => {}
        }
        if step % 40 == 39 {
            check_all(store, &format!("seed {seed}, step {step}"));
        }
    }
}

#[test]
fn filtered_listings_read_the_indexes_and_list_what_an_oracle_lists() {
    for seed in [7, 1_234_567] {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            build(&store, seed);
            check_all(&store, "built");
            store.flush().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        check_all(&store, "reopened");
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "seed {seed}: {:?}", report.problems);
        // Rows of sessions deleted after their labels changed are gc's.
        let before = index_rows(&store);
        let removed = store.gc().unwrap().catalogue_rows_removed;
        assert_eq!(index_rows(&store), before - removed as usize);
        assert_eq!(store.gc().unwrap().catalogue_rows_removed, 0);
        check_all(&store, "collected");
        assert!(store.verify().unwrap().is_ok());
    }
}

/// The same on PostgreSQL (`GROVE_TEST_PG`), where another process's store lists what this
/// one wrote.
#[test]
fn filtered_listings_on_a_shared_store_list_what_an_oracle_lists() {
    let Some(table) = grove_tests::pg::Table::new("catalogue") else {
        return;
    };
    let open = || Store::open_with(StoreConfig::new("").backend(table.backend())).unwrap();
    let store = open();
    build(&store, 31);
    let other = open();
    check_all(&other, "another store");
    let report = other.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn the_indexes_are_built_when_an_older_store_opens_and_scanned_around_when_read_only() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        build(&store, 99);
        // As layout 14 left it: no catalogue index.
        let mut batch = grove::kv::WriteBatch::new();
        for pair in store
            .kv()
            .scan(&[keys::T_BY_CWD], &[keys::T_BY_UPDATED + 1])
        {
            batch.delete(pair.unwrap().0);
        }
        batch.put(keys::meta(keys::META_FORMAT), b"grove\x00\x0e".to_vec());
        store.kv().apply(batch).unwrap();
        assert_eq!(index_rows(&store), 0);
        store.flush().unwrap();
    }
    {
        // Read only, the store stays as it is, and its filtered listings scan the catalogue.
        let store = Store::open_with(StoreConfig::new(dir.path()).read_only(true)).unwrap();
        assert_eq!(index_rows(&store), 0);
        check_all(&store, "read-only, layout 14");
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store
            .kv()
            .get(&keys::meta(keys::META_FORMAT))
            .unwrap()
            .as_deref(),
        Some(&b"grove\x00\x0f"[..])
    );
    assert!(index_rows(&store) > 0);
    check_all(&store, "upgraded");
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// A filtered listing reads the index: a row removed by hand hides its session from the
/// filter it serves (and from no other), and `verify` names the index.
#[test]
fn a_missing_index_row_hides_its_session_and_verify_reports_it() {
    let store = Store::temporary().unwrap();
    for (i, cwd) in ["/x", "/y", "/x"].into_iter().enumerate() {
        let s = store
            .create_session(CreateSession {
                id: Some(format!("s{i}")),
                cwd: cwd.into(),
                ..CreateSession::default()
            })
            .unwrap();
        let e = s.append(super::user("hi")).unwrap();
        s.set_label(&e, Some("keep")).unwrap();
    }
    let by_cwd = SessionFilter {
        cwd: Some("/x".into()),
        ..SessionFilter::default()
    };
    let by_label = SessionFilter {
        label: Some("keep".into()),
        ..SessionFilter::default()
    };
    let ids = |f: &SessionFilter| -> Vec<String> {
        store
            .sessions_page_where(None, 10, false, f)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect()
    };
    assert_eq!(ids(&by_cwd), ["s0", "s2"]);
    assert_eq!(ids(&by_label), ["s0", "s1", "s2"]);
    assert!(store.verify().unwrap().is_ok());
    let sid = super::sid_of(&store, "s2");
    let mut batch = grove::kv::WriteBatch::new();
    batch.delete(keys::by_cwd("/x", "s2", sid));
    store.kv().apply(batch).unwrap();
    assert_eq!(ids(&by_cwd), ["s0"]);
    assert_eq!(ids(&by_label), ["s0", "s1", "s2"]);
    let report = store.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].session, "s2");
    assert!(report.problems[0].what.contains("working directory index"));
}

/// A creation range races the catalogue: with ids in creation order, a range at the cursor is
/// filled from the catalogue and one far from it from the index; both list what the oracle
/// lists, from any cursor, both ways.
#[test]
fn creation_ranges_near_and_far_from_the_cursor_list_what_an_oracle_lists() {
    let store = Store::temporary().unwrap();
    for i in 0..300u64 {
        let text = jsonl(
            &format!("c{i:03}"),
            1 + i / 12,
            CWDS[(i % 4) as usize],
            None,
        );
        store
            .import_reader(Cursor::new(text), ImportOptions::default())
            .unwrap();
    }
    for (from, until) in [(1, 3), (24, 26), (12, 13), (25, 29)] {
        let filter = SessionFilter {
            created_from: Some(day(from)),
            created_until: Some(day(until)),
            ..SessionFilter::default()
        };
        assert!(check(&store, &filter, "ids in creation order") >= 12);
        // From a cursor inside the range.
        let want = oracle(&store, &filter);
        let page = store
            .sessions_page_where(Some(&want[3]), 5, false, &filter)
            .unwrap();
        let ids: Vec<&str> = page.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            want[4..9].iter().map(String::as_str).collect::<Vec<_>>()
        );
    }
}

/// A session whose label rows do not decode does not keep an older store from opening: the
/// upgrade indexes what reads, a listing that must weigh the damage says so, and `verify`
/// reports it.
#[test]
fn a_damaged_session_does_not_keep_an_older_store_from_being_indexed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        for (id, cwd) in [("good", "/g"), ("bad", "/b")] {
            let s = store
                .create_session(CreateSession {
                    id: Some(id.into()),
                    cwd: cwd.into(),
                    ..CreateSession::default()
                })
                .unwrap();
            let e = s.append(super::user("hi")).unwrap();
            s.set_label(&e, Some("keep")).unwrap();
        }
        let sid = super::sid_of(&store, "bad");
        let mut batch = grove::kv::WriteBatch::new();
        for pair in store
            .kv()
            .scan(&[keys::T_BY_CWD], &[keys::T_BY_UPDATED + 1])
        {
            batch.delete(pair.unwrap().0);
        }
        batch.put(keys::label(sid, "x"), b"not a label record".to_vec());
        batch.put(keys::meta(keys::META_FORMAT), b"grove\x00\x0e".to_vec());
        store.kv().apply(batch).unwrap();
        store.flush().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let by_label = SessionFilter {
        label: Some("keep".into()),
        ..SessionFilter::default()
    };
    // Weighing the damaged session's labels fails, and says so.
    let err = store
        .sessions_page_where(None, 10, false, &by_label)
        .unwrap_err();
    assert!(matches!(err, grove::GroveError::Corrupt(_)), "{err}");
    let by_cwd = SessionFilter {
        cwd: Some("/g".into()),
        label: Some("keep".into()),
        ..SessionFilter::default()
    };
    let page = store.sessions_page_where(None, 10, false, &by_cwd).unwrap();
    assert_eq!(page.len(), 1);
    let by_cwd = SessionFilter {
        cwd: Some("/b".into()),
        ..SessionFilter::default()
    };
    let page = store.sessions_page_where(None, 10, false, &by_cwd).unwrap();
    assert_eq!(page.len(), 1);
    let report = store.verify().unwrap();
    assert!(!report.is_ok());
    assert!(
        report.problems.iter().all(|p| p.session == "bad"),
        "{:?}",
        report.problems
    );
}
