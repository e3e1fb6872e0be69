//! grove's store inside a Node.js process: the native addon of `@grove/client` (napi-rs).
//!
//! It owns the glue between node and [`grove_tools::embed`], which answers every route of
//! docs/api.md in this process: `NativeStore.open` opens a store (refused with `Locked`,
//! naming the holder, when another process or this one has it), `request` carries one
//! request to the routes off the JS thread (napi-rs's tokio runtime awaits it; the engine's
//! work runs on the embedded store's own pool) and resolves with its status and the first
//! piece of its body, the rest of a streamed body coming by `NativeReply.read`. The
//! TypeScript side (`src/native.ts`) makes of it the same transport the HTTP client has, so
//! `GroveClient`, the pi and LangGraph adapters run unchanged on it.
//!
//! It calls `grove_tools::embed` and nothing else of grove. Errors cross to JS as an `Error`
//! whose message begins with the error code of docs/api.md (`locked: …`, `closed: …`).

use std::sync::Arc;

use grove_tools::embed::{
    Answer, BodySender, Chunks, EmbedError, Embedded, Options, Pieces, Reply,
};
use napi::bindgen_prelude::{AsyncTask, Buffer, JavaScriptClassExt, Null, ToNapiValue, Unknown};
use napi::{Env, ScopedTask};
use napi_derive::napi;

mod tree;

/// How a store is opened (`openStore(path, options)` in TypeScript).
#[napi(object)]
#[derive(Default)]
pub struct NativeOptions {
    /// `"sync"` (the default: each write is on disk when acknowledged), `"group"` (the same,
    /// one flush shared by the writers waiting at once) or `"none"`.
    pub durability: Option<String>,
    /// `"sled"` (the default) or `"redb"`.
    pub backend: Option<String>,
    /// The backend's page cache, in bytes.
    pub cache_bytes: Option<f64>,
    /// Values of at least this many bytes are stored once as payloads; 0 stores lines whole.
    pub payload_threshold: Option<f64>,
    /// How long to wait for another process holding the store, in seconds (default 0).
    pub lock_wait_seconds: Option<f64>,
    /// Open to read only.
    pub read_only: Option<bool>,
}

/// A whole answer (JSON; JSON lines when `lines`, made one array) as text: made a JS string
/// once, for one `JSON.parse` (a `Buffer`'s allocation and finalizer, or an object around it,
/// would cost more than a small read). The text is ASCII ([`grove_tools::js_text`]), so V8
/// copies it into a one-byte string instead of decoding UTF-8 into two bytes a character, and
/// it is not checked again on the way (Latin-1 takes any byte). An external string, which V8
/// would not copy, cost more in a loop of large reads: each answer's buffer then lives until
/// a collection, and the fresh pages they take cost more than the copy. A status of 400 and
/// above is an error whose message is `answer STATUS: BODY`, for the TypeScript side to make
/// the `GroveError` of the body, as it does of an HTTP answer.
fn answer_text(env: &Env, status: u16, body: Vec<u8>, lines: bool) -> napi::Result<Unknown<'_>> {
    if status >= 400 {
        // Not UTF-8 (no route answers so): replaced as `Buffer.toString` would.
        let text = String::from_utf8_lossy(&body);
        return Err(napi::Error::from_reason(format!("answer {status}: {text}")));
    }
    let ascii = grove_tools::js_text::ascii_json(body, lines);
    env.create_string_latin1(&ascii)?.into_unknown(env)
}

/// A whole request run on a thread of node's pool ([`NativeStore::request_whole`]).
pub struct WholeRequest {
    store: Arc<Embedded>,
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    lines: bool,
}

/// What a whole request's answer becomes on node's thread: text for `JSON.parse`, or (a large
/// answer of long strings, [`tree`]) its values made here.
pub enum Whole {
    Text(u16, Vec<u8>),
    Tree(tree::Tree),
}

/// The pieces' bytes, when they are few enough to leave to `JSON.parse`.
fn small(pieces: &Pieces) -> bool {
    pieces.pieces.iter().map(Vec::len).sum::<usize>() < tree::LEAST_BYTES
}

impl Whole {
    /// An answer's status and body: a tree when it is large, succeeded and made of long
    /// strings ([`tree::Tree::parse`]), else text.
    fn of(status: u16, answer: Pieces, lines: bool) -> Whole {
        if status >= 400 || small(&answer) {
            return Whole::Text(status, answer.joined());
        }
        match tree::Tree::parse(answer, lines) {
            Ok(tree) => Whole::Tree(tree),
            Err(body) => Whole::Text(status, body),
        }
    }

    fn into_js(self, env: &Env, lines: bool) -> napi::Result<Unknown<'_>> {
        match self {
            Whole::Text(status, body) => answer_text(env, status, body, lines),
            Whole::Tree(tree) => tree.into_js(env),
        }
    }
}

