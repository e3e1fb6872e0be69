//! Input limits at the server (issue 28, points 5 to 8): one nesting limit for every JSON
//! body and stored values answered as stored; the id rule on every route and on import; the
//! shape pi requires of known entry types; an entry's own `id` used, a retry answered with
//! the entry already there.

use serde_json::{json, Value};

use super::{user_line, Server};

/// `levels` objects nested in one another, as `{"a":{"a":...1...}}`.
fn nested(levels: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels))
}

/// The error body of a failing request: (status, code, message).
fn refused(s: &Server, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let (status, text) = s.call(method, path, Some(body));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (
        status,
        v["code"].as_str().unwrap_or_default().to_owned(),
        v["message"].as_str().unwrap_or_default().to_owned(),
    )
}

fn export(s: &Server, sid: &str) -> String {
    let (code, text) = s.call("GET", &format!("/v1/sessions/{sid}/export"), None);
    assert_eq!(code, 200, "{text}");
    text
}

#[test]
fn deep_json_is_refused_at_the_door_and_stored_deep_metadata_is_answered_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    // 128 levels of metadata: refused, naming the field and the limit; nothing created.
    let body = format!(r#"{{"id":"deep","metadata":{}}}"#, nested(128));
    let (status, code, message) = refused(&s, "POST", "/v1/sessions", &body);
    assert_eq!(
        (status, code.as_str()),
        (400, "invalid_argument"),
        "{message}"
    );
    assert!(
        message.contains("metadata.a.a.a") && message.contains("100 levels"),
        "{message}"
    );
    s.err(404, "GET", "/v1/sessions/deep", None);
    // At the limit (the body and 99 levels) it is taken, and answered as stored.
    let metadata = nested(99);
    let body = format!(r#"{{"id":"deep","metadata":{metadata}}}"#);
    let (status, text) = s.call("POST", "/v1/sessions", Some(&body));
    assert_eq!(status, 201, "{text}");
    assert!(
        text.contains(&format!(r#""metadata":{metadata}"#)),
        "{text}"
    );
    // Every JSON body: an append's, an exact entry's.
    let entry = format!(
        r#"{{"entry":{{"type":"custom","customType":"m","data":{}}}}}"#,
        nested(120)
    );
    let (status, code, message) = refused(&s, "POST", "/v1/sessions/deep/entries", &entry);
    assert_eq!((status, code.as_str()), (400, "invalid_argument"));
    assert!(message.contains("the field entry.data.a"), "{message}");
    let exact = format!(
        r#"{{"type":"custom","id":"x1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"m","data":{}}}"#,
        nested(120)
    );
    let (status, code, message) = refused(&s, "POST", "/v1/sessions/deep/entries/exact", &exact);
    assert_eq!((status, code.as_str()), (400, "invalid_argument"));
    assert!(message.contains("the field data.a"), "{message}");
    assert_eq!(s.ok(200, "GET", "/v1/sessions/deep", None)["entries"], 0);

    // A session whose header holds deeper metadata (pi's JSON has no depth limit, and import
    // keeps what pi wrote) is answered with it, not with null.
    let deeper = nested(200);
    let file = format!(
        "{}\n{}\n",
        json!({"type":"session","version":3,"id":"imported","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","metadata":"M"})
            .to_string()
            .replace(r#""M""#, &deeper),
        user_line("a1", None, "hi")
    );
    let (status, text) = s.call("POST", "/v1/import", Some(&file));
    assert_eq!(status, 201, "{text}");
    let (status, text) = s.call("GET", "/v1/sessions/imported", None);
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(&format!(r#""metadata":{deeper}"#)), "{text}");
    assert!(export(&s, "imported").contains(&deeper));
}

#[test]
fn ids_over_the_limit_or_with_control_characters_are_refused_on_every_route() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"ids"}"#));
    s.ok(
        201,
        "POST",
        "/v1/sessions/ids/entries/exact",
        Some(&user_line("a1", None, "first")),
    );
    let before = export(&s, "ids");
    // A 1 MiB session id, at create and at fork.
    let huge = "a".repeat(1 << 20);
    for (path, body) in [
        ("/v1/sessions", json!({ "id": huge })),
        (
            "/v1/sessions/ids/fork",
            json!({ "id": huge, "position": "at" }),
        ),
    ] {
        let (status, code, message) = refused(&s, "POST", path, &body.to_string());
        assert_eq!((status, code.as_str()), (400, "invalid_argument"), "{path}");
        assert!(
            message.contains("1048576 bytes") && message.contains("256"),
            "{message}"
        );
        assert!(message.len() < 300, "the message names the id shortened");
    }
    let listed = s.ok(200, "GET", "/v1/sessions", None);
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
    // Entry ids holding NUL or ESC, or of 1 MiB, on every append route.
    for bad in ["a\u{0}b", "\u{1b}[31m", &"e".repeat(1 << 20)] {
        let custom = json!({"type": "custom", "customType": "m", "id": bad});
        let message = json!({"role": "user", "content": "hi"});
        let exact = user_line(bad, Some("a1"), "x");
        let appends = json!({"appends": [{"session": "ids", "entry": message, "id": bad}]});
        for (path, body) in [
            ("/v1/sessions/ids/entries/exact", exact),
            (
                "/v1/sessions/ids/entries",
                json!({"entry": message, "id": bad}).to_string(),
            ),
            (
                "/v1/sessions/ids/entries",
                json!({ "entry": custom }).to_string(),
            ),
            (
                "/v1/sessions/ids/entries/many",
                json!({"entries": [message, custom]}).to_string(),
            ),
            (
                "/v1/sessions/ids/entries/if",
                json!({"expectedLeaf": "a1", "entry": custom}).to_string(),
            ),
        ] {
            let (status, code, text) = refused(&s, "POST", path, &body);
            assert_eq!(
                (status, code.as_str()),
                (400, "invalid_argument"),
                "{path}: {text}"
            );
            assert!(text.contains("entry id"), "{text}");
            assert!(
                !text.contains(['\u{0}', '\u{1b}']) && text.len() < 300,
                "{text}"
            );
        }
        let answer = s.ok(200, "POST", "/v1/appends", Some(&appends.to_string()));
        assert_eq!(answer["results"][0]["code"], "invalid_argument", "{answer}");
    }
    // Import: an entry id over the limit is refused naming the line and the id.
    let file = format!(
        "{}\n{}\n{}\n",
        json!({"type":"session","version":3,"id":"imp","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}),
        user_line("a1", None, "hi"),
        user_line(&"i".repeat(300), Some("a1"), "long id")
    );
    let (status, code, message) = refused(&s, "POST", "/v1/import", &file);
    assert_eq!((status, code.as_str()), (400, "invalid_entry"), "{message}");
    assert!(
        message.contains("line 3") && message.contains(r#""iiii"#) && message.contains("300 bytes"),
        "{message}"
    );
    s.err(404, "GET", "/v1/sessions/imp", None);
    assert_eq!(export(&s, "ids"), before, "nothing was stored");
}

#[test]
fn entries_not_of_pi_shape_are_refused_by_field_and_unknown_types_kept_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"shape"}"#));
    s.ok(
        201,
        "POST",
        "/v1/sessions/shape/entries/exact",
        Some(&user_line("a1", None, "first")),
    );
    let before = export(&s, "shape");
    let cases = [
        (json!({"role": 5}), "message.role must be a string, got 5"),
        (
            json!({"role": [1]}),
            "message.role must be a string, got [1]",
        ),
        (
            json!({"role": "user", "content": 7}),
            "message.content must be",
        ),
        (
            json!({"role": "user", "content": [{"type": "text", "text": false}]}),
            "message.content[0].text must be a string",
        ),
        (
            json!({"type": "compaction", "summary": "s", "tokensBefore": "9"}),
            "tokensBefore must be a number",
        ),
        (
            json!({"type": "branch_summary", "summary": "s"}),
            "fromId is missing",
        ),
        (
            json!({"type": "label", "targetId": "a1", "label": 1}),
            "label must be a string",
        ),
        (
            json!({"type": "model_change", "provider": "p"}),
            "modelId is missing",
        ),
        (
            json!({"type": "thinking_level_change", "thinkingLevel": 3}),
            "thinkingLevel must be a string",
        ),
        (
            json!({"type": "active_tools_change", "activeToolNames": [1]}),
            "activeToolNames must be an array of strings",
        ),
        (
            json!({"type": "custom_message", "customType": "c", "content": "x", "display": "y"}),
            "display must be a boolean",
        ),
        (json!({"type": "custom"}), "customType is missing"),
        (
            json!({"type": "session_info", "name": 1}),
            "name must be a string",
        ),
    ];
    for (entry, reason) in cases {
        for (path, body) in [
            ("/v1/sessions/shape/entries", json!({ "entry": entry })),
            (
                "/v1/sessions/shape/entries/many",
                json!({ "entries": [entry] }),
            ),
            (
                "/v1/sessions/shape/entries/if",
                json!({"expectedLeaf": "a1", "entry": entry}),
            ),
        ] {
            let (status, code, message) = refused(&s, "POST", path, &body.to_string());
            assert_eq!(
                (status, code.as_str()),
                (400, "invalid_entry"),
                "{path}: {message}"
            );
            assert!(message.contains(reason), "{path}: {reason}: {message}");
        }
        let appends = json!({"appends": [{"session": "shape", "entry": entry}]});
        let answer = s.ok(200, "POST", "/v1/appends", Some(&appends.to_string()));
        assert_eq!(answer["results"][0]["code"], "invalid_entry", "{answer}");
    }
    let exact = r#"{"type":"compaction","id":"c1","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z","summary":[],"tokensBefore":1}"#;
    let (status, code, message) = refused(&s, "POST", "/v1/sessions/shape/entries/exact", exact);
    assert_eq!((status, code.as_str()), (400, "invalid_entry"));
    assert!(
        message.contains("summary must be a string, got []"),
        "{message}"
    );
    assert_eq!(export(&s, "shape"), before, "nothing was stored");

    // Unknown types keep every field, byte for byte.
    let odd = r#"{"type":"x-odd","role":5,"message":[1],"z":{"b":1,"a":2.50}}"#;
    let id = s.ok(
        201,
        "POST",
        "/v1/sessions/shape/entries",
        Some(&format!(r#"{{"entry":{odd}}}"#)),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, line) = s.call("GET", &format!("/v1/sessions/shape/entries/{id}"), None);
    assert!(
        line.trim_end()
            .ends_with(r#","role":5,"message":[1],"z":{"b":1,"a":2.50}}"#),
        "{line}"
    );
    let exact_odd = r#"{"type":"x-odd","id":"o2","parentId":null,"timestamp":"t","role":{"x":[]}}"#;
    s.ok(
        201,
        "POST",
        "/v1/sessions/shape/entries/exact",
        Some(exact_odd),
    );
    let (_, line) = s.call("GET", "/v1/sessions/shape/entries/o2", None);
    assert_eq!(line.trim_end(), exact_odd);
}

#[test]
fn an_id_in_a_new_entry_is_used_and_a_retry_is_answered_with_the_stored_entry() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"retry"}"#));
    let count = |s: &Server| s.ok(200, "GET", "/v1/sessions/retry", None)["entries"].clone();
    // /entries: the entry object's id is used; the same request again answers the same.
    let body =
        json!({"entry": {"type": "custom", "customType": "m", "id": "c-1", "data": 1}}).to_string();
    for _ in 0..2 {
        let answer = s.ok(201, "POST", "/v1/sessions/retry/entries", Some(&body));
        assert_eq!(answer, json!({"id": "c-1"}));
    }
    assert_eq!(count(&s), 1);
    // A message with the append's id, likewise.
    let body = json!({"entry": {"role": "user", "content": "hi"}, "id": "u-1"}).to_string();
    for _ in 0..2 {
        let answer = s.ok(201, "POST", "/v1/sessions/retry/entries", Some(&body));
        assert_eq!(answer, json!({"id": "u-1"}));
    }
    assert_eq!(count(&s), 2);
    // Another entry under a stored id, or two ids that differ, are refused naming the id.
    let other = json!({"entry": {"type": "custom", "customType": "m", "id": "c-1", "data": 2}});
    let (status, code, message) =
        refused(&s, "POST", "/v1/sessions/retry/entries", &other.to_string());
    assert_eq!((status, code.as_str()), (400, "invalid_argument"));
    assert!(message.contains("c-1"), "{message}");
    let both = json!({"entry": {"type": "custom", "customType": "m", "id": "c-9"}, "id": "c-8"});
    let (status, _, message) = refused(&s, "POST", "/v1/sessions/retry/entries", &both.to_string());
    assert_eq!(status, 400);
    assert!(
        message.contains("c-8") && message.contains("c-9"),
        "{message}"
    );

    // /entries/many: the retry of an applied batch answers its ids.
    let batch = json!({"entries": [
        {"type": "custom", "customType": "m", "id": "m-1"},
        {"type": "custom", "customType": "m", "id": "m-2"},
    ]})
    .to_string();
    for _ in 0..2 {
        let answer = s.ok(201, "POST", "/v1/sessions/retry/entries/many", Some(&batch));
        assert_eq!(answer, json!({"ids": ["m-1", "m-2"]}));
    }
    assert_eq!(count(&s), 4);
    let part = json!({"entries": [
        {"type": "custom", "customType": "m", "id": "m-2"},
        {"type": "custom", "customType": "m", "id": "m-3"},
    ]});
    let (status, code, message) = refused(
        &s,
        "POST",
        "/v1/sessions/retry/entries/many",
        &part.to_string(),
    );
    assert_eq!((status, code.as_str()), (400, "invalid_argument"));
    assert!(message.contains("m-2"), "{message}");
    assert_eq!(count(&s), 4);

    // /entries/if: the retry, after the leaf moved on to the entry, is `appended` again.
    let body = json!({"expectedLeaf": "m-2", "entry": {"type": "custom", "customType": "m", "id": "if-1"}})
        .to_string();
    for _ in 0..2 {
        let answer = s.ok(200, "POST", "/v1/sessions/retry/entries/if", Some(&body));
        assert_eq!(answer, json!({"appended": true, "id": "if-1"}));
    }
    // /entries/exact: the same bytes again.
    let exact = user_line("x-1", Some("if-1"), "exact");
    for _ in 0..2 {
        let answer = s.ok(
            201,
            "POST",
            "/v1/sessions/retry/entries/exact",
            Some(&exact),
        );
        assert_eq!(answer, json!({"id": "x-1", "leaf": "x-1"}));
    }
    // POST /v1/appends: an item's retry answers its id.
    let appends = json!({"appends": [{"session": "retry", "entry": {"role": "user", "content": "b"}, "id": "p-1"}]})
        .to_string();
    for _ in 0..2 {
        let answer = s.ok(200, "POST", "/v1/appends", Some(&appends));
        assert_eq!(answer, json!({"results": [{"id": "p-1"}]}));
    }
    assert_eq!(count(&s), 7);
    assert_eq!(
        s.ok(200, "GET", "/v1/sessions/retry/leaf", None)["leaf"],
        "p-1"
    );
}
