//! Results that grow with a session, streamed as JSON lines with bounded memory: a blocking
//! task reads from the store and hands chunks of about [`CHUNK`] bytes to the response
//! through a channel of [`DEPTH`] chunks, so a slow client slows the reader instead of
//! filling memory, and a client that goes away stops it.
//!
//! Until the producer calls [`Sink::ready`] (or writes its first line), an error it returns
//! is the response (a 404 for an unknown session, say). After that the status is sent; an
//! error aborts the response, so the client sees a broken stream, never a short one
//! presented as whole.
//!
//! A producer whose reader stopped taking chunks (a client of the embedded store that left a
//! stream unread) is not waited for when the store is closed or reopened: the change of stores
//! ends it, and the body then breaks off. A body whose producer did not run to its end (stopped
//! so, or panicked) always ends in an error, never as a short body presented as whole.
//!
//! The other way, a request body that grows with a session (an import) is handed to a blocking
//! reader chunk by chunk ([`BodyReader`], [`forward_body`]), under a limit of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_stream::StreamExt as _;

use super::api::{ApiError, ApiResult};
use super::state::{State, INLINE, OVERLAPPED, PIECEWISE};

/// Bytes gathered before a chunk is handed over.
const CHUNK: usize = 64 << 10;
/// Bytes gathered before the first chunk of a stream whose chunks are shaped for a caller
/// that makes values of one while the next is read ([`ndjson_overlapped`]): fewer, so that
/// the caller, done with the chunk before, waits less for it.
const FIRST_CHUNK: usize = 16 << 10;
/// Chunks in flight between the reader and the connection.
const DEPTH: usize = 8;
/// The fewest bytes of a value written by [`Sink::value`] that a piecewise answer keeps as a
/// piece of its own.
pub const PIECE_BYTES: usize = 4 << 10;

/// A whole answer gathered in pieces (`Embedded::request_pieces`): its bytes are the pieces one
/// after the other; a piece marked a value (`values[i]`) is one whole JSON value its producer
/// wrote as such ([`Sink::value`]), of at least [`PIECE_BYTES`]. An embedding program makes
/// its values from them without first copying them into one buffer.
#[derive(Clone, Default)]
pub struct Pieces {
    pub pieces: Vec<Vec<u8>>,
    pub values: Vec<bool>,
}

impl Pieces {
    /// An answer of one piece, no value kept apart.
    pub fn one(whole: Vec<u8>) -> Pieces {
        let mut pieces = Pieces::default();
        pieces.push(whole, false);
        pieces
    }

    fn push(&mut self, piece: Vec<u8>, value: bool) {
        if !piece.is_empty() {
            self.pieces.push(piece);
            self.values.push(value);
        }
    }

    /// The answer's bytes in one buffer.
    pub fn joined(self) -> Vec<u8> {
        let mut pieces = self.pieces.into_iter();
        let mut out = pieces.next().unwrap_or_default();
        for piece in pieces {
            out.extend_from_slice(&piece);
        }
        out
    }
}

/// Where a producer writes its lines.
pub struct Sink {
    start: Option<oneshot::Sender<ApiResult<()>>>,
    /// Where chunks go; `None` for a request run inline, whose whole body is gathered in `buf`.
    tx: Option<mpsc::Sender<std::io::Result<Bytes>>>,
    buf: Vec<u8>,
    gone: bool,
    /// Whether the response started ([`Sink::ready`]).
    started: bool,
    /// Changes when the stores are taken away (closed or reopened): a full channel is then
    /// not waited on.
    stores: Option<watch::Receiver<Option<super::stores::Stores>>>,
    /// For a request run piecewise (`state::PIECEWISE`): the pieces before `buf`.
    pieces: Option<Pieces>,
    /// What each chunk is made into before it is handed over ([`ndjson_overlapped`]).
    shape: Option<fn(Vec<u8>) -> Vec<u8>>,
    /// The bytes gathered before the next chunk is handed over: [`CHUNK`], or
    /// [`FIRST_CHUNK`] before the first of a shaped stream.
    chunk: usize,
}

impl Sink {
    /// A sink that gathers its lines in one buffer on the producer's thread (a request run
    /// inline), with `pieces` for a request run piecewise.
    fn gathering(pieces: Option<Pieces>) -> Sink {
        Sink {
            start: None,
            tx: None,
            buf: Vec::new(),
            gone: false,
            started: false,
            stores: None,
            pieces,
            shape: None,
            chunk: CHUNK,
        }
    }

    /// The request is valid: the response starts (200, JSON lines).
    pub fn ready(&mut self) {
        self.started = true;
        if let Some(start) = self.start.take() {
            let _ = start.send(Ok(()));
        }
    }

