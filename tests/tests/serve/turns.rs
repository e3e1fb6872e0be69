//! Turn leases across clients and navigation through the server.

use std::time::Duration;

use serde_json::json;

use super::{user_line, Server};

#[test]
fn a_turn_held_by_one_client_makes_moves_of_others_busy_until_it_ends_or_expires() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"t1"}"#));
    for (id, parent) in [("a", None), ("b", Some("a")), ("c", Some("b"))] {
        s.ok(
            201,
            "POST",
            "/v1/sessions/t1/entries/exact",
            Some(&user_line(id, parent, id)),
        );
    }
    let lease = s.ok(
        201,
        "POST",
        "/v1/sessions/t1/turns",
        Some(r#"{"ttlMs":1500}"#),
    );
    let lease = lease["lease"].as_str().unwrap().to_owned();
    // Others are refused; reads and appends go on.
    assert_eq!(
        s.err(
            409,
            "PUT",
            "/v1/sessions/t1/leaf",
            Some(r#"{"target":"a"}"#)
        ),
        "busy"
    );
    assert_eq!(
        s.err(
            409,
            "POST",
            "/v1/sessions/t1/navigate",
            Some(r#"{"target":"a"}"#)
        ),
        "busy"
    );
    assert_eq!(
        s.err(409, "POST", "/v1/sessions/t1/turns", Some("{}")),
        "busy"
    );
    s.ok(200, "GET", "/v1/sessions/t1/context", None);
    s.ok(
        201,
        "POST",
        "/v1/sessions/t1/entries/exact",
        Some(&user_line("d", Some("c"), "d")),
    );
    // The holder may move.
    let moved = s.ok(
        200,
        "PUT",
        "/v1/sessions/t1/leaf",
        Some(&json!({"target": "b", "lease": lease}).to_string()),
    );
    assert_eq!(moved["leaf"], "b");
    // Renewed, it outlives its first ttl; then, not renewed (a client that died), it expires.
    std::thread::sleep(Duration::from_millis(1000));
    s.ok(
        200,
        "POST",
        &format!("/v1/sessions/t1/turns/{lease}/renew"),
        None,
    );
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        s.err(
            409,
            "PUT",
            "/v1/sessions/t1/leaf",
            Some(r#"{"target":"a"}"#)
        ),
        "busy"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let moved = s.ok(
        200,
        "PUT",
        "/v1/sessions/t1/leaf",
        Some(r#"{"target":"a"}"#),
    );
    assert_eq!(moved["leaf"], "a", "the expired lease freed the session");
    assert_eq!(
        s.err(
            404,
            "POST",
            &format!("/v1/sessions/t1/turns/{lease}/renew"),
            None
        ),
        "not_found"
    );
    // A turn ended by its holder frees the session at once.
    let lease = s.ok(201, "POST", "/v1/sessions/t1/turns", Some("{}"));
    let lease = lease["lease"].as_str().unwrap().to_owned();
    assert_eq!(
        s.err(
            409,
            "PUT",
            "/v1/sessions/t1/leaf",
            Some(r#"{"target":"c"}"#)
        ),
        "busy"
    );
    let (code, _) = s.call("DELETE", &format!("/v1/sessions/t1/turns/{lease}"), None);
    assert_eq!(code, 204);
    s.ok(
        200,
        "PUT",
        "/v1/sessions/t1/leaf",
        Some(r#"{"target":"c"}"#),
    );
    assert_eq!(
        s.err(400, "POST", "/v1/sessions/t1/turns", Some(r#"{"ttlMs":0}"#)),
        "invalid_argument"
    );
}

#[test]
fn navigate_moves_and_writes_the_summary_given_or_made_by_the_servers_summarizer() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &["--summarizer-cmd", "echo summarized by the server"],
    );
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"n1"}"#));
    for (id, parent) in [("a", None), ("b", Some("a")), ("c", Some("b"))] {
        s.ok(
            201,
            "POST",
            "/v1/sessions/n1/entries/exact",
            Some(&user_line(id, parent, id)),
        );
    }
    let out = s.ok(
        200,
        "POST",
        "/v1/sessions/n1/navigate",
        Some(r#"{"target":"b","summarize":true}"#),
    );
    assert_eq!(out["oldLeafId"], "c");
    let summary = out["summaryEntryId"].as_str().unwrap().to_owned();
    let entry = s.ok(
        200,
        "GET",
        &format!("/v1/sessions/n1/entries/{summary}"),
        None,
    );
    assert_eq!(entry["type"], "branch_summary");
    assert!(
        entry["summary"]
            .as_str()
            .unwrap()
            .contains("summarized by the server"),
        "{entry}"
    );
    // A user message target: the leaf goes to its parent, its text back to the editor.
    let out = s.ok(
        200,
        "POST",
        "/v1/sessions/n1/navigate",
        Some(r#"{"target":"c"}"#),
    );
    assert_eq!(out["editorText"], "c");
    assert_eq!(out["newLeafId"], "b");
    let again = s.ok(
        200,
        "POST",
        "/v1/sessions/n1/navigate",
        Some(r#"{"target":"b"}"#),
    );
    assert_eq!(again["oldLeafId"], again["newLeafId"], "a no-op");
    assert_eq!(
        s.err(
            400,
            "POST",
            "/v1/sessions/n1/navigate",
            Some(r#"{"target":"zz"}"#)
        ),
        "invalid_argument"
    );
}
