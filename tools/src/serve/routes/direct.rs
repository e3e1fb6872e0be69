//! The embedded store's short way to its small calls: a `GET` of one of the read routes below
//! (the streamed ones among them gathered whole, as every streamed answer in process is),
//! or a `POST` of one of the appends, its path written plainly (no percent-escapes, no empty
//! segment), goes straight to that route's handler instead of through the router. The answer
//! is the route's own: the same handler, given what the router's extractors would give it (the
//! state of the request's client, the path's segments, the query parsed by the same `Query`
//! type, the body checked and parsed as `Raw` and `Body` do), after what the router's layers do
//! to such a request of the embedded store: a write is counted in flight (`track_writes`) and
//! refused on a full disk (`full_disk::refuse_writes`), and a body over `--max-body` is refused
//! (`DefaultBodyLimit`; no token, no declared length in process). Any other request
//! ([`answer`] gives `None`) goes through the router.
//!
//! It is for `Embedded::request_inline`, where a read of the leaf costs a few microseconds and
//! the router as much again. It owns the matching of those targets; it calls the handlers of
//! the route modules, the state and `api`. A test compares its answers with the router's.

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};

use super::{appends, leaf, operations, reads, sessions};
use crate::serve::api::{body_too_large, client_name, ApiResult, Path, Query};
use crate::serve::state::{checked, parsed, State};

/// The prefix of every route taken here.
const SESSIONS: &str = "/v1/sessions/";