    /// Writes one line (`text` without its LF). `false` when the client is gone: stop.
    pub fn line(&mut self, text: &str) -> bool {
        self.ready();
        self.buf.extend_from_slice(text.as_bytes());
        self.buf.push(b'\n');
        if self.buf.len() >= self.chunk && self.tx.is_some() {
            self.flush();
        }
        !self.gone
    }

    /// Writes bytes as they are (an export writes whole lines). `false` when the client is
    /// gone: stop.
    pub fn bytes(&mut self, bytes: &[u8]) -> bool {
        self.ready();
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= self.chunk && self.tx.is_some() {
            self.flush();
        }
        !self.gone
    }

    /// Writes `bytes`, which are one whole JSON value (a context's message): as [`Sink::bytes`]
    /// does, except that an answer gathered piecewise keeps a value of at least
    /// [`PIECE_BYTES`] as a piece of its own. `false` when the client is gone: stop.
    pub fn value(&mut self, bytes: &[u8]) -> bool {
        let Some(pieces) = self.pieces.as_mut().filter(|_| bytes.len() >= PIECE_BYTES) else {
            return self.bytes(bytes);
        };
        pieces.push(std::mem::take(&mut self.buf), false);
        pieces.push(bytes.to_vec(), true);
        self.ready();
        !self.gone
    }

    fn flush(&mut self) {
        if self.tx.is_none() || self.buf.is_empty() || self.gone {
            return;
        }
        self.chunk = CHUNK;
        let mut chunk = std::mem::take(&mut self.buf);
        if let Some(shape) = self.shape {
            chunk = shape(chunk);
        }
        if !self.send(Ok(Bytes::from(chunk))) {
            self.gone = true;
        }
    }

    /// Hands `item` over, waiting while the channel is full; `false` when the reader is gone
    /// or the stores were taken away meanwhile.
    fn send(&mut self, item: std::io::Result<Bytes>) -> bool {
        let Some(tx) = &self.tx else { return false };
        let item = match tx.try_send(item) {
            Ok(()) => return true,
            Err(TrySendError::Closed(_)) => return false,
            Err(TrySendError::Full(item)) => item,
        };
        let Some(stores) = &mut self.stores else {
            return tx.blocking_send(item).is_ok();
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return tx.blocking_send(item).is_ok();
        };
        runtime.block_on(async {
            tokio::select! {
                biased;
                sent = tx.send(item) => sent.is_ok(),
                _ = stores.changed() => false,
            }
        })
    }
}

/// `std::io::Write` over a [`Sink`], for the engine's export and streamed contexts: a client
/// that went away is a broken pipe.
pub struct SinkWriter<'a> {
    pub sink: &'a mut Sink,
    /// Whether each write of at least [`PIECE_BYTES`] is one whole JSON value, written by
    /// [`Sink::value`]: so for the engine's `write_context`, which writes each message with one
    /// `write_all`.
    pub values: bool,
}

impl std::io::Write for SinkWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let sent = match self.values {
            true => self.sink.value(buf),
            false => self.sink.bytes(buf),
        };
        if sent {
            Ok(buf.len())
        } else {
            Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the client went away",
            ))
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `produce` on the blocking pool and streams what it writes as `application/x-ndjson`
/// (`503 busy` when `--max-streams` streams already run: each holds a thread of the pool).
pub async fn ndjson<F>(state: &State, produce: F) -> ApiResult<Response>
where
    F: FnOnce(&mut Sink) -> grove::Result<()> + Send + 'static,
{
    streamed(state, "application/x-ndjson", produce).await
}

/// One JSON value written as it is produced (a context), with [`ndjson`]'s rules: an error
/// before the first byte is an error answer, one after it ends the body early.
pub async fn json_stream<F>(state: &State, produce: F) -> ApiResult<Response>
where
    F: FnOnce(&mut Sink) -> grove::Result<()> + Send + 'static,
{
    streamed(state, "application/json", produce).await
}

