//! `GET /v1/search` through a real server: an append is found by the next request, its
//! filters and errors, and a deletion takes the session's hits out.

use serde_json::json;

use super::Server;

fn append(s: &Server, sid: &str, role: &str, text: &str) -> String {
    // An assistant's content is blocks; a user's may be a string.
    let content = match role {
        "assistant" => json!([{"type": "text", "text": text}]),
        _ => json!(text),
    };
    let body = json!({"entry": {"role": role, "content": content, "timestamp": 1}}).to_string();
    let answer = s.ok(
        201,
        "POST",
        &format!("/v1/sessions/{sid}/entries"),
        Some(&body),
    );
    answer["id"].as_str().unwrap().to_owned()
}

#[test]
fn search_finds_what_was_just_appended_and_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    for sid in ["s1", "s2"] {
        s.ok(
            201,
            "POST",
            "/v1/sessions",
            Some(&json!({ "id": sid }).to_string()),
        );
    }
    let first = append(&s, "s1", "user", "where is the <needle> & haystack");
    let found = s.ok(200, "GET", "/v1/search?q=needle", None);
    assert_eq!(found["total"], 1, "{found}");
    let hit = &found["hits"][0];
    assert_eq!(
        (&hit["session"], &hit["entry"], &hit["type"], &hit["role"]),
        (
            &json!("s1"),
            &json!(first),
            &json!("message"),
            &json!("user")
        )
    );
    assert_eq!(hit["active"], true);
    assert_eq!(
        hit["marked"],
        "where is the &lt;<mark>needle</mark>&gt; &amp; haystack"
    );
    assert_eq!(hit["snippet"], "where is the <needle> & haystack");
    assert_eq!(hit["highlights"], json!([[14, 20]]));

    append(&s, "s2", "user", "needle again");
    append(&s, "s2", "assistant", "a needle answer");
    let all = s.ok(200, "GET", "/v1/search?q=needle&limit=2", None);
    assert_eq!(
        (all["total"].as_u64(), all["hits"].as_array().map(Vec::len)),
        (Some(3), Some(2))
    );
    let s2 = s.ok(200, "GET", "/v1/search?q=needle&session=s2&type=user", None);
    assert_eq!(s2["total"], 1, "{s2}");
    let typed = s.ok(
        200,
        "GET",
        "/v1/search?q=needle&type=assistant,toolResult",
        None,
    );
    assert_eq!(typed["total"], 1, "{typed}");
    let since = s.ok(200, "GET", "/v1/search?q=needle&since=1h", None);
    assert_eq!(since["total"], 3, "{since}");

    for (target, code) in [
        ("/v1/search", "invalid_argument"),
        ("/v1/search?q=needle&limit=0", "invalid_argument"),
        ("/v1/search?q=needle&since=soon", "invalid_argument"),
        ("/v1/search?q=needle&session=nope", "not_found"),
    ] {
        let (status, text) = s.call("GET", target, None);
        let body: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["code"], code, "{target}: {status} {text}");
    }
    let (status, text) = s.call("GET", "/v1/search?q=needle&bogus=1", None);
    assert_eq!(status, 400, "{text}");

    let (code, text) = s.call("DELETE", "/v1/sessions/s2", None);
    assert_eq!(code, 204, "{text}");
    let after = s.ok(200, "GET", "/v1/search?q=needle", None);
    assert_eq!(after["total"], 1, "{after}");
    let verify = s.ok(200, "POST", "/v1/verify", None);
    assert_eq!(verify["ok"], true, "{verify}");
}
