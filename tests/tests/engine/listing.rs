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