impl<'task> ScopedTask<'task> for WholeRequest {
    type Output = Whole;
    type JsValue = Unknown<'task>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let body = std::mem::take(&mut self.body);
        let (status, answer) = self
            .store
            .request_pieces(&self.method, &self.target, &self.headers, body)
            .map_err(embed_error)?;
        Ok(Whole::of(status, answer, self.lines))
    }

    fn resolve(&mut self, env: &'task Env, whole: Self::Output) -> napi::Result<Self::JsValue> {
        whole.into_js(env, self.lines)
    }
}

/// A chunk of JSON lines made one JSON array of ASCII text ([`answer_text`]'s form), on the
/// store's pool where [`NativeChunks`] are read.
fn js_array(chunk: Vec<u8>) -> Vec<u8> {
    grove_tools::js_text::ascii_json(chunk, true)
}

/// A large JSON-lines answer of `requestSync` (a long branch or path), read on the store's
/// pool while node takes it: each `next` is the next chunk's lines as one JSON array, in text
/// ([`answer_text`]'s form, made on the pool) for one `JSON.parse` while the chunk after it is
/// read, or, a chunk of a megabyte or more of long strings (a line of an image), its values
/// made here ([`tree`]); `null` at the end. Let go before its end, it stops the reading.
#[napi]
pub struct NativeChunks {
    chunks: Option<Chunks>,
}

#[napi]
impl NativeChunks {
    /// The next chunk's lines as a JSON array (in text, or made here), waited for on this
    /// thread; `null` at the end. A reading that failed or broke off (the store closed)
    /// throws, never ends short.
    #[napi(ts_return_type = "string | unknown[] | null")]
    pub fn next<'e>(&mut self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        let Some(chunks) = self.chunks.as_mut() else {
            return Null.into_unknown(env);
        };
        match chunks.next_chunk() {
            Ok(Some(array)) if array.len() < tree::LEAST_BYTES => {
                env.create_string_latin1(&array)?.into_unknown(env)
            }
            Ok(Some(array)) => match tree::Tree::parse(Pieces::one(array), false) {
                Ok(tree) => tree.into_js(env),
                Err(array) => env.create_string_latin1(&array)?.into_unknown(env),
            },
            Ok(None) => {
                self.chunks = None;
                Null.into_unknown(env)
            }
            Err(e) => {
                self.chunks = None;
                Err(embed_error(e))
            }
        }
    }
}

/// A store open in this process.
#[napi]
pub struct NativeStore {
    inner: parking_lot::RwLock<Option<Arc<Embedded>>>,
}

/// An answer: its status, content type and the first piece of its body; the rest (of a
/// streamed body) by `read`.
#[napi]
pub struct NativeReply {
    status: u32,
    content_type: Option<String>,
    first: Option<Vec<u8>>,
    rest: tokio::sync::Mutex<Option<Reply>>,
    /// The embedded store's runtime, where the body is read (its timers and pool are there).
    runtime: tokio::runtime::Handle,
}

/// A request being answered: its reply and the first piece of its body, when they come.
type Answering = tokio::task::JoinHandle<Result<(Reply, Option<Vec<u8>>), EmbedError>>;

/// A request whose body is sent piece by piece (`write`), answered by `finish`.
#[napi]
pub struct NativeUpload {
    body: tokio::sync::Mutex<Option<BodySender>>,
    answer: tokio::sync::Mutex<Option<Answering>>,
    runtime: tokio::runtime::Handle,
}

/// How many answers this process had made JS values by the addon ([`tree`]) rather than
/// text, parsed whole and in pieces: for the tests, which check that a large answer takes
/// that way.
#[napi]
pub fn answers_made_here() -> Vec<f64> {
    tree::made().map(|n| n as f64).to_vec()
}

/// How many answers `requestSync` handed over as [`NativeChunks`]: for the tests, which check
/// that a walk of 512 entries or more takes that way.
#[napi]
pub fn answers_taken_in_chunks() -> f64 {
    CHUNKED.load(std::sync::atomic::Ordering::Relaxed) as f64
}

/// How many answers `requestSync` handed over as [`NativeChunks`].
static CHUNKED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn error(code: &str, message: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(format!("{code}: {message}"))
}

fn embed_error(e: EmbedError) -> napi::Error {
    error(e.code(), &e)
}

fn count(name: &str, value: f64) -> napi::Result<u64> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= 2f64.powi(53) {
        Ok(value as u64)
    } else {
        Err(error(
            "invalid_argument",
            format!("{name} {value}: a whole number of bytes expected"),
        ))
    }
}

