//! The generator is deterministic for a seed, its JSONL imports into grove strictly, grove
//! exports it byte for byte, the API build stores the same entry lines, and the two
//! baselines select the same context as grove.
#![allow(clippy::unwrap_used)]

use std::io::Write;

use grove::{Flavor, Store};
use grove_benches::baseline::jsonl::JsonlStore;
use grove_benches::baseline::sqlite::SqliteStore;
use grove_benches::{generate, GenSpec, Generator, Payload, Record};
use serde_json::Value;

fn specs() -> Vec<GenSpec> {
    vec![
        GenSpec::linear(300, 1),
        GenSpec::bushy(600, 12, 2).compaction_every(40),
        GenSpec::bushy(200, 5, 3)
            .payload(Payload::Realistic)
            .compaction_every(25),
    ]
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    for spec in specs() {
        let a = generate(&spec);
        let b = generate(&spec);
        assert_eq!(a, b);
        assert_eq!(a.bytes as usize, a.jsonl.len());
        let mut other = spec.clone();
        other.seed += 1;
        assert_ne!(generate(&other).jsonl, a.jsonl);
    }
}

#[test]
fn lines_are_what_the_codec_writer_writes() {
    for spec in specs() {
        for record in Generator::new(&spec) {
            if let Record::Entry {
                id,
                parent_id,
                timestamp,
                entry,
            } = &record
            {
                let canonical = entry.to_line(id, parent_id.as_deref(), timestamp).unwrap();
                assert_eq!(record.line(), canonical);
            }
        }
    }
}

#[test]
fn shapes_follow_the_spec() {
    let spec = GenSpec::bushy(2_000, 20, 9).compaction_every(50);
    let g = generate(&spec);
    assert_eq!(g.ids.len(), 2_000);
    assert_eq!(g.leaf_records, 20);
    assert_eq!(g.tips.len(), 21);
    let text = String::from_utf8(g.jsonl.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 2_000 + 20);
    let header: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(header["type"], "session");
    assert_eq!(header["version"], 3);
    let mut compactions = 0;
    for line in &lines[1..] {
        let v: Value = serde_json::from_str(line).unwrap();
        let id = v["id"].as_str().unwrap();
        assert_eq!(id.len(), 8);
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        let ts = v["timestamp"].as_str().unwrap();
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(ts.ends_with('Z'));
        compactions += usize::from(v["type"] == "compaction");
    }
    assert_eq!(compactions, 2_000 / 50);
}

#[test]
fn the_active_path_can_be_aimed() {
    for (n, b) in [(10_000, 10), (20_000, 40)] {
        let g = generate(&GenSpec::bushy(n, b, 4).active_path(1_000));
        assert!(
            (900..=1_000).contains(&g.active_path_len),
            "{n}/{b}: {}",
            g.active_path_len
        );
    }
}

#[test]
fn it_imports_strictly_and_exports_byte_identical() {
    for spec in specs() {
        let g = generate(&spec);
        let store = Store::in_memory().unwrap();
        let report = grove_benches::import_report(&store, &g).unwrap();
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        assert!(report.duplicate_ids.is_empty());
        assert_eq!(report.entries as usize, spec.entries);
        assert_eq!(report.leaf_records as usize, g.leaf_records);
        assert_eq!(report.leaf, g.leaf_id);
        assert_eq!(report.session, g.session_id);
        let session = store.session(&report.session).unwrap();
        assert_eq!(session.path_to_root(None).unwrap().len(), g.active_path_len);
        let mut out = Vec::new();
        session.export(Flavor::Harness, &mut out).unwrap();
        assert!(out == g.jsonl, "export differs from the generated file");
    }
}

#[test]
fn the_api_build_stores_the_same_entry_lines() {
    let spec = GenSpec::bushy(500, 8, 5).compaction_every(30);
    let g = generate(&spec);
    let store = Store::in_memory().unwrap();
    let (session, built) = grove_benches::build_via_api(&store, &spec).unwrap();
    assert_eq!(built.leaf_id, g.leaf_id);
    assert_eq!(session.leaf().unwrap(), g.leaf_id);
    let stored: Vec<String> = session.entries().map(|e| e.unwrap().line).collect();
    let generated: Vec<String> = Generator::new(&spec)
        .filter(|r| matches!(r, Record::Entry { .. }))
        .map(|r| r.line())
        .collect();
    assert_eq!(stored, generated);
    assert_eq!(session.leaf_history().unwrap().len(), g.leaf_records);
}

#[test]
fn baselines_select_the_same_context_as_grove() {
    let dir = tempfile::tempdir().unwrap();
    for (i, spec) in specs().into_iter().enumerate() {
        let g = generate(&spec);
        let store = Store::in_memory().unwrap();
        let session = grove_benches::import(&store, &g).unwrap();
        let grove: Vec<Value> = session
            .build_context()
            .unwrap()
            .messages
            .iter()
            .map(|m| serde_json::from_str(m).unwrap())
            .collect();
        assert!(!grove.is_empty());

        let path = dir.path().join(format!("{i}.jsonl"));
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&g.jsonl)
            .unwrap();
        let jsonl = JsonlStore::open(&path).unwrap();
        assert_eq!(jsonl.leaf(), g.leaf_id.as_deref());
        let from_jsonl: Vec<Value> = jsonl
            .build_context()
            .unwrap()
            .into_iter()
            .map(|c| c.into_owned())
            .collect();
        assert_eq!(from_jsonl, grove, "jsonl baseline, spec {i}");

        let mut sqlite = SqliteStore::open(&dir.path().join(format!("{i}.db"))).unwrap();
        let id = sqlite.import(&g.jsonl).unwrap();
        assert_eq!(sqlite.leaf(&id).unwrap(), g.leaf_id);
        assert_eq!(
            sqlite.build_context(&id).unwrap(),
            grove,
            "sqlite, spec {i}"
        );
    }
}
