//! Input limits of the library (issue 28, points 6 to 8): the id rule on every way an id
//! comes in, the shape pi requires of a known entry type on every append, and an entry's
//! own `id` used by an append, a retry of it answered with the entry already there.

use grove::codec::IdError;
use grove::{
    AppendOptions, AppendOutcome, CreateSession, GroveError, ImportOptions, NewEntry, Session,
    Store,
};

use super::user;

fn session(store: &Store) -> Session {
    store.create_session(CreateSession::default()).unwrap()
}

fn header(id: &str) -> String {
    format!(
        r#"{{"type":"session","version":3,"id":{},"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}}"#,
        serde_json::to_string(id).unwrap()
    )
}

fn user_line(id: &str, parent: Option<&str>) -> String {
    format!(
        r#"{{"type":"message","id":{},"parentId":{},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"hi","timestamp":1}}}}"#,
        serde_json::to_string(id).unwrap(),
        parent.map_or("null".to_owned(), |p| serde_json::to_string(p).unwrap())
    )
}

fn raw(object: &str) -> NewEntry {
    NewEntry::Raw {
        object: object.to_owned(),
    }
}

#[test]
fn session_ids_over_the_limit_are_refused_and_one_at_it_is_kept() {
    let store = Store::in_memory().unwrap();
    let huge = "a".repeat(1 << 20);
    let err = store
        .create_session(CreateSession {
            id: Some(huge.clone()),
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        matches!(err, GroveError::InvalidId(IdError::TooLong { len, .. }) if len == 1 << 20),
        "{err:?}"
    );
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.to_string().len() < 200, "the id is shortened: {err}");
    assert!(store.sessions().unwrap().is_empty(), "nothing was created");
    // Forking under such an id is refused too.
    let s = session(&store);
    s.append(user("x")).unwrap();
    let fork = store.fork(
        &s,
        grove::ForkOptions {
            id: Some(huge),
            position: grove::ForkPosition::At,
            ..Default::default()
        },
    );
    assert!(matches!(fork, Err(GroveError::InvalidId(_))), "{fork:?}");
    // 256 bytes is the limit, and such an id reads back.
    let at_limit = "b".repeat(grove::codec::MAX_ID_BYTES);
    store
        .create_session(CreateSession {
            id: Some(at_limit.clone()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(store.session(&at_limit).unwrap().id(), at_limit);
}

#[test]
fn entry_ids_with_control_characters_or_over_the_limit_are_refused_on_every_append() {
    let store = Store::in_memory().unwrap();
    let s = session(&store);
    for bad in ["a\0b", "\u{1b}[31mred", &"e".repeat(257)] {
        let with_id = s.append_with(
            user("x"),
            AppendOptions {
                id: Some(bad.to_owned()),
                ..Default::default()
            },
        );
        assert!(
            matches!(with_id, Err(GroveError::InvalidId(_))),
            "{with_id:?}"
        );
        let object = format!(
            r#"{{"type":"custom","customType":"m","id":{}}}"#,
            serde_json::to_string(bad).unwrap()
        );
        let many = s.append_many(&[user("ok"), raw(&object)]);
        assert!(matches!(many, Err(GroveError::InvalidId(_))), "{many:?}");
        let exact = s.append_exact(&user_line(bad, None), None);
        assert!(matches!(exact, Err(GroveError::InvalidId(_))), "{exact:?}");
        assert!(!exact.unwrap_err().to_string().contains(['\0', '\u{1b}']));
    }
    assert_eq!(s.entries().count(), 0, "nothing was written");
}

#[test]
fn import_refuses_a_bad_id_naming_the_line_and_reads_ids_at_the_limit() {
    let store = Store::in_memory().unwrap();
    let long = "x".repeat(300);
    let text = format!(
        "{}\n{}\n{}\n",
        header("imp-1"),
        user_line("a1", None),
        user_line(&long, Some("a1"))
    );
    let err = store
        .import_reader(std::io::Cursor::new(text), ImportOptions::default())
        .unwrap_err();
    match &err {
        GroveError::InvalidEntry { line, reason, .. } => {
            assert_eq!(*line, 3);
            assert!(
                reason.contains("300 bytes") && reason.contains("\"xxxx"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    let text = format!("{}\n{}\n", header(&"s".repeat(257)), user_line("a1", None));
    let err = store
        .import_reader(std::io::Cursor::new(text), ImportOptions::default())
        .unwrap_err();
    assert!(
        matches!(&err, GroveError::InvalidSession { reason, .. } if reason.starts_with("line 1: session id")),
        "{err:?}"
    );
    assert!(store.sessions().unwrap().is_empty(), "nothing was imported");
    // Ids at the limit import and read (the rule is checked on the way in only).
    let (sid, eid) = ("s".repeat(256), "e".repeat(256));
    let text = format!("{}\n{}\n", header(&sid), user_line(&eid, None));
    store
        .import_reader(std::io::Cursor::new(text), ImportOptions::default())
        .unwrap();
    let s = store.session(&sid).unwrap();
    assert_eq!(s.entry(&eid).unwrap().id(), eid);
    assert_eq!(s.leaf().unwrap().as_deref(), Some(eid.as_str()));
}

#[test]
fn known_entry_types_of_the_wrong_shape_are_refused_naming_the_field() {
    let store = Store::in_memory().unwrap();
    let s = session(&store);
    let cases = [
        (
            NewEntry::Message {
                message: r#"{"role":5}"#.into(),
            },
            "message.role must be a string, got 5",
        ),
        (
            NewEntry::Message {
                message: r#"{"role":[1]}"#.into(),
            },
            "message.role must be a string, got [1]",
        ),
        (
            raw(r#"{"type":"message","message":{"role":"toolResult","content":"x"}}"#),
            "message.content must be an array of content blocks",
        ),
        (
            raw(r#"{"type":"compaction","summary":"s","firstKeptEntryId":"a","tokensBefore":"9"}"#),
            "tokensBefore must be a number",
        ),
        (
            raw(r#"{"type":"branch_summary","summary":"s"}"#),
            "fromId is missing",
        ),
        (
            raw(r#"{"type":"model_change","provider":"p"}"#),
            "modelId is missing",
        ),
    ];
    for (entry, reason) in cases {
        let err = s.append(entry).unwrap_err();
        assert!(
            matches!(&err, GroveError::RejectedEntry { reason: r, .. } if r.starts_with(reason)),
            "{reason}: {err:?}"
        );
        assert_eq!(err.code(), "invalid_entry");
    }
    let exact = s.append_exact(
        r#"{"type":"label","id":"l1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","targetId":7}"#,
        None,
    );
    assert!(
        matches!(&exact, Err(GroveError::RejectedEntry { reason, .. }) if reason.starts_with("targetId must be a string")),
        "{exact:?}"
    );
    assert_eq!(s.entries().count(), 0, "nothing was written");
    // An unknown type keeps its fields, byte for byte.
    let odd = r#"{"type":"x-odd","role":5,"message":[1],"z":{"b":1,"a":2}}"#;
    let id = s.append(raw(odd)).unwrap();
    let line = s.entry(&id).unwrap().line;
    assert!(
        line.ends_with(r#","role":5,"message":[1],"z":{"b":1,"a":2}}"#),
        "{line}"
    );
    // Import takes a file as pi wrote it (spec §2.3): type fields are not checked there.
    let text = format!(
        "{}\n{}\n",
        header("imp-shape"),
        r#"{"type":"compaction","id":"c1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","summary":1}"#
    );
    store
        .import_reader(std::io::Cursor::new(text), ImportOptions::default())
        .unwrap();
}

#[test]
fn an_entry_objects_id_is_used_and_a_retry_answers_the_stored_entry() {
    let store = Store::in_memory().unwrap();
    let s = session(&store);
    let note = raw(r#"{"type":"custom","customType":"memo","id":"note-1","data":{"z":1}}"#);
    assert_eq!(s.append(note.clone()).unwrap(), "note-1");
    let line = s.entry("note-1").unwrap().line;
    // The same entry again: its id, nothing written.
    assert_eq!(s.append(note.clone()).unwrap(), "note-1");
    assert_eq!(s.entries().count(), 1);
    assert_eq!(s.entry("note-1").unwrap().line, line);
    // Another entry under the id is refused.
    let other = raw(r#"{"type":"custom","customType":"memo","id":"note-1","data":{"z":2}}"#);
    assert!(matches!(
        s.append(other),
        Err(GroveError::DuplicateId(id)) if id == "note-1"
    ));
    // So is a timestamp that differs, and an id given twice that disagrees.
    let stamped = s.append_with(
        note.clone(),
        AppendOptions {
            timestamp: Some("2020-01-01T00:00:00.000Z".into()),
            ..Default::default()
        },
    );
    assert!(matches!(stamped, Err(GroveError::DuplicateId(_))));
    let twice = s.append_with(
        note,
        AppendOptions {
            id: Some("note-2".into()),
            ..Default::default()
        },
    );
    assert!(
        matches!(twice, Err(GroveError::InvalidArgument(_))),
        "{twice:?}"
    );

    // A batch: applied once, a retry answers the same ids.
    let batch = [
        raw(r#"{"type":"custom","customType":"m","id":"b-1"}"#),
        raw(r#"{"type":"custom","customType":"m","id":"b-2"}"#),
    ];
    assert_eq!(s.append_many(&batch).unwrap(), ["b-1", "b-2"]);
    assert_eq!(s.append_many(&batch).unwrap(), ["b-1", "b-2"]);
    assert_eq!(s.entries().count(), 3);
    // A batch of which only part is stored is refused, and writes nothing.
    let part = [
        raw(r#"{"type":"custom","customType":"m","id":"b-2"}"#),
        raw(r#"{"type":"custom","customType":"m","id":"b-3"}"#),
    ];
    assert!(
        matches!(s.append_many(&part), Err(GroveError::InvalidArgument(m)) if m.contains("\"b-2\"")),
    );
    assert_eq!(s.entries().count(), 3);

    // A conditional append: its retry, after the leaf moved on to the entry, is appended.
    let leaf = s.leaf().unwrap();
    let cond = raw(r#"{"type":"custom","customType":"m","id":"if-1"}"#);
    let first = s.append_if(leaf.as_deref(), cond.clone()).unwrap();
    assert!(matches!(&first, AppendOutcome::Appended(id) if id == "if-1"));
    let again = s.append_if(leaf.as_deref(), cond).unwrap();
    assert!(matches!(&again, AppendOutcome::Appended(id) if id == "if-1"));
    assert_eq!(s.entries().count(), 4);

    // The exact entry: the same bytes again are its retry.
    let exact = user_line("x-1", Some("if-1"));
    assert_eq!(s.append_exact(&exact, None).unwrap(), "x-1");
    assert_eq!(s.append_exact(&exact, None).unwrap(), "x-1");
    assert_eq!(s.entries().count(), 5);
    assert!(store.verify().unwrap().is_ok());
}
