//! Payloads through the server: large values appended over HTTP read back byte for byte, a
//! deleted session's payloads stay until `POST /v1/gc`, which removes only the unreferenced
//! ones and lists them.

use serde_json::{json, Value};

use super::Server;

fn append_text(s: &Server, sid: &str, text: &str) {
    let body = json!({"entry": {"role": "user", "content": text, "timestamp": 1}}).to_string();
    s.ok(
        201,
        "POST",
        &format!("/v1/sessions/{sid}/entries"),
        Some(&body),
    );
}

#[test]
fn gc_removes_only_what_no_session_references() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let shared = "S".repeat(10_000);
    let own = "O".repeat(20_000);
    for sid in ["p1", "p2"] {
        s.ok(
            201,
            "POST",
            "/v1/sessions",
            Some(&json!({ "id": sid }).to_string()),
        );
        append_text(&s, sid, &shared);
    }
    append_text(&s, "p1", &own);
    let report = s.ok(200, "POST", "/v1/gc", None);
    assert_eq!(
        (report["payloads"].as_u64(), report["referenced"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(report["removed"], json!([]));
    let (code, text) = s.call("DELETE", "/v1/sessions/p1", None);
    assert_eq!(code, 204, "{text}");
    let report = s.ok(200, "POST", "/v1/gc", None);
    assert_eq!(report["payloads"], 2, "{report}");
    let removed = report["removed"].as_array().unwrap();
    assert_eq!(removed.len(), 1, "{report}");
    // The bytes the store held: "OOOO…" is base64 text, stored as the 15,000 bytes it
    // decodes to behind a one-byte tag, compressed (docs/format.md, "Payloads").
    let held = grove_codec::payload::stored_form(format!("\"{own}\"").as_bytes()).len() as u64;
    assert!((10..100).contains(&held), "{held}");
    assert_eq!(removed[0]["bytes"], held);
    assert_eq!(removed[0]["hash"].as_str().unwrap().len(), 64);
    assert_eq!(report["removedBytes"], held);
    // The other session still reads its value.
    let ctx: Value = s.ok(200, "GET", "/v1/sessions/p2/context", None);
    assert_eq!(ctx["messages"][0]["content"], shared.as_str());
    assert_eq!(s.ok(200, "POST", "/v1/gc", None)["removed"], json!([]));
    assert_eq!(s.ok(200, "POST", "/v1/verify", None)["ok"], true);
}
