//! The operation log over HTTP (docs/api.md, "Operations"): operations newest first with the
//! `Grove-Client` actor, undo, the seal, and reads at a point in time, against the real server.

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{json, Value};

use super::{Server, TOKEN};

/// An append of a user message `text` to `sid` by `client` (none: no `Grove-Client`); its id.
fn append(s: &Server, client: Option<&str>, sid: &str, text: &str) -> String {
    let headers: Vec<(&str, &str)> = client.map(|c| ("grove-client", c)).into_iter().collect();
    let body = json!({"entry": {"role": "user", "content": text, "timestamp": 1}}).to_string();
    let path = format!("/v1/sessions/{sid}/entries");
    let (code, text) = s.call_with(Some(TOKEN), &headers, "POST", &path, Some(&body));
    assert_eq!(code, 201, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

fn operations(s: &Server, sid: &str) -> Vec<Value> {
    let v = s.ok(200, "GET", &format!("/v1/sessions/{sid}/operations"), None);
    v["operations"].as_array().unwrap().clone()
}

fn field<'a>(ops: &'a [Value], name: &str) -> Vec<&'a Value> {
    ops.iter().map(|op| &op[name]).collect()
}

fn leaf(s: &Server, sid: &str) -> Value {
    s.ok(200, "GET", &format!("/v1/sessions/{sid}/leaf"), None)["leaf"].clone()
}

#[test]
fn operations_are_listed_newest_first_with_their_kinds_and_the_clients_that_made_them() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"o1"}"#));
    assert!(operations(&s, "o1").is_empty(), "a new session has none");
    let a = append(&s, Some("alice"), "o1", "one");
    let (code, text) = s.call_with(
        Some(TOKEN),
        &[("Grove-Client", "bob/2.0 (agent 7)")],
        "POST",
        "/v1/sessions/o1/entries/many",
        Some(r#"{"entries":[{"role":"user","content":"two","timestamp":2},{"type":"custom","customType":"n","data":{}}]}"#),
    );
    assert_eq!(code, 201, "{text}");
    s.ok(
        200,
        "PUT",
        "/v1/sessions/o1/leaf",
        Some(&json!({ "target": a }).to_string()),
    );
    // The batch route stamps its items with the client too.
    let (code, text) = s.call_with(
        Some(TOKEN),
        &[("Grove-Client", "batcher")],
        "POST",
        "/v1/appends",
        Some(r#"{"appends":[{"session":"o1","entry":{"role":"user","content":"three","timestamp":3}}]}"#),
    );
    assert_eq!(code, 200, "{text}");

    let ops = operations(&s, "o1");
    assert_eq!(field(&ops, "op"), [3, 2, 1, 0], "newest first");
    assert_eq!(
        field(&ops, "kind"),
        ["append", "move", "append_many", "append"]
    );
    assert_eq!(
        field(&ops, "actor"),
        ["batcher", "server", "bob/2.0 (agent 7)", "alice"],
        "without Grove-Client the actor is `server`"
    );
    assert_eq!(field(&ops, "records"), [1, 1, 2, 1]);
    assert_eq!(ops[2]["leafBefore"], a.as_str());
    assert_eq!(ops[1]["leafAfter"], a.as_str(), "the move went back to {a}");
    assert_eq!(ops[3]["leafBefore"], Value::Null);
    assert_eq!(ops[0]["leafAfter"], leaf(&s, "o1"));
    for op in &ops {
        assert!(op["time"].is_string() && op["timeMs"].is_i64(), "{op}");
        let keys: Vec<&String> = op.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 11, "{op}");
    }
    let first = s.ok(200, "GET", "/v1/sessions/o1/operations?limit=1", None);
    assert_eq!(first["operations"], json!([ops[0]]));
    assert_eq!(
        s.err(400, "GET", "/v1/sessions/o1/operations?limit=0", None),
        "invalid_argument"
    );
    assert_eq!(
        s.err(404, "GET", "/v1/sessions/nope/operations", None),
        "not_found"
    );
}

