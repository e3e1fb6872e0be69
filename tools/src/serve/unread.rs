//! A request answered before its body was read whole (a wrong token, host or body type, a
//! write on a full disk, a path the route refuses before it reads the body): the connection
//! must either be ready for the next request or say it is not. hyper, left alone, drains what
//! of the body it already holds and otherwise closes the connection, but it may have sent the
//! answer's head without `Connection: close` by then: a keep-alive client that pooled the
//! connection sent its next request into a closed socket (`Unexpected EOF`). This room owns
//! the answer to such a request, the outermost layer of each listener's router:
//!
//! - every request body is read through a [`Shared`] handle, so that what the routes left
//!   unread comes back here once they have answered;
//! - a small remainder ([`DRAIN_INLINE`] declared bytes or fewer, no `Expect: 100-continue`)
//!   is read and dropped before the answer goes out, for at most [`DRAIN_WAIT`]: when it ends
//!   the connection stays open for the next request;
//! - otherwise the answer says `Connection: close`, and the rest is read and dropped after it
//!   for a while ([`limits::linger`]: a client still sending would meet a reset instead of
//!   the answer if the connection closed on unread bytes).
//!
//! A body still held when the answer is ready (a route that reads it on, or lingers itself)
//! is left to its holder. It calls only `limits` (the lingering read).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;

use super::limits;

/// The most declared bytes of a remainder read before the answer (more: the connection is
/// closed after the answer instead).
pub const DRAIN_INLINE: u64 = 64 * 1024;

/// The longest the answer waits for a small remainder to arrive.
pub const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// `router` with the layer of this room; `body_timeout` bounds the lingering read.
pub fn answered_whole(router: Router, body_timeout: Duration) -> Router {
    router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| answer(req, next, body_timeout),
    ))
}

/// Whether the request says it has a body; its declared length when it gives one.
fn declared(headers: &HeaderMap) -> Option<Option<u64>> {
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return Some(None);
    }
    let length = headers.get(header::CONTENT_LENGTH)?;
    match length
        .to_str()
        .ok()
        .and_then(|n| n.trim().parse::<u64>().ok())
    {
        Some(0) => None,
        parsed => Some(parsed),
    }
}

async fn answer(req: Request, next: Next, body_timeout: Duration) -> Response {
    let Some(length) = declared(req.headers()) else {
        return next.run(req).await;
    };
    let expects = req.headers().contains_key(header::EXPECT);
    let (parts, body) = req.into_parts();
    let shared = Shared::new(body);
    let inner = shared.inner.clone();
    let mut response = next
        .run(Request::from_parts(parts, Body::new(shared)))
        .await;
    // The routes' handle is gone (a holder still reading keeps it: left to the holder).
    if Arc::strong_count(&inner) > 1 {
        return response;
    }
    let Some(mut rest) = inner.take() else {
        return response;
    };
    if http_body::Body::is_end_stream(&rest) {
        return response;
    }
    if !expects && length.is_some_and(|n| n <= DRAIN_INLINE) {
        use tokio_stream::StreamExt;
        let mut stream = rest.into_data_stream();
        let drained = tokio::time::timeout(DRAIN_WAIT, async {
            loop {
                match stream.next().await {
                    None => return true,
                    Some(Ok(_)) => {}
                    Some(Err(_)) => return false,
                }
            }
        })
        .await;
        if drained == Ok(true) {
            return response;
        }
        rest = Body::from_stream(stream);
    }
    if !expects {
        tokio::spawn(limits::linger(rest, body_timeout));
    }
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// What of a request body is left, shared between the routes' handle and [`answer`].
struct Inner {
    body: Mutex<Option<Body>>,
    /// The body gave its last frame.
    ended: AtomicBool,
}

impl Inner {
    /// The body, unless it ended.
    fn take(&self) -> Option<Body> {
        let body = self.body.lock().take();
        body.filter(|_| !self.ended.load(Ordering::Acquire))
    }
}

/// The handle to a request body that the routes read.
struct Shared {
    inner: Arc<Inner>,
}

impl Shared {
    fn new(body: Body) -> Shared {
        Shared {
            inner: Arc::new(Inner {
                body: Mutex::new(Some(body)),
                ended: AtomicBool::new(false),
            }),
        }
    }
}

impl http_body::Body for Shared {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let mut body = self.inner.body.lock();
        let Some(body) = body.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.inner.ended.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.ended.load(Ordering::Acquire)
            || self
                .inner
                .body
                .lock()
                .as_ref()
                .is_none_or(http_body::Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .body
            .lock()
            .as_ref()
            .map(http_body::Body::size_hint)
            .unwrap_or_else(|| SizeHint::with_exact(0))
    }
}
