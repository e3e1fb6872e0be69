//! Full-text search (`Store::search`): checked against an oracle that knows which entries
//! hold which words, through appends, labels, names, payloads, forks, imports, deletions and
//! reopening; the active-path flag, the filters, the rebuild and the check against the log.

use std::collections::{BTreeMap, BTreeSet};

use grove::{CreateSession, ForkOptions, ImportOptions, SearchOptions, Store, StoreConfig};

use super::{assistant, seed, user};

/// The (session, entry) pairs a search finds.
fn found(store: &Store, query: &str, options: &SearchOptions) -> BTreeSet<(String, String)> {
    let options = SearchOptions {
        limit: 10_000,
        ..options.clone()
    };
    let results = store.search(query, &options).unwrap();
    assert_eq!(results.total, results.hits.len(), "all hits returned");
    results
        .hits
        .into_iter()
        .map(|h| (h.session, h.entry))
        .collect()
}

/// Deterministic words: `w0` … `w29`, one rare (`w29`) and the rest common.
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn word(&mut self) -> String {
        format!("w{}", self.next() % 30)
    }
}

/// What the oracle knows: per word, the entries whose text holds it.
#[derive(Default)]
struct Oracle {
    words: BTreeMap<String, BTreeSet<(String, String)>>,
}

impl Oracle {
    fn add(&mut self, session: &str, entry: &str, text: &str) {
        for word in text.split_whitespace() {
            self.words
                .entry(word.to_owned())
                .or_default()
                .insert((session.to_owned(), entry.to_owned()));
        }
    }
    fn forget(&mut self, session: &str) {
        for hits in self.words.values_mut() {
            hits.retain(|(s, _)| s != session);
        }
    }
    fn check(&self, store: &Store, when: &str) {
        for w in 0..30 {
            let word = format!("w{w}");
            let expected = self.words.get(&word).cloned().unwrap_or_default();
            assert_eq!(
                found(store, &word, &SearchOptions::default()),
                expected,
                "{word} {when}"
            );
        }
    }
}

#[test]
fn every_acknowledged_entry_is_found_at_once_through_every_kind_of_write_and_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = || StoreConfig::new(dir.path());
    let mut oracle = Oracle::default();
    let mut words = Words(7);
    {
        let store = Store::open_with(config()).unwrap();
        store.set_payload_threshold(Some(64));
        let mut sessions = Vec::new();
        for round in 0..6 {
            let s = store.create_session(CreateSession::default()).unwrap();
            sessions.push(s.id().to_owned());
            for i in 0..12 {
                let text = format!("{} {} {}", words.word(), words.word(), words.word());
                // Every third message long enough to be stored as a payload.
                let text = if i % 3 == 0 {
                    format!("{text} {}", "padding ".repeat(20))
                } else {
                    text
                };
                let id = if i % 2 == 0 {
                    s.append(user(&text)).unwrap()
                } else {
                    s.append(assistant(&text)).unwrap()
                };
                oracle.add(s.id(), &id, &text);
                if i % 5 == 4 {
                    // Searched between appends: each one found as soon as it is written.
                    oracle.check(&store, &format!("round {round}, append {i}"));
                }
            }
            let label = words.word();
            let target = s.leaf().unwrap().unwrap();
            let label_id = s.set_label(&target, Some(&label)).unwrap();
            oracle.add(s.id(), &label_id, &label);
            let name = words.word();
            let name_id = s.set_name(&name).unwrap();
            oracle.add(s.id(), &name_id, &name);
        }
        oracle.check(&store, "after the sessions");

        // A fork copies its entries under the same ids into a new session.
        let source = store.session(&sessions[0]).unwrap();
        let fork = store.fork(&source, ForkOptions::default()).unwrap();
        for entry in fork.entries() {
            let entry = entry.unwrap();
            let text = grove::codec::text::searchable(&entry.line).unwrap().text;
            oracle.add(fork.id(), entry.id(), &text);
        }
        oracle.check(&store, "after a fork");

        // An import: a pi file written by another session's export.
        let mut file = Vec::new();
        store
            .session(&sessions[1])
            .unwrap()
            .export(grove::Flavor::Harness, &mut file)
            .unwrap();
        let text = String::from_utf8(file).unwrap();
        let path = dir.path().join("exported.jsonl");
        let imported_text = text.replace(&sessions[1], "imported-one");
        std::fs::write(&path, &imported_text).unwrap();
        let report = store.import_file(&path, ImportOptions::default()).unwrap();
        let imported = store.session(&report.session).unwrap();
        for entry in imported.entries() {
            let entry = entry.unwrap();
            let text = grove::codec::text::searchable(&entry.line).unwrap().text;
            if !text.is_empty() {
                oracle.add(imported.id(), entry.id(), &text);
            }
        }
        oracle.check(&store, "after an import");

        // A deletion takes the session's entries out.
        store.delete_session(&sessions[2]).unwrap();
        oracle.forget(&sessions[2]);
        oracle.check(&store, "after a deletion");
        assert_eq!(store.search_verify().unwrap(), Vec::new());
        assert!(store.verify().unwrap().is_ok());
        // Written after the last search: not indexed yet, and no problem.
        let late = store.create_session(CreateSession::default()).unwrap();
        let id = late.append(user("w28 late")).unwrap();
        oracle.add(late.id(), &id, "w28 late");
        assert!(store.verify().unwrap().is_ok());
    }
    // Reopened: the index goes on from its marks.
    let store = Store::open_with(config()).unwrap();
    oracle.check(&store, "after reopening");
    let s = store.create_session(CreateSession::default()).unwrap();
    let id = s.append(user("w29 after reopening")).unwrap();
    oracle.add(s.id(), &id, "w29 after reopening");
    oracle.check(&store, "after reopening and appending");
    // Rebuilt from the log: the same answers.
    let report = store.search_reindex().unwrap();
    assert!(report.indexed > 0);
    oracle.check(&store, "after a rebuild");
    assert_eq!(store.search_verify().unwrap(), Vec::new());
}

