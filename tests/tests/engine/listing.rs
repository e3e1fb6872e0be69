//! Cursor paging of the catalogue (`Store::sessions_page`): pages in id order, both ways,
//! after a cursor, equal to the whole listing cut the same way; deleted sessions and imports
//! not yet published are not listed.

use grove::{CreateSession, Store};

#[test]
fn pages_walk_the_catalogue_both_ways_as_the_whole_listing_does() {
    let store = Store::in_memory().unwrap();
    for i in 0..23 {
        store
            .create_session(CreateSession {
                id: Some(format!("s{i:02}")),
                ..Default::default()
            })
            .unwrap();
    }
    store.delete_session("s07").unwrap();
    let mut all: Vec<String> = store
        .sessions()
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    all.sort();
    assert_eq!(all.len(), 22);
    for descending in [false, true] {
        let expected: Vec<String> = match descending {
            true => all.iter().rev().cloned().collect(),
            false => all.clone(),
        };
        for limit in [1, 5, 22, 50] {
            let mut walked = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = store
                    .sessions_page(after.as_deref(), limit, descending)
                    .unwrap();
                assert!(page.len() <= limit);
                walked.extend(page.iter().map(|s| s.id.clone()));
                if page.len() < limit {
                    break;
                }
                after = page.last().map(|s| s.id.clone());
            }
            assert_eq!(walked, expected, "limit {limit}, descending {descending}");
        }
    }
    // A cursor that names no session still pages from its place in id order.
    let page = store.sessions_page(Some("s07"), 2, false).unwrap();
    let ids: Vec<&str> = page.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["s08", "s09"]);
    let page = store.sessions_page(Some("s07"), 2, true).unwrap();
    let ids: Vec<&str> = page.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["s06", "s05"]);
    // A prefix of an id is before it.
    let page = store.sessions_page(Some("s1"), 1, false).unwrap();
    assert_eq!(page[0].id, "s10");
    assert_eq!(store.sessions_page(None, 0, false).unwrap(), Vec::new());
}

/// Filters (`Store::sessions_page_where`): each one against an oracle of the sessions'
/// attributes, combined, paged in both directions, equal to filtering the whole listing.
#[test]
fn filters_list_exactly_the_sessions_that_pass_every_condition() {
    use grove::SessionFilter;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    // Imported sessions with known creation and activity times; some named, some labelled.
    // (id, cwd, created and last active, name, label)
    type Known = (String, String, i64, Option<String>, Option<String>);
    let mut oracle: Vec<Known> = Vec::new();
    for i in 0..30 {
        let id = format!("f{i:02}");
        let cwd = if i % 3 == 0 { "/a" } else { "/b" };
        let day = 1 + i % 28;
        let created = format!("2025-01-{day:02}T00:00:00.000Z");
        let name = (i % 4 == 0).then(|| format!("Build Fix {i}"));
        let label = (i % 5 == 0).then(|| "keep".to_owned());
        let mut lines = vec![
            format!(
                r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{created}","cwd":"{cwd}"}}"#
            ),
            format!(
                r#"{{"type":"message","id":"00000001","parentId":null,"timestamp":"{created}","message":{{"role":"user","content":"hi","timestamp":1}}}}"#
            ),
        ];
        if let Some(n) = &name {
            lines.push(format!(
                r#"{{"type":"session_info","id":"00000002","parentId":"00000001","timestamp":"{created}","name":"{n}"}}"#
            ));
        }
        if let Some(l) = &label {
            lines.push(format!(
                r#"{{"type":"label","id":"00000003","parentId":"00000001","timestamp":"{created}","targetId":"00000001","label":"{l}"}}"#
            ));
        }
        let path = dir.path().join(format!("{id}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        store
            .import_file(&path, grove::ImportOptions::default())
            .unwrap();
        let ms = grove::codec::time::parse_ms(&created).unwrap();
        oracle.push((id, cwd.to_owned(), ms, name, label));
    }
    let day = |d: u32| grove::codec::time::parse_ms(&format!("2025-01-{d:02}T00:00:00.000Z"));
    let filters = [
        SessionFilter {
            cwd: Some("/a".into()),
            ..SessionFilter::default()
        },
        SessionFilter {
            name: Some("build fix".into()),
            ..SessionFilter::default()
        },
        SessionFilter {
            label: Some("keep".into()),
            ..SessionFilter::default()
        },
        SessionFilter {
            created_from: day(5),
            created_until: day(12),
            ..SessionFilter::default()
        },
        SessionFilter {
            updated_from: day(20),
            ..SessionFilter::default()
        },
        SessionFilter {
            cwd: Some("/b".into()),
            name: Some("fix".into()),
            updated_until: day(15),
            ..SessionFilter::default()
        },
    ];
    for filter in &filters {
        let want: Vec<String> = oracle
            .iter()
            .filter(|(_, cwd, t, name, label)| {
                filter.cwd.as_ref().is_none_or(|c| c == cwd)
                    && filter.name.as_ref().is_none_or(|n| {
                        name.as_ref()
                            .is_some_and(|x| x.to_lowercase().contains(&n.to_lowercase()))
                    })
                    && filter
                        .label
                        .as_ref()
                        .is_none_or(|l| label.as_ref() == Some(l))
                    && filter.created_from.is_none_or(|f| *t >= f)
                    && filter.created_until.is_none_or(|u| *t < u)
                    && filter.updated_from.is_none_or(|f| *t >= f)
                    && filter.updated_until.is_none_or(|u| *t < u)
            })
            .map(|(id, ..)| id.clone())
            .collect();
        assert!(!want.is_empty() && want.len() < 30, "{filter:?}: {want:?}");
        for descending in [false, true] {
            let mut walked = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = store
                    .sessions_page_where(after.as_deref(), 3, descending, filter)
                    .unwrap();
                if page.is_empty() {
                    break;
                }
                walked.extend(page.iter().map(|s| s.id.clone()));
                after = walked.last().cloned();
            }
            let mut expected = want.clone();
            if descending {
                expected.reverse();
            }
            assert_eq!(walked, expected, "{filter:?} descending {descending}");
        }
    }
}
