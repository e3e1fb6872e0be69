//! The server's limits (docs/api.md, "Limits"): how many connections, followed replays and
//! streamed reads it serves at once, how long a client may take to send a body, and the
//! declared body length it refuses before reading any of it. This room owns the limits and
//! their answers: over a cap, `503 busy` with `Retry-After` (never a wait that might not end);
//! a `Content-Length` over the route's limit, `413 payload_too_large` at once; a body that has
//! not arrived within `--body-timeout`, `408 timeout`, and the connection is closed.
//!
//! Why caps: a streamed read holds a thread of tokio's blocking pool while its client reads,
//! and writes need that pool too, so streamed reads may take at most [`Limits::streams`] of
//! its [`BLOCKING_THREADS`] (the rest stay for writes and short reads); a followed replay
//! holds no thread while it waits (`follow.rs`), but a socket and a task, so it has a cap of
//! its own, and so do connections.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::api::ApiError;

/// The threads of tokio's blocking pool, where every engine call runs (tokio's default).
pub const BLOCKING_THREADS: usize = 512;

/// The limits of one server, from `serve::Args`.
#[derive(Clone)]
pub struct Limits {
    /// `--max-body`.
    pub max_body: usize,
    /// `--max-import`.
    pub max_import: usize,
    /// `--body-timeout`: the whole body of a request (an import: each chunk of it).
    pub body_timeout: Duration,
    /// `--keepalive`: an idle followed replay writes an empty line this often.
    pub keepalive: Duration,
    /// `--health-timeout`: the bound of a deep health read, of the blocking pool's answer to
    /// a health check, and the age at which a write in flight counts as stuck.
    pub health_timeout: Duration,
    /// Followed replays at once (`--max-followers`).
    followers: Arc<Semaphore>,
    /// Streamed reads at once (`--max-streams`).
    streams: Arc<Semaphore>,
}

impl Limits {
    pub fn new(
        max_body: usize,
        max_import: usize,
        body_timeout: Duration,
        keepalive: Duration,
        health_timeout: Duration,
        max_followers: usize,
        max_streams: usize,
    ) -> Limits {
        Limits {
            max_body,
            max_import,
            body_timeout,
            keepalive,
            health_timeout,
            followers: Arc::new(Semaphore::new(max_followers)),
            streams: Arc::new(Semaphore::new(max_streams)),
        }
    }

    /// A place for one more followed replay, or `503 busy`.
    pub fn follower(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.followers.clone().try_acquire_owned().map_err(|_| {
            busy("the server follows as many replays as --max-followers allows; try again later")
        })
    }

    /// A place for one more streamed read, or `503 busy`.
    pub fn stream(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.streams.clone().try_acquire_owned().map_err(|_| {
            busy("the server streams as many reads as --max-streams allows; try again later")
        })
    }
}

/// `503 busy` (with `Retry-After: 1`): a cap of the server is reached.
pub fn busy(message: &str) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", message)
}

/// `408 timeout`: the body did not arrive within `--body-timeout`.
pub fn body_timed_out(timeout: Duration) -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "timeout",
        format!(
            "the request body did not arrive within {} s (--body-timeout)",
            timeout.as_secs_f64()
        ),
    )
}

/// Refuses a request whose `Content-Length` is over its route's limit (`--max-import` for
/// `POST /v1/import`, `--max-body` for the others) before any of its body is read.
pub async fn declared_length(limits: Arc<Limits>, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let import = req.uri().path() == "/v1/import";
    let (limit, option) = match import {
        true => (limits.max_import, "--max-import"),
        false => (limits.max_body, "--max-body"),
    };
    match declared {
        Some(length) if length > limit as u64 => {
            // A client that sends its body before it reads the answer (most do) would meet a
            // reset instead of the answer if the connection closed on the unread body: what
            // arrives is read and dropped for a while (a lingering close, as nginx does), never
            // kept, then the connection is closed.
            tokio::spawn(linger(req.into_body(), limits.body_timeout));
            let mut response = ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!(
                    "the request body is {length} bytes, over the server's limit of {limit} \
                     ({option}); it is not read"
                ),
            )
            .into_response();
            response.headers_mut().insert(
                header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
            response
        }
        _ => next.run(req).await,
    }
}

/// The most of a refused body [`linger`] reads and drops.
const LINGER_BYTES: usize = 1 << 20;

/// Reads and drops a refused request's body for at most `timeout` and [`LINGER_BYTES`].
pub(super) async fn linger(body: axum::body::Body, timeout: Duration) {
    use tokio_stream::StreamExt;
    let mut stream = body.into_data_stream();
    let mut read = 0usize;
    let drain = async {
        while let Some(Ok(chunk)) = stream.next().await {
            read = read.saturating_add(chunk.len());
            if read > LINGER_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(timeout, drain).await;
}

/// The answer to a connection over `--max-connections`: `503 busy`, and the connection is
/// closed after it.
pub fn over_connection_cap() -> Response {
    let mut response =
        busy("the server has as many connections as --max-connections allows; try again later")
            .into_response();
    response.headers_mut().insert(
        header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}
