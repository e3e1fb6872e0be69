//! The replay stream over HTTP (docs/api.md, "Operations"): the history as JSON lines, from
//! and until an operation, and followed: `grove replay --url ... --follow` as a process sees
//! appends made through the server as they land, ends by itself after `--until-op`, and ends
//! when the server stops.

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{spawn_lines, Server, TOKEN};
use crate::cli::grove_bin;

fn append(s: &Server, client: &str, sid: &str, text: &str) -> String {
    let body = json!({"entry": {"role": "user", "content": text, "timestamp": 1}}).to_string();
    let path = format!("/v1/sessions/{sid}/entries");
    let (code, text) = s.call_with(
        Some(TOKEN),
        &[("grove-client", client)],
        "POST",
        &path,
        Some(&body),
    );
    assert_eq!(code, 201, "{text}");
    serde_json::from_str::<Value>(&text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_history_streams_with_each_records_context_change() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"r1"}"#));
    let a = append(&s, "alice", "r1", "one");
    append(&s, "bob", "r1", "two");
    s.ok(
        200,
        "PUT",
        "/v1/sessions/r1/leaf",
        Some(&json!({ "target": a }).to_string()),
    );
    append(&s, "alice", "r1", "three");
    let lines = s.lines("/v1/sessions/r1/replay");
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "start",
            "operation",
            "record",
            "operation",
            "record",
            "operation",
            "record",
            "operation",
            "record"
        ]
    );
    let actors: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "operation")
        .map(|l| &l["actor"])
        .collect();
    assert_eq!(
        actors,
        [
            &json!("alice"),
            &json!("bob"),
            &json!("server"),
            &json!("alice")
        ]
    );
    let changes: Vec<(u64, u64, usize)> = lines
        .iter()
        .filter(|l| l["type"] == "record")
        .map(|l| {
            let c = &l["context"];
            (
                c["keep"].as_u64().unwrap(),
                c["messages"].as_u64().unwrap(),
                c["append"].as_array().unwrap().len(),
            )
        })
        .collect();
    // one; two; the move back to one keeps one message; three is appended after it.
    assert_eq!(changes, [(0, 1, 1), (1, 2, 1), (1, 1, 0), (1, 2, 1)]);
    // From and until an operation.
    let part = s.lines("/v1/sessions/r1/replay?fromOp=2&untilOp=2");
    assert_eq!(part[0]["type"], "start");
    assert_eq!(part[0]["op"], 2);
    assert_eq!(part[0]["context"]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(part.len(), 3, "{part:?}");
    assert_eq!(part[1]["kind"], "move");
    // Bad requests are answered, and the server goes on.
    assert_eq!(
        s.err(
            400,
            "GET",
            "/v1/sessions/r1/replay?fromOp=3&untilOp=1",
            None
        ),
        "invalid_argument"
    );
    assert_eq!(
        s.err(404, "GET", "/v1/sessions/r1/replay?fromOp=9", None),
        "not_found"
    );
    assert_eq!(
        s.err(404, "GET", "/v1/sessions/nope/replay", None),
        "not_found"
    );
    assert_eq!(
        s.err(400, "GET", "/v1/sessions/r1/replay?fromOp=x", None),
        "invalid_argument"
    );
    assert_eq!(
        s.err(400, "GET", "/v1/sessions/r1/replay?since=1", None),
        "invalid_argument"
    );
    s.ok(200, "GET", "/v1/health", None);
}

/// `grove replay --url --follow` as a process: its stdout lines, as they come.
fn follower(s: &Server, args: &[&str]) -> (std::process::Child, mpsc::Receiver<String>) {
    spawn_lines(
        Command::new(grove_bin())
            .arg("replay")
            .args(args)
            .args(["--url", &s.url, "--follow"])
            .env("GROVE_TOKEN", TOKEN),
    )
}

fn next(rx: &mpsc::Receiver<String>) -> Value {
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the follower printed a line");
    serde_json::from_str(&line).unwrap()
}

#[test]
fn a_follower_sees_appends_as_they_land_and_ends_after_until_op_or_with_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"f1"}"#));
    append(&s, "alice", "f1", "before");
    let (mut child, rx) = follower(&s, &["f1", "--from-op", "1", "--until-op", "3"]);
    let start = next(&rx);
    assert_eq!(start["type"], "start");
    assert_eq!(start["op"], 1);
    // Nothing until something is written.
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    for (i, text) in ["live 1", "live 2", "live 3"].iter().enumerate() {
        let id = append(&s, "writer", "f1", text);
        let op = next(&rx);
        assert_eq!(
            (op["type"].as_str(), op["op"].as_u64()),
            (Some("operation"), Some(1 + i as u64))
        );
        assert_eq!(op["actor"], "writer");
        let rec = next(&rx);
        assert_eq!(rec["id"], id.as_str());
        assert_eq!(rec["context"]["keep"], 1 + i as u64);
        assert_eq!(rec["context"]["append"][0]["content"], *text);
    }
    // Past --until-op 3 it ends by itself.
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    // A follower without an end ends when the server stops.
    let (mut child, rx) = follower(&s, &["f1", "--from-op", "4"]);
    assert_eq!(next(&rx)["type"], "start");
    let status = s.terminate();
    assert!(status.success(), "{status}");
    let ended = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        child.try_wait().unwrap().is_some()
    });
    assert!(ended, "the follower ended with the server");
}
