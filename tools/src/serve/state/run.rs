//! Running a handler's engine calls on tokio's blocking pool, off the async threads ([`blocking`],
//! [`on_session`], [`writing`]), and the JSON answers every route writes ([`json_answer`],
//! [`raw_json`]). A panic in an engine call is a 500 for that request; the server goes on
//! serving. A request the embedded store runs on its caller's own thread ([`INLINE`],
//! `embed.rs`) runs its engine calls right there instead. It calls the engine's public API,
//! the state ([`State`]) and `api` for errors.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use grove::Session;
use serde_json::Value;

use super::State;
use crate::serve::api::{ApiError, ApiResult};

tokio::task_local! {
    /// Set while a request is run on its caller's thread (`Embedded::request_inline`): that
    /// thread is no runtime's worker, so [`blocking`] runs engine calls on it directly, sparing
    /// the hand-over to the pool and back.
    pub static INLINE: ();
    /// Set, with [`INLINE`], while a request is run for `Embedded::request_pieces`: a gathered
    /// answer keeps the long JSON values its producer wrote as values ([`crate::serve::stream::Sink::value`])
    /// in pieces of their own rather than in one buffer.
    pub static PIECEWISE: ();
    /// Set, with [`INLINE`], while a request is run for `Embedded::request_overlapped`: a
    /// streamed answer its route knows to be large ([`crate::serve::stream::ndjson_overlapped`]) is
    /// produced on the pool and handed over chunk by chunk, so the caller makes values of one
    /// chunk while the next is read. Its value is what each chunk is made into on the pool
    /// before it is handed over (node's addon: one JSON array of ASCII text).
    pub static OVERLAPPED: fn(Vec<u8>) -> Vec<u8>;
}

/// Runs `f` on the blocking pool (or, for a request run inline, on this thread).
pub async fn blocking<T, F>(f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> grove::Result<T> + Send + 'static,
{
    if INLINE.try_with(|()| ()).is_ok() {
        return catch_panic(f);
    }
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(e) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            format!("the request failed inside the server: {e}"),
        )),
    }
}

/// `f`, a panic in it answered as the pool's are: a 500 for this request.
fn catch_panic<T>(f: impl FnOnce() -> grove::Result<T>) -> ApiResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result.map_err(ApiError::from),
        Err(_) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            "the request failed inside the server: an engine call panicked",
        )),
    }
}

/// Runs `f` on session `sid` on the blocking pool.
pub async fn on_session<T, F>(state: &State, sid: String, f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce(&Session) -> grove::Result<T> + Send + 'static,
{
    let store = state.store()?;
    blocking(move || f(&store.session(&sid)?)).await
}

/// Runs the write `f` of `input` on session `sid` on the blocking pool. On a shared backend
/// the session is opened with `Store::session_for_write`: one this node opened before is not
/// looked up again, so an append costs one round trip (its commit checks that the session is
/// still listed); when another node deleted it meanwhile, `f` runs once more (on a copy of
/// `input`) on the session listed under the id now, if any.
pub async fn writing<T, I, F>(state: &State, sid: String, input: I, f: F) -> ApiResult<T>
where
    T: Send + 'static,
    I: Clone + Send + 'static,
    F: Fn(&Session, I) -> grove::Result<T> + Send + 'static,
{
    let store = state.store()?;
    blocking(move || {
        if !store.is_shared() {
            return f(&store.session(&sid)?, input);
        }
        match f(&store.session_for_write(&sid)?, input.clone()) {
            Err(grove::GroveError::SessionNotFound(_)) => f(&store.session(&sid)?, input),
            done => done,
        }
    })
    .await
}

/// A JSON answer from text that already is JSON (stored entries, contexts).
pub fn raw_json(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

/// A JSON answer of `value`.
pub fn json_answer(status: StatusCode, value: Value) -> Response {
    raw_json(status, value.to_string())
}
