//! `GET /view` (docs/api.md, "The HTML view"): the page is served without the token and holds
//! no data; everything else still needs the token. (What the page does with the data is tested
//! in a browser: tools/clients/typescript/test/view.test.ts.)

use super::{Server, TOKEN};

#[test]
fn the_page_needs_no_token_and_opens_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    s.ok(
        201,
        "POST",
        "/v1/sessions",
        Some(r#"{"id":"secret-session"}"#),
    );
    for token in [None, Some("wrong-token-0123456789"), Some(TOKEN)] {
        let mut req = ureq::get(&format!("{}/view", s.url));
        if let Some(t) = token {
            req = req.set("authorization", &format!("Bearer {t}"));
        }
        let resp = req.call().unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        let policy = resp.header("content-security-policy").unwrap().to_owned();
        assert!(
            policy.starts_with("default-src 'none'; script-src 'sha256-"),
            "{policy}"
        );
        assert!(policy.contains("connect-src 'self'"), "{policy}");
        assert_eq!(resp.header("cache-control"), Some("no-store"));
        assert_eq!(resp.header("referrer-policy"), Some("no-referrer"));
        let page = resp.into_string().unwrap();
        assert!(page.starts_with("<!doctype html>"));
        assert!(page.contains(
            r#"<script type="application/json" id="grove-data">{"mode":"server"}</script>"#
        ));
        assert!(!page.contains("secret-session"), "the page holds no data");
    }
    // Everything else, unknown paths next to the page included, still needs the token.
    for path in [
        "/v1/sessions",
        "/view/",
        "/view/x",
        "/viewer",
        "/v1/sessions/secret-session/tree",
    ] {
        let (status, text) = s.call_as(None, "GET", path, None);
        assert_eq!(status, 401, "GET {path}: {text}");
    }
    // A write to the page's path is no way in either.
    let (status, _) = s.call_as(None, "POST", "/view", Some("{}"));
    assert_eq!(status, 405);
}