#[napi]
impl NativeStore {
    /// Opens (or makes) the store at `path` for this process.
    #[napi(factory)]
    pub fn open(path: String, options: Option<NativeOptions>) -> napi::Result<NativeStore> {
        let given = options.unwrap_or_default();
        let mut options = Options::new(&path);
        if let Some(name) = given.durability.as_deref() {
            options.set_durability(name).map_err(embed_error)?;
        }
        if let Some(name) = given.backend.as_deref() {
            options.set_backend(name).map_err(embed_error)?;
        }
        if let Some(bytes) = given.cache_bytes {
            options.cache_bytes = Some(count("cacheBytes", bytes)?);
        }
        if let Some(bytes) = given.payload_threshold {
            let bytes = usize::try_from(count("payloadThreshold", bytes)?)
                .map_err(|e| error("invalid_argument", e))?;
            options.payload_threshold = Some(bytes);
        }
        if let Some(seconds) = given.lock_wait_seconds {
            options
                .set_lock_wait_seconds("lockWaitSeconds", seconds)
                .map_err(embed_error)?;
        }
        options.read_only = given.read_only.unwrap_or(false);
        let store = Embedded::open(&options).map_err(embed_error)?;
        Ok(NativeStore {
            inner: parking_lot::RwLock::new(Some(Arc::new(store))),
        })
    }

    fn store(&self) -> napi::Result<Arc<Embedded>> {
        self.inner
            .read()
            .clone()
            .ok_or_else(|| embed_error(EmbedError::Closed))
    }

    /// One request to the routes of docs/api.md; `headers` are name, value, name, value…
    #[napi]
    pub async fn request(
        &self,
        method: String,
        target: String,
        headers: Vec<String>,
        body: Option<Buffer>,
    ) -> napi::Result<NativeReply> {
        let store = self.store()?;
        let pairs = pairs(headers)?;
        let body = body.map(|b| b.to_vec()).unwrap_or_default();
        let future = store.request(&method, &target, &pairs, body);
        let answered = store.runtime().spawn(async move {
            let mut reply = future.await?;
            let first = reply.chunk().await?;
            Ok::<_, EmbedError>((reply, first))
        });
        let (reply, first) = answered
            .await
            .map_err(|e| error("transport", e))?
            .map_err(embed_error)?;
        Ok(NativeReply::new(
            reply,
            first,
            store.runtime().handle().clone(),
        ))
    }

    /// One short request run to its end on this (node's) thread: its whole body, as text
    /// ([`answer_text`]; a JSON-lines answer as one array when `lines`), or, for a large answer
    /// of long strings, its value made here ([`tree`]): never a string then, as the answer is
    /// an array or an object. For reads that take microseconds, where going to another thread
    /// and back would cost more than the read; never for a followed replay. A JSON-lines
    /// answer its route knows to be long (a walk of 512 entries or more) comes as
    /// [`NativeChunks`] instead: its first entries read here, the rest on the store's pool
    /// while node parses them.
    #[napi(ts_return_type = "string | object | NativeChunks")]
    pub fn request_sync<'e>(
        &self,
        env: &'e Env,
        method: String,
        target: String,
        headers: Vec<String>,
        body: Option<String>,
        lines: Option<bool>,
    ) -> napi::Result<Unknown<'e>> {
        let store = self.store()?;
        let pairs = pairs(headers)?;
        let body = body.map(String::into_bytes).unwrap_or_default();
        let lines = lines.unwrap_or(false);
        if !lines {
            let (status, answer) = store
                .request_pieces(&method, &target, &pairs, body)
                .map_err(embed_error)?;
            return Whole::of(status, answer, lines).into_js(env, lines);
        }
        match store
            .request_overlapped(&method, &target, &pairs, body, js_array)
            .map_err(embed_error)?
        {
            (status, Answer::Whole(answer)) => Whole::of(status, answer, lines).into_js(env, lines),
            (_, Answer::Chunks(chunks)) => {
                CHUNKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                NativeChunks {
                    chunks: Some(chunks),
                }
                .into_instance(env)?
                .into_unknown(env)
            }
        }
    }

    /// One request whose whole answer is wanted (not a stream), run to its end on a thread of
    /// node's pool (libuv): the routes' engine calls run right there, one trip off node's thread
    /// and back. Resolves with its whole body as text ([`answer_text`]; a JSON-lines answer as
    /// one array when `lines`), or, for a large answer of long strings, with its value made
    /// here ([`tree`]): never a string then, as the answer is an array or an object.
    #[napi(ts_return_type = "Promise<string | object>")]
    pub fn request_whole(
        &self,
        method: String,
        target: String,
        headers: Vec<String>,
        body: Option<String>,
        lines: Option<bool>,
    ) -> napi::Result<AsyncTask<WholeRequest>> {
        Ok(AsyncTask::new(WholeRequest {
            store: self.store()?,
            method,
            target,
            headers: pairs(headers)?,
            body: body.map(String::into_bytes).unwrap_or_default(),
            lines: lines.unwrap_or(false),
        }))
    }

    /// A request whose body follows by `NativeUpload.write` (an import read from a file).
    #[napi]
    pub fn upload(
        &self,
        method: String,
        target: String,
        headers: Vec<String>,
    ) -> napi::Result<NativeUpload> {
        let store = self.store()?;
        let pairs = pairs(headers)?;
        let (body, future) = store.request_streamed(&method, &target, &pairs);
        let answer = store.runtime().spawn(async move {
            let mut reply = future.await?;
            let first = reply.chunk().await?;
            Ok::<_, EmbedError>((reply, first))
        });
        Ok(NativeUpload {
            body: tokio::sync::Mutex::new(Some(body)),
            answer: tokio::sync::Mutex::new(Some(answer)),
            runtime: store.runtime().handle().clone(),
        })
    }

    /// Flushes and closes the store; requests after this fail with `closed`.
    #[napi]
    pub fn close(&self) -> napi::Result<()> {
        let taken = self.inner.write().take();
        let Some(store) = taken else { return Ok(()) };
        match Arc::try_unwrap(store) {
            Ok(store) => store.close().map_err(embed_error),
            // A request in flight holds it: the last one to finish closes it.
            Err(_) => Ok(()),
        }
    }
}

