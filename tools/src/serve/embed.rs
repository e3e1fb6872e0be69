//! The server's routes in the caller's process: what the native Node and Python packages
//! (`tools/clients/typescript/native`, `tools/clients/python/native`) open when a program
//! embeds a store instead of talking to `grove serve`.
//!
//! An [`Embedded`] store answers the same requests as the server, by the same route table
//! (`routes::router`, behind the unix socket's body check), so that every client method, its
//! validation, its errors and its JSON are those of docs/api.md, whichever transport carries
//! them; only the socket and HTTP's framing are gone. A request goes in as a method, a target
//! (path and query), its headers and its body; the answer comes back as a status, a content
//! type and a body read chunk by chunk ([`Reply::chunk`]), so streamed reads stay streamed
//! and a followed replay follows. A small read run on the caller's thread
//! ([`Embedded::request_inline`]) goes straight to its route's handler (`routes::direct`),
//! where the router's own cost would be most of the call.
//!
//! It owns a tokio runtime of its own (the server's: a few workers, the blocking pool the
//! engine calls run on), so callers may be on any thread and any runtime. It calls only what
//! `serve` itself is built from (its state, limits, stores and routes) and the engine.

use std::path::PathBuf;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request};
use axum::Router;
use grove::{Backend, Durability, GroveError, Store, StoreConfig};
use tokio_stream::StreamExt;
use tower::ServiceExt;

use super::guard;
use super::limits::{self, Limits};
use super::routes;
use super::state::{State, INLINE, OVERLAPPED, PIECEWISE};
use super::stores::Stores;
use super::stream::OffThread;
pub use super::stream::Pieces;

/// How an embedded store is opened: the options of `grove serve` that make sense in one
/// process (no listener, no token, no connection limits).
#[derive(Debug, Clone)]
pub struct Options {
    /// The store directory (made when missing).
    pub dir: PathBuf,
    /// `redb` instead of the default `sled`.
    pub redb: bool,
    /// How durable a write is when it is acknowledged (default `sync`, as the server).
    pub durability: Durability,
    /// The backend's page cache, in bytes (default the server's).
    pub cache_bytes: Option<u64>,
    /// Values of at least this many bytes are stored once as payloads; 0 stores lines whole.
    pub payload_threshold: Option<usize>,
    /// How long to wait for another process holding the store before failing with `Locked`.
    pub lock_wait: Duration,
    /// Open to read only.
    pub read_only: bool,
    /// The largest request body taken, as the server's `--max-body`.
    pub max_body: usize,
}

impl Options {
    pub fn new(dir: impl Into<PathBuf>) -> Options {
        Options {
            dir: dir.into(),
            redb: false,
            durability: Durability::Sync,
            cache_bytes: None,
            payload_threshold: None,
            lock_wait: Duration::ZERO,
            read_only: false,
            max_body: 1 << 30,
        }
    }

    /// Sets the durability by its name in the bindings' options: `sync`, `group` or `none`.
    pub fn set_durability(&mut self, name: &str) -> Result<(), EmbedError> {
        self.durability = match name {
            "sync" => Durability::Sync,
            "group" => Durability::Group,
            "none" => Durability::None,
            _ => {
                return Err(EmbedError::argument(
                    "durability",
                    name,
                    "\"sync\", \"group\" or \"none\"",
                ))
            }
        };
        Ok(())
    }

    /// Sets the backend by its name: `sled` (the default) or `redb`.
    pub fn set_backend(&mut self, name: &str) -> Result<(), EmbedError> {
        self.redb = match name {
            "sled" => false,
            "redb" => true,
            _ => {
                return Err(EmbedError::argument(
                    "backend",
                    name,
                    "\"sled\" or \"redb\"",
                ))
            }
        };
        Ok(())
    }

    /// Sets how long to wait for another process's lock, in seconds as the bindings take it.
    /// `option` is the option's name in the caller's language, named by the error.
    pub fn set_lock_wait_seconds(&mut self, option: &str, seconds: f64) -> Result<(), EmbedError> {
        self.lock_wait = Duration::try_from_secs_f64(seconds).map_err(|_| {
            EmbedError::argument(option, &seconds.to_string(), "a number of seconds")
        })?;
        Ok(())
    }
}

/// A store served to its own process.
pub struct Embedded {
    runtime: tokio::runtime::Runtime,
    router: Router,
    state: State,
    store: Store,
    /// The store's place in this process's registry, left when it is dropped (last).
    registered: Registered,
}

/// A directory in [`OPEN`], removed when this is dropped.
struct Registered(PathBuf);

impl Drop for Registered {
    fn drop(&mut self) {
        OPEN.lock().remove(&self.0);
    }
}

/// The directories of the stores this process has open ([`Embedded::open`]).
static OPEN: parking_lot::Mutex<std::collections::BTreeSet<PathBuf>> =
    parking_lot::Mutex::new(std::collections::BTreeSet::new());

/// How [`Embedded::answer_direct`] gathers an answer.
#[derive(Clone, Copy)]
enum Mode {
    /// In one buffer.
    Joined,
    /// In pieces (`state::PIECEWISE`).
    Pieces,
    /// In pieces, or chunk by chunk when large, each chunk made into what the function
    /// makes of it (`state::OVERLAPPED`).
    Overlapped(fn(Vec<u8>) -> Vec<u8>),
}

/// An answer of [`Embedded::request_overlapped`].
pub enum Answer {
    /// Gathered whole.
    Whole(Pieces),
    /// Produced off the caller's thread, read chunk by chunk; each chunk is whole JSON lines,
    /// made into what the request's `shape` makes of them.
    Chunks(Chunks),
}

impl Answer {
    /// The whole answer's pieces; a chunked answer (which no route gives outside
    /// [`Mode::Overlapped`]) is read to its end first.
    fn pieces(self) -> Result<Pieces, EmbedError> {
        match self {
            Answer::Whole(pieces) => Ok(pieces),
            Answer::Chunks(mut chunks) => {
                let mut whole = Vec::new();
                while let Some(chunk) = chunks.next_chunk()? {
                    whole.extend_from_slice(&chunk);
                }
                Ok(Pieces::one(whole))
            }
        }
    }
}