/// A large JSON-lines answer for a caller that takes it chunk by chunk ([`overlapping`]; a
/// route calls it only then): `tail` is read on the blocking pool as the server's streams are,
/// while `head` is read on this thread, which would only wait otherwise; the head is the
/// first chunk, the tail's chunks follow as they come (the response carries [`OffThread`]),
/// so the caller makes values of one chunk while the next is read. An error of the head is
/// the answer (the tail's reading then stops); one of the tail breaks the body off. With no
/// place left for a stream, the whole answer is gathered here, as any other inline answer.
pub async fn ndjson_overlapped<H, F>(state: &State, head: H, tail: F) -> ApiResult<Response>
where
    H: FnOnce(&mut Sink) -> grove::Result<()>,
    F: FnOnce(&mut Sink) -> grove::Result<()> + Send + 'static,
{
    let (Some(shape), Ok(permit)) = (overlapping(), state.limits().stream()) else {
        return Ok(gathered("application/x-ndjson", |sink: &mut Sink| {
            head(sink)?;
            tail(sink)
        }));
    };
    // The pool reads the tail from now on, while this thread reads the head.
    let rest = produced(state, permit, Some(shape), None, tail);
    let mut sink = Sink::gathering(None);
    head(&mut sink).map_err(ApiError::from)?;
    let first = tokio_stream::once(Ok(Bytes::from(shape(std::mem::take(&mut sink.buf)))));
    let mut response = (
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(first.chain(rest)),
    )
        .into_response();
    response.extensions_mut().insert(OffThread);
    Ok(response)
}

/// For a request run inline for a caller that takes a large answer chunk by chunk
/// (`state::OVERLAPPED`, `Embedded::request_overlapped`), what each chunk is made into.
pub fn overlapping() -> Option<fn(Vec<u8>) -> Vec<u8>> {
    INLINE.try_with(|()| ()).ok()?;
    OVERLAPPED.try_with(|shape| *shape).ok()
}

/// Marks a response of [`ndjson_overlapped`] whose body is produced off the caller's thread: the
/// caller reads it chunk by chunk, each chunk whole JSON lines made what the caller asked
/// (`state::OVERLAPPED`).
#[derive(Clone, Copy, Debug)]
pub struct OffThread;

async fn streamed<F>(state: &State, content_type: &'static str, produce: F) -> ApiResult<Response>
where
    F: FnOnce(&mut Sink) -> grove::Result<()> + Send + 'static,
{
    if INLINE.try_with(|()| ()).is_ok() {
        return Ok(gathered(content_type, produce));
    }
    let permit = state.limits().stream()?;
    spawned(state, content_type, permit, produce).await
}

/// `produce` run on the blocking pool, holding `permit`, its chunks streamed as the body once
/// it has written its first line (an error before that is the answer).
async fn spawned<F>(
    state: &State,
    content_type: &'static str,
    permit: tokio::sync::OwnedSemaphorePermit,
    produce: F,
) -> ApiResult<Response>
where
    F: FnOnce(&mut Sink) -> grove::Result<()> + Send + 'static,
{
    let (start_tx, start_rx) = oneshot::channel();
    let chunks = produced(state, permit, None, Some(start_tx), produce);
    match start_rx.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "the reader ended without an answer",
            ))
        }
    }
    Ok((
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(chunks),
    )
        .into_response())
}

/// The chunks of `produce` run on the blocking pool from now on, holding `permit`, each made
/// into `shape`'s when given. With `start`, an error before the first line is sent there;
/// without, every error is the stream's. If the producer does not run to its end, the stream
/// breaks off with an error after the chunks it handed over.
fn produced<F>(
    state: &State,
    permit: tokio::sync::OwnedSemaphorePermit,
    shape: Option<fn(Vec<u8>) -> Vec<u8>>,
    start: Option<oneshot::Sender<ApiResult<()>>>,
    produce: F,
) -> impl tokio_stream::Stream<Item = std::io::Result<Bytes>> + Send + 'static
where
    F: FnOnce(&mut Sink) -> grove::Result<()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(DEPTH);
    let stores = state.store_changes();
    // Set when the producer ran to its end (its last chunk, or its error, handed over).
    let finished = Arc::new(AtomicBool::new(false));
    let ran = Arc::clone(&finished);
    tokio::task::spawn_blocking(move || {
        // The place is given back when the reader is done, not when the response is.
        let _permit = permit;
        let mut sink = Sink {
            start,
            tx: Some(tx),
            buf: Vec::with_capacity(CHUNK + 4096),
            gone: false,
            started: false,
            stores: Some(stores),
            pieces: None,
            shape,
            chunk: match shape {
                Some(_) => FIRST_CHUNK,
                None => CHUNK,
            },
        };
        match produce(&mut sink) {
            Ok(()) => {
                sink.ready();
                sink.flush();
            }
            Err(e) => match sink.start.take() {
                Some(start) => {
                    let _ = start.send(Err(ApiError::from(e)));
                }
                None => {
                    sink.flush();
                    if !sink.gone {
                        sink.send(Err(std::io::Error::other(e.to_string())));
                    }
                }
            },
        }
        if !sink.gone {
            ran.store(true, Ordering::Release);
        }
    });
    let mut unfinished = Some(finished);
    let tail = tokio_stream::iter(std::iter::from_fn(move || {
        let finished = unfinished.take()?;
        (!finished.load(Ordering::Acquire)).then(|| {
            Err(std::io::Error::other(
                "the answer broke off: its reader stopped before the end (the store was closed)",
            ))
        })
    }));
    tokio_stream::wrappers::ReceiverStream::new(rx).chain(tail)
}