#[test]
fn hits_say_whether_they_are_on_the_active_path_and_filters_narrow_them() {
    let store = Store::in_memory().unwrap();
    let a = store.create_session(CreateSession::default()).unwrap();
    let ids = seed(&a);
    let b = store.create_session(CreateSession::default()).unwrap();
    let b_plan = b.append(user("plan C")).unwrap();

    let results = store.search("plan", &SearchOptions::default()).unwrap();
    let active: BTreeMap<String, bool> = results
        .hits
        .iter()
        .map(|h| (h.entry.clone(), h.active))
        .collect();
    assert_eq!(
        active,
        [
            (ids[2].clone(), false),
            (ids[4].clone(), true),
            (b_plan.clone(), true)
        ]
        .into_iter()
        .collect()
    );
    let hit = results.hits.iter().find(|h| h.entry == ids[2]).unwrap();
    assert_eq!(hit.session, a.id());
    assert_eq!(hit.entry_type, "message");
    assert_eq!(hit.role.as_deref(), Some("user"));
    assert_eq!(hit.snippet, "plan A");
    assert_eq!(hit.highlights, vec![(0, 4)]);

    let only_b = SearchOptions {
        session: Some(b.id().to_owned()),
        ..Default::default()
    };
    assert_eq!(
        found(&store, "plan", &only_b),
        [(b.id().to_owned(), b_plan.clone())].into_iter().collect()
    );
    let assistants = SearchOptions {
        types: vec!["assistant".to_owned()],
        ..Default::default()
    };
    assert_eq!(found(&store, "plan", &assistants), BTreeSet::new());
    assert_eq!(found(&store, "assistant", &assistants).len(), 3);
    // Both words must occur; `OR` takes either.
    assert_eq!(found(&store, "plan B", &SearchOptions::default()).len(), 1);
    assert_eq!(
        found(&store, "plan OR user", &SearchOptions::default()).len(),
        4
    );
    // A word ending in `*` matches its prefix, alone or with other words.
    assert_eq!(found(&store, "pla*", &SearchOptions::default()).len(), 3);
    assert_eq!(found(&store, "PLA* b", &SearchOptions::default()).len(), 1);
    assert_eq!(found(&store, "zz*", &SearchOptions::default()).len(), 0);
    // A malformed query is read leniently.
    assert_eq!(
        found(&store, "plan AND (", &SearchOptions::default()).len(),
        3
    );
    // Entries written at timestamp 1 and 2 (ms) by the helpers' pi messages carry the
    // entry's own ISO timestamp: all are later than the epoch, none later than far ahead.
    let since_epoch = SearchOptions {
        since_ms: Some(0),
        ..Default::default()
    };
    assert_eq!(found(&store, "plan", &since_epoch).len(), 3);
    let far_ahead = SearchOptions {
        since_ms: Some(32_503_680_000_000),
        ..Default::default()
    };
    assert_eq!(found(&store, "plan", &far_ahead), BTreeSet::new());
    let unknown = SearchOptions {
        session: Some("nope".to_owned()),
        ..Default::default()
    };
    assert!(matches!(
        store.search("plan", &unknown),
        Err(grove::GroveError::SessionNotFound(_))
    ));
    // The limit keeps the best; the total counts them all.
    let one = store
        .search(
            "plan",
            &SearchOptions {
                limit: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!((one.hits.len(), one.total), (1, 3));
}

/// An index that disagrees with the log (another store's, with more records per session) is
/// reported by verify, and a rebuild mends it.
#[test]
fn verify_reports_an_index_that_disagrees_with_the_log() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    {
        let store = Store::open(a.path()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        s.append(user("one")).unwrap();
        store.search_catch_up().unwrap();
    }
    {
        let store = Store::open(b.path()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        for text in ["one", "two", "three"] {
            s.append(user(text)).unwrap();
        }
        store.search_catch_up().unwrap();
    }
    std::fs::remove_dir_all(a.path().join("search")).unwrap();
    grove_tests::copy_dir(&b.path().join("search"), &a.path().join("search"));
    let store = Store::open(a.path()).unwrap();
    let problems: Vec<String> = store
        .verify()
        .unwrap()
        .problems
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("indexed up to") || problems[0].contains("records up to 3"),
        "{problems:?}"
    );
    store.search_reindex().unwrap();
    assert!(store.verify().unwrap().is_ok());
    assert_eq!(
        store
            .search("one", &SearchOptions::default())
            .unwrap()
            .total,
        1
    );
}
