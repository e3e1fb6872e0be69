//! Appending the caller's exact entry (pi's `SessionStorage.appendEntry`, issue 17): ids,
//! parents, timestamps and bytes as given, with the checks a store must make, and pi's leaf
//! rule (an entry becomes the leaf; a `leaf` line moves it to its target).

use grove::{CreateSession, Flavor, GroveError, Store, StoreConfig};

fn line(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-03-0{}T00:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}"#,
        id.len() % 9
    )
}

fn leaf(id: &str, parent: Option<&str>, target: Option<&str>) -> String {
    let q = |v: Option<&str>| v.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"leaf","id":"{id}","parentId":{},"timestamp":"2025-03-01T00:00:00.000Z","targetId":{}}}"#,
        q(parent),
        q(target)
    )
}

fn export(s: &grove::Session) -> Vec<String> {
    let mut out = Vec::new();
    s.export(Flavor::Harness, &mut out).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

#[test]
fn exact_entries_keep_their_ids_parents_timestamps_and_bytes_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    // Keys in an unusual order and spacing: the bytes are kept as given.
    let odd = r#"{"parentId":"a1", "type":"custom","customType":"x","data":{"k":[1,2]},"id":"c1","timestamp":"2020-01-01T00:00:00Z"}"#;
    let lines = vec![
        line("a1", None, "first"),
        odd.to_owned(),
        line("b2", Some("a1"), "sibling of c1"),
        leaf("l1", Some("b2"), Some("c1")),
        line("d3", Some("c1"), "after the move"),
        leaf("l2", Some("d3"), None),
        line("e4", None, "a second root"),
    ];
    let sid;
    {
        let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        sid = s.id().to_owned();
        let mut leaves = Vec::new();
        for l in &lines {
            s.append_exact(l, None).unwrap();
            leaves.push(s.leaf().unwrap());
        }
        let want: Vec<Option<String>> = [
            Some("a1"),
            Some("c1"),
            Some("b2"),
            Some("c1"),
            Some("d3"),
            None,
            Some("e4"),
        ]
        .iter()
        .map(|v| v.map(str::to_owned))
        .collect();
        assert_eq!(leaves, want, "pi's leaf rule");
        assert_eq!(export(&s), lines);
        let ids: Vec<String> = s
            .path_to_root(Some("d3"))
            .unwrap()
            .iter()
            .map(|e| e.id().to_owned())
            .collect();
        assert_eq!(ids, ["a1", "c1", "d3"]);
    }
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let s = store.session(&sid).unwrap();
    assert_eq!(export(&s), lines, "bytes survive a reopen");
    assert_eq!(s.leaf().unwrap().as_deref(), Some("e4"));
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn an_exact_entry_the_session_cannot_take_is_refused_and_changes_nothing() {
    let store = Store::in_memory().unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    s.append_exact(&line("a1", None, "first"), None).unwrap();
    let before = export(&s);
    let refused: Vec<(String, &str)> = vec![
        (line("a1", None, "again"), "DuplicateId"),
        (line("b1", Some("nowhere"), "orphan"), "RejectedEntry"),
        (line("b2", Some("b2"), "itself"), "RejectedEntry"),
        (leaf("l1", Some("a1"), Some("nowhere")), "EntryNotFound"),
        (r#"{"type":"message","id":"x"}"#.to_owned(), "RejectedEntry"),
        ("[1,2]".to_owned(), "RejectedEntry"),
        (
            "{\"type\":\"custom\",\n\"id\":\"n1\",\"parentId\":null,\"timestamp\":\"t\"}"
                .to_owned(),
            "RejectedEntry",
        ),
        (
            r#"{"type":"session","id":"s","parentId":null,"timestamp":"t"}"#.to_owned(),
            "RejectedEntry",
        ),
    ];
    for (bad, name) in refused {
        let e = s.append_exact(&bad, None).unwrap_err();
        assert_eq!(e.name(), name, "{bad}: {e}");
        if name == "RejectedEntry" {
            assert_eq!(e.code(), "invalid_entry");
            assert!(e.to_string().contains(s.id()), "names the session: {e}");
        }
    }
    // A leaf record is no tree node: an entry attached to it is refused.
    s.append_exact(&leaf("l2", Some("a1"), None), None).unwrap();
    let e = s
        .append_exact(&line("c1", Some("l2"), "on a leaf record"), None)
        .unwrap_err();
    assert!(matches!(e, GroveError::RejectedEntry { .. }), "{e}");
    let mut after = before.clone();
    after.push(leaf("l2", Some("a1"), None));
    assert_eq!(export(&s), after, "the refused entries left nothing");
    assert!(store.verify().unwrap().is_ok());
}
