//! `grove search`: its text and JSON output, its filters and errors, and an index that
//! survives SIGKILL at any moment of its catch-up.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::{fixture, grove_bin, Grove};

#[test]
fn search_prints_hits_and_json_and_refuses_bad_arguments() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let text = g.ok(&["search", "plan"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines.iter().all(|l| l.starts_with("seed-harness  ")),
        "{text}"
    );
    assert!(text.contains("message/user"), "{text}");
    assert!(
        text.contains("[plan] A") && text.contains("[plan] B"),
        "{text}"
    );
    // The active path is marked.
    assert_eq!(text.matches(" * ").count(), 1, "{text}");

    let json = g.json(&["search", "plan", "--json", "--limit", "1"]);
    assert_eq!(json["total"], 2);
    let hits = json["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["session"], "seed-harness");
    assert_eq!(hits[0]["type"], "message");
    assert!(hits[0]["marked"]
        .as_str()
        .unwrap()
        .contains("<mark>plan</mark>"));

    let none = g.json(&["search", "plan", "--json", "--type", "assistant"]);
    assert_eq!(none["total"], 0);
    let later = g.json(&["search", "plan", "--json", "--since", "2999-01-01"]);
    assert_eq!(later["total"], 0);
    let recent = g.json(&["search", "plan", "--json", "--since", "100000d"]);
    assert_eq!(recent["total"], 2);
    assert_eq!(g.ok(&["search", "nothingmatchesthis"]), "no hits\n");

    let (code, err) = g.fail(&["search", "plan", "--since", "yesterday"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("yesterday"), "{err}");
    let (code, err) = g.fail(&["search", "plan", "--limit", "0"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--limit"), "{err}");
    let (code, err) = g.fail(&["search", "plan", "--session", "nope"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("nope"), "{err}");

    let rebuilt = g.json(&["search", "--reindex", "--json"]);
    assert!(rebuilt["indexed"].as_u64().unwrap() > 0, "{rebuilt}");
    assert_eq!(
        g.json(&["verify", "--json"])["problems"],
        serde_json::json!([])
    );
}

/// A `grove` child killed with SIGKILL at a random moment of its index's catch-up (a large
/// import indexed in steps, each a commit of tantivy's with its marks) leaves an index the
/// next search finishes: every entry found once, and verify agrees.
#[test]
fn an_index_killed_while_it_catches_up_is_finished_by_the_next_search() {
    let g = Grove::new();
    let store = g.store_dir();
    g.ok(&["gen", "--entries", "20000", "--seed", "3", "--import"]);
    let total =
        |g: &Grove| g.json(&["search", "session", "--json", "--limit", "1"])["total"].clone();
    // The count a whole build gives, from a store that was never killed.
    let expected = total(&g);
    assert!(expected.as_u64().unwrap() > 1000, "{expected}");
    let mut seed = 12_345u64;
    for cycle in 0..6 {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let wait = Duration::from_millis(20 + (seed >> 33) % 480);
        let mut child = Command::new(grove_bin())
            .arg("--store")
            .arg(&store)
            .args(["search", "--reindex"])
            .env_remove("GROVE_STORE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(wait);
        // SIGKILL on Unix.
        let _ = child.kill();
        let _ = child.wait();
        // A message with a word of its own, written after the kill: found once.
        let word = format!("zzcycle{cycle}");
        let message = format!(r#"{{"role":"user","content":"{word}","timestamp":0}}"#);
        let session = g.json(&["ls", "--json"])[0]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let out = g.run_with_stdin(&["append", &session], &message);
        assert!(out.status.success(), "{out:?}");
        let found = g.json(&["search", &word, "--json"]);
        assert_eq!(found["total"], 1, "cycle {cycle} ({wait:?}): {found}");
        assert_eq!(total(&g), expected, "cycle {cycle} ({wait:?})");
        let verify = g.json(&["verify", "--json"]);
        assert_eq!(
            verify["problems"],
            serde_json::json!([]),
            "cycle {cycle}: {verify}"
        );
    }
}
