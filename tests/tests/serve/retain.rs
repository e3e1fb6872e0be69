//! Retention over HTTP (docs/api.md, "Server"): `POST /v1/retain` plans and applies, `GET
//! /v1/retain/log` lists the runs, `PUT .../pin` spares a session, a policy sent by a client
//! archives nothing, and `grove serve --retain` runs the operator's policy on a schedule.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Server;

/// A store with sessions `old-1`, `old-2` (imported, last active in 2020) and `new-1`.
fn store_with_old_sessions(dir: &std::path::Path) {
    let store = grove::Store::open(dir.join("store")).unwrap();
    for id in ["old-1", "old-2"] {
        let file = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2020-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n\
             {{\"type\":\"message\",\"id\":\"00000001\",\"parentId\":null,\"timestamp\":\"2020-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}}}\n"
        );
        let path = dir.join(format!("{id}.jsonl"));
        std::fs::write(&path, file).unwrap();
        store
            .import_file(&path, grove::ImportOptions::default())
            .unwrap();
    }
    let s = store
        .create_session(grove::CreateSession {
            id: Some("new-1".into()),
            ..grove::CreateSession::default()
        })
        .unwrap();
    s.append(crate::engine::user("now")).unwrap();
}

#[test]
fn retention_plans_applies_pins_and_logs_over_http() {
    let dir = tempfile::tempdir().unwrap();
    store_with_old_sessions(dir.path());
    let s = Server::start(dir.path(), &[]);
    let policy = json!({"rules": [{"olderThan": "365d"}]});
    let plan = s.ok(
        200,
        "POST",
        "/v1/retain",
        Some(&json!({ "policy": policy }).to_string()),
    );
    let gone: Vec<&str> = plan["remove"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["session"].as_str().unwrap())
        .collect();
    assert_eq!(gone, ["old-1", "old-2"], "{plan}");
    assert!(plan["bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        plan["remove"][0]["lastActivity"],
        "2020-01-01T00:00:00.000Z"
    );
    s.ok(200, "GET", "/v1/sessions/old-1", None);
    // A pin spares a session.
    let pinned = s.ok(
        200,
        "PUT",
        "/v1/sessions/old-2/pin",
        Some(r#"{"pinned":true}"#),
    );
    assert_eq!(pinned, json!({"session": "old-2", "pinned": true}));
    let run = s.ok(
        200,
        "POST",
        "/v1/retain",
        Some(&json!({ "policy": policy, "apply": true }).to_string()),
    );
    assert_eq!(run["op"], 0);
    assert_eq!(
        run["removed"],
        json!([{"session": "old-1", "archive": null}])
    );
    assert_eq!(run["spared"][0]["spared"], "pinned");
    let (code, _) = s.call("GET", "/v1/sessions/old-1", None);
    assert_eq!(code, 404);
    s.ok(200, "GET", "/v1/sessions/new-1", None);
    let log = s.ok(200, "GET", "/v1/retain/log", None);
    let ops = log["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["kind"], "retain");
    assert_eq!(ops[0]["status"], "done");
    assert_eq!(ops[0]["detail"]["removed"][0]["session"], "old-1");
    // Refused: an archive chosen by a client, a rule without a condition, an unknown field,
    // a pin of a session that is not there.
    for (body, code, error) in [
        (
            json!({"policy": {"rules": [{"keepNewest": 1}], "archive": {"dir": "/tmp/x"}}}),
            400,
            "invalid_argument",
        ),
        (
            json!({"policy": {"rules": [{"prefix": "old-"}]}}),
            400,
            "invalid_argument",
        ),
        (
            json!({"policy": {"rules": [{"olderThan": "soon"}]}}),
            400,
            "invalid_argument",
        ),
        (json!({"policy": {"rules": []}}), 400, "invalid_argument"),
        (
            json!({"policy": {"rules": [{"keepNewest": 1, "x": 1}]}}),
            400,
            "invalid_request",
        ),
    ] {
        let (got, text) = s.call("POST", "/v1/retain", Some(&body.to_string()));
        assert_eq!(got, code, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["code"], error, "{body}: {text}");
    }
    let (got, _) = s.call("PUT", "/v1/sessions/nobody/pin", Some(r#"{"pinned":true}"#));
    assert_eq!(got, 404);
    assert_eq!(
        s.ok(200, "GET", "/v1/retain/log", None)["operations"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "refused requests record nothing"
    );
}

#[test]
fn the_server_applies_its_policy_on_a_schedule() {
    let dir = tempfile::tempdir().unwrap();
    store_with_old_sessions(dir.path());
    let policy = dir.path().join("policy.json");
    let archive = dir.path().join("archive");
    std::fs::write(
        &policy,
        json!({"rules": [{"olderThan": "30d"}], "archive": {"dir": archive, "format": "audit"}})
            .to_string(),
    )
    .unwrap();
    let s = Server::start(
        dir.path(),
        &["--retain", policy.to_str().unwrap(), "--retain-every", "1s"],
    );
    let start = Instant::now();
    let ops = loop {
        let log = s.ok(200, "GET", "/v1/retain/log", None);
        let ops = log["operations"].as_array().unwrap().clone();
        if ops.iter().any(|op| op["status"] == "done") {
            break ops;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no retention run within a minute: {log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(ops[0]["actor"], "retention");
    let (code, _) = s.call("GET", "/v1/sessions/old-1", None);
    assert_eq!(code, 404);
    s.ok(200, "GET", "/v1/sessions/new-1", None);
    let audit = std::fs::read(archive.join("old-1.audit.jsonl")).unwrap();
    assert_eq!(grove::verify_audit(&audit, None).unwrap().session, "old-1");
}

#[test]
fn a_bad_retention_policy_stops_the_server_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, r#"{"rules":[{"prefix":"x"}]}"#).unwrap();
    let out = std::process::Command::new(crate::cli::grove_bin())
        .arg("--store")
        .arg(dir.path().join("store"))
        .args(["serve", "--retain", policy.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no condition"), "{err}");
}
