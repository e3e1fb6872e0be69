//! Issue 28 §2 and §10: requests from browsers and from other hosts. A TCP listener without a
//! token answered any `Host` (DNS rebinding read the session list), ignored `Origin` and took
//! a `text/plain` body as JSON (a page of another site appended an entry through the user's
//! browser); a token file others could read was taken silently, and `authorization: bearer`
//! (lower case) was refused. The browser's own view of this is
//! tools/clients/typescript/test/cross-site.test.ts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

use serde_json::Value;

use super::{write_token_file, Server, TOKEN};
use crate::cli::grove_bin;

const ENTRY: &str = r#"{"entry":{"role":"user","content":"from afar","timestamp":1}}"#;

/// An answer read off the wire: status, head (lowercase) and body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn code(&self) -> String {
        let v: Value = serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {} {}", self.head, self.body));
        v["code"].as_str().unwrap_or_default().to_owned()
    }
}

fn parse(answer: &str) -> Answer {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    let status = head.split(' ').nth(1).unwrap_or_default();
    Answer {
        status: status.parse().unwrap_or_else(|_| panic!("{answer}")),
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

/// Sends `head` (request line and headers, without the blank line) and `body` over a fresh
/// connection to `addr`, closing it after the answer.
fn raw_tcp(addr: &str, head: &str, body: &str) -> Answer {
    let mut conn = TcpStream::connect(addr).unwrap();
    let request = format!(
        "{head}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    parse(&answer)
}

fn addr(s: &Server) -> String {
    s.url.trim_start_matches("http://").to_owned()
}

fn port(s: &Server) -> u16 {
    addr(s).rsplit(':').next().unwrap().parse().unwrap()
}

/// The entries of session `sid`.
fn entries(s: &Server, sid: &str) -> u64 {
    s.ok(200, "GET", &format!("/v1/sessions/{sid}"), None)["entries"]
        .as_u64()
        .unwrap()
}

/// A `grove serve` that must refuse to start; its stderr. One that starts is killed after
/// 30 s, and the test fails.
fn refused_start(dir: &std::path::Path, args: &[&str]) -> String {
    let mut child = Command::new(grove_bin())
        .arg("--store")
        .arg(dir.join("store"))
        .arg("serve")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        status.is_some_and(|s| !s.success()),
        "{args:?} started: {stderr}"
    );
    stderr
}

#[test]
fn tcp_without_a_token_is_refused_at_start_with_how_to_make_one() {
    let dir = tempfile::tempdir().unwrap();
    for listen in ["127.0.0.1:0", "[::1]:0"] {
        let stderr = refused_start(dir.path(), &["--listen", listen]);
        assert!(stderr.contains("without a token"), "{stderr}");
        assert!(
            stderr.contains("umask 077; openssl rand -hex 32 > grove.token"),
            "{stderr}"
        );
        assert!(stderr.contains("--token-file grove.token"), "{stderr}");
    }
}

#[test]
fn a_token_file_others_may_read_is_refused_with_the_chmod_to_run() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = write_token_file(dir.path(), TOKEN);
    for mode in [0o644, 0o640, 0o604, 0o660] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        let stderr = refused_start(
            dir.path(),
            &[
                "--listen",
                "127.0.0.1:0",
                "--token-file",
                file.to_str().unwrap(),
            ],
        );
        assert!(
            stderr.contains(&format!("chmod 600 {}", file.display())),
            "{mode:o}: {stderr}"
        );
    }
    // 0400 is its owner's alone too.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
    let mut child = Command::new(grove_bin())
        .arg("--store")
        .arg(dir.path().join("store"))
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.starts_with("listening on"), "{line}");
}

#[test]
fn the_bearer_scheme_is_taken_in_any_letter_case() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let a = addr(&s);
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let answer = raw_tcp(
            &a,
            &format!("GET /v1/sessions HTTP/1.1\r\nhost: {a}\r\nauthorization: {scheme} {TOKEN}"),
            "",
        );
        assert_eq!(answer.status, 200, "{scheme}: {}", answer.body);
    }
    for wrong in [
        format!("Basic {TOKEN}"),
        format!("Bearer{TOKEN}"),
        "bearer x".to_owned(),
    ] {
        let answer = raw_tcp(
            &a,
            &format!("GET /v1/sessions HTTP/1.1\r\nhost: {a}\r\nauthorization: {wrong}"),
            "",
        );
        assert_eq!(answer.status, 401, "{wrong}: {}", answer.body);
    }
}