/// The chunks of a large answer, produced on the store's pool while the caller takes them.
/// Dropped before its end, it stops the producer (its channel closes).
pub struct Chunks {
    body: axum::body::BodyDataStream,
    runtime: tokio::runtime::Handle,
}

impl Chunks {
    /// The next chunk, waited for on this thread, which must be no runtime's worker (node's
    /// main thread); `None` at the end. A producer that failed after its first chunk, or was
    /// stopped (the store closed meanwhile), is an error here, never a short answer.
    pub fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, EmbedError> {
        let body = &mut self.body;
        self.runtime.block_on(async {
            loop {
                match body.next().await {
                    None => return Ok(None),
                    Some(Err(e)) => return Err(EmbedError::Body(e.to_string())),
                    Some(Ok(data)) if data.is_empty() => continue,
                    Some(Ok(data)) => return Ok(Some(Vec::from(data))),
                }
            }
        })
    }
}

/// An answer whose head is known; its body is read by [`Reply::chunk`].
pub struct Reply {
    /// The HTTP status the server would send.
    pub status: u16,
    /// Its `content-type`, when it has one.
    pub content_type: Option<String>,
    body: axum::body::BodyDataStream,
}

/// Why an embedded request could not be made (an answer with an error status is a [`Reply`]).
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The store did not open.
    #[error(transparent)]
    Grove(#[from] GroveError),
    /// The runtime could not start.
    #[error("starting the embedded store's runtime: {0}")]
    Runtime(std::io::Error),
    /// A request's method, target or header is not one HTTP can carry.
    #[error("request {what}: {message}")]
    Request { what: String, message: String },
    /// The store was closed.
    #[error("the embedded store is closed")]
    Closed,
    /// Reading an answer's body failed.
    #[error("reading the answer: {0}")]
    Body(String),
    /// An option given when opening has a value it cannot take.
    #[error("{option} {given:?}: {expected} expected")]
    Argument {
        option: String,
        given: String,
        expected: &'static str,
    },
}

impl EmbedError {
    fn argument(option: &str, given: &str, expected: &'static str) -> EmbedError {
        EmbedError::Argument {
            option: option.to_owned(),
            given: given.to_owned(),
            expected,
        }
    }

    /// The error code of docs/api.md this failure has (`locked` for a store another holds,
    /// `closed`, `invalid_request`, `transport`, or the engine error's own code).
    pub fn code(&self) -> &'static str {
        match self {
            EmbedError::Grove(GroveError::Locked { .. }) => "locked",
            EmbedError::Grove(e) => e.code(),
            EmbedError::Closed => "closed",
            EmbedError::Request { .. } => "invalid_request",
            EmbedError::Argument { .. } => "invalid_argument",
            EmbedError::Runtime(_) | EmbedError::Body(_) => "transport",
        }
    }
}

impl Embedded {
    /// Opens the store at `options.dir` for this process; `Locked` when another holds it.
    pub fn open(options: &Options) -> Result<Embedded, EmbedError> {
        // A store this process has open already is refused at once (the engine would wait
        // for it as for a closed store's last handle, then refuse it).
        let dir = std::fs::canonicalize(&options.dir).unwrap_or_else(|_| options.dir.clone());
        if !OPEN.lock().insert(dir.clone()) {
            return Err(EmbedError::Grove(GroveError::Locked {
                dir,
                holder: "this process (it has the store open already)".to_owned(),
            }));
        }
        let registered = Registered(dir);
        let backend = match options.redb {
            true => Backend::Redb(options.dir.clone()),
            false => Backend::Sled(options.dir.clone()),
        };
        let mut config = StoreConfig::new(&options.dir)
            .backend(backend)
            .durability(options.durability)
            .read_only(options.read_only)
            .cache_bytes(
                options
                    .cache_bytes
                    .unwrap_or(grove::store::DEFAULT_CACHE_BYTES),
            )
            .lock_wait(options.lock_wait);
        if let Some(bytes) = options.payload_threshold {
            config = config.payload_threshold((bytes > 0).then_some(bytes));
        }
        let store = Store::open_with(config)?.with_actor("embedded");
        let limits = Limits::new(
            options.max_body,
            usize::MAX,
            Duration::from_secs(3600),
            Duration::from_secs(5),
            Duration::from_secs(10),
            limits::BLOCKING_THREADS / 2,
            limits::BLOCKING_THREADS / 2,
        );
        let state = State::new(
            Stores::One(store.clone()),
            limits,
            None,
            options.durability,
            None,
            None,
        );
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .max_blocking_threads(limits::BLOCKING_THREADS)
            .thread_name("grove-embedded")
            .build()
            .map_err(EmbedError::Runtime)?;
        let router = guard::unix(routes::router(state.clone(), None));
        Ok(Embedded {
            registered,
            runtime,
            router,
            state,
            store,
        })
    }

