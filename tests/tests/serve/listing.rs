//! `GET /v1/sessions` filters (docs/api.md, "Sessions"): each filter, combined with paging,
//! and a filter that does not read answered `invalid_argument`.

use serde_json::{json, Value};

use super::Server;

#[test]
fn the_session_list_filters_and_pages() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    for (id, cwd) in [("l1", "/x"), ("l2", "/y"), ("l3", "/x"), ("l4", "/x")] {
        s.ok(
            201,
            "POST",
            "/v1/sessions",
            Some(&json!({ "id": id, "cwd": cwd }).to_string()),
        );
    }
    s.ok(
        201,
        "PUT",
        "/v1/sessions/l3/name",
        Some(r#"{"name":"Nightly Run"}"#),
    );
    let e = s.ok(
        201,
        "POST",
        "/v1/sessions/l4/entries",
        Some(r#"{"entry":{"role":"user","content":"hi","timestamp":1}}"#),
    );
    let body = json!({ "targetId": e["id"], "label": "gold" }).to_string();
    s.ok(201, "POST", "/v1/sessions/l4/labels", Some(&body));
    let ids = |query: &str| -> (Vec<String>, Value) {
        let v = s.ok(200, "GET", &format!("/v1/sessions?{query}"), None);
        let ids = v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_owned())
            .collect();
        (ids, v["next"].clone())
    };
    assert_eq!(ids("cwd=/x").0, ["l1", "l3", "l4"]);
    assert_eq!(
        ids("cwd=/x&limit=2"),
        (vec!["l1".to_owned(), "l3".to_owned()], json!("l3"))
    );
    assert_eq!(ids("cwd=/x&after=l3").0, ["l4"]);
    assert_eq!(ids("cwd=/x&order=desc&limit=1").0, ["l4"]);
    assert_eq!(ids("name=nightly").0, ["l3"]);
    assert_eq!(ids("label=gold").0, ["l4"]);
    assert_eq!(ids("createdAfter=1h").0.len(), 4);
    assert!(ids("createdBefore=2001-01-01").0.is_empty());
    assert_eq!(ids("updatedAfter=1h&cwd=/y").0, ["l2"]);
    let (code, text) = s.call("GET", "/v1/sessions?updatedBefore=later", None);
    assert_eq!(code, 400, "{text}");
    assert!(
        text.contains("invalid_argument") && text.contains("updatedBefore"),
        "{text}"
    );
}
