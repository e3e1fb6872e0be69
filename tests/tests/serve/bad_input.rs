//! Bad input never takes the server down or changes stored data: each gets its error and
//! the next request is served.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{user_line, Server, TOKEN};
use crate::cli::grove_bin;

/// What the store holds, as the server exports it.
fn snapshot(s: &Server) -> String {
    let (code, text) = s.call("GET", "/v1/sessions/b1/export", None);
    assert_eq!(code, 200, "{text}");
    text
}

/// A valid pi session `id` of `n` user messages of `len` bytes each, one chain.
fn session_text(id: &str, n: usize, len: usize) -> String {
    let mut text = format!(
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}}"#
    );
    text.push('\n');
    let mut parent: Option<String> = None;
    for i in 0..n {
        let entry = format!("e{i:05}");
        text.push_str(&user_line(&entry, parent.as_deref(), &"y".repeat(len)));
        text.push('\n');
        parent = Some(entry);
    }
    text
}

#[test]
fn each_bad_request_gets_its_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--max-body", "4096", "--max-import", "8192"]);
    s.ok(
        201,
        "POST",
        "/v1/sessions",
        Some(r#"{"id":"b1","cwd":"/w"}"#),
    );
    s.ok(
        201,
        "POST",
        "/v1/sessions/b1/entries/exact",
        Some(&user_line("a1", None, "first")),
    );
    let before = snapshot(&s);
    let big = format!(
        r#"{{"entry":{{"role":"user","content":"{}","timestamp":1}}}}"#,
        "x".repeat(5000)
    );
    let cases: Vec<(&str, String, Option<String>, u16, &str)> = vec![
        // Malformed JSON, wrong types, unknown fields.
        (
            "POST",
            "/v1/sessions/b1/entries".into(),
            Some("{not json".into()),
            400,
            "invalid_request",
        ),
        (
            "POST",
            "/v1/sessions/b1/entries".into(),
            Some("".into()),
            400,
            "invalid_request",
        ),
        (
            "POST",
            "/v1/sessions/b1/entries".into(),
            Some(r#"{"entry":5}"#.into()),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/sessions/b1/entries".into(),
            Some(r#"{"entry":{"content":"no type"}}"#.into()),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/sessions".into(),
            Some(r#"{"id":5}"#.into()),
            400,
            "invalid_request",
        ),
        (
            "POST",
            "/v1/sessions".into(),
            Some(r#"{"id":"b2","colour":"red"}"#.into()),
            400,
            "invalid_request",
        ),
        (
            "POST",
            "/v1/sessions".into(),
            Some(r#"{"id":"b2","metadata":[1]}"#.into()),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/sessions".into(),
            Some(r#"{"id":"bad id!"}"#.into()),
            400,
            "invalid_argument",
        ),
        (
            "PUT",
            "/v1/sessions/b1/leaf".into(),
            Some(r#"{"target":7}"#.into()),
            400,
            "invalid_request",
        ),
        (
            "GET",
            "/v1/sessions/b1/entries?limit=many".into(),
            None,
            400,
            "invalid_argument",
        ),
        (
            "GET",
            "/v1/sessions/b1/context?preset=mine".into(),
            None,
            400,
            "invalid_argument",
        ),
        (
            "GET",
            "/v1/sessions/b1/export?flavor=pdf".into(),
            None,
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/sessions/b1/fork".into(),
            Some(r#"{"mode":"sideways"}"#.into()),
            400,
            "invalid_argument",
        ),
        // A body over the limit.
        (
            "POST",
            "/v1/sessions/b1/entries".into(),
            Some(big),
            413,
            "payload_too_large",
        ),
        // Unknown routes, methods and ids.
        ("GET", "/v1/nowhere".into(), None, 404, "not_found"),
        ("GET", "/".into(), None, 404, "not_found"),
        (
            "PATCH",
            "/v1/sessions/b1".into(),
            None,
            405,
            "method_not_allowed",
        ),
        (
            "GET",
            "/v1/sessions/nobody/entries".into(),
            None,
            404,
            "not_found",
        ),
        ("GET", "/v1/sessions/nobody".into(), None, 404, "not_found"),
        (
            "GET",
            "/v1/sessions/b1/entries/nothing".into(),
            None,
            404,
            "not_found",
        ),
        (
            "GET",
            "/v1/sessions/b1/branch?from=nothing".into(),
            None,
            404,
            "not_found",
        ),
        (
            "PUT",
            "/v1/sessions/b1/leaf".into(),
            Some(r#"{"target":"nothing"}"#.into()),
            404,
            "not_found",
        ),
        (
            "POST",
            "/v1/sessions/b1/labels".into(),
            Some(r#"{"targetId":"nothing","label":"x"}"#.into()),
            404,
            "not_found",
        ),
        (
            "POST",
            "/v1/sessions/b1/fork".into(),
            Some(r#"{"entryId":"nothing"}"#.into()),
            400,
            "invalid_fork_target",
        ),
        // Exact entries the session cannot take.
        (
            "POST",
            "/v1/sessions/b1/entries/exact".into(),
            Some(user_line("a1", None, "again")),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/sessions/b1/entries/exact".into(),
            Some(user_line("a2", Some("ghost"), "orphan")),
            400,
            "invalid_entry",
        ),
        (
            "POST",
            "/v1/sessions/b1/entries/exact".into(),
            Some(r#"{"type":"message"}"#.into()),
            400,
            "invalid_entry",
        ),
        (
            "POST",
            "/v1/sessions/b1/entries/exact".into(),
            Some("\u{0}\u{1}".into()),
            400,
            "invalid_entry",
        ),
        // A pi session over the limit: the import reads it as it arrives and stops at the
        // limit; nothing is imported.
        (
            "POST",
            "/v1/import".into(),
            // Some 20 KB, past the 8 KiB import limit of this server.
            Some(session_text("big", 40, 500)),
            413,
            "payload_too_large",
        ),
        // An import that is no pi session.
        (
            "POST",
            "/v1/import".into(),
            Some("garbage\n".into()),
            422,
            "invalid_session",
        ),
    ];
    for (method, path, body, status, code) in &cases {
        let got = s.err(*status, method, path, body.as_deref());
        assert_eq!(&got, code, "{method} {path}");
        // The server goes on serving.
        s.ok(200, "GET", "/v1/health", None);
    }
    // Without the token, or with a wrong one.
    let (status, text) = s.call_as(None, "GET", "/v1/sessions", None);
    assert_eq!(status, 401, "{text}");
    assert!(text.contains("unauthorized"), "{text}");
    let (status, _) = s.call_as(
        Some("wrong-token-0123456789"),
        "DELETE",
        "/v1/sessions/b1",
        None,
    );
    assert_eq!(status, 401);
    assert_eq!(snapshot(&s), before, "no bad request changed the store");
    let report = s.ok(200, "POST", "/v1/verify", None);
    assert_eq!(report["ok"], true, "{report}");
}

/// A client that stalls in its headers, one that half-closes, one that sends a body slower
/// than it promised, and one that connects and goes: the others are served meanwhile, and
/// the stalled connection is closed after the header timeout.
#[test]
fn slow_and_half_closed_connections_do_not_stop_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--header-timeout", "1"]);
    let addr = s.url.trim_start_matches("http://").to_owned();
    // Stalls in its headers.
    let mut stalled = TcpStream::connect(&addr).unwrap();
    stalled
        .write_all(format!("GET /v1/health HTTP/1.1\r\nhost: {addr}\r\n").as_bytes())
        .unwrap();
    // Half-closes after a whole request: it still gets its answer.
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(
        format!("GET /v1/health HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {TOKEN}\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    half.shutdown(std::net::Shutdown::Write).unwrap();
    // Promises a body it never finishes.
    let mut short = TcpStream::connect(&addr).unwrap();
    short
        .write_all(
            format!(
                "POST /v1/sessions HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"id\""
            )
            .as_bytes(),
        )
        .unwrap();
    // Connects and goes.
    drop(TcpStream::connect(&addr).unwrap());
    // Meanwhile others are served.
    for _ in 0..20 {
        s.ok(200, "GET", "/v1/health", None);
    }
    let mut answer = String::new();
    half.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = half.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The stalled connection is closed by the server after the header timeout.
    stalled
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = stalled.read_to_end(&mut buf);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the stalled connection was closed"
    );
    drop(short);
    s.ok(200, "GET", "/v1/health", None);
    assert!(s.ok(200, "GET", "/v1/sessions", None)["sessions"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// Listening off loopback without a token is refused (on loopback too since issue 28:
/// `serve::guard`); a token too short to be one too.
#[test]
fn tcp_needs_a_token_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(grove_bin())
        .arg("--store")
        .arg(dir.path().join("store"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without a token"), "{stderr}");
    let short = super::write_token_file(dir.path(), "abc");
    let out = Command::new(grove_bin())
        .arg("--store")
        .arg(dir.path().join("store"))
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&short)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("at least 16"), "{stderr}");
}

/// An import is read as it arrives, under its own limit: a session many times `--max-body`
/// imports, and exports back byte for byte.
#[test]
fn an_import_larger_than_the_body_limit_streams_in() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--max-body", "1024"]);
    let text = session_text("large", 2000, 1000);
    let report = s.ok(201, "POST", "/v1/import", Some(&text));
    assert_eq!(report["entries"], 2000, "{report}");
    let (status, exported) = s.call("GET", "/v1/sessions/large/export", None);
    assert_eq!(status, 200);
    assert_eq!(exported, text);
}