/// DNS rebinding: a page of `evil.example`, whose name now points at 127.0.0.1, reads what its
/// own origin serves, and its requests name its host.
#[test]
fn a_host_other_than_the_listeners_own_is_refused_before_anything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--allow-host", "Grove.Test"]);
    s.ok(
        201,
        "POST",
        "/v1/sessions",
        Some(r#"{"id":"secret-session"}"#),
    );
    let a = addr(&s);
    let p = port(&s);
    let get = |path: &str, host: &str| {
        raw_tcp(
            &a,
            &format!("GET {path} HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {TOKEN}"),
            "",
        )
    };
    for host in [
        format!("evil.example:{p}"),
        "evil.example".to_owned(),
        format!("localhost:{}", p.wrapping_add(1)),
        format!("127.0.0.1:{}", p.wrapping_add(1)),
        format!("10.1.2.3:{p}"),
        format!("localhost.evil.example:{p}"),
        "".to_owned(),
    ] {
        for path in ["/v1/sessions", "/v1/health", "/view", "/no/such/route"] {
            let answer = get(path, &host);
            assert_eq!(answer.status, 403, "{host} {path}: {}", answer.body);
            assert_eq!(answer.code(), "forbidden_host", "{host} {path}");
            assert!(!answer.body.contains("secret-session"), "{}", answer.body);
        }
    }
    // The listener's own address, its loopback names and the allowed name (any port).
    for host in [
        a.clone(),
        format!("localhost:{p}"),
        format!("LOCALHOST:{p}"),
        format!("[::1]:{p}"),
        "grove.test".to_owned(),
        "grove.test:8443".to_owned(),
    ] {
        let answer = get("/v1/sessions", &host);
        assert_eq!(answer.status, 200, "{host}: {}", answer.body);
        assert!(answer.body.contains("secret-session"), "{}", answer.body);
    }
    // An absolute request target names the host too.
    let answer = raw_tcp(
        &a,
        &format!(
            "GET http://evil.example:{p}/v1/sessions HTTP/1.1\r\nhost: {a}\r\nauthorization: Bearer {TOKEN}"
        ),
        "",
    );
    assert_eq!(answer.status, 403, "{}", answer.body);
    // No Host at all (HTTP/1.0).
    let answer = raw_tcp(
        &a,
        &format!("GET /v1/sessions HTTP/1.0\r\nauthorization: Bearer {TOKEN}"),
        "",
    );
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(!answer.body.contains("secret-session"));
}

#[test]
fn allow_host_takes_a_bare_name_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_token_file(dir.path(), TOKEN);
    for name in ["grove.test:80", "a b", "user@grove.test"] {
        let stderr = refused_start(
            dir.path(),
            &[
                "--listen",
                "127.0.0.1:0",
                "--token-file",
                file.to_str().unwrap(),
                "--allow-host",
                name,
            ],
        );
        assert!(stderr.contains("--allow-host"), "{name}: {stderr}");
    }
}

