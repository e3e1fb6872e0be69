//! `GET /view`: the HTML page of `crate::page`, read-only. The page holds no data, so it is
//! served without the bearer token; its script reads the session list, a session's tree,
//! entries, operations and contexts through the authenticated routes, sending the token it
//! finds in the URL fragment (`/view#token=TOKEN`, docs/api.md), which browsers never send to
//! the server.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// The path of the page.
pub const PATH: &str = "/view";

/// The page and its Content-Security-Policy, built once.
static PAGE: LazyLock<(String, String)> =
    LazyLock::new(|| (crate::page::server_page(), crate::page::server_policy()));

/// The router of the page alone (no token, no state).
pub fn router() -> Router {
    Router::new().route(PATH, get(page))
}

async fn page() -> Response {
    let (page, policy) = &*PAGE;
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, policy.as_str()),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        page.as_str(),
    )
        .into_response()
}
