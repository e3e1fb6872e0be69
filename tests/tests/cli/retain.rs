//! `grove retain`: a plan that changes nothing, pins, an applied run that archives first,
//! the store's log of runs, and clear refusals.

use super::Grove;

fn old_session(g: &Grove, id: &str) {
    let path = g.store_dir().with_file_name(format!("{id}.jsonl"));
    std::fs::write(
        &path,
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2020-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n\
             {{\"type\":\"message\",\"id\":\"00000001\",\"parentId\":null,\"timestamp\":\"2020-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hello\",\"timestamp\":1}}}}\n"
        ),
    )
    .unwrap();
    g.ok(&["import", path.to_str().unwrap()]);
}

#[test]
fn retain_plans_pins_applies_with_archives_and_logs() {
    let g = Grove::new();
    old_session(&g, "old-1");
    old_session(&g, "old-2");
    old_session(&g, "old-3");
    let plan = g.json(&["retain", "--older-than", "365d", "--json"]);
    assert_eq!(plan["remove"].as_array().unwrap().len(), 3, "{plan}");
    let text = g.ok(&["retain", "--older-than", "365d"]);
    assert!(
        text.contains("remove old-1") && text.contains("nothing changed"),
        "{text}"
    );
    assert_eq!(g.json(&["ls", "--json"]).as_array().unwrap().len(), 3);
    assert_eq!(g.ok(&["retain", "--pin", "old-2"]), "old-2 pinned\n");
    let archive = g.store_dir().with_file_name("archive");
    let run = g.json(&[
        "retain",
        "--apply",
        "--older-than",
        "365d",
        "--prefix",
        "old-",
        "--archive",
        archive.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(run["removed"].as_array().unwrap().len(), 2, "{run}");
    assert_eq!(run["spared"][0]["session"], "old-2");
    assert_eq!(run["spared"][0]["spared"], "pinned");
    let ids: Vec<String> = g
        .json(&["ls", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["old-2"]);
    // The archive is the session's pi JSONL: it imports back.
    g.ok(&["import", archive.join("old-1.jsonl").to_str().unwrap()]);
    let log = g.json(&["retain", "--log", "--json"]);
    let ops = log["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["actor"], "cli");
    assert_eq!(ops[0]["status"], "done");
    assert_eq!(ops[0]["detail"]["archive"]["format"], "jsonl");
    let text = g.ok(&["retain", "--log"]);
    assert!(
        text.contains("retain  cli  done: 2 of 2 session(s) removed"),
        "{text}"
    );
    // A policy file.
    let policy = g.store_dir().with_file_name("policy.json");
    std::fs::write(
        &policy,
        r#"{"rules":[{"prefix":"old-","keepNewest":0,"spareLabelled":false}]}"#,
    )
    .unwrap();
    g.ok(&["retain", "--pin", "old-2"]);
    g.ok(&["retain", "--unpin", "old-2"]);
    let plan = g.json(&["retain", "--policy", policy.to_str().unwrap(), "--json"]);
    assert_eq!(plan["remove"].as_array().unwrap().len(), 2, "{plan}");
}

#[test]
fn bad_retention_requests_are_refused_with_clear_errors() {
    let g = Grove::new();
    g.ok(&["demo"]);
    let (code, err) = g.fail(&["retain"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("needs a condition"), "{err}");
    let (code, err) = g.fail(&["retain", "--larger-than", "lots"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not a size"), "{err}");
    let (code, err) = g.fail(&["retain", "--older-than", "soon"]);
    assert_eq!(code, 1, "{err}");
    let policy = g.store_dir().with_file_name("bad.json");
    std::fs::write(&policy, r#"{"rules":[{"prefix":"x","color":"red"}]}"#).unwrap();
    let (code, err) = g.fail(&["retain", "--policy", policy.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("bad.json"), "{err}");
    let (code, err) = g.fail(&["retain", "--plan", "--apply", "--keep-newest", "1"]);
    assert_eq!(code, 2, "{err}");
    let (code, _) = g.fail(&["retain", "--pin", "nobody"]);
    assert_eq!(code, 1);
    assert_eq!(
        g.json(&["retain", "--log", "--json"])["operations"],
        serde_json::json!([])
    );
}