#[test]
fn undo_moves_the_leaf_back_as_an_operation_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"u1"}"#));
    let a = append(&s, None, "u1", "one");
    let b = append(&s, None, "u1", "two");

    let (code, text) = s.call_with(
        Some(TOKEN),
        &[("Grove-Client", "carol")],
        "POST",
        "/v1/sessions/u1/undo",
        Some("{}"),
    );
    assert_eq!(code, 200, "{text}");
    let undo: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(undo["kind"], "undo");
    assert_eq!(undo["op"], 2);
    assert_eq!(undo["actor"], "carol");
    assert_eq!(undo["leafBefore"], b.as_str());
    assert_eq!(undo["leafAfter"], a.as_str());
    assert_eq!(leaf(&s, "u1"), a.as_str());
    assert_eq!(
        operations(&s, "u1")[0],
        undo,
        "the undo is the newest operation"
    );

    // Undoing the undo puts the leaf back; undo to op 0 goes to before the first append.
    let redo = s.ok(200, "POST", "/v1/sessions/u1/undo", Some("{}"));
    assert_eq!(redo["leafAfter"], b.as_str());
    assert_eq!(leaf(&s, "u1"), b.as_str());
    let root = s.ok(200, "POST", "/v1/sessions/u1/undo", Some(r#"{"toOp":0}"#));
    assert_eq!(root["leafAfter"], Value::Null);
    assert_eq!(leaf(&s, "u1"), Value::Null);
    assert_eq!(operations(&s, "u1").len(), 5, "nothing was removed");

    assert_eq!(
        s.err(404, "POST", "/v1/sessions/u1/undo", Some(r#"{"toOp":99}"#)),
        "not_found"
    );
    assert_eq!(
        s.err(400, "POST", "/v1/sessions/u1/undo", Some(r#"{"toOp":"x"}"#)),
        "invalid_request"
    );
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"u2"}"#));
    assert_eq!(
        s.err(409, "POST", "/v1/sessions/u2/undo", Some("{}")),
        "invalid_state",
        "a session with no operation has nothing to undo"
    );

    // While another client holds the turn, undo is busy and moves nothing.
    let turn = s.ok(201, "POST", "/v1/sessions/u1/turns", Some("{}"));
    assert_eq!(
        s.err(409, "POST", "/v1/sessions/u1/undo", Some("{}")),
        "busy"
    );
    assert_eq!(leaf(&s, "u1"), Value::Null);
    let lease = turn["lease"].as_str().unwrap();
    let (code, _) = s.call("DELETE", &format!("/v1/sessions/u1/turns/{lease}"), None);
    assert_eq!(code, 204);
    s.ok(200, "POST", "/v1/sessions/u1/undo", Some("{}"));
    assert_eq!(leaf(&s, "u1"), b.as_str());
}

#[test]
fn a_seal_is_extended_by_later_appends_and_a_wrong_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"z1"}"#));
    append(&s, None, "z1", "one");
    append(&s, None, "z1", "two");
    let seal = s.ok(200, "GET", "/v1/sessions/z1/seal", None);
    let digest = seal["digest"].as_str().unwrap().to_owned();
    assert_eq!(digest.len(), 64);
    assert_eq!(seal["records"], 2);
    assert_eq!(seal["operations"], 2);

    append(&s, None, "z1", "three");
    let body = json!({ "digest": digest }).to_string();
    let check = s.ok(200, "POST", "/v1/sessions/z1/seal/check", Some(&body));
    assert_eq!(
        check,
        json!({"extends": true, "operations": 2, "records": 2})
    );
    assert_ne!(
        s.ok(200, "GET", "/v1/sessions/z1/seal", None)["digest"],
        digest
    );

    // One digit changed: no prefix of the history has that digest.
    let flipped = format!(
        "{}{}",
        if digest.starts_with('0') { '1' } else { '0' },
        &digest[1..]
    );
    let body = json!({ "digest": flipped }).to_string();
    let check = s.ok(200, "POST", "/v1/sessions/z1/seal/check", Some(&body));
    assert_eq!(check, json!({"extends": false}));
    // Another session with the same entries does not extend it either.
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"z2"}"#));
    append(&s, None, "z2", "one");
    append(&s, None, "z2", "two");
    let body = json!({ "digest": digest }).to_string();
    let check = s.ok(200, "POST", "/v1/sessions/z2/seal/check", Some(&body));
    assert_eq!(check["extends"], false);

    assert_eq!(
        s.err(
            400,
            "POST",
            "/v1/sessions/z1/seal/check",
            Some(r#"{"digest":"xyz"}"#)
        ),
        "invalid_argument"
    );
    assert_eq!(
        s.err(400, "POST", "/v1/sessions/z1/seal/check", Some("{}")),
        "invalid_request"
    );
}

#[test]
fn reads_at_an_operation_answer_as_the_session_stood_then() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"p1"}"#));
    let a = append(&s, None, "p1", "one");
    append(&s, None, "p1", "two");
    s.ok(
        201,
        "POST",
        "/v1/sessions/p1/labels",
        Some(&json!({"targetId": a, "label": "start"}).to_string()),
    );
    let reads = [
        "context",
        "context?preset=harness",
        "branch",
        "path",
        "tree",
    ];
    let read = |what: &str| s.call("GET", &format!("/v1/sessions/p1/{what}"), None);
    let then: Vec<(u16, String)> = reads.iter().map(|r| read(r)).collect();
    let op = operations(&s, "p1")[0]["op"].as_u64().unwrap();
    assert_eq!(op, 2);

    // Later: another branch from the first entry, a label moved, a name.
    s.ok(
        200,
        "PUT",
        "/v1/sessions/p1/leaf",
        Some(&json!({ "target": a }).to_string()),
    );
    append(&s, None, "p1", "three");
    s.ok(
        201,
        "POST",
        "/v1/sessions/p1/labels",
        Some(&json!({"targetId": a, "label": "moved"}).to_string()),
    );
    for (what, before) in reads.iter().zip(&then) {
        let sep = if what.contains('?') { '&' } else { '?' };
        assert_ne!(&read(what), before, "{what} changed since");
        assert_eq!(
            &read(&format!("{what}{sep}atOp={op}")),
            before,
            "{what} at op {op}"
        );
        // A time after every operation is now.
        assert_eq!(
            read(&format!("{what}{sep}atTime=2999-01-01T00:00:00Z")),
            read(what),
            "{what} at a time to come"
        );
    }
    // At op 0 the context holds the first message only.
    let first = s.ok(200, "GET", "/v1/sessions/p1/context?atOp=0", None);
    assert_eq!(first["messages"].as_array().unwrap().len(), 1);

    let bad = [
        ("context?atOp=99", 404, "not_found"),
        ("branch?atOp=99", 404, "not_found"),
        ("tree?atTime=2000-01-01T00:00:00Z", 404, "not_found"),
        ("context?atOp=x", 400, "invalid_argument"),
        ("path?atOp=-1", 400, "invalid_argument"),
        ("tree?atTime=yesterday", 400, "invalid_argument"),
        (
            "context?atOp=1&atTime=2999-01-01T00:00:00Z",
            400,
            "invalid_argument",
        ),
        ("context?atOp=1&leaf=x", 400, "invalid_argument"),
        ("branch?atOp=1&from=x", 400, "invalid_argument"),
        ("tree?atOpp=1", 400, "invalid_argument"),
    ];
    for (what, status, code) in bad {
        assert_eq!(
            s.err(status, "GET", &format!("/v1/sessions/p1/{what}"), None),
            code,
            "{what}"
        );
    }
}