/// `produce` run on this thread for a request run inline (`state::INLINE`), its whole body
/// gathered: the caller reads it whole anyway. An error before the first byte is the answer; one
/// after it is a body that breaks off, as a stream's. Run piecewise (`state::PIECEWISE`), an
/// answer some of whose values were kept as pieces of their own ([`Sink::value`]) has an empty
/// body and its [`Pieces`] as an extension of the response.
fn gathered<F>(content_type: &'static str, produce: F) -> Response
where
    F: FnOnce(&mut Sink) -> grove::Result<()>,
{
    let mut sink = Sink::gathering(PIECEWISE.try_with(|()| Pieces::default()).ok());
    let produced = produce(&mut sink);
    let mut buf = std::mem::take(&mut sink.buf);
    let mut pieces = sink.pieces.take();
    if let (Ok(()), Some(pieces)) = (&produced, &mut pieces) {
        if pieces.values.contains(&true) {
            pieces.push(buf, false);
            let mut response =
                ([(header::CONTENT_TYPE, content_type)], Body::empty()).into_response();
            response.extensions_mut().insert(std::mem::take(pieces));
            return response;
        }
    }
    if let Some(mut pieces) = pieces.filter(|p| !p.pieces.is_empty()) {
        pieces.push(buf, false);
        buf = pieces.joined();
    }
    match produced {
        Ok(()) => ([(header::CONTENT_TYPE, content_type)], buf).into_response(),
        Err(e) if !sink.started => ApiError::from(e).into_response(),
        Err(e) => {
            let pieces: [std::io::Result<Bytes>; 2] = [
                Ok(Bytes::from(buf)),
                Err(std::io::Error::other(e.to_string())),
            ];
            let body = Body::from_stream(tokio_stream::iter(pieces));
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
    }
}

/// A request body read by a blocking task as `std::io::Read`: the connection hands its chunks
/// over a channel of [`DEPTH`] chunks, so a large upload (an import) takes a few chunks of
/// memory, not the body, and a slow store slows the upload.
pub struct BodyReader {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
    chunk: Bytes,
}

/// The sending half of a [`BodyReader`], fed by [`forward_body`].
pub type BodyFeed = mpsc::Sender<std::io::Result<Bytes>>;

impl BodyReader {
    /// A reader and the feed its chunks come from.
    pub fn new() -> (BodyReader, BodyFeed) {
        let (tx, rx) = mpsc::channel(DEPTH);
        (
            BodyReader {
                rx,
                chunk: Bytes::new(),
            },
            tx,
        )
    }
}

impl std::io::Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rx.blocking_recv() {
                None => return Ok(0),
                Some(Ok(chunk)) => self.chunk = chunk,
                Some(Err(e)) => return Err(e),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}

/// How forwarding a body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// All of it was handed over (or the reader stopped taking it).
    Complete,
    /// It grew past the limit; the reader got an error instead of the rest.
    TooLarge,
    /// The connection failed while sending it; the reader got an error.
    Broken,
    /// No chunk arrived within the idle bound; the reader got an error.
    TimedOut,
}

/// Hands the chunks of `body` to `feed` until it ends, the reader stops, `limit` bytes are
/// passed, or no chunk arrives for `idle`.
pub async fn forward_body(
    body: Body,
    feed: BodyFeed,
    limit: usize,
    idle: std::time::Duration,
) -> BodyEnd {
    use tokio_stream::StreamExt;
    let mut stream = body.into_data_stream();
    let mut total = 0usize;
    loop {
        let chunk = match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(_) => {
                let e = std::io::Error::other("no part of the request body arrived in time");
                let _ = feed.send(Err(e)).await;
                return BodyEnd::TimedOut;
            }
        };
        let (item, end) = match chunk {
            Ok(bytes) => {
                total = total.saturating_add(bytes.len());
                if total > limit {
                    let e = std::io::Error::other("the request body is larger than the limit");
                    (Err(e), Some(BodyEnd::TooLarge))
                } else {
                    (Ok(bytes), None)
                }
            }
            Err(e) => (Err(std::io::Error::other(e)), Some(BodyEnd::Broken)),
        };
        let taken = feed.send(item).await.is_ok();
        if let Some(end) = end {
            return end;
        }
        if !taken {
            break;
        }
    }
    BodyEnd::Complete
}