fn pairs(headers: Vec<String>) -> napi::Result<Vec<(String, String)>> {
    headers
        .chunks(2)
        .map(|pair| match pair {
            [name, value] => Ok((name.clone(), value.clone())),
            _ => Err(error("invalid_request", "headers come in pairs")),
        })
        .collect()
}

impl NativeReply {
    fn new(reply: Reply, first: Option<Vec<u8>>, runtime: tokio::runtime::Handle) -> NativeReply {
        let done = first.is_none();
        NativeReply {
            status: u32::from(reply.status),
            content_type: reply.content_type.clone(),
            first,
            rest: tokio::sync::Mutex::new((!done).then_some(reply)),
            runtime,
        }
    }
}

#[napi]
impl NativeUpload {
    /// Sends the next piece of the body; false when the answer came already (stop sending
    /// and `finish`).
    #[napi]
    pub async fn write(&self, piece: Buffer) -> napi::Result<bool> {
        let body = self.body.lock().await;
        let Some(sender) = body.as_ref() else {
            return Ok(false);
        };
        Ok(sender.send(piece.to_vec()).await)
    }

    /// Ends the body as broken (`why`: the reading that failed); `finish` still answers.
    #[napi]
    pub async fn fail(&self, why: String) -> napi::Result<()> {
        let taken = self.body.lock().await.take();
        if let Some(sender) = taken {
            sender.fail(why).await;
        }
        Ok(())
    }

    /// Ends the body and resolves with the answer.
    #[napi]
    pub async fn finish(&self) -> napi::Result<NativeReply> {
        drop(self.body.lock().await.take());
        let answer = self.answer.lock().await.take();
        let Some(answer) = answer else {
            return Err(error("invalid_request", "the upload was finished already"));
        };
        let (reply, first) = answer
            .await
            .map_err(|e| error("transport", e))?
            .map_err(embed_error)?;
        Ok(NativeReply::new(reply, first, self.runtime.clone()))
    }
}

#[napi]
impl NativeReply {
    #[napi(getter)]
    pub fn status(&self) -> u32 {
        self.status
    }

    #[napi(getter)]
    pub fn content_type(&self) -> Option<String> {
        self.content_type.clone()
    }

    /// The first piece of the body (null for an empty one), once; then null.
    #[napi]
    pub fn take_first(&mut self) -> Option<Buffer> {
        self.first.take().map(Buffer::from)
    }

    /// The next piece of the body, null at its end.
    #[napi]
    pub async fn read(&self) -> napi::Result<Option<Buffer>> {
        let mut rest = self.rest.lock().await;
        let Some(mut reply) = rest.take() else {
            return Ok(None);
        };
        let (reply, chunk) = self
            .runtime
            .spawn(async move {
                let chunk = reply.chunk().await;
                (reply, chunk)
            })
            .await
            .map_err(|e| error("transport", e))?;
        let chunk = chunk.map_err(embed_error)?;
        if chunk.is_some() {
            *rest = Some(reply);
        }
        Ok(chunk.map(Buffer::from))
    }

    /// Stops reading: the rest of the body is dropped (a followed replay ends).
    #[napi]
    pub fn cancel(&self) {
        if let Ok(mut rest) = self.rest.try_lock() {
            *rest = None;
        }
    }
}
