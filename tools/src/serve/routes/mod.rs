//! The routes of docs/api.md: one table ([`ROUTES`]: method, path, handler and what the route
//! does) from which both the router ([`router`]) and the documented list (which a test
//! compares with docs/api.md) are made, and what wraps every route: the bearer token, the
//! body limit, the refusal of writes on a full disk, the count of writes in flight, the
//! declared length, and the answers to an unknown route or method.
//!
//! The handlers are in one file per group of docs/api.md: `server.rs` (health, verify, gc),
//! `sessions.rs`, `appends.rs` (one session's appends and `POST /v1/appends`), `reads.rs`,
//! `leaf.rs` (the leaf, turns and navigation) and `operations.rs`; `at.rs` is the point in
//! time the reads and operations share, `page.rs` the HTML page served without the token,
//! `direct.rs` the embedded store's short way to the small reads' handlers (no router).
//! Each handler checks its input, then runs its engine calls on tokio's blocking pool or
//! streams them (`state`, `stream`). This file calls those route modules and, below them,
//! the state, `api`, `guard`, `limits` and `full_disk`; no route module imports it.

mod appends;
mod at;
pub mod direct;
mod leaf;
mod operations;
mod page;
mod reads;
#[cfg(feature = "search")]
mod search;
mod server;
mod sessions;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;

use super::api::ApiError;
use super::state::State;
use Method::{Delete, Get, Post, Put};

/// The methods of the API's routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
    Delete,
}

impl Method {
    /// The method's name, as docs/api.md writes it.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "the route list is compared with docs/api.md by a test"
        )
    )]
    pub fn as_str(self) -> &'static str {
        match self {
            Get => "GET",
            Post => "POST",
            Put => "PUT",
            Delete => "DELETE",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Get => MethodFilter::GET,
            Post => MethodFilter::POST,
            Put => MethodFilter::PUT,
            Delete => MethodFilter::DELETE,
        }
    }
}

/// One route of docs/api.md.
pub struct Route {
    pub method: Method,
    /// The path, `{name}` for a parameter.
    pub path: &'static str,
    /// The route's handler on the method it is given.
    handler: fn(MethodFilter) -> MethodRouter<State>,
    /// What the route does, in a line.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read by the reader of the table, and by its test")
    )]
    pub doc: &'static str,
}

impl Route {
    const fn new(
        method: Method,
        path: &'static str,
        handler: fn(MethodFilter) -> MethodRouter<State>,
        doc: &'static str,
    ) -> Route {
        Route {
            method,
            path,
            handler,
            doc,
        }
    }

    /// The handler of this route.
    fn handler(&self) -> MethodRouter<State> {
        (self.handler)(self.method.filter())
    }
}

/// Builds [`ROUTES`]: `METHOD "PATH" => HANDLER, "what it does";` per route.
macro_rules! table {
    ($($method:ident $path:literal => $handler:expr, $doc:literal;)*) => {
        &[$(Route::new($method, $path, |m| on(m, $handler), $doc)),*]
    };
}

/// `GET /v1/search` ([`search::search`]), or in a build without search, its refusal.
#[cfg(feature = "search")]
use search::search as find;

/// `GET /v1/search` in a build without the `search` feature: `501`, code `unsupported`.
#[cfg(not(feature = "search"))]
async fn find() -> crate::serve::api::ApiResult<axum::response::Response> {
    Err(crate::serve::api::ApiError::new(
        axum::http::StatusCode::NOT_IMPLEMENTED,
        "unsupported",
        "this build of grove has no search (cargo feature `search`)",
    ))
}

