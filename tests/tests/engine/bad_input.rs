//! Bad input gets a clear error and never disturbs what the store already holds.

use std::path::{Path, PathBuf};

use grove::{GroveError, ImportOptions, Store, Strictness};

const HEADER: &str = r#"{"type":"session","version":3,"id":"bad-1","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/w"}"#;
const U1: &str = r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2030-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;
const A1: &str = r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2030-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}}"#;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pi-oracle")
        .join(name)
}

fn write(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    path
}

/// A store holding two imported sessions, and a snapshot of their exports.
fn populated(dir: &Path) -> (Store, Vec<(String, Vec<u8>)>) {
    let store = Store::open(dir.join("store")).unwrap();
    let mut snapshot = Vec::new();
    for name in ["edge-seed-harness.jsonl", "edge-labels.jsonl"] {
        let report = store
            .import_file(&fixture(name), ImportOptions::default())
            .unwrap();
        let mut out = Vec::new();
        store
            .session(&report.session)
            .unwrap()
            .export(grove::Flavor::Harness, &mut out)
            .unwrap();
        snapshot.push((report.session, out));
    }
    (store, snapshot)
}

fn assert_unchanged(store: &Store, snapshot: &[(String, Vec<u8>)]) {
    assert_eq!(store.sessions().unwrap().len(), snapshot.len());
    for (id, bytes) in snapshot {
        let mut out = Vec::new();
        store
            .session(id)
            .unwrap()
            .export(grove::Flavor::Harness, &mut out)
            .unwrap();
        assert_eq!(&out, bytes, "session {id} changed");
    }
}

#[test]
fn malformed_json_names_file_and_line_and_keeps_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (store, snapshot) = populated(dir.path());
    let bad = write(dir.path(), "bad.jsonl", &[HEADER, U1, "{not json", A1]);
    let err = store
        .import_file(&bad, ImportOptions::default())
        .unwrap_err();
    match &err {
        GroveError::InvalidEntry { file, line, .. } => {
            assert_eq!(*line, 3);
            assert_eq!(file.as_deref(), Some(bad.as_path()));
        }
        other => panic!("expected InvalidEntry, got {other:?}"),
    }
    assert!(err.to_string().contains("bad.jsonl"), "{err}");
    assert_unchanged(&store, &snapshot);
    // Lenient mode imports the rest and reports the skipped line.
    let report = store
        .import_file(
            &bad,
            ImportOptions {
                strictness: Strictness::Lenient,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(report.entries, 2);
    assert!(report.diagnostics.iter().any(|d| matches!(
        d,
        grove::codec::reader::Diagnostic::Skipped { error, .. } if error.line == 3
    )));
}

#[test]
fn missing_header_and_unsupported_versions_are_invalid_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (store, snapshot) = populated(dir.path());
    let no_header = write(dir.path(), "nohdr.jsonl", &[U1, A1]);
    let v9 = write(
        dir.path(),
        "v9.jsonl",
        &[&HEADER.replace("\"version\":3", "\"version\":9"), U1],
    );
    let v4 = write(
        dir.path(),
        "v4.jsonl",
        &[r#"{"kind":"header","version":4,"id":"x"}"#],
    );
    for (path, needle) in [(&no_header, "header"), (&v9, "version"), (&v4, "0.84")] {
        let err = store
            .import_file(path, ImportOptions::default())
            .unwrap_err();
        assert!(
            matches!(err, GroveError::InvalidSession { .. }),
            "{path:?}: {err:?}"
        );
        assert!(err.to_string().contains(needle), "{err}");
    }
    assert_unchanged(&store, &snapshot);
}

#[test]
fn duplicate_ids_are_reported_and_resolved_last_wins() {
    // spec §2.6: pi imports duplicates (last wins); grove does too and reports them.
    let dir = tempfile::tempdir().unwrap();
    let (store, snapshot) = populated(dir.path());
    let dup = A1
        .replace("\"a1\"", "\"u1\"")
        .replace("\"parentId\":\"u1\"", "\"parentId\":null");
    let path = write(dir.path(), "dup.jsonl", &[HEADER, U1, &dup]);
    let report = store.import_file(&path, ImportOptions::default()).unwrap();
    assert_eq!(report.duplicate_ids, ["u1"]);
    let s = store.session("bad-1").unwrap();
    assert_eq!(s.entries().count(), 2, "the shadowed line stays in the log");
    assert!(
        s.entry("u1").unwrap().line.contains("assistant"),
        "the last occurrence wins"
    );
    // Appending a duplicate id is refused outright.
    let err = s
        .append_with(
            super::user("x"),
            grove::AppendOptions {
                id: Some("u1".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(err, GroveError::DuplicateId(_)));
    // Importing the same session id twice is refused.
    assert!(matches!(
        store.import_file(&path, ImportOptions::default()),
        Err(GroveError::SessionExists(_))
    ));
    store.delete_session("bad-1").unwrap();
    assert_unchanged(&store, &snapshot);
}

#[test]
fn parent_cycles_are_detected_not_looped() {
    let dir = tempfile::tempdir().unwrap();
    let (store, snapshot) = populated(dir.path());
    let x = r#"{"type":"message","id":"x","parentId":"y","timestamp":"2030-01-01T00:00:01.000Z","message":{"role":"user","content":"x","timestamp":1}}"#;
    let y = r#"{"type":"message","id":"y","parentId":"x","timestamp":"2030-01-01T00:00:02.000Z","message":{"role":"user","content":"y","timestamp":2}}"#;
    let path = write(dir.path(), "cycle.jsonl", &[HEADER, x, y]);
    store.import_file(&path, ImportOptions::default()).unwrap();
    let s = store.session("bad-1").unwrap();
    let err = s.branch(None).unwrap_err();
    assert!(matches!(err, GroveError::InvalidSession { .. }), "{err:?}");
    assert!(err.to_string().contains("cycle"), "{err}");
    let path: Vec<String> = s
        .path_to_root(None)
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(
        path,
        ["x", "y"],
        "path_to_root stops quietly at the revisit"
    );
    let tree = s.tree().unwrap();
    assert_eq!(tree.roots.len(), 1, "the cycle's earliest entry is a root");
    assert_eq!(tree.nodes[tree.roots[0]].id, "x");
    store.delete_session("bad-1").unwrap();
    assert_unchanged(&store, &snapshot);
}

#[test]
fn entries_attached_to_leaf_records_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (store, snapshot) = populated(dir.path());
    let err = store
        .import_file(
            &fixture("edge-moveto-leaf-entry.jsonl"),
            ImportOptions::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("leaf record"), "{err}");
    assert_unchanged(&store, &snapshot);
}