/// A raw request with one extra header line (bytes ureq would not send); the status.
fn raw_status(s: &Server, header: &[u8]) -> u16 {
    let addr = s.url.trim_start_matches("http://");
    let mut conn = TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "GET /v1/sessions/c1/leaf HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {TOKEN}\r\n\
         connection: close\r\n"
    )
    .into_bytes();
    req.extend_from_slice(header);
    req.extend_from_slice(b"\r\n\r\n");
    conn.write_all(&req).unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).unwrap_or_default();
    status.parse().unwrap_or_else(|_| panic!("{answer}"))
}

#[test]
fn an_invalid_client_name_is_refused_and_the_server_goes_on_serving() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"c1"}"#));
    let long = "x".repeat(65);
    let body = r#"{"entry":{"role":"user","content":"no","timestamp":1}}"#;
    let (code, text) = s.call_with(
        Some(TOKEN),
        &[("Grove-Client", &long)],
        "POST",
        "/v1/sessions/c1/entries",
        Some(body),
    );
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("invalid_argument"), "{text}");
    assert!(operations(&s, "c1").is_empty(), "nothing was written");
    // Empty, not ASCII, given twice: refused on reads too.
    assert_eq!(raw_status(&s, b"grove-client:"), 400);
    assert_eq!(raw_status(&s, b"grove-client: caf\xc3\xa9"), 400);
    assert_eq!(raw_status(&s, b"grove-client: a\r\ngrove-client: b"), 400);
    assert_eq!(raw_status(&s, b"grove-client: ok"), 200);

    let name = "y".repeat(64);
    let a = append(&s, Some(&name), "c1", "yes");
    assert_eq!(leaf(&s, "c1"), a.as_str());
    assert_eq!(operations(&s, "c1")[0]["actor"], name.as_str());
}