/// A page of another site posting through the user's browser (which sends `Origin`), with
/// the token even: refused, nothing appended. The server's own pages may.
#[test]
fn an_origin_other_than_the_listeners_own_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"c1"}"#));
    let a = addr(&s);
    let p = port(&s);
    let path = "/v1/sessions/c1/entries";
    for origin in [
        "http://evil.example".to_owned(),
        format!("http://evil.example:{p}"),
        format!("http://localhost:{}", p.wrapping_add(1)),
        format!("http://{a}.evil.example"),
        format!("ftp://{a}"),
        "null".to_owned(),
        "".to_owned(),
    ] {
        let (code, text) = s.call_with(
            Some(TOKEN),
            &[("origin", &origin)],
            "POST",
            path,
            Some(ENTRY),
        );
        assert_eq!(code, 403, "{origin}: {text}");
        assert!(text.contains("forbidden_origin"), "{origin}: {text}");
        // Reads too: a cross-origin fetch sends Origin whatever its method.
        let (code, _) = s.call_with(
            Some(TOKEN),
            &[("origin", &origin)],
            "GET",
            "/v1/sessions",
            None,
        );
        assert_eq!(code, 403, "{origin}");
    }
    assert_eq!(entries(&s, "c1"), 0, "nothing appended");
    // The listener's own origin (a page it serves, such as /view).
    let own = format!("http://{a}");
    let (code, text) = s.call_with(Some(TOKEN), &[("origin", &own)], "POST", path, Some(ENTRY));
    assert_eq!(code, 201, "{text}");
    assert_eq!(entries(&s, "c1"), 1);
    // A browser's preflight gets no CORS permission, from anywhere.
    for origin in ["http://evil.example".to_owned(), own] {
        let answer = raw_tcp(
            &a,
            &format!(
                "OPTIONS {path} HTTP/1.1\r\nhost: {a}\r\norigin: {origin}\r\n\
                 access-control-request-method: POST\r\n\
                 access-control-request-headers: authorization, content-type"
            ),
            "",
        );
        assert!(answer.status >= 400, "{origin}: {}", answer.head);
        assert!(!answer.head.contains("access-control-"), "{}", answer.head);
    }
}

/// The content types a browser sends cross-site without a preflight (`text/plain`, forms)
/// are never taken, on TCP or on the unix socket; JSON routes take `application/json` and
/// the import takes JSONL.
#[test]
fn a_body_not_declared_json_is_refused_with_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"c1"}"#));
    let path = "/v1/sessions/c1/entries";
    let a = addr(&s);
    let post = |path: &str, content_type: Option<&str>, body: &str| {
        let header = content_type.map_or_else(String::new, |t| format!("\r\ncontent-type: {t}"));
        raw_tcp(
            &a,
            &format!("POST {path} HTTP/1.1\r\nhost: {a}\r\nauthorization: Bearer {TOKEN}{header}"),
            body,
        )
    };
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/json; charset=latin1"),
        Some("application/jsonx"),
        Some("not a type"),
        None,
    ] {
        let answer = post(path, content_type, ENTRY);
        assert_eq!(answer.status, 415, "{content_type:?}: {}", answer.body);
        assert_eq!(answer.code(), "unsupported_media_type", "{content_type:?}");
    }
    assert_eq!(entries(&s, "c1"), 0, "nothing appended");
    for content_type in ["application/json", "Application/JSON; charset=utf-8"] {
        let answer = post(path, Some(content_type), ENTRY);
        assert_eq!(answer.status, 201, "{content_type}: {}", answer.body);
    }
    assert_eq!(entries(&s, "c1"), 2);

    // The import: pi JSONL, as the clients send it.
    let session = |id: &str| {
        format!(
            "{}\n{}\n",
            serde_json::json!({"type": "session", "version": 3, "id": id,
                "timestamp": "2025-03-01T00:00:00.000Z", "cwd": "/"}),
            super::user_line("u1", None, "hi")
        )
    };
    let answer = post("/v1/import", Some("text/plain"), &session("i0"));
    assert_eq!(answer.status, 415, "{}", answer.body);
    let (code, _) = s.call("GET", "/v1/sessions/i0", None);
    assert_eq!(code, 404, "nothing imported");
    for (i, content_type) in [
        "application/x-ndjson",
        "application/jsonl",
        "application/json",
    ]
    .iter()
    .enumerate()
    {
        let answer = post(
            "/v1/import",
            Some(content_type),
            &session(&format!("i{}", i + 1)),
        );
        assert_eq!(answer.status, 201, "{content_type}: {}", answer.body);
    }

    // The unix socket checks the type too.
    let mut conn = std::os::unix::net::UnixStream::connect(&s.socket).unwrap();
    conn.write_all(
        format!(
            "POST {path} HTTP/1.1\r\nhost: grove\r\ncontent-type: text/plain\r\n\
             connection: close\r\ncontent-length: {}\r\n\r\n{ENTRY}",
            ENTRY.len()
        )
        .as_bytes(),
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    let answer = parse(&answer);
    assert_eq!(answer.status, 415, "{}", answer.body);
    assert_eq!(entries(&s, "c1"), 2);
}
