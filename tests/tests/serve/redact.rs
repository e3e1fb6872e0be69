//! Redaction over HTTP (docs/api.md, "Operations"): `POST .../redact` and `GET .../redactions`
//! against the real server, with the client's name as the actor, every read showing the
//! marker, verify and gc reporting it, and each bad request answered while the server goes on.

use serde_json::{json, Value};

use super::{Server, TOKEN};

const SECRET: &str = "zz8servertokensecret";

#[test]
fn a_redaction_over_http_is_an_operation_every_read_respects() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"r1"}"#));
    let body =
        json!({"entry": {"role": "user", "content": format!("token {SECRET}"), "timestamp": 1}});
    let first = s.ok(
        201,
        "POST",
        "/v1/sessions/r1/entries",
        Some(&body.to_string()),
    );
    let first = first["id"].as_str().unwrap().to_owned();
    let body = json!({"entry": {"role": "user", "content": "nothing secret", "timestamp": 2}});
    s.ok(
        201,
        "POST",
        "/v1/sessions/r1/entries",
        Some(&body.to_string()),
    );
    let seal = s.ok(200, "GET", "/v1/sessions/r1/seal", None)["digest"].clone();
    let found = s.ok(200, "GET", &format!("/v1/search?q={SECRET}"), None);
    assert_eq!(found["total"], 1);

    let (code, text) = s.call_with(
        Some(TOKEN),
        &[("Grove-Client", "compliance-bot")],
        "POST",
        "/v1/sessions/r1/redact",
        Some(&json!({"entryId": first, "reason": "a leaked token"}).to_string()),
    );
    assert_eq!(code, 200, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["entryId"], first.as_str());
    assert_eq!(r["paths"], json!(["/message/content"]));
    assert_eq!(r["actor"], "compliance-bot");
    assert_eq!(r["reason"], "a leaked token");

    let entry = s.ok(
        200,
        "GET",
        &format!("/v1/sessions/r1/entries/{first}"),
        None,
    );
    assert!(!entry.to_string().contains(SECRET), "{entry}");
    assert!(entry.to_string().contains("[redacted]"), "{entry}");
    let context = s.ok(200, "GET", "/v1/sessions/r1/context", None);
    assert!(!context.to_string().contains(SECRET));
    let (code, export) = s.call("GET", "/v1/sessions/r1/export", None);
    assert_eq!(code, 200);
    assert!(!export.contains(SECRET));
    let found = s.ok(200, "GET", &format!("/v1/search?q={SECRET}"), None);
    assert_eq!(found["total"], 0);
    let list = s.ok(200, "GET", "/v1/sessions/r1/redactions", None);
    assert_eq!(list["redactions"].as_array().unwrap().len(), 1);
    assert_eq!(list["redactions"][0], r);
    let ops = s.ok(200, "GET", "/v1/sessions/r1/operations?limit=1", None);
    assert_eq!(ops["operations"][0]["kind"], "redact");
    assert_eq!(ops["operations"][0]["actor"], "compliance-bot");
    let check = s.ok(
        200,
        "POST",
        "/v1/sessions/r1/seal/check",
        Some(&json!({ "digest": seal }).to_string()),
    );
    assert_eq!(check["extends"], true);
    let verified = s.ok(200, "POST", "/v1/verify", None);
    assert_eq!(verified["ok"], true, "{verified}");
    assert_eq!(verified["redacted"], 1);
    // Before gc the store's files may hold the secret (sled's old page versions, the search
    // index's deleted documents); gc rewrites them, closing the store meanwhile.
    let store = dir.path().join("store");
    let gc = s.ok(200, "POST", "/v1/gc", None);
    assert_eq!(gc["rewriteDue"], true, "{gc}");
    assert_eq!(gc["rewritten"], Value::Null);
    assert_eq!(gc["searchCompacted"], true);
    assert_eq!(gc["catalogueRowsRemoved"], 0);
    assert_eq!(gc["backendCompacted"], false);
    // Writes sent while the store is closed for the rewrite wait for it, and land.
    let (gc, appended) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            (0..40)
                .map(|i| {
                    let body = json!({"entry": {"role": "user", "content": format!("during {i}"), "timestamp": 3}});
                    s.call("POST", "/v1/sessions/r1/entries", Some(&body.to_string())).0
                })
                .collect::<Vec<u16>>()
        });
        let gc = s.ok(200, "POST", "/v1/gc?rewrite=true", None);
        (gc, writer.join().unwrap())
    });
    assert!(appended.iter().all(|c| *c == 201), "{appended:?}");
    let entries = s.lines("/v1/sessions/r1/entries");
    assert_eq!(entries.len(), 2 + 40);
    assert_eq!(gc["rewriteDue"], false, "{gc}");
    assert!(gc["rewritten"]["keys"].as_u64().unwrap() > 0, "{gc}");
    let left = grove_tests::files_holding(&store, SECRET.as_bytes());
    assert!(left.is_empty(), "the secret is still in {left:?}");
    // The store was opened again: reads and writes go on, and nothing is left to rewrite.
    let entry = s.ok(
        200,
        "GET",
        &format!("/v1/sessions/r1/entries/{first}"),
        None,
    );
    assert!(entry.to_string().contains("[redacted]"), "{entry}");
    let body = json!({"entry": {"role": "user", "content": "after gc", "timestamp": 3}});
    s.ok(
        201,
        "POST",
        "/v1/sessions/r1/entries",
        Some(&body.to_string()),
    );
    let (code, text) = s.call("POST", "/v1/gc?rewrite=maybe", None);
    assert_eq!(code, 400, "{text}");
    let again = s.ok(200, "POST", "/v1/gc", None);
    assert_eq!(again["rewriteDue"], false);
    assert_eq!(again["rewritten"], Value::Null);
    assert_eq!(s.ok(200, "POST", "/v1/verify", None)["ok"], true);

    // Bad requests: answered, nothing changed, the server goes on.
    for (body, code, error) in [
        (
            json!({"entryId": first, "reason": " "}),
            400,
            "invalid_argument",
        ),
        (
            json!({"entryId": first, "reason": "r", "path": "/id"}),
            400,
            "invalid_argument",
        ),
        (
            json!({"entryId": first, "reason": "r"}),
            400,
            "invalid_argument",
        ),
        (json!({"entryId": "nope", "reason": "r"}), 404, "not_found"),
        (json!({"entryId": first}), 400, "invalid_request"),
        (
            json!({"entryId": first, "reason": "r", "extra": 1}),
            400,
            "invalid_request",
        ),
    ] {
        let (got, text) = s.call("POST", "/v1/sessions/r1/redact", Some(&body.to_string()));
        assert_eq!(got, code, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["code"], error, "{body}: {text}");
    }
    let (got, _) = s.call(
        "POST",
        "/v1/sessions/missing/redact",
        Some(r#"{"entryId":"x","reason":"r"}"#),
    );
    assert_eq!(got, 404);
    let list = s.ok(200, "GET", "/v1/sessions/r1/redactions", None);
    assert_eq!(list["redactions"].as_array().unwrap().len(), 1);
    s.ok(200, "GET", "/v1/health", None);
}
