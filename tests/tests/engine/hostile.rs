//! Hostile input: mutated and adversarial pi files and append inputs never panic, always end
//! in a clear error or a correct import, and never change what the store held before.

use grove::{AppendOptions, CreateSession, Flavor, ImportOptions, NewEntry, Store, Strictness};
use proptest::prelude::*;

const HEADER: &str = r#"{"type":"session","version":3,"id":"hostile","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}"#;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/pi-oracle")
            .join(name),
    )
    .unwrap()
}

/// A store holding two sessions, and their exports.
fn baseline() -> (Store, Vec<(String, Vec<u8>)>) {
    let store = Store::in_memory().unwrap();
    let mut snap = Vec::new();
    for name in ["edge-seed-harness.jsonl", "r000-harness.jsonl"] {
        let report = store
            .import_reader(
                std::io::Cursor::new(fixture(name)),
                ImportOptions::default(),
            )
            .unwrap();
        let mut out = Vec::new();
        store
            .session(&report.session)
            .unwrap()
            .export(Flavor::Harness, &mut out)
            .unwrap();
        snap.push((report.session, out));
    }
    (store, snap)
}

fn unchanged(store: &Store, snap: &[(String, Vec<u8>)]) -> Result<(), TestCaseError> {
    for (id, bytes) in snap {
        let mut out = Vec::new();
        store
            .session(id)
            .unwrap()
            .export(Flavor::Harness, &mut out)
            .unwrap();
        prop_assert_eq!(&out, bytes);
    }
    let report = store.verify().unwrap();
    prop_assert!(report.is_ok(), "{:?}", report.problems);
    Ok(())
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    InsertLine(usize, String),
    DropLine(usize),
}

fn nasty_line() -> impl Strategy<Value = String> {
    let id = prop_oneof![
        Just("\"\"".to_owned()),
        Just("\"a\\\"b\"".to_owned()),
        Just("\"\\ud800\"".to_owned()),
        Just("\"🌲 \\u0000 x\"".to_owned()),
        Just("42".to_owned()),
        "[a-z0-9]{1,12}".prop_map(|s| format!("\"{s}\"")),
    ];
    let parent = prop_oneof![
        Just("null".to_owned()),
        Just("\"\"".to_owned()),
        "[a-z0-9]{1,3}".prop_map(|s| format!("\"{s}\""))
    ];
    prop_oneof![
        (id.clone(), parent.clone()).prop_map(|(i, p)| format!(
            r#"{{"type":"message","id":{i},"parentId":{p},"timestamp":"2030-01-01T00:00:00.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
        )),
        (id.clone()).prop_map(|i| format!(r#"{{"type":"message","id":{i},"parentId":{i},"timestamp":"t","message":{{"role":"user","content":"self"}}}}"#)),
        (1usize..2000).prop_map(|d| format!(r#"{{"type":"custom","id":"deep","parentId":null,"timestamp":"t","data":{}{}}}"#, "[".repeat(d), "]".repeat(d))),
        (1usize..200_000).prop_map(|n| format!(r#"{{"type":"message","id":"big","parentId":null,"timestamp":"t","message":{{"role":"user","content":"{}"}}}}"#, "x".repeat(n))),
        (id, parent).prop_map(|(i, p)| format!(r#"{{"type":"leaf","id":{i},"parentId":null,"timestamp":"t","targetId":{p}}}"#)),
        Just(r#"{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}"#.to_owned()),
        Just(r#"{"type":"compaction","id":"c","parentId":null,"timestamp":"t","summary":1,"firstKeptEntryId":[],"retainedTail":{"a":1}}"#.to_owned()),
        any::<Vec<u8>>().prop_map(|b| String::from_utf8_lossy(&b).replace('\n', " ")),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), nasty_line()).prop_map(|(i, l)| Mutation::InsertLine(i, l)),
        any::<usize>().prop_map(Mutation::DropLine),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        match m {
            Mutation::Truncate(at) => {
                let at = at % (bytes.len() + 1);
                bytes.truncate(at);
            }
            Mutation::Flip(at, b) if !bytes.is_empty() => {
                let i = at % bytes.len();
                bytes[i] ^= b | 1;
            }
            Mutation::InsertLine(..) | Mutation::DropLine(..) if bytes.is_empty() => {}
            Mutation::InsertLine(at, line) => {
                let mut lines: Vec<Vec<u8>> =
                    bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                let i = at % (lines.len() + 1);
                lines.insert(i, line.clone().into_bytes());
                bytes = lines.join(&b'\n');
            }
            Mutation::DropLine(at) => {
                let mut lines: Vec<Vec<u8>> =
                    bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                let i = at % lines.len();
                lines.remove(i);
                bytes = lines.join(&b'\n');
            }
            Mutation::Flip(..) => {}
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn mutated_files_import_cleanly_or_fail_clearly(
        base in prop_oneof![Just("edge-seed-harness.jsonl"), Just("edge-labels.jsonl"), Just("r005-harness.jsonl"), Just("edge-nested-compaction-sm.jsonl")],
        mutations in proptest::collection::vec(mutation(), 1..6),
        lenient in any::<bool>(),
    ) {
        let (store, snap) = baseline();
        let bytes = apply(fixture(base), &mutations);
        let strictness = if lenient { Strictness::Lenient } else { Strictness::Strict };
        let result = store.import_reader(std::io::Cursor::new(bytes), ImportOptions { strictness, ..Default::default() });
        match result {
            Ok(report) => {
                // A correct import: every read works and it verifies.
                let s = store.session(&report.session).unwrap();
                let _ = s.build_context();
                let _ = s.branch(None);
                let _ = s.tree().unwrap();
                prop_assert!(s.verify().unwrap().is_ok());
                if !snap.iter().any(|(id, _)| *id == report.session) {
                    store.delete_session(&report.session).unwrap();
                }
            }
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
            }
        }
        unchanged(&store, &snap)?;
    }

    #[test]
    fn adversarial_lines_in_a_fresh_file(lines in proptest::collection::vec(nasty_line(), 1..8)) {
        let (store, snap) = baseline();
        let mut text = String::from(HEADER);
        for l in &lines {
            text.push('\n');
            text.push_str(l);
        }
        text.push('\n');
        for strictness in [Strictness::Strict, Strictness::Lenient] {
            if let Ok(report) = store.import_reader(std::io::Cursor::new(text.clone().into_bytes()), ImportOptions { strictness, ..Default::default() }) {
                let s = store.session(&report.session).unwrap();
                let _ = s.build_context();
                let _ = s.branch(None);
                let _ = s.path_to_root(None);
                s.tree().unwrap();
                prop_assert!(s.verify().unwrap().is_ok());
                store.delete_session(&report.session).unwrap();
            }
        }
        unchanged(&store, &snap)?;
    }

    #[test]
    fn adversarial_append_inputs(objects in proptest::collection::vec(nasty_line(), 1..8), ids in proptest::collection::vec(proptest::option::of(".{0,12}"), 1..8)) {
        let (store, snap) = baseline();
        let s = store.create_session(CreateSession::default()).unwrap();
        for (object, id) in objects.iter().zip(ids.iter().cycle()) {
            let _ = s.append_with(NewEntry::Raw { object: object.clone() }, AppendOptions { id: id.clone(), ..Default::default() });
            let _ = s.append(NewEntry::Message { message: object.clone() });
        }
        let _ = s.build_context().unwrap();
        prop_assert!(s.verify().unwrap().is_ok());
        unchanged(&store, &snap)?;
    }
}
