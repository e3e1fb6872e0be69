//! Health that tells the truth (issue 28; docs/api.md, "Server"): `GET /v1/health` is `503`
//! with `ok: false` while the database cannot be reached or writes are stuck, and `?deep=true`
//! reads the backend now; and a server started on a disk with less than the reserve free
//! serves reads and answers writes with `DiskFull`.
//!
//! Before: health said `ok: true` with PostgreSQL stopped and with every append stuck, and a
//! server refused to start, even for reads, on a disk under the reserve.

use std::time::{Duration, Instant};

use grove_tests::pg_cluster::PgCluster;
use serde_json::{json, Value};

use super::Server;

fn health(s: &Server, query: &str) -> (u16, Value) {
    let (status, text) = s.call("GET", &format!("/v1/health{query}"), None);
    (status, serde_json::from_str(&text).unwrap())
}

/// Asks `query` until it answers `status` (the server sees the database come and go within a
/// bounded time); the last answer.
fn health_becomes(s: &Server, query: &str, status: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (got, v) = health(s, query);
        if got == status {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "health{query}: {got} {v}, waited for {status}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn health_is_unavailable_while_the_database_is_away_or_writes_are_stuck() {
    let Some(pg) = PgCluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("grove.sock");
    let url = pg.primary_url();
    let global = [
        "--durability",
        "sync",
        "--backend",
        "postgres",
        "--pg",
        &url,
        "--pg-table",
        "grove_health",
    ];
    let s = Server::start_with(
        dir.path(),
        &global,
        &[
            "--socket",
            socket.to_str().unwrap(),
            "--health-timeout",
            "2",
        ],
    );
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"h"}"#));
    for query in ["", "?deep=true"] {
        let (status, v) = health(&s, query);
        assert_eq!((status, &v["ok"]), (200, &json!(true)), "{query}: {v}");
    }

    // The database stops: a deep check reads it and says so; so does a plain one from then on
    // (what the store saw last), as after a failed append.
    pg.stop_primary().unwrap();
    let v = health_becomes(&s, "?deep=true", 503);
    assert_eq!(
        (&v["ok"], &v["code"]),
        (&json!(false), &json!("unavailable")),
        "{v}"
    );
    assert!(
        v["unavailable"].as_str().is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    let (status, v) = health(&s, "");
    assert_eq!((status, &v["code"]), (503, &json!("unavailable")), "{v}");
    let body = json!({"entry": {"type": "custom", "customType": "away"}}).to_string();
    assert_eq!(
        s.err(503, "POST", "/v1/sessions/h/entries", Some(&body)),
        "unavailable"
    );
    let (status, v) = health(&s, "");
    assert_eq!((status, &v["ok"]), (503, &json!(false)), "{v}");

    // It is back: a deep check finds it, and health is ok again.
    pg.start_primary().unwrap();
    health_becomes(&s, "?deep=true", 200);
    let (status, v) = health(&s, "");
    assert_eq!((status, &v["ok"]), (200, &json!(true)), "{v}");

    // Every write stuck: another client holds the table locked, so an append waits. After
    // --health-timeout, health says so; a deep read (which waits too) gives up within it.
    let mut locker = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut lock = locker.transaction().unwrap();
    lock.batch_execute("LOCK TABLE grove_health IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let writer = {
        let url = s.url.clone();
        std::thread::spawn(move || {
            let body = json!({"entry": {"type": "custom", "customType": "stuck"}}).to_string();
            ureq::post(&format!("{url}/v1/sessions/h/entries"))
                .set("authorization", &format!("Bearer {}", super::TOKEN))
                .set("content-type", "application/json")
                .send_string(&body)
                .map(|r| r.status())
                .unwrap_or_else(|e| match e {
                    ureq::Error::Status(code, _) => code,
                    e => panic!("{e}"),
                })
        })
    };
    let v = health_becomes(&s, "", 503);
    assert_eq!(
        (&v["ok"], &v["code"]),
        (&json!(false), &json!("unavailable")),
        "{v}"
    );
    assert!(v["stuck"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    lock.rollback().unwrap();
    assert_eq!(writer.join().unwrap(), 201);
    health_becomes(&s, "", 200);
    health_becomes(&s, "?deep=true", 200);
    drop(s);
}

#[test]
fn a_server_on_a_disk_under_the_reserve_serves_reads_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let body = json!({"entry": {"role": "user", "content": "kept", "timestamp": 1}}).to_string();
    let id = {
        let s = Server::start(dir.path(), &[]);
        s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"d"}"#));
        let id = s.ok(201, "POST", "/v1/sessions/d/entries", Some(&body))["id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(s.terminate().success());
        id
    };
    // A reserve larger than any disk: the store cannot be opened for writing.
    let s = Server::start_with(
        dir.path(),
        &[
            "--durability",
            "sync",
            "--disk-reserve",
            "1000000000000000000",
        ],
        &[],
    );
    let entry = s.ok(200, "GET", &format!("/v1/sessions/d/entries/{id}"), None);
    assert_eq!(entry["id"], json!(id));
    assert_eq!(s.lines("/v1/sessions/d/entries").len(), 1);
    for (method, path, body) in [
        ("POST", "/v1/sessions/d/entries", Some(body.as_str())),
        ("POST", "/v1/sessions", Some(r#"{"id":"e"}"#)),
        ("PUT", "/v1/sessions/d/name", Some(r#"{"name":"n"}"#)),
    ] {
        let (status, text) = s.call(method, path, body);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (status, &v["code"]),
            (500, &json!("storage")),
            "{path}: {v}"
        );
        let message = v["message"].as_str().unwrap();
        assert!(message.contains("free"), "{path}: {message}");
    }
    let (status, v) = health(&s, "");
    assert_eq!((status, &v["ok"]), (503, &json!(false)), "{v}");
    // Nothing was written meanwhile.
    assert_eq!(s.lines("/v1/sessions/d/entries").len(), 1);
    assert!(s.terminate().success());
}