    /// The store itself, for direct engine calls.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The runtime requests run on (a binding spawns a request's future here).
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }

    /// A request's answer, once its head is known: the future runs on any runtime (the routes'
    /// blocking work goes to this store's pool through `State`).
    pub fn request(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> impl std::future::Future<Output = Result<Reply, EmbedError>> + Send + 'static {
        self.request_with(method, target, headers, Body::from(body))
    }

    /// A request whose body is sent piece by piece through the returned [`BodySender`] (an
    /// import, read from a file as it is sent): the future answers once the routes have
    /// answered, which may be before the whole body was sent (a refusal).
    pub fn request_streamed(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
    ) -> (
        BodySender,
        impl std::future::Future<Output = Result<Reply, EmbedError>> + Send + 'static,
    ) {
        let (sender, receiver) = tokio::sync::mpsc::channel(4);
        let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(receiver));
        (
            BodySender(sender),
            self.request_with(method, target, headers, body),
        )
    }

    fn request_with(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Body,
    ) -> impl std::future::Future<Output = Result<Reply, EmbedError>> + Send + 'static {
        let router = self.router.clone();
        let built = build(method, target, headers, body);
        async move {
            let response = match router.oneshot(built?).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            let (parts, body) = response.into_parts();
            Ok(Reply {
                status: parts.status.as_u16(),
                content_type: parts
                    .headers
                    .get(axum::http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
                body: body.into_data_stream(),
            })
        }
    }

    /// [`Embedded::request`] from a thread outside any runtime, waiting for the head.
    pub fn request_blocking(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<Reply, EmbedError> {
        let future = self.request(method, target, headers, body);
        self.runtime.block_on(future)
    }

    /// [`Embedded::request`] run to its end on this thread, which must be no runtime's
    /// worker (node's main thread, a Python thread): the routes' engine calls run right here
    /// (`state::INLINE`) instead of on the pool. For short requests, whose hand-over to the pool
    /// and back costs more than they do; a followed replay would never return.
    pub fn request_inline(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<(u16, Vec<u8>), EmbedError> {
        let body = axum::body::Bytes::from(body);
        if let Some(answered) = self.answer_direct(method, target, headers, &body, Mode::Joined) {
            let (status, answer) = answered?;
            return Ok((status, answer.pieces()?.joined()));
        }
        self.request_routed(method, target, headers, Vec::from(body))
    }

    /// [`Embedded::request_inline`] for a caller that makes values of the answer itself (node's
    /// addon): a context's long messages come as pieces of their own (`stream::Pieces`), not
    /// copied into one buffer; any other answer is one piece.
    pub fn request_pieces(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<(u16, Pieces), EmbedError> {
        let body = axum::body::Bytes::from(body);
        if let Some(answered) = self.answer_direct(method, target, headers, &body, Mode::Pieces) {
            let (status, answer) = answered?;
            return Ok((status, answer.pieces()?));
        }
        let (status, whole) = self.request_routed(method, target, headers, Vec::from(body))?;
        Ok((status, Pieces::one(whole)))
    }

    /// [`Embedded::request_pieces`] for a caller that takes a large answer chunk by chunk
    /// (node's addon, reading a branch): an answer its route knows to be large (a long walk,
    /// `stream::ndjson_overlapped`) is produced on the store's pool as the server's is, but
    /// for its first chunk, read on this thread meanwhile, and comes as [`Answer::Chunks`],
    /// each chunk whole JSON lines made into what `shape` makes of them (node's addon: one JSON
    /// array of ASCII text), which the caller may turn into values while the next is read. Any
    /// other answer comes whole, as `request_pieces` gives it.
    pub fn request_overlapped(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
        shape: fn(Vec<u8>) -> Vec<u8>,
    ) -> Result<(u16, Answer), EmbedError> {
        let body = axum::body::Bytes::from(body);
        let mode = Mode::Overlapped(shape);
        if let Some(answered) = self.answer_direct(method, target, headers, &body, mode) {
            return answered;
        }
        let (status, whole) = self.request_routed(method, target, headers, Vec::from(body))?;
        Ok((status, Answer::Whole(Pieces::one(whole))))
    }

    /// A small call answered on this thread by its route's handler (`routes::direct`); `None`
    /// when it is not one, or the handler leaves it to the router. In [`Mode::Pieces`]
    /// (`state::PIECEWISE`), a context's long messages come as pieces of their own; in
    /// [`Mode::Overlapped`] (`state::OVERLAPPED`) too, and a large streamed answer comes as
    /// its chunks.
    fn answer_direct(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: &axum::body::Bytes,
        mode: Mode,
    ) -> Option<Result<(u16, Answer), EmbedError>> {
        let (method, client) = direct(method, headers)?;
        let answer = async {
            let mut response =
                routes::direct::answer(&self.state, &method, target, &client, body).await?;
            let status = response.status().as_u16();
            if let Some(pieces) = response.extensions_mut().remove::<Pieces>() {
                return Some(Ok((status, Answer::Whole(pieces))));
            }
            if response.extensions().get::<OffThread>().is_some() {
                let chunks = Chunks {
                    body: response.into_body().into_data_stream(),
                    runtime: self.runtime.handle().clone(),
                };
                return Some(Ok((status, Answer::Chunks(chunks))));
            }
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await;
            Some(match bytes {
                Ok(bytes) => Ok((status, Answer::Whole(Pieces::one(Vec::from(bytes))))),
                Err(e) => Err(EmbedError::Body(e.to_string())),
            })
        };
        match mode {
            Mode::Joined => self.run_here(INLINE.scope((), answer)),
            Mode::Pieces => self.run_here(INLINE.scope((), PIECEWISE.scope((), answer))),
            Mode::Overlapped(shape) => self
                .run_here(INLINE.scope((), PIECEWISE.scope((), OVERLAPPED.scope(shape, answer)))),
        }
    }

    /// A request through the router, run to its end on this thread (`state::INLINE`).
    fn request_routed(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<(u16, Vec<u8>), EmbedError> {
        let future = self.request(method, target, headers, body);
        self.runtime.block_on(INLINE.scope((), async move {
            let reply = future.await?;
            let status = reply.status;
            Ok((status, reply.all().await?))
        }))
    }

    /// `future` run to its end on this thread. A small read, run inline, is ready when first
    /// polled (it waits on nothing): that poll, in the runtime's context, is all it costs; one
    /// that waits (on a store being reopened, say) is then driven by `block_on` as any other.
    fn run_here<F: std::future::Future>(&self, future: F) -> F::Output {
        let _context = self.runtime.enter();
        let mut future = std::pin::pin!(future);
        let mut first = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut first) {
            std::task::Poll::Ready(output) => output,
            std::task::Poll::Pending => self.runtime.block_on(future),
        }
    }

    /// Stops followed replays and streams left unread, flushes the store and closes it.
    pub fn close(self) -> Result<(), EmbedError> {
        self.state.stop();
        // A stream left unread (its reply still held) does not hold the close up: its producer
        // ends at the change of stores, and its body breaks off.
        self.state.take_stores();
        let Embedded {
            registered,
            runtime,
            router,
            state,
            store,
        } = self;
        drop(router);
        drop(state);
        runtime.shutdown_timeout(Duration::from_secs(30));
        let flushed = match store.is_read_only() {
            true => Ok(()),
            false => store.flush(),
        };
        drop(store);
        drop(registered);
        Ok(flushed?)
    }
}

/// The sending end of a streamed request body ([`Embedded::request_streamed`]); dropping it
/// ends the body.
pub struct BodySender(tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>);

impl BodySender {
    /// Sends the next piece; `false` when the routes stopped reading (they answered already).
    pub async fn send(&self, piece: Vec<u8>) -> bool {
        self.0.send(Ok(piece.into())).await.is_ok()
    }

    /// Ends the body as broken (the routes see a failed read, as of a client gone mid-body).
    pub async fn fail(self, why: String) {
        let _ = self.0.send(Err(std::io::Error::other(why))).await;
    }
}

impl Reply {
    /// The next piece of the body, `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Vec<u8>>, EmbedError> {
        loop {
            match self.body.next().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(EmbedError::Body(e.to_string())),
                Some(Ok(data)) if data.is_empty() => continue,
                Some(Ok(data)) => return Ok(Some(data.to_vec())),
            }
        }
    }

    /// The whole body.
    pub async fn all(mut self) -> Result<Vec<u8>, EmbedError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

/// The method and headers of a request `routes::direct` may answer: a `GET` or a `POST` whose
/// only headers are the client's name and the body's type, which the routes taken do not read
/// (the router answers anything else, and so the errors of headers it would refuse).
fn direct(method: &str, headers: &[(String, String)]) -> Option<(Method, HeaderMap)> {
    let method = match method {
        "GET" => Method::GET,
        "POST" => Method::POST,
        _ => return None,
    };
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case(header::CONTENT_TYPE.as_str()) {
            continue;
        }
        if !name.eq_ignore_ascii_case(super::api::CLIENT_HEADER) {
            return None;
        }
        map.append(
            HeaderName::from_static(super::api::CLIENT_HEADER),
            HeaderValue::from_str(value).ok()?,
        );
    }
    Some((method, map))
}

