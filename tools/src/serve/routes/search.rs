//! The route of docs/api.md's "Search": `GET /v1/search`, the entries of every session whose
//! text matches a query (the engine's `Store::search`, as `grove search --json` prints it).
//! Sharded: every cluster's store is searched and the hits merged by score. It calls the
//! engine's public API, the state (the blocking pool, JSON answers), `api` and the tools'
//! `search` forms.

use axum::http::StatusCode;
use axum::response::Response;
use grove::{GroveError, SearchOptions, SearchResults, Store};
use serde::Deserialize;

use crate::search::{self, MAX_LIMIT};
use crate::serve::api::{ApiError, ApiResult, Query};
use crate::serve::state::{blocking, json_answer, State};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchQuery {
    q: Option<String>,
    session: Option<String>,
    #[serde(rename = "type")]
    types: Option<String>,
    since: Option<String>,
    limit: Option<usize>,
}

/// `GET /v1/search?q=…[&session=ID][&type=T,T][&since=T][&limit=N]`.
pub(super) async fn search(state: State, Query(q): Query<SearchQuery>) -> ApiResult<Response> {
    let Some(text) = q.q.filter(|t| !t.trim().is_empty()) else {
        return Err(ApiError::invalid_argument(
            "q, the text to search for, is required",
        ));
    };
    let limit = q.limit.unwrap_or(20);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::invalid_argument(format!(
            "limit must be from 1 to {MAX_LIMIT}, not {limit}"
        )));
    }
    let since_ms = match &q.since {
        Some(since) => {
            Some(search::since_ms(since, search::now_ms()).map_err(ApiError::invalid_argument)?)
        }
        None => None,
    };
    let options = SearchOptions {
        session: q.session,
        types: search::types(q.types.as_slice()),
        since_ms,
        limit,
    };
    let stores = state.stores()?.all();
    let results = blocking(move || merged(&stores, &text, &options)).await?;
    Ok(json_answer(StatusCode::OK, search::results_value(&results)))
}

/// The hits of every store, best first; a session filter that no store knows is `not_found`.
fn merged(stores: &[Store], text: &str, options: &SearchOptions) -> grove::Result<SearchResults> {
    let mut all = SearchResults {
        hits: Vec::new(),
        total: 0,
        indexed: 0,
    };
    let mut missing = None;
    let mut known = false;
    for store in stores {
        match store.search(text, options) {
            Ok(found) => {
                known = true;
                all.hits.extend(found.hits);
                all.total += found.total;
                all.indexed += found.indexed;
            }
            // Sharded: the session lives in one cluster's store.
            Err(e @ GroveError::SessionNotFound(_)) if options.session.is_some() => {
                missing = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    if let (false, Some(e)) = (known, missing) {
        return Err(e);
    }
    all.hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.session.cmp(&b.session))
    });
    all.hits.truncate(options.limit);
    Ok(all)
}