/// Every route, as docs/api.md lists them (a test compares the two), in its order.
pub const ROUTES: &[Route] = table! {
    // Server
    Get "/v1/health" => server::health, "whether the server can do its work now";
    Post "/v1/verify" => server::verify, "verify every store served";
    Post "/v1/gc" => server::gc, "remove the payloads no session references";
    Post "/v1/retain" => server::retain, "plan or apply a retention policy";
    Get "/v1/retain/log" => server::retain_log, "the store's operations: retention runs";
    // Search
    Get "/v1/search" => find, "the entries whose text matches a query, across sessions";
    // Sessions
    Get "/v1/sessions" => sessions::list_sessions, "list the sessions, in id order";
    Post "/v1/sessions" => sessions::create_session, "create a session";
    Get "/v1/sessions/{sid}" => sessions::get_session, "a session's summary, leaf and name";
    Delete "/v1/sessions/{sid}" => sessions::delete_session, "delete a session";
    Put "/v1/sessions/{sid}/pin" => sessions::pin, "pin or unpin a session for retention";
    Post "/v1/import" => sessions::import, "import a pi session JSONL body";
    Get "/v1/sessions/{sid}/export" => sessions::export, "export a session as pi JSONL, streamed";
    Post "/v1/sessions/{sid}/fork" => sessions::fork, "fork a session into a new one";
    // Appending
    Post "/v1/sessions/{sid}/entries" => appends::append, "append an entry at the leaf";
    Post "/v1/sessions/{sid}/entries/exact" => appends::append_exact, "append an object as it is";
    Post "/v1/sessions/{sid}/entries/if" => appends::append_if, "append if the leaf is as expected";
    Post "/v1/sessions/{sid}/entries/many" => appends::append_many, "append entries in one write";
    Post "/v1/appends" => appends::appends, "append to many sessions, acknowledged by one flush";
    // Reading
    Get "/v1/sessions/{sid}/entries" => reads::entries, "the tree entries in log order, streamed";
    Get "/v1/sessions/{sid}/log" => reads::log, "entries and leaf records in log order, streamed";
    Get "/v1/sessions/{sid}/entries/{eid}" => reads::entry, "one entry";
    Get "/v1/sessions/{sid}/entries/{eid}/proof" => reads::proof, "an entry with its digests";
    // These paths are also append routes: a GET reads the entry of that id.
    Get "/v1/sessions/{sid}/entries/exact" => reads::entry_named("exact"), "the entry `exact`";
    Get "/v1/sessions/{sid}/entries/if" => reads::entry_named("if"), "the entry `if`";
    Get "/v1/sessions/{sid}/entries/many" => reads::entry_named("many"), "the entry `many`";
    Get "/v1/sessions/{sid}/children" => reads::children, "the children of an entry, streamed";
    Get "/v1/sessions/{sid}/branch" => reads::branch, "pi's branch of an entry, streamed";
    Get "/v1/sessions/{sid}/path" => reads::path, "the path of an entry to the root, streamed";
    Get "/v1/sessions/{sid}/context" => reads::context, "the context at a leaf, in pi's shape";
    Get "/v1/sessions/{sid}/tree" => reads::tree, "the tree";
    Get "/v1/sessions/{sid}/labels" => reads::labels, "every label";
    Post "/v1/sessions/{sid}/labels" => reads::set_label, "set or clear a label";
    Get "/v1/sessions/{sid}/labels/{eid}" => reads::label, "the label of an entry";
    Get "/v1/sessions/{sid}/name" => reads::name, "the session's name";
    Put "/v1/sessions/{sid}/name" => reads::set_name, "name the session";
    Get "/v1/sessions/{sid}/stats" => reads::stats, "pi's session stats";
    // The leaf
    Get "/v1/sessions/{sid}/leaf" => leaf::leaf, "the leaf";
    Put "/v1/sessions/{sid}/leaf" => leaf::move_leaf, "move the leaf";
    Get "/v1/sessions/{sid}/leaf/history" => leaf::leaf_history, "the leaf's moves";
    // Operations
    Get "/v1/sessions/{sid}/operations" => operations::operations, "the operations, newest first";
    Post "/v1/sessions/{sid}/undo" => operations::undo, "undo the last operation, or back to one";
    Post "/v1/sessions/{sid}/redact" => operations::redact, "redact an entry's value or content";
    Get "/v1/sessions/{sid}/redactions" => operations::redactions, "the session's redactions";
    Get "/v1/sessions/{sid}/seal" => operations::seal, "a digest of the session's history";
    Post "/v1/sessions/{sid}/seal/check" => operations::check_seal, "whether it extends a seal";
    Get "/v1/sessions/{sid}/replay" => operations::replay, "the history as JSON lines, or followed";
    // Turns and navigation
    Post "/v1/sessions/{sid}/navigate" => leaf::navigate, "move, leaving a branch summary";
    Post "/v1/sessions/{sid}/ids" => appends::fresh_ids, "fresh entry ids";
    Post "/v1/sessions/{sid}/turns" => leaf::begin_turn, "begin a turn lease";
    Post "/v1/sessions/{sid}/turns/{lease}/renew" => leaf::renew_turn, "renew a turn lease";
    Delete "/v1/sessions/{sid}/turns/{lease}" => leaf::end_turn, "end a turn lease";
};

/// The handler of the route `method` `path` of [`ROUTES`].
#[cfg(test)]
fn handler(method: &str, path: &str) -> Option<MethodRouter<State>> {
    ROUTES
        .iter()
        .find(|r| r.method.as_str() == method && r.path == path)
        .map(Route::handler)
}

/// The router of exactly the routes of [`ROUTES`]; with `token`, every request must carry
/// it as a bearer token. `GET /view`, the HTML page, is added after the token check.
pub fn router(state: State, token: Option<Arc<str>>) -> Router {
    let limits = state.shared_limits();
    let max_body = limits.max_body;
    let tracked = state.clone();
    let guarded = state.clone();
    let mut app = Router::new();
    for route in ROUTES {
        app = app.route(route.path, route.handler());
    }
    let app = app
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                super::full_disk::refuse_writes(guarded.clone(), req, next)
            },
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| server::track_writes(tracked.clone(), req, next),
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                super::limits::declared_length(limits.clone(), req, next)
            },
        ))
        .with_state(state);
    let app = match token {
        None => app,
        Some(token) => app.layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let token = token.clone();
                async move { authorize(&token, req, next).await }
            },
        )),
    };
    // The HTML page holds no data: it is served without the token (`page.rs`).
    app.merge(page::router())
}

async fn authorize(token: &str, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(super::guard::bearer_token);
    match given {
        Some(t) if constant_time_eq(t.as_bytes(), token.as_bytes()) => next.run(req).await,
        Some(_) => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the bearer token is wrong",
        )
        .into_response(),
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this listener needs `authorization: Bearer TOKEN`",
        )
        .into_response(),
    }
}

/// Compares without an early exit, so the time taken says nothing about the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn unknown_route(req: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route {} {} (docs/api.md lists the routes)",
        req.method(),
        req.uri().path()
    ))
}

async fn wrong_method(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}
