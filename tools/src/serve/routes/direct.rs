//! The embedded store's short way to the small reads: a `GET` of one of the read routes below,
//! its path written plainly (no percent-escapes, no empty segment), goes straight to that
//! route's handler instead of through the router and its layers, none of which acts on a
//! read of the embedded store (no token, no body, no write to refuse or count). The answer is
//! the route's own: the same handler, given what the router's extractors would give it (the
//! state of the request's client, the path's segments, the query parsed by the same `Query`
//! type). Any other request ([`answer`] gives `None`) goes through the router.
//!
//! It is for `Embedded::request_inline`, where a read of the leaf costs a few microseconds and
//! the router as much again. It owns the matching of those targets; it calls the handlers of
//! the route modules, the state and `api`. A test compares its answers with the router's.

use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};

use super::{leaf, operations, reads, sessions};
use crate::serve::api::{client_name, ApiResult, Path, Query};
use crate::serve::state::State;

/// The prefix of every route taken here.
const SESSIONS: &str = "/v1/sessions/";

/// The answer of the read route `target` names, for a client of `headers` (only `grove-client`
/// counts for a read); `None` when the target is not one taken here, for the router.
pub async fn answer(state: &State, target: &str, headers: &HeaderMap) -> Option<Response> {
    // A query is parsed as the router's request would be (a target it refuses goes to it).
    let (path, query) = match target.split_once('?') {
        Some((path, _)) => (path, Some(target.parse::<Uri>().ok()?)),
        None => (target, None),
    };
    let rest = path.strip_prefix(SESSIONS)?;
    let mut segments = rest.split('/');
    let sid = segments.next().filter(|s| plain(s))?.to_owned();
    let route = match (segments.next(), segments.next(), segments.next()) {
        (None, _, _) => Read::Session,
        (Some("leaf"), None, _) => Read::Leaf,
        (Some("leaf"), Some("history"), None) => Read::LeafHistory,
        (Some("entries"), Some(eid), None) if plain(eid) => Read::Entry(eid.to_owned()),
        (Some("entries"), Some(eid), Some("proof")) if plain(eid) && segments.next().is_none() => {
            Read::Proof(eid.to_owned())
        }
        (Some("context"), None, _) => Read::Context,
        (Some("tree"), None, _) => Read::Tree,
        (Some("labels"), None, _) => Read::Labels,
        (Some("labels"), Some(eid), None) if plain(eid) => Read::Label(eid.to_owned()),
        (Some("name"), None, _) => Read::Name,
        (Some("stats"), None, _) => Read::Stats,
        (Some("seal"), None, _) => Read::Seal,
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

/// The read routes taken here, with their path parameters (but the session's).
enum Read {
    Session,
    Leaf,
    LeafHistory,
    Entry(String),
    Proof(String),
    Context,
    Tree,
    Labels,
    Label(String),
    Name,
    Stats,
    Seal,
}

impl Read {
    async fn answer(
        self,
        state: &State,
        sid: String,
        query: Option<Uri>,
        headers: &HeaderMap,
    ) -> Response {
        match self.run(state, sid, query, headers).await {
            Ok(response) => response,
            Err(e) => e.into_response(),
        }
    }

    async fn run(
        self,
        state: &State,
        sid: String,
        query: Option<Uri>,
        headers: &HeaderMap,
    ) -> ApiResult<Response> {
        // The extractors in the router's order: the state, the path, the query.
        let state = state
            .for_request(client_name(headers)?, None, false)
            .await?;
        match self {
            Read::Session => sessions::get_session(state, Path(sid)).await,
            Read::Leaf => leaf::leaf(state, Path(sid)).await,
            Read::LeafHistory => leaf::leaf_history(state, Path(sid)).await,
            Read::Entry(eid) => reads::entry(state, Path((sid, eid)), parse(&query)?).await,
            Read::Proof(eid) => reads::proof(state, Path((sid, eid))).await,
            Read::Context => reads::context(state, Path(sid), parse(&query)?).await,
            Read::Tree => reads::tree(state, Path(sid), parse(&query)?).await,
            Read::Labels => reads::labels(state, Path(sid)).await,
            Read::Label(eid) => reads::label(state, Path((sid, eid))).await,
            Read::Name => reads::name(state, Path(sid)).await,
            Read::Stats => reads::stats(state, Path(sid)).await,
            Read::Seal => operations::seal(state, Path(sid)).await,
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