/// The answer of the route `method` and `target` name, for a client of `headers` (only
/// `grove-client` counts: the routes taken read no other) with `body`; `None` when the route is
/// not one taken here, for the router.
pub async fn answer(
    state: &State,
    method: &Method,
    target: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Option<Response> {
    // A query is parsed as the router's request would be (a target it refuses goes to it).
    let (path, query) = match target.split_once('?') {
        Some((path, _)) => (path, Some(target.parse::<Uri>().ok()?)),
        None => (target, None),
    };
    let rest = path.strip_prefix(SESSIONS)?;
    let mut segments = rest.split('/');
    let sid = segments.next().filter(|s| plain(s))?.to_owned();
    let parts = (segments.next(), segments.next(), segments.next());
    let route = match (method, parts) {
        (&Method::GET, _) if !body.is_empty() => return None,
        (&Method::GET, (None, _, _)) => Route::Session,
        (&Method::GET, (Some("leaf"), None, _)) => Route::Leaf,
        (&Method::GET, (Some("leaf"), Some("history"), None)) => Route::LeafHistory,
        (&Method::GET, (Some("entries"), Some(eid), None)) if plain(eid) => {
            Route::Entry(eid.to_owned())
        }
        (&Method::GET, (Some("entries"), Some(eid), Some("proof")))
            if plain(eid) && segments.next().is_none() =>
        {
            Route::Proof(eid.to_owned())
        }
        (&Method::GET, (Some("entries"), None, _)) => Route::Entries,
        (&Method::GET, (Some("log"), None, _)) => Route::Log,
        (&Method::GET, (Some("children"), None, _)) => Route::Children,
        (&Method::GET, (Some("branch"), None, _)) => Route::Branch,
        (&Method::GET, (Some("path"), None, _)) => Route::Path,
        (&Method::GET, (Some("context"), None, _)) => Route::Context,
        (&Method::GET, (Some("tree"), None, _)) => Route::Tree,
        (&Method::GET, (Some("labels"), None, _)) => Route::Labels,
        (&Method::GET, (Some("labels"), Some(eid), None)) if plain(eid) => {
            Route::Label(eid.to_owned())
        }
        (&Method::GET, (Some("name"), None, _)) => Route::Name,
        (&Method::GET, (Some("stats"), None, _)) => Route::Stats,
        (&Method::GET, (Some("seal"), None, _)) => Route::Seal,
        (&Method::POST, (Some("entries"), None, _)) => Route::Append(body.clone()),
        (&Method::POST, (Some("entries"), Some("exact"), None)) => Route::AppendExact(body.clone()),
        (&Method::POST, (Some("entries"), Some("if"), None)) => Route::AppendIf(body.clone()),
        (&Method::POST, (Some("entries"), Some("many"), None)) => Route::AppendMany(body.clone()),
        _ => return None,
    };
    Some(route.answer(state, sid, query, headers).await)
}

/// Whether a path segment is passed on as it is written: not empty, nothing escaped.
fn plain(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'))
}

/// The routes taken here, with their path parameters (but the session's) and body.
enum Route {
    Session,
    Leaf,
    LeafHistory,
    Entry(String),
    Proof(String),
    Entries,
    Log,
    Children,
    Branch,
    Path,
    Context,
    Tree,
    Labels,
    Label(String),
    Name,
    Stats,
    Seal,
    Append(Bytes),
    AppendExact(Bytes),
    AppendIf(Bytes),
    AppendMany(Bytes),
}

impl Route {
    async fn answer(
        self,
        state: &State,
        sid: String,
        query: Option<Uri>,
        headers: &HeaderMap,
    ) -> Response {
        let write = self.writes();
        // The router's layers: a write counts as in flight, and is refused on a full disk.
        let _in_flight = write.then(|| state.writes().begin());
        if let (true, Some(full)) = (write, state.full_disk()) {
            return crate::serve::api::ApiError::from(full.error()).into_response();
        }
        match self.run(state, sid, query, headers, write).await {
            Ok(response) => response,
            Err(e) => e.into_response(),
        }
    }

    fn writes(&self) -> bool {
        matches!(
            self,
            Route::Append(_) | Route::AppendExact(_) | Route::AppendIf(_) | Route::AppendMany(_)
        )
    }

    async fn run(
        self,
        state: &State,
        sid: String,
        query: Option<Uri>,
        headers: &HeaderMap,
        write: bool,
    ) -> ApiResult<Response> {
        // The extractors in the router's order: the state, the path, the query, the body.
        let shard = state.is_sharded().then_some(sid.as_str());
        let state = state
            .for_request(client_name(headers)?, shard, write)
            .await?;
        let max_body = state.limits().max_body;
        let body = |bytes: Bytes| match bytes.len() > max_body {
            true => Err(body_too_large()),
            false => checked(bytes),
        };
        match self {
            Route::Session => sessions::get_session(state, Path(sid)).await,
            Route::Leaf => leaf::leaf(state, Path(sid)).await,
            Route::LeafHistory => leaf::leaf_history(state, Path(sid)).await,
            Route::Entry(eid) => reads::entry(state, Path((sid, eid)), parse(&query)?).await,
            Route::Proof(eid) => reads::proof(state, Path((sid, eid))).await,
            Route::Entries => reads::entries(state, Path(sid), parse(&query)?).await,
            Route::Log => reads::log(state, Path(sid), parse(&query)?).await,
            Route::Children => reads::children(state, Path(sid), parse(&query)?).await,
            Route::Branch => reads::branch(state, Path(sid), parse(&query)?).await,
            Route::Path => reads::path(state, Path(sid), parse(&query)?).await,
            Route::Context => reads::context(state, Path(sid), parse(&query)?).await,
            Route::Tree => reads::tree(state, Path(sid), parse(&query)?).await,
            Route::Labels => reads::labels(state, Path(sid)).await,
            Route::Label(eid) => reads::label(state, Path((sid, eid))).await,
            Route::Name => reads::name(state, Path(sid)).await,
            Route::Stats => reads::stats(state, Path(sid)).await,
            Route::Seal => operations::seal(state, Path(sid)).await,
            Route::Append(bytes) => appends::append(state, Path(sid), parsed(body(bytes)?)?).await,
            Route::AppendExact(bytes) => {
                let q = parse(&query)?;
                appends::append_exact(state, Path(sid), q, body(bytes)?).await
            }
            Route::AppendIf(bytes) => {
                appends::append_if(state, Path(sid), parsed(body(bytes)?)?).await
            }
            Route::AppendMany(bytes) => {
                appends::append_many(state, Path(sid), parsed(body(bytes)?)?).await
            }
        }
    }
}

/// The query as the route's `Query` extractor parses it (none: every parameter absent).
fn parse<T: serde::de::DeserializeOwned>(target: &Option<Uri>) -> ApiResult<Query<T>> {
    match target {
        Some(uri) => Query::from_uri(uri),
        None => Query::from_uri(&Uri::from_static("/")),
    }
}
