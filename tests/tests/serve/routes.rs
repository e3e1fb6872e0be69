//! Every route of docs/api.md does what the document says, against the real server.

use serde_json::{json, Value};

use super::{user_line, Server};
use crate::cli::fixture;

fn ids(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(|v| v["id"].as_str().unwrap()).collect()
}

#[test]
fn every_route_answers_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let health = s.ok(200, "GET", "/v1/health", None);
    assert_eq!(health["ok"], true);
    assert_eq!(health["backend"], "sled");
    assert_eq!(health["durability"], "sync");

    // Sessions.
    let created = s.ok(
        201,
        "POST",
        "/v1/sessions",
        Some(r#"{"id":"s1","cwd":"/w","metadata":{"id":"pi-1","createdAt":"2025-01-01"}}"#),
    );
    assert_eq!(created["id"], "s1");
    assert_eq!(created["metadata"]["id"], "pi-1");
    assert_eq!(created["leaf"], Value::Null);
    assert_eq!(
        s.err(400, "POST", "/v1/sessions", Some(r#"{"id":"s1"}"#)),
        "invalid_argument",
        "an id in use"
    );

    // Appends: a new entry, a message, the caller's exact entry, a conditional one, many.
    let a = s.ok(
        201,
        "POST",
        "/v1/sessions/s1/entries",
        Some(r#"{"entry":{"role":"user","content":"hello","timestamp":1}}"#),
    );
    let a = a["id"].as_str().unwrap().to_owned();
    let exact = user_line("x1", Some(&a), "exact");
    let r = s.ok(201, "POST", "/v1/sessions/s1/entries/exact", Some(&exact));
    assert_eq!(r, json!({"id": "x1", "leaf": "x1"}));
    let stale = s.ok(
        200,
        "POST",
        "/v1/sessions/s1/entries/if",
        Some(&format!(
            r#"{{"expectedLeaf":"{a}","entry":{{"role":"user","content":"late","timestamp":2}}}}"#
        )),
    );
    assert_eq!(
        stale,
        json!({"appended": false, "leaf": "x1"}),
        "a conflict is a result"
    );
    let fresh = s.ok(
        200,
        "POST",
        "/v1/sessions/s1/entries/if",
        Some(r#"{"expectedLeaf":"x1","entry":{"type":"custom","customType":"note","data":{}}}"#),
    );
    assert_eq!(fresh["appended"], true);
    let c = fresh["id"].as_str().unwrap().to_owned();
    let many = s.ok(
        201,
        "POST",
        "/v1/sessions/s1/entries/many",
        Some(
            r#"{"entries":[{"role":"assistant","content":[{"type":"text","text":"one"}],"provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"cost":{"total":0.5}},"stopReason":"stop","timestamp":3},{"type":"model_change","provider":"p","modelId":"m2"}]}"#,
        ),
    );
    let many: Vec<String> = many["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(many.len(), 2);

    // Reads.
    let entries = s.lines("/v1/sessions/s1/entries");
    assert_eq!(ids(&entries), [a.as_str(), "x1", &c, &many[0], &many[1]]);
    assert_eq!(
        entries[1].to_string(),
        exact,
        "the exact entry's bytes, as given"
    );
    let page = s.lines("/v1/sessions/s1/entries?after=1&limit=2");
    assert_eq!(ids(&page), ["x1", c.as_str()]);
    let one = s.ok(200, "GET", "/v1/sessions/s1/entries/x1", None);
    assert_eq!(one["id"], "x1");
    assert_eq!(
        s.err(404, "GET", "/v1/sessions/s1/entries/nope", None),
        "not_found"
    );
    // An entry's proof: its digest, path digest and its parent's, chained.
    let root = s.ok(
        200,
        "GET",
        &format!("/v1/sessions/s1/entries/{a}/proof"),
        None,
    );
    let proof = s.ok(200, "GET", "/v1/sessions/s1/entries/x1/proof", None);
    assert_eq!(proof["entry"].to_string(), exact, "the entry as stored");
    let content = *blake3::hash(exact.as_bytes()).as_bytes();
    let hex = grove::codec::digest::hex;
    assert_eq!(proof["digest"], hex(&content));
    assert_eq!(root["parentPathDigest"], hex(&[0u8; 32]));
    assert_eq!(proof["parentPathDigest"], root["pathDigest"]);
    let mut both = [0u8; 32].to_vec();
    if let Some(parent) = root["pathDigest"].as_str() {
        both = (0..32)
            .map(|i| u8::from_str_radix(&parent[2 * i..2 * i + 2], 16).unwrap())
            .collect();
    }
    both.extend_from_slice(&content);
    let chained = blake3::derive_key("grove 2026-11 entry chain v1", &both);
    assert_eq!(proof["pathDigest"], hex(&chained));
    assert_eq!(proof["seq"], 1);
    assert_eq!(
        s.err(404, "GET", "/v1/sessions/s1/entries/nope/proof", None),
        "not_found"
    );
    let path = s.lines(&format!("/v1/sessions/s1/path?from={c}"));
    assert_eq!(ids(&path), [a.as_str(), "x1", &c]);
    let branch = s.lines("/v1/sessions/s1/branch");
    assert_eq!(branch.len(), 5);
    let children = s.lines(&format!("/v1/sessions/s1/children?parent={a}"));
    assert_eq!(ids(&children), ["x1"]);
    let roots = s.lines("/v1/sessions/s1/children");
    assert_eq!(ids(&roots), [a.as_str()]);
    let context = s.ok(200, "GET", "/v1/sessions/s1/context?preset=harness", None);
    assert_eq!(context["messages"].as_array().unwrap().len(), 3);
    assert_eq!(context["model"], json!({"provider": "p", "modelId": "m2"}));
    // A preset's options, given one by one, build the same context.
    let by_options = s.ok(
        200,
        "GET",
        "/v1/sessions/s1/context?settings=branch&selection=branch&nullContent=preserve",
        None,
    );
    assert_eq!(by_options, context);
    let cli = s.ok(200, "GET", "/v1/sessions/s1/context?preset=cli", None);
    assert_eq!(cli["activeToolNames"], Value::Null);
    let at_x1 = s.ok(200, "GET", "/v1/sessions/s1/context?leaf=x1", None);
    assert_eq!(at_x1["messages"].as_array().unwrap().len(), 2);
    let (code, text) = s.call("GET", "/v1/sessions/s1/context?retainedTail=maybe", None);
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("retainedTail"), "{text}");
    let stats = s.ok(200, "GET", "/v1/sessions/s1/stats", None);
    assert_eq!(stats["messageCount"], 3);
    assert_eq!(stats["totalTokens"].as_f64(), Some(10.0));
    assert_eq!(stats["cachedTokens"].as_f64(), Some(3.0));
    assert_eq!(stats["uncachedTokens"].as_f64(), Some(5.0));
    assert_eq!(stats["costTotal"].as_f64(), Some(0.5));

    // Fresh ids: distinct, unused.
    let fresh = s.ok(200, "POST", "/v1/sessions/s1/ids", Some(r#"{"count":50}"#));
    let fresh: Vec<&str> = fresh["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(fresh.len(), 50);
    assert_eq!(
        fresh.iter().collect::<std::collections::HashSet<_>>().len(),
        50
    );
    for id in &fresh {
        assert_eq!(id.len(), 8);
        let (code, _) = s.call(
            "GET",
            &format!("/v1/sessions/s1/entries/{id}?log=true"),
            None,
        );
        assert_eq!(code, 404, "{id} is unused");
    }
    assert_eq!(
        s.err(400, "POST", "/v1/sessions/s1/ids", Some(r#"{"count":0}"#)),
        "invalid_argument"
    );

    // Labels and the name.
    let label = s.ok(
        201,
        "POST",
        "/v1/sessions/s1/labels",
        Some(r#"{"targetId":"x1","label":"  padded  "}"#),
    );
    assert!(label["id"].is_string());
    assert_eq!(
        s.ok(200, "GET", "/v1/sessions/s1/labels/x1", None),
        json!({"label": "padded"})
    );
    assert_eq!(
        s.ok(200, "GET", "/v1/sessions/s1/labels", None),
        json!({"x1": "padded"})
    );
    s.ok(
        201,
        "PUT",
        "/v1/sessions/s1/name",
        Some(r#"{"name":"my session"}"#),
    );
    assert_eq!(
        s.ok(200, "GET", "/v1/sessions/s1/name", None),
        json!({"name": "my session"})
    );

    // The leaf: a move is a leaf record, which the log shows and the entries do not.
    let moved = s.ok(
        200,
        "PUT",
        "/v1/sessions/s1/leaf",
        Some(r#"{"target":"x1"}"#),
    );
    assert_eq!(moved, json!({"leaf": "x1"}));
    assert_eq!(
        s.ok(200, "GET", "/v1/sessions/s1/leaf", None),
        json!({"leaf": "x1"})
    );
    let history = s.ok(200, "GET", "/v1/sessions/s1/leaf/history", None);
    let record = history[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(history[0]["target"], "x1");
    let log = s.lines("/v1/sessions/s1/log");
    assert_eq!(log.last().unwrap()["type"], "leaf");
    assert_eq!(log.last().unwrap()["targetId"], "x1");
    let leaves = s.lines("/v1/sessions/s1/log?type=leaf");
    assert_eq!(ids(&leaves), [record.as_str()]);
    let tail = s.lines(&format!("/v1/sessions/s1/log?after={}", log.len() - 1));
    assert_eq!(ids(&tail), [record.as_str()]);
    assert_eq!(
        s.err(
            404,
            "GET",
            &format!("/v1/sessions/s1/entries/{record}"),
            None
        ),
        "not_found",
        "a leaf record is no entry"
    );
    let found = s.ok(
        200,
        "GET",
        &format!("/v1/sessions/s1/entries/{record}?log=true"),
        None,
    );
    assert_eq!(found["type"], "leaf");
    let tree = s.ok(200, "GET", "/v1/sessions/s1/tree", None);
    assert_eq!(tree["roots"].as_array().unwrap().len(), 1);
    assert!(tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["id"] == "x1" && n["label"] == "padded"));

    // Fork, export, import, list, delete.
    let forked = s.ok(
        201,
        "POST",
        "/v1/sessions/s1/fork",
        Some(r#"{"entryId":"x1","position":"at","id":"s2"}"#),
    );
    assert_eq!(forked["id"], "s2");
    assert_eq!(forked["parentSessionId"], "s1");
    assert_eq!(ids(&s.lines("/v1/sessions/s2/entries")), [a.as_str(), "x1"]);
    let (code, exported) = s.call("GET", "/v1/sessions/s1/export", None);
    assert_eq!(code, 200);
    let fixture_text = std::fs::read_to_string(fixture("edge-seed-harness.jsonl")).unwrap();
    let report = s.ok(201, "POST", "/v1/import", Some(&fixture_text));
    let imported = report["session"].as_str().unwrap().to_owned();
    let (code, again) = s.call("GET", &format!("/v1/sessions/{imported}/export"), None);
    assert_eq!(code, 200);
    assert_eq!(again, fixture_text, "import and export are loss-free");
    assert!(exported.lines().count() > 5);
    let listed = s.ok(200, "GET", "/v1/sessions?limit=2", None);
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2);
    let next = listed["next"].as_str().unwrap().to_owned();
    let rest = s.ok(200, "GET", &format!("/v1/sessions?after={next}"), None);
    assert_eq!(rest["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(rest["next"], Value::Null);
    // Newest first (ids descending), paged the same way.
    let ids_of = |v: &Value| -> Vec<String> {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut ascending = ids_of(&listed);
    ascending.extend(ids_of(&rest));
    let first = s.ok(200, "GET", "/v1/sessions?order=desc&limit=2", None);
    let cursor = first["next"].as_str().unwrap().to_owned();
    let second = s.ok(
        200,
        "GET",
        &format!("/v1/sessions?order=desc&limit=2&after={cursor}"),
        None,
    );
    assert_eq!(second["next"], Value::Null);
    let mut descending = ids_of(&first);
    descending.extend(ids_of(&second));
    descending.reverse();
    assert_eq!(descending, ascending);
    assert_eq!(
        s.err(400, "GET", "/v1/sessions?order=newest", None),
        "invalid_argument"
    );
    let (code, _) = s.call("DELETE", "/v1/sessions/s2", None);
    assert_eq!(code, 204);
    assert_eq!(s.err(404, "GET", "/v1/sessions/s2", None), "not_found");
    let verify = s.ok(200, "POST", "/v1/verify", None);
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(verify["sessions"], 2);

    // The unix socket serves without a token, and only its owner may connect.
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&s.socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the socket is private");
    let mut conn = std::os::unix::net::UnixStream::connect(&s.socket).unwrap();
    conn.write_all(
        b"GET /v1/sessions/s1/name HTTP/1.1\r\nhost: grove\r\nconnection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#"{"name":"my session"}"#), "{answer}");

    // SIGTERM: the server stops, removes its socket, and the store holds everything.
    let socket = s.socket.clone();
    let status = s.terminate();
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists(), "the socket is removed");
    let store = grove::Store::open(dir.path().join("store")).unwrap();
    assert_eq!(store.sessions().unwrap().len(), 2);
    assert!(store.verify().unwrap().is_ok());
}

/// At `--durability none` writes are acknowledged before they are flushed: SIGTERM flushes
/// them before the server exits.
#[test]
fn appends_to_many_sessions_in_one_request() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    for sid in ["p", "q"] {
        s.ok(
            201,
            "POST",
            "/v1/sessions",
            Some(&format!(r#"{{"id":"{sid}"}}"#)),
        );
    }
    let user = |text: &str| json!({"role": "user", "content": text, "timestamp": 1});
    let body = json!({"appends": [
        {"session": "p", "entry": user("p1"), "id": "p0000001"},
        {"session": "q", "entry": user("q1")},
        {"session": "nope", "entry": user("lost")},
        {"session": "p", "entry": {"type": "custom", "customType": "k", "data": 1}, "timestamp": "2026-01-01T00:00:00.000Z"},
        {"session": "p", "entry": {"content": "neither a type nor a role"}},
        {"session": "q", "entry": user("q dup"), "id": "p0000001"},
        {"session": "q", "entry": user("q other"), "id": "p0000001"},
        {"session": "p", "entry": user("p3")},
    ]});
    let answer = s.ok(200, "POST", "/v1/appends", Some(&body.to_string()));
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 8, "one result per item, in order: {answer}");
    let code = |i: usize| results[i]["code"].as_str().unwrap_or("");
    let id = |i: usize| results[i]["id"].as_str().unwrap_or("").to_owned();
    assert_eq!(id(0), "p0000001", "an id given is used");
    assert_eq!(code(2), "not_found", "an unknown session: {answer}");
    assert_eq!(results[2]["status"], 404);
    assert!(results[2]["message"].as_str().unwrap().contains("nope"));
    assert_eq!(code(4), "invalid_argument", "a bad entry: {answer}");
    assert_eq!(id(5), "p0000001", "ids are per session");
    assert_eq!(
        code(6),
        "invalid_argument",
        "an id in use by another entry: {answer}"
    );
    for i in [0, 1, 3, 5, 7] {
        assert!(results[i]["code"].is_null(), "item {i} appended: {answer}");
    }

    // Each session's items form a chain in the order given, and the last is the leaf.
    let p = s.lines("/v1/sessions/p/path");
    assert_eq!(ids(&p), [id(0), id(3), id(7)]);
    assert_eq!(p[1]["timestamp"], "2026-01-01T00:00:00.000Z");
    assert_eq!(p[1]["parentId"], "p0000001");
    assert_eq!(s.ok(200, "GET", "/v1/sessions/p/leaf", None)["leaf"], id(7));
    let q = s.lines("/v1/sessions/q/path");
    assert_eq!(ids(&q), [id(1), id(5)]);
    assert_eq!(q[0]["message"]["content"], "q1");

    // Too many items: refused whole, nothing written; a body that is not the route's JSON too.
    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"session": "p", "entry": user("x")}))
        .collect();
    let big = json!({ "appends": many }).to_string();
    assert_eq!(
        s.err(400, "POST", "/v1/appends", Some(&big)),
        "invalid_argument"
    );
    for bad in [
        r#"{"appends":{}}"#,
        r#"{"appends":[{"entry":{}}]}"#,
        "[]",
        "{",
    ] {
        assert_eq!(
            s.err(400, "POST", "/v1/appends", Some(bad)),
            "invalid_request",
            "{bad}"
        );
    }
    assert_eq!(s.lines("/v1/sessions/p/entries").len(), 3);
    assert_eq!(s.lines("/v1/sessions/q/entries").len(), 2);
}

#[test]
fn sigterm_flushes_writes_acknowledged_at_durability_none() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_with(dir.path(), &["--durability", "none"], &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"n1"}"#));
    let mut parent: Option<String> = None;
    for i in 0..200 {
        let id = format!("e{i:04}");
        s.ok(
            201,
            "POST",
            "/v1/sessions/n1/entries/exact",
            Some(&user_line(&id, parent.as_deref(), "x")),
        );
        parent = Some(id);
    }
    assert!(s.terminate().success());
    let store = grove::Store::open(dir.path().join("store")).unwrap();
    let session = store.session("n1").unwrap();
    assert_eq!(session.entries().count(), 200);
    assert_eq!(session.leaf().unwrap().as_deref(), Some("e0199"));
}

/// SIGTERM while a large export is being read slowly: the server finishes it before it exits.
#[test]
fn sigterm_finishes_the_requests_in_flight() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"big"}"#));
    let text = "y".repeat(10_000);
    let mut parent: Option<String> = None;
    let mut batch = Vec::new();
    for i in 0..400 {
        let id = format!("b{i:04}");
        batch.push(user_line(&id, parent.as_deref(), &text));
        parent = Some(id);
    }
    let body = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"big2\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n{}\n",
        batch.join("\n")
    );
    s.ok(201, "POST", "/v1/import", Some(&body));
    let (_, whole) = s.call("GET", "/v1/sessions/big2/export", None);
    // A client reading the export slowly, over the unix socket.
    let mut conn = std::os::unix::net::UnixStream::connect(&s.socket).unwrap();
    conn.write_all(
        b"GET /v1/sessions/big2/export HTTP/1.1\r\nhost: grove\r\nconnection: close\r\n\r\n",
    )
    .unwrap();
    let mut first = [0u8; 1024];
    let n = conn.read(&mut first).unwrap();
    assert!(n > 0);
    let pid = s.url.clone();
    let terminated = std::thread::spawn(move || s.terminate());
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut rest = Vec::new();
    conn.read_to_end(&mut rest).unwrap();
    let mut answer = first[..n].to_vec();
    answer.extend_from_slice(&rest);
    let answer = String::from_utf8_lossy(&answer);
    let status = terminated.join().unwrap();
    assert!(status.success(), "{pid}: {status:?}");
    // The chunked body holds every entry of the export, the last one included.
    let marker = "\"timestamp\":\"2025-03-01";
    assert_eq!(
        answer.matches(marker).count(),
        whole.matches(marker).count(),
        "the export was finished"
    );
    assert_eq!(whole.matches(marker).count(), 400);
    assert!(answer.contains("b0399"));
}

#[test]
fn an_exact_append_can_keep_the_leaf() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"k1"}"#));
    let exact = "/v1/sessions/k1/entries/exact";
    s.ok(201, "POST", exact, Some(&user_line("a", None, "first")));
    s.ok(
        201,
        "POST",
        exact,
        Some(&user_line("b", Some("a"), "second")),
    );
    // An entry beside the conversation, under the older entry: the leaf stays on b.
    let beside = user_line("w", Some("a"), "beside");
    let r = s.ok(
        201,
        "POST",
        &format!("{exact}?keepLeaf=true"),
        Some(&beside),
    );
    assert_eq!(r, json!({"id": "w", "leaf": "b"}));
    assert_eq!(s.ok(200, "GET", "/v1/sessions/k1/leaf", None)["leaf"], "b");
    let ops = s.ok(200, "GET", "/v1/sessions/k1/operations", None);
    let last = &ops["operations"][0];
    assert_eq!(
        (last["leafBefore"].as_str(), last["leafAfter"].as_str()),
        (Some("b"), Some("b")),
        "{last}"
    );
    assert_eq!(
        last["records"], 2,
        "the entry and the leaf record, one operation"
    );
    // Without the flag the leaf moves, as pi's appendEntry moves it.
    let moved = s.ok(
        201,
        "POST",
        exact,
        Some(&user_line("v", Some("a"), "moved")),
    );
    assert_eq!(moved["leaf"], "v");

    // The log read as pi reads it ends on the same leaf: its export, imported, has leaf b.
    s.ok(
        201,
        "POST",
        &format!("{exact}?keepLeaf=true"),
        Some(&user_line("u", Some("a"), "x")),
    );
    let (code, exported) = s.call("GET", "/v1/sessions/k1/export", None);
    assert_eq!(code, 200);
    let last_line: Value = serde_json::from_str(exported.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last_line["type"].as_str(), last_line["targetId"].as_str()),
        (Some("leaf"), Some("v"))
    );
    let other = tempfile::tempdir().unwrap();
    let elsewhere = Server::start(other.path(), &[]);
    let imported = elsewhere.ok(201, "POST", "/v1/import", Some(&exported));
    assert_eq!(imported["leaf"], "v");

    // A leaf line cannot keep the leaf; nothing is written.
    let count = s.lines("/v1/sessions/k1/log").len();
    let leaf_line = r#"{"type":"leaf","id":"l9","parentId":"v","timestamp":"2025-03-01T00:00:00.000Z","targetId":"a"}"#;
    assert_eq!(
        s.err(
            400,
            "POST",
            &format!("{exact}?keepLeaf=true"),
            Some(leaf_line)
        ),
        "invalid_entry"
    );
    assert_eq!(s.lines("/v1/sessions/k1/log").len(), count);
    assert_eq!(s.ok(200, "GET", "/v1/sessions/k1/leaf", None)["leaf"], "v");
    assert_eq!(
        s.err(
            400,
            "POST",
            &format!("{exact}?keep=true"),
            Some(&user_line("t", None, "x"))
        ),
        "invalid_argument",
        "an unknown query parameter"
    );
}
