//! How a request becomes the handlers' [`State`] (the store of its session and its client,
//! `Grove-Client`) and how its body is read: whole within `--body-timeout`, up to the server's
//! limit, and refused when it nests deeper than [`MAX_JSON_DEPTH`] before it is parsed
//! ([`Raw`], [`Body`]). It calls the state, `api` (errors, the extractor types, the client
//! name), `depth` and `limits`.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::State;
use crate::serve::api::{bytes_rejection, client_name, too_deep, ApiError, ApiResult, Body, Raw};
use crate::serve::depth::{self, MAX_JSON_DEPTH};
use crate::serve::limits;

impl FromRequest<State> for Raw {
    type Rejection = ApiError;

    /// The whole body must arrive within `--body-timeout`: a client that trickles it gets
    /// `408 timeout`, and the connection is closed (the rest of the body is never read). A
    /// body nested deeper than [`MAX_JSON_DEPTH`] is refused before it is parsed.
    async fn from_request(req: Request, state: &State) -> ApiResult<Raw> {
        let timeout = state.limits().body_timeout;
        let bytes = match tokio::time::timeout(timeout, axum::body::Bytes::from_request(req, state))
            .await
        {
            Ok(read) => read.map_err(bytes_rejection)?,
            Err(_) => return Err(limits::body_timed_out(timeout)),
        };
        checked(bytes)
    }
}

/// A whole body as [`Raw`] takes it: refused when it nests deeper than [`MAX_JSON_DEPTH`].
pub(in crate::serve) fn checked(bytes: axum::body::Bytes) -> ApiResult<Raw> {
    depth::check(&bytes, MAX_JSON_DEPTH).map_err(too_deep)?;
    Ok(Raw(bytes))
}

/// A [`Raw`] body parsed as [`Body`] parses it.
pub(in crate::serve) fn parsed<T: DeserializeOwned>(Raw(bytes): Raw) -> ApiResult<Body<T>> {
    serde_json::from_slice(&bytes).map(Body).map_err(|e| {
        ApiError::invalid_request(format!("the body is not the JSON this route takes: {e}"))
    })
}

impl<T: DeserializeOwned> FromRequest<State> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &State) -> ApiResult<Body<T>> {
        parsed(Raw::from_request(req, state).await?)
    }
}

impl FromRequestParts<State> for State {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &State) -> ApiResult<State> {
        // Sharded, the session of the path chooses the store.
        let sid = match state.is_sharded() {
            false => None,
            true => axum::extract::RawPathParams::from_request_parts(parts, state)
                .await
                .ok()
                .and_then(|p| {
                    p.iter()
                        .find(|(k, _)| *k == "sid")
                        .map(|(_, v)| v.to_owned())
                }),
        };
        let write = !matches!(
            parts.method,
            axum::http::Method::GET | axum::http::Method::HEAD
        );
        state
            .for_request(client_name(&parts.headers)?, sid.as_deref(), write)
            .await
    }
}