fn build(
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: Body,
) -> Result<Request<Body>, EmbedError> {
    let invalid = |what: &str, message: String| EmbedError::Request {
        what: what.to_owned(),
        message,
    };
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|e| invalid(&format!("method {method:?}"), e.to_string()))?;
    let mut request = Request::builder()
        .method(method)
        .uri(target)
        .header(axum::http::header::HOST, "localhost");
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| invalid(&format!("header {name:?}"), e.to_string()))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| invalid(&format!("header {name}"), e.to_string()))?;
        request = request.header(name, value);
    }
    request
        .body(body)
        .map_err(|e| invalid(&format!("target {target:?}"), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;

    fn call(store: &Embedded, method: &str, target: &str, body: &str) -> (u16, String) {
        let headers = [("content-type".to_owned(), "application/json".to_owned())];
        let reply = store
            .request_blocking(method, target, &headers, body.as_bytes().to_vec())
            .unwrap_or_else(|e| panic!("{method} {target}: {e}"));
        let status = reply.status;
        let bytes = store
            .runtime()
            .block_on(reply.all())
            .unwrap_or_else(|e| panic!("{method} {target}: {e}"));
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    fn json(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn options_by_name_take_the_documented_names_and_refuse_others() {
        let mut options = Options::new("unused");
        for (name, durability) in [
            ("sync", Durability::Sync),
            ("group", Durability::Group),
            ("none", Durability::None),
        ] {
            options
                .set_durability(name)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(options.durability, durability, "{name}");
        }
        options
            .set_backend("redb")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(options.redb);
        options
            .set_backend("sled")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!options.redb);
        options
            .set_lock_wait_seconds("lockWaitSeconds", 1.5)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(options.lock_wait, Duration::from_millis(1500));
        for refused in [
            options.set_durability("fsync"),
            options.set_backend("rocksdb"),
            options.set_lock_wait_seconds("lockWaitSeconds", -1.0),
        ] {
            let Err(e) = refused else {
                panic!("a bad option was taken")
            };
            assert_eq!(e.code(), "invalid_argument", "{e}");
        }
        let e = options.set_durability("fsync").err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(r#"durability "fsync": "sync", "group" or "none" expected"#)
        );
        // Nothing refused changed what was set.
        assert_eq!(
            (options.durability, options.redb),
            (Durability::None, false)
        );
    }

    #[test]
    fn answers_as_the_server_and_keeps_what_it_acknowledged() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let options = Options::new(dir.path().join("store"));
        let store = Embedded::open(&options).unwrap_or_else(|e| panic!("{e}"));
        let (status, created) = call(&store, "POST", "/v1/sessions", "{}");
        assert_eq!(status, 201, "{created}");
        let sid = json(&created)["id"].as_str().map(str::to_owned);
        let sid = sid.unwrap_or_else(|| panic!("no id in {created}"));
        let entry = r#"{"entry":{"role":"user","content":"hello"}}"#;
        let (status, appended) = call(
            &store,
            "POST",
            &format!("/v1/sessions/{sid}/entries"),
            entry,
        );
        assert_eq!(status, 201, "{appended}");
        // A bad request is answered as the server answers it, and the store goes on.
        let (status, error) = call(&store, "POST", &format!("/v1/sessions/{sid}/entries"), "{");
        assert_eq!(status, 400, "{error}");
        assert_eq!(json(&error)["code"], "invalid_request", "{error}");
        let (status, missing) = call(&store, "GET", "/v1/sessions/nope/context", "");
        assert_eq!(
            (status, json(&missing)["code"].clone()),
            (404, "not_found".into())
        );
        // A second open in the same process (as another process would) is refused, naming
        // the holder.
        match Embedded::open(&options) {
            Err(EmbedError::Grove(GroveError::Locked { holder, .. })) => {
                assert!(holder.contains("this process"), "{holder}")
            }
            Err(e) => panic!("a second open: {e}"),
            Ok(_) => panic!("a second open of a held store succeeded"),
        }
        store.close().unwrap_or_else(|e| panic!("{e}"));
        let store = Embedded::open(&options).unwrap_or_else(|e| panic!("{e}"));
        let (status, context) = call(&store, "GET", &format!("/v1/sessions/{sid}/context"), "");
        assert_eq!(status, 200, "{context}");
        assert_eq!(
            json(&context)["messages"][0]["content"],
            "hello",
            "{context}"
        );
        // A streamed read comes in pieces and whole.
        let (status, lines) = call(&store, "GET", &format!("/v1/sessions/{sid}/entries"), "");
        assert_eq!((status, lines.lines().count()), (200, 1), "{lines}");
        // Run inline (on this thread, its engine calls too), the same answers, streams gathered.
        for target in [
            format!("/v1/sessions/{sid}/entries"),
            format!("/v1/sessions/{sid}/context"),
            format!("/v1/sessions/{sid}/leaf"),
            "/v1/sessions/nope/entries".to_owned(),
            "/v1/sessions/nope/context".to_owned(),
        ] {
            let pooled = call(&store, "GET", &target, "");
            let (status, body) = store
                .request_inline("GET", &target, &[], Vec::new())
                .unwrap_or_else(|e| panic!("{target}: {e}"));
            assert_eq!(
                (status, String::from_utf8_lossy(&body).into_owned()),
                pooled,
                "{target}"
            );
        }
        let inline_append = store
            .request_inline(
                "POST",
                &format!("/v1/sessions/{sid}/entries"),
                &[("content-type".to_owned(), "application/json".to_owned())],
                entry.as_bytes().to_vec(),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(inline_append.0, 201);
        let (_, lines) = call(&store, "GET", &format!("/v1/sessions/{sid}/entries"), "");
        assert_eq!(lines.lines().count(), 2, "{lines}");
        store.close().unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn closing_ends_a_stream_left_unread_which_then_breaks_off() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = open_without_sync(dir.path());
        let (_, created) = call(&store, "POST", "/v1/sessions", "{}");
        let sid = json(&created)["id"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_default();
        // Far more than the chunks in flight: the producer waits on a full channel.
        let text = "x".repeat(1000);
        let entries: Vec<String> = (0..2000)
            .map(|i| format!(r#"{{"role":"user","content":"{i} {text}"}}"#))
            .collect();
        let batch = format!(r#"{{"entries":[{}]}}"#, entries.join(","));
        let (status, appended) = call(
            &store,
            "POST",
            &format!("/v1/sessions/{sid}/entries/many"),
            &batch,
        );
        assert_eq!(status, 201, "{appended}");
        let target = format!("/v1/sessions/{sid}/entries");
        let mut reply = store
            .request_blocking("GET", &target, &[], Vec::new())
            .unwrap_or_else(|e| panic!("{e}"));
        let first = store
            .runtime
            .block_on(reply.chunk())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(first.is_some_and(|chunk| !chunk.is_empty()));
        store.close().unwrap_or_else(|e| panic!("{e}"));
        // What was handed over still reads; then the body breaks off, never ends as whole.
        let reader = tokio::runtime::Builder::new_current_thread().build();
        let reader = reader.unwrap_or_else(|e| panic!("{e}"));
        let rest = reader.block_on(reply.all());
        let broken = rest.map(|bytes| bytes.len());
        assert!(
            matches!(&broken, Err(EmbedError::Body(why)) if why.contains("broke off")),
            "{broken:?}"
        );
    }

    /// A store in `dir` at durability none.
    fn open_without_sync(dir: &std::path::Path) -> Embedded {
        let mut options = Options::new(dir.join("store"));
        options
            .set_durability("none")
            .unwrap_or_else(|e| panic!("{e}"));
        Embedded::open(&options).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A session of `n` user messages of about `bytes` bytes each; its id.
    fn session_of(store: &Embedded, n: usize, bytes: usize) -> String {
        let (_, created) = call(store, "POST", "/v1/sessions", "{}");
        let sid = json(&created)["id"].as_str().map(str::to_owned);
        let sid = sid.unwrap_or_else(|| panic!("no id in {created}"));
        let text = "y".repeat(bytes);
        let entries: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"role":"user","content":"{i} {text} é"}}"#))
            .collect();
        let batch = format!(r#"{{"entries":[{}]}}"#, entries.join(","));
        let target = format!("/v1/sessions/{sid}/entries/many");
        let (status, appended) = call(store, "POST", &target, &batch);
        assert_eq!(status, 201, "{appended}");
        sid
    }

    /// Chunks handed over as they were produced.
    fn as_is(chunk: Vec<u8>) -> Vec<u8> {
        chunk
    }

    /// Every chunk of `answer`, joined; how many there were (0: it came whole).
    fn read_out(answer: Answer) -> (Vec<u8>, usize) {
        match answer {
            Answer::Whole(pieces) => (pieces.joined(), 0),
            Answer::Chunks(mut chunks) => {
                let (mut whole, mut count) = (Vec::new(), 0);
                while let Some(chunk) = chunks.next_chunk().unwrap_or_else(|e| panic!("{e}")) {
                    assert!(chunk.ends_with(b"\n"), "a chunk of whole lines");
                    whole.extend_from_slice(&chunk);
                    count += 1;
                }
                (whole, count)
            }
        }
    }

    #[test]
    fn a_large_walk_comes_chunk_by_chunk_as_the_same_lines() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = open_without_sync(dir.path());
        let large = session_of(&store, 1500, 200);
        let small = session_of(&store, 20, 200);
        // Far more than the chunks in flight (8 of 64 KiB): its reader waits on a full channel.
        let larger = session_of(&store, 1500, 2000);
        for (sid, chunked) in [(&large, true), (&small, false)] {
            for target in [
                format!("/v1/sessions/{sid}/branch"),
                format!("/v1/sessions/{sid}/path"),
                // As the session stood at an operation: gathered, as every walk in time.
                format!("/v1/sessions/{sid}/branch?atOp=1"),
                // Not a walk.
                format!("/v1/sessions/{sid}/entries"),
            ] {
                let gathered = store
                    .request_inline("GET", &target, &[], Vec::new())
                    .unwrap_or_else(|e| panic!("{target}: {e}"));
                let (status, answer) = store
                    .request_overlapped("GET", &target, &[], Vec::new(), as_is)
                    .unwrap_or_else(|e| panic!("{target}: {e}"));
                let (body, chunks) = read_out(answer);
                assert_eq!((status, &body), (gathered.0, &gathered.1), "{target}");
                let walk = !target.contains('?') && !target.ends_with("/entries");
                // 1,500 lines of about 250 bytes: several chunks of 64 KiB.
                assert_eq!(chunks > 1, chunked && walk, "{target}: {chunks} chunks");
            }
        }
        // Each chunk made on the producer's thread into what the caller asks: here node's
        // JSON arrays of ASCII text, whose values are the lines'.
        let target = format!("/v1/sessions/{large}/branch");
        let ascii = |chunk| crate::serve::js_text::ascii_json(chunk, true);
        let (_, answer) = store
            .request_overlapped("GET", &target, &[], Vec::new(), ascii)
            .unwrap_or_else(|e| panic!("{e}"));
        let Answer::Chunks(mut chunks) = answer else {
            panic!("the branch of a large session came whole")
        };
        let mut values = Vec::new();
        while let Some(chunk) = chunks.next_chunk().unwrap_or_else(|e| panic!("{e}")) {
            assert!(chunk.is_ascii());
            let array: Vec<serde_json::Value> =
                serde_json::from_slice(&chunk).unwrap_or_else(|e| panic!("{e}"));
            values.extend(array);
        }
        let (_, lines) = store
            .request_inline("GET", &target, &[], Vec::new())
            .unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<serde_json::Value> =
            String::from_utf8_lossy(&lines).lines().map(json).collect();
        assert_eq!((values.len(), values == lines), (1500, true));
        // An error before the first line is an answer as before, not chunks.
        for target in [
            "/v1/sessions/nope/branch".to_owned(),
            format!("/v1/sessions/{large}/branch?from=nope"),
        ] {
            let (status, answer) = store
                .request_overlapped("GET", &target, &[], Vec::new(), as_is)
                .unwrap_or_else(|e| panic!("{target}: {e}"));
            let gathered = store
                .request_inline("GET", &target, &[], Vec::new())
                .unwrap_or_else(|e| panic!("{target}: {e}"));
            let (body, chunks) = read_out(answer);
            assert_eq!((status, chunks), (404, 0), "{target}");
            assert_eq!(body, gathered.1, "{target}");
        }
        // Chunks left unread when the store closes: what was handed over reads, then the
        // answer breaks off, never ends short as whole.
        let target = format!("/v1/sessions/{larger}/path");
        let (_, answer) = store
            .request_overlapped("GET", &target, &[], Vec::new(), as_is)
            .unwrap_or_else(|e| panic!("{e}"));
        let Answer::Chunks(mut chunks) = answer else {
            panic!("the path of a large session came whole")
        };
        let first = chunks.next_chunk().unwrap_or_else(|e| panic!("{e}"));
        assert!(first.is_some_and(|chunk| !chunk.is_empty()));
        store.close().unwrap_or_else(|e| panic!("{e}"));
        let rest = loop {
            match chunks.next_chunk() {
                Ok(Some(_)) => continue,
                end => break end,
            }
        };
        assert!(
            matches!(&rest, Err(EmbedError::Body(why)) if why.contains("broke off")),
            "{rest:?}"
        );
    }

    #[test]
    fn appends_taken_straight_to_their_handlers_answer_as_the_router() {
        // The same calls to two stores alike: straight (request_inline) and routed.
        let dirs = [tempfile::tempdir(), tempfile::tempdir()];
        let stores = dirs.map(|dir| {
            let dir = dir.unwrap_or_else(|e| panic!("{e}"));
            let mut options = Options::new(dir.path().join("store"));
            options.max_body = 4096;
            let store = Embedded::open(&options).unwrap_or_else(|e| panic!("{e}"));
            call(&store, "POST", "/v1/sessions", r#"{"id":"s1"}"#);
            (dir, store)
        });
        let [(_a, straight), (_b, routed)] = &stores;
        let both = |target: &str, headers: &[(String, String)], body: &str| {
            let one = straight
                .request_inline("POST", target, headers, body.as_bytes().to_vec())
                .unwrap_or_else(|e| panic!("{target}: {e}"));
            let other = routed
                .request_blocking("POST", target, headers, body.as_bytes().to_vec())
                .and_then(|reply| {
                    let status = reply.status;
                    Ok((status, routed.runtime.block_on(reply.all())?))
                })
                .unwrap_or_else(|e| panic!("{target}: {e}"));
            let text = |(status, body): (u16, Vec<u8>)| {
                (status, String::from_utf8_lossy(&body).into_owned())
            };
            (text(one), text(other))
        };
        let typed = [("content-type".to_owned(), "application/json".to_owned())];
        let named = [
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("grove-client".to_owned(), "tester".to_owned()),
        ];
        let at = "2026-01-01T00:00:00.000Z";
        let exact = |id: &str, parent: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"{at}","message":{{"role":"user","content":"{id}"}}}}"#
            )
        };
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let large = format!(
            r#"{{"entry":{{"role":"user","content":"{}"}}}}"#,
            "x".repeat(5000)
        );
        let entries = "/v1/sessions/s1/entries";
        let exact_target = "/v1/sessions/s1/entries/exact";
        // Answers that must be the same byte for byte.
        type Headers<'a> = &'a [(String, String)];
        let same: Vec<(String, Headers, String)> = vec![
            (
                entries.into(),
                &typed,
                format!(
                    r#"{{"entry":{{"role":"user","content":"a"}},"id":"e1","timestamp":"{at}"}}"#
                ),
            ),
            (exact_target.into(), &named, exact("e2", "e1")),
            (
                format!("{exact_target}?keepLeaf=true"),
                &typed,
                exact("e3", "e2"),
            ),
            (
                format!("{exact_target}?keepLeaf=maybe"),
                &typed,
                exact("e4", "e2"),
            ),
            (format!("{exact_target}?other=1"), &typed, exact("e4", "e2")),
            (exact_target.into(), &typed, exact("e2", "e1")),
            (
                "/v1/sessions/s1/entries/if".into(),
                &typed,
                r#"{"expectedLeaf":"zz","entry":{"role":"user","content":"c"}}"#.into(),
            ),
            (entries.into(), &typed, "not json".into()),
            (entries.into(), &typed, String::new()),
            (entries.into(), &typed, r#"{"entry":1}"#.into()),
            (
                entries.into(),
                &typed,
                r#"{"entry":{"role":"user"},"extra":1}"#.into(),
            ),
            (entries.into(), &typed, deep.clone()),
            (entries.into(), &typed, large),
            (exact_target.into(), &typed, deep),
            (
                "/v1/sessions/nope/entries".into(),
                &typed,
                r#"{"entry":{"role":"user","content":"a"}}"#.into(),
            ),
            (
                "/v1/sessions/s1/entries/many".into(),
                &typed,
                r#"{"entries":[1]}"#.into(),
            ),
            (
                "/v1/sessions/s1/entries/many".into(),
                &typed,
                r#"{"entries":[]}"#.into(),
            ),
        ];
        let mut statuses = Vec::new();
        for (target, headers, body) in &same {
            let (one, other) = both(target, headers, body);
            assert_eq!(one, other, "{target} {body:.80}");
            statuses.push(one.0);
        }
        let expected = [
            201, 201, 201, 400, 400, 201, 200, 400, 400, 400, 400, 400, 413, 400, 404, 400, 201,
        ];
        assert_eq!(statuses, expected);
        // Answers with fresh ids: the same status and fields.
        let fresh: [(&str, &str); 3] = [
            (entries, r#"{"entry":{"role":"user","content":"d"}}"#),
            (
                "/v1/sessions/s1/entries/if",
                r#"{"expectedLeaf":"e2","entry":{"role":"user","content":"e"}}"#,
            ),
            (
                "/v1/sessions/s1/entries/many",
                r#"{"entries":[{"role":"user","content":"f"},{"role":"user","content":"g"}]}"#,
            ),
        ];
        for (target, body) in fresh {
            let ((status, one), (routed_status, other)) = both(target, &named, body);
            let keys = |text: &str| match json(text) {
                serde_json::Value::Object(map) => map.keys().cloned().collect::<Vec<_>>(),
                value => panic!("{target}: {value}"),
            };
            assert_eq!(
                (status, keys(&one)),
                (routed_status, keys(&other)),
                "{target}"
            );
        }
        // The same sessions after: entries and who did each operation.
        for target in ["/v1/sessions/s1/entries", "/v1/sessions/s1/operations"] {
            let lines = |store: &Embedded| {
                let (_, text) = call(store, "GET", target, "");
                let values: Vec<serde_json::Value> = text.lines().map(json).collect();
                let shape: Vec<_> = values
                    .iter()
                    .map(|v| (v["type"].clone(), v["actor"].clone(), v["kind"].clone()))
                    .collect();
                (values.len(), shape)
            };
            assert_eq!(lines(straight), lines(routed), "{target}");
        }
        // Taken straight: the appends (here of a session that is not there, nothing written);
        // not: other writes.
        let missing = "/v1/sessions/nope/entries";
        for (target, taken) in [
            (missing.to_owned(), true),
            (format!("{missing}/exact"), true),
            (format!("{missing}/if"), true),
            (format!("{missing}/many"), true),
            (format!("{missing}/ids"), false),
            ("/v1/sessions/nope/labels".to_owned(), false),
            ("/v1/sessions".to_owned(), false),
        ] {
            let (headers, body) = (HeaderMap::new(), Bytes::from_static(b"{}"));
            let answer =
                routes::direct::answer(&straight.state, &Method::POST, &target, &headers, &body);
            let answer = straight.runtime.block_on(INLINE.scope((), answer));
            assert_eq!(answer.is_some(), taken, "{target}");
        }
        // Each closes alone (they are two stores).
        for (_, store) in stores {
            store.close().unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn small_reads_taken_straight_to_their_handlers_answer_as_the_router() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Embedded::open(&Options::new(dir.path().join("store")))
            .unwrap_or_else(|e| panic!("{e}"));
        let (_, created) = call(&store, "POST", "/v1/sessions", r#"{"id":"s-1.a_b"}"#);
        let sid = json(&created)["id"].as_str().map(str::to_owned);
        let sid = sid.unwrap_or_else(|| panic!("no id in {created}"));
        let mut ids = Vec::new();
        for text in ["hello", "again"] {
            let body = format!(r#"{{"entry":{{"role":"user","content":"{text}"}}}}"#);
            let (status, appended) = call(
                &store,
                "POST",
                &format!("/v1/sessions/{sid}/entries"),
                &body,
            );
            assert_eq!(status, 201, "{appended}");
            ids.push(
                json(&appended)["id"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_default(),
            );
        }
        let label = format!(r#"{{"targetId":"{}","label":"start"}}"#, ids[0]);
        let (status, set) = call(
            &store,
            "POST",
            &format!("/v1/sessions/{sid}/labels"),
            &label,
        );
        assert_eq!(status, 201, "{set}");
        let (first, s) = (&ids[0], &sid);
        let taken = [
            format!("/v1/sessions/{s}"),
            format!("/v1/sessions/{s}/leaf"),
            format!("/v1/sessions/{s}/leaf/history"),
            format!("/v1/sessions/{s}/entries/{first}"),
            format!("/v1/sessions/{s}/entries/{first}?log=true"),
            format!("/v1/sessions/{s}/entries/{first}?log=maybe"),
            format!("/v1/sessions/{s}/entries/{first}?lot=1"),
            format!("/v1/sessions/{s}/entries/{first}/proof"),
            format!("/v1/sessions/{s}/entries/exact"),
            format!("/v1/sessions/{s}/entries/nope"),
            format!("/v1/sessions/{s}/entries"),
            format!("/v1/sessions/{s}/entries?after=1&limit=1"),
            format!("/v1/sessions/{s}/entries?limit=x"),
            format!("/v1/sessions/{s}/log"),
            format!("/v1/sessions/{s}/log?limit=1"),
            format!("/v1/sessions/{s}/children"),
            format!("/v1/sessions/{s}/children?parent={first}"),
            format!("/v1/sessions/{s}/branch"),
            format!("/v1/sessions/{s}/branch?from={first}"),
            format!("/v1/sessions/{s}/branch?from=nope"),
            format!("/v1/sessions/{s}/branch?atOp=1"),
            format!("/v1/sessions/{s}/path"),
            format!("/v1/sessions/{s}/path?from={first}&atOp=2"),
            format!("/v1/sessions/{s}/path?to=1"),
            format!("/v1/sessions/{s}/context"),
            format!("/v1/sessions/{s}/context?preset=harness"),
            format!("/v1/sessions/{s}/context?preset=nope"),
            format!("/v1/sessions/{s}/context?leaf={first}&activeTools=true"),
            format!("/v1/sessions/{s}/context?atOp=1"),
            format!("/v1/sessions/{s}/tree"),
            format!("/v1/sessions/{s}/tree?atOp=2"),
            format!("/v1/sessions/{s}/labels"),
            format!("/v1/sessions/{s}/labels/{first}"),
            format!("/v1/sessions/{s}/name"),
            format!("/v1/sessions/{s}/stats"),
            format!("/v1/sessions/{s}/seal"),
            format!("/v1/sessions/{s}/leaf?ignored=1"),
            "/v1/sessions/nope".to_owned(),
            "/v1/sessions/nope/leaf".to_owned(),
            "/v1/sessions/nope/context".to_owned(),
        ];
        // Not taken, the router's: escapes, other routes, empty segments, targets it refuses.
        let routed = [
            format!("/v1/sessions/{s}/entries/"),
            format!("/v1/sessions/{s}/branch/x"),
            format!("/v1/sessions/{s}/replay"),
            format!("/v1/sessions/{s}/leaf/"),
            format!("/v1/sessions/{s}/leaf/history/x"),
            format!("/v1/sessions/{s}/entries/{first}/proof/x"),
            format!("/v1/sessions/{s}/leaf%2Fhistory"),
            "/v1/sessions/%73-1.a_b~c/leaf".to_owned(),
            "/v1/sessions//leaf".to_owned(),
            format!("/v1/sessions/{s}/context?preset=a b"),
            "/v1/sessions/".to_owned(),
            "/v1/sessions".to_owned(),
        ];
        let client = [("Grove-Client".to_owned(), "tester".to_owned())];
        let clients: [&[(String, String)]; 2] = [&[], &client];
        let cases = taken.iter().map(|t| (t, true));
        let empty = Bytes::new();
        for (target, straight) in cases.chain(routed.iter().map(|t| (t, false))) {
            for headers in clients {
                let taken = direct("GET", headers).map(|(method, map)| {
                    let answer =
                        routes::direct::answer(&store.state, &method, target, &map, &empty);
                    store.runtime.block_on(INLINE.scope((), answer)).is_some()
                });
                assert_eq!(taken, Some(straight), "{target} taken straight: {straight}");
                let routed = store
                    .request_blocking("GET", target, headers, Vec::new())
                    .and_then(|reply| {
                        let status = reply.status;
                        Ok((status, store.runtime.block_on(reply.all())?))
                    });
                let inline = store.request_inline("GET", target, headers, Vec::new());
                match (inline, routed) {
                    (Ok((status, body)), Ok((routed_status, routed_body))) => assert_eq!(
                        (status, String::from_utf8_lossy(&body)),
                        (routed_status, String::from_utf8_lossy(&routed_body)),
                        "{target}"
                    ),
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{target}"),
                    (a, b) => panic!("{target}: inline {a:?}, routed {b:?}"),
                }
            }
        }
        // A header other than the client's name and the body's type, another method, or a read
        // with a body: the router's.
        let typed = [("content-type".to_owned(), "application/json".to_owned())];
        let accept = [("accept".to_owned(), "application/json".to_owned())];
        assert!(direct("GET", &typed).is_some());
        assert!(direct("GET", &accept).is_none());
        assert!(direct("PUT", &[]).is_none());
        let leaf = format!("/v1/sessions/{s}/leaf");
        let (no_headers, body) = (HeaderMap::new(), Bytes::from_static(b"{}"));
        let with_body =
            routes::direct::answer(&store.state, &Method::GET, &leaf, &no_headers, &body);
        assert!(store
            .runtime
            .block_on(INLINE.scope((), with_body))
            .is_none());
        // A client name the router refuses is refused alike.
        let name = |value: &str| ("grove-client".to_owned(), value.to_owned());
        let target = format!("/v1/sessions/{s}/leaf");
        for bad in [
            vec![name("a\tb")],
            vec![name("")],
            vec![name("a"), name("b")],
        ] {
            assert!(direct("GET", &bad).is_some(), "{bad:?}");
            let (status, body) = store
                .request_inline("GET", &target, &bad, Vec::new())
                .unwrap_or_else(|e| panic!("{e}"));
            let body = String::from_utf8_lossy(&body).into_owned();
            let code = json(&body)["code"].clone();
            assert_eq!(
                (status, code),
                (400, "invalid_argument".into()),
                "{bad:?}: {body}"
            );
        }
        store.close().unwrap_or_else(|e| panic!("{e}"));
    }
}
