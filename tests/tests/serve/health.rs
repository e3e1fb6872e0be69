//! Health that tells the truth (issue 28; docs/api.md, "Server"): `GET /v1/health` is `503`
//! with `ok: false` while the database cannot be reached or writes are stuck, and `?deep=true`
//! reads the backend now; and a server started on a disk with less than the reserve free
//! serves reads, answers writes with `DiskFull`, and writes again once space is freed.
//!
//! Before: health said `ok: true` with PostgreSQL stopped and with every append stuck, and a
//! server refused to start, even for reads, on a disk under the reserve (then, once it did,
//! writes came back only after a restart).

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
        assert_disk_full(path, status, &text);
    }
    let (status, v) = health(&s, "");
    assert_eq!((status, &v["ok"]), (503, &json!(false)), "{v}");
    // Nothing was written meanwhile.
    assert_eq!(s.lines("/v1/sessions/d/entries").len(), 1);
    assert!(s.terminate().success());
}

/// The error body of a refused write: `500 storage`, naming the free space.
fn assert_disk_full(what: &str, status: u16, text: &str) {
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        (status, &v["code"]),
        (500, &json!("storage")),
        "{what}: {v}"
    );
    let message = v["message"].as_str().unwrap();
    assert!(message.contains("free"), "{what}: {message}");
}

/// Issue 28, point 12: writes come back by themselves once space is freed, without a
/// restart. The store's disk is a 32 MiB tmpfs that a ballast file fills to under the reserve
/// (4 MiB); the server starts, serves reads and refuses writes; the ballast is removed, and
/// within a bounded time an append succeeds and is read back, a followed replay of the store
/// opened to read has ended cleanly (its client resumes from its last operation), and health
/// is `ok` again.
#[test]
fn a_server_on_a_full_disk_writes_again_once_space_is_freed() {
    let fs = grove_tests::tmpfs::Tmpfs::mount(32);
    let dir = fs.path();
    let body = json!({"entry": {"role": "user", "content": "kept", "timestamp": 1}}).to_string();
    let id = {
        let s = Server::start(dir, &[]);
        s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"d"}"#));
        let id = s.ok(201, "POST", "/v1/sessions/d/entries", Some(&body))["id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(s.terminate().success());
        id
    };
    let ballast = dir.join("ballast");
    let free = fs2::available_space(dir).unwrap();
    std::fs::write(&ballast, vec![7u8; free.saturating_sub(2 << 20) as usize]).unwrap();
    assert!(fs2::available_space(dir).unwrap() < 4 << 20);

    let s = Server::start(dir, &[]);
    let entry = s.ok(200, "GET", &format!("/v1/sessions/d/entries/{id}"), None);
    assert_eq!(entry["id"], json!(id));
    let (status, text) = s.call("POST", "/v1/sessions/d/entries", Some(&body));
    assert_disk_full("an append on the full disk", status, &text);
    let (status, v) = health(&s, "");
    assert_eq!((status, &v["ok"]), (503, &json!(false)), "{v}");
    // A followed replay holds the store opened to read: the reopening ends it.
    let follow = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build()
        .get(&format!("{}/v1/sessions/d/replay?follow=true", s.url))
        .set("authorization", &format!("Bearer {}", super::TOKEN))
        .call()
        .unwrap();
    assert_eq!(follow.status(), 200);
    let follower = std::thread::spawn(move || follow.into_string());

    std::fs::remove_file(&ballast).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let appended = loop {
        let (status, text) = s.call("POST", "/v1/sessions/d/entries", Some(&body));
        if status == 201 {
            break serde_json::from_str::<Value>(&text).unwrap();
        }
        assert_disk_full("an append before the store is reopened", status, &text);
        assert!(
            Instant::now() < deadline,
            "writes did not come back within 30 s of the space being freed: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let new_id = appended["id"].as_str().unwrap();
    let entry = s.ok(
        200,
        "GET",
        &format!("/v1/sessions/d/entries/{new_id}"),
        None,
    );
    assert_eq!(entry["parentId"], json!(id));
    assert_eq!(s.lines("/v1/sessions/d/entries").len(), 2);
    // The follower's stream ended whole: every line it got is an operation of the log.
    let followed = follower.join().unwrap().unwrap();
    let lines: Vec<Value> = followed
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty(), "the follower got nothing: {followed:?}");
    let (status, v) = health(&s, "");
    assert_eq!((status, &v["ok"]), (200, &json!(true)), "{v}");
    assert!(s.terminate().success());
    // What was written after the reopening is durable: a restart reads it.
    let s = Server::start(dir, &[]);
    assert_eq!(s.lines("/v1/sessions/d/entries").len(), 2);
    assert!(s.terminate().success());
}
