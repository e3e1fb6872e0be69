//! The routes of docs/api.md and their handlers. Each handler checks its input, then runs
//! its engine calls on tokio's blocking pool ([`blocking`]), or streams them ([`ndjson`]);
//! a panic there is a 500 for that request, and the server goes on serving.

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put, MethodRouter};
use axum::Router;
use grove::{
    AppendOutcome, ContextOptions, CreateSession, Durability, Entry, Flavor, ForkMode, ForkOptions,
    ForkPosition, ImportOptions, NewEntry, Session, SessionSummary, Store,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use grove::summary::{PathMode, Summarizer};
use grove::{NavigateOptions, NavigateOutcome, Navigator};

use super::api::{ApiError, ApiResult, Body, Path, Query, Raw};
use super::full_disk::FullDisk;
use super::health::Writes;
use super::limits::Limits;
use super::oplog::{self, At};
use super::stores::Stores;
use super::stream::{forward_body, json_stream, ndjson, BodyEnd, BodyReader, Sink};

/// What every handler shares, as one request sees it: a handler takes `State` itself (not
/// `axum::extract::State<State>`), whose store stamps the request's writes with its client's
/// name (`Grove-Client`, [`super::api::client_name`]; `server` without one) and, sharded, is
/// the store of the session its path names ([`Stores`]). The router's own state (which the
/// middleware sees) holds no store: the stores served can be swapped (a store opened to read
/// on a full disk is reopened for writing, `full_disk.rs`), and each request takes the ones
/// served when it begins.
#[derive(Clone)]
pub struct State {
    inner: Arc<Shared>,
    /// The stores this request is served by; `None` for the router's own state.
    stores: Option<Stores>,
    /// The store of this request (stamping operations with its client); `None` for a sharded
    /// server's request that names no session.
    store: Option<Store>,
}

struct Shared {
    /// The stores served now; `None` only while they are being reopened ([`State::take_stores`]).
    stores: tokio::sync::watch::Sender<Option<Stores>>,
    /// Whether sessions are sharded (fixed at start).
    sharded: bool,
    limits: Arc<Limits>,
    durability: Durability,
    summarizer: Option<Arc<dyn Summarizer>>,
    /// Set when the server stops: streams that would go on forever (a followed replay) end.
    stopping: tokio::sync::watch::Sender<bool>,
    /// The write requests in flight, for health.
    writes: Writes,
    /// Set while the store's disk is too full to open it for writing: it is open to read.
    full_disk: parking_lot::Mutex<Option<FullDisk>>,
}

/// The longest a request waits for the stores while they are being reopened; then it is
/// answered `503 busy`.
const REOPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl State {
    pub fn new(
        stores: Stores,
        limits: Limits,
        full_disk: Option<FullDisk>,
        durability: Durability,
        summarizer: Option<Arc<dyn Summarizer>>,
    ) -> State {
        State {
            stores: None,
            store: None,
            inner: Arc::new(Shared {
                sharded: stores.is_sharded(),
                stores: tokio::sync::watch::Sender::new(Some(stores)),
                limits: Arc::new(limits),
                durability,
                summarizer,
                stopping: tokio::sync::watch::Sender::new(false),
                writes: Writes::default(),
                full_disk: parking_lot::Mutex::new(full_disk),
            }),
        }
    }

    /// The server is stopping: followed streams end.
    pub fn stop(&self) {
        self.inner.stopping.send_replace(true);
    }

    /// Changes to `true` when the server stops.
    pub(super) fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.stopping.subscribe()
    }

    /// Changes when the stores served are taken to be reopened: a stream that holds a store
    /// for long (a followed replay) ends then, so that the store can be closed.
    pub(super) fn store_changes(&self) -> tokio::sync::watch::Receiver<Option<Stores>> {
        let mut changes = self.inner.stores.subscribe();
        // Taken out already, since this request began: that is a change too.
        if changes.borrow().is_none() {
            changes.mark_changed();
        }
        changes
    }

    /// The server's limits.
    pub(super) fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The write requests in flight.
    pub(super) fn writes(&self) -> &Writes {
        &self.inner.writes
    }

    /// Whether the store's disk is too full to open it for writing ([`FullDisk`]).
    pub(super) fn full_disk(&self) -> Option<FullDisk> {
        self.inner.full_disk.lock().clone()
    }

    /// Writes are no longer refused: the store was reopened for writing.
    pub(super) fn clear_full_disk(&self) {
        *self.inner.full_disk.lock() = None;
    }

    /// Whether sessions are sharded over several stores.
    pub(super) fn is_sharded(&self) -> bool {
        self.inner.sharded
    }

    /// The stores served now (`None` while they are being reopened), for the server itself
    /// (its reopening and its shutdown), not a request.
    pub(super) fn current_stores(&self) -> Option<Stores> {
        self.inner.stores.borrow().clone()
    }

    /// Takes the stores served out, to reopen them: requests that begin now wait (at most
    /// [`REOPEN_WAIT`]) until [`State::put_stores`], and followed replays end.
    pub(super) fn take_stores(&self) -> Option<Stores> {
        self.inner.stores.send_replace(None)
    }

    /// Serves `stores` from now on.
    pub(super) fn put_stores(&self, stores: Stores) {
        self.inner.stores.send_replace(Some(stores));
    }

    /// The store of this request, stamping operations with its client.
    pub(super) fn store(&self) -> ApiResult<Store> {
        self.store.clone().ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "this route names no session, and sessions are sharded over several stores",
            )
        })
    }

    /// The stores this request is served by.
    pub(super) fn stores(&self) -> ApiResult<&Stores> {
        self.stores.as_ref().ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "the server's own state has no stores; a request's has",
            )
        })
    }

    /// The store of this request, if it has one (not a sharded request naming no session).
    pub(super) fn routed(&self) -> Option<Store> {
        self.store.clone()
    }

    /// The actor of this request's operations.
    pub(super) fn actor(&self) -> String {
        self.store
            .as_ref()
            .map_or_else(|| DEFAULT_CLIENT.to_owned(), |s| s.actor().to_owned())
    }

    /// This state as a request from client `name` (none: [`DEFAULT_CLIENT`]) on session
    /// `sid` (if its path names one) sees it; `write` says whether the request writes. While
    /// the stores are being reopened it waits for them, at most [`REOPEN_WAIT`] (then
    /// `503 busy`).
    pub(super) async fn for_request(
        &self,
        name: Option<&str>,
        sid: Option<&str>,
        write: bool,
    ) -> ApiResult<State> {
        let mut served = self.inner.stores.subscribe();
        let stores = match tokio::time::timeout(REOPEN_WAIT, served.wait_for(Option::is_some)).await
        {
            Ok(Ok(stores)) => stores.clone(),
            _ => None,
        };
        let stores = stores.ok_or_else(|| {
            super::limits::busy("the store is being reopened for writing; try again later")
        })?;
        let name = name.unwrap_or(DEFAULT_CLIENT);
        let store = match (&stores, sid) {
            (Stores::One(store), _) => Some(store.with_actor(name)),
            (Stores::Sharded(_), None) => None,
            (Stores::Sharded(_), Some(sid)) => {
                Some(stores.for_session(sid, write)?.with_actor(name))
            }
        };
        Ok(State {
            inner: self.inner.clone(),
            stores: Some(stores),
            store,
        })
    }

    /// The store of a new session `id` (sharded: by its id, generated when not given),
    /// stamping with this request's client, and the id.
    fn for_new_session(&self, id: Option<String>) -> ApiResult<(Store, Option<String>)> {
        let (store, id) = self.stores()?.for_new_session(id)?;
        Ok((store.with_actor(&self.actor()), id))
    }

    /// The durability every acknowledged write has (`--durability`).
    pub(super) fn durability(&self) -> Durability {
        self.inner.durability
    }
}

/// The actor of a request that names no client.
pub const DEFAULT_CLIENT: &str = "server";

/// Every route: method and path, as docs/api.md lists them (a test compares the two).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/health"),
    ("POST", "/v1/verify"),
    ("POST", "/v1/gc"),
    ("GET", "/v1/sessions"),
    ("POST", "/v1/sessions"),
    ("GET", "/v1/sessions/{sid}"),
    ("DELETE", "/v1/sessions/{sid}"),
    ("POST", "/v1/import"),
    ("GET", "/v1/sessions/{sid}/export"),
    ("POST", "/v1/sessions/{sid}/fork"),
    ("POST", "/v1/sessions/{sid}/entries"),
    ("POST", "/v1/sessions/{sid}/entries/exact"),
    ("POST", "/v1/sessions/{sid}/entries/if"),
    ("POST", "/v1/sessions/{sid}/entries/many"),
    ("POST", "/v1/appends"),
    ("GET", "/v1/sessions/{sid}/entries"),
    ("GET", "/v1/sessions/{sid}/log"),
    ("GET", "/v1/sessions/{sid}/entries/{eid}"),
    ("GET", "/v1/sessions/{sid}/entries/{eid}/proof"),
    ("GET", "/v1/sessions/{sid}/entries/exact"),
    ("GET", "/v1/sessions/{sid}/entries/if"),
    ("GET", "/v1/sessions/{sid}/entries/many"),
    ("GET", "/v1/sessions/{sid}/children"),
    ("GET", "/v1/sessions/{sid}/branch"),
    ("GET", "/v1/sessions/{sid}/path"),
    ("GET", "/v1/sessions/{sid}/context"),
    ("GET", "/v1/sessions/{sid}/tree"),
    ("GET", "/v1/sessions/{sid}/labels"),
    ("POST", "/v1/sessions/{sid}/labels"),
    ("GET", "/v1/sessions/{sid}/labels/{eid}"),
    ("GET", "/v1/sessions/{sid}/name"),
    ("PUT", "/v1/sessions/{sid}/name"),
    ("GET", "/v1/sessions/{sid}/stats"),
    ("GET", "/v1/sessions/{sid}/leaf"),
    ("PUT", "/v1/sessions/{sid}/leaf"),
    ("GET", "/v1/sessions/{sid}/leaf/history"),
    ("GET", "/v1/sessions/{sid}/operations"),
    ("POST", "/v1/sessions/{sid}/undo"),
    ("GET", "/v1/sessions/{sid}/seal"),
    ("POST", "/v1/sessions/{sid}/seal/check"),
    ("GET", "/v1/sessions/{sid}/replay"),
    ("POST", "/v1/sessions/{sid}/navigate"),
    ("POST", "/v1/sessions/{sid}/ids"),
    ("POST", "/v1/sessions/{sid}/turns"),
    ("POST", "/v1/sessions/{sid}/turns/{lease}/renew"),
    ("DELETE", "/v1/sessions/{sid}/turns/{lease}"),
];

/// The handler of one route of [`ROUTES`].
fn handler(method: &str, route: &str) -> Option<MethodRouter<State>> {
    Some(match (method, route) {
        ("GET", "/v1/health") => get(super::health::health),
        ("POST", "/v1/verify") => post(verify),
        ("POST", "/v1/gc") => post(gc),
        ("GET", "/v1/sessions") => get(list_sessions),
        ("POST", "/v1/sessions") => post(create_session),
        ("GET", "/v1/sessions/{sid}") => get(get_session),
        ("DELETE", "/v1/sessions/{sid}") => delete(delete_session),
        ("POST", "/v1/import") => post(import),
        ("GET", "/v1/sessions/{sid}/export") => get(export),
        ("POST", "/v1/sessions/{sid}/fork") => post(fork),
        ("POST", "/v1/sessions/{sid}/entries") => post(append),
        ("POST", "/v1/sessions/{sid}/entries/exact") => post(append_exact),
        ("POST", "/v1/sessions/{sid}/entries/if") => post(append_if),
        ("POST", "/v1/sessions/{sid}/entries/many") => post(append_many),
        ("POST", "/v1/appends") => post(super::batch::appends),
        ("GET", "/v1/sessions/{sid}/entries") => get(entries),
        ("GET", "/v1/sessions/{sid}/log") => get(log),
        ("GET", "/v1/sessions/{sid}/entries/{eid}") => get(entry),
        ("GET", "/v1/sessions/{sid}/entries/{eid}/proof") => get(proof),
        // These paths are also append routes: a GET reads the entry of that id.
        ("GET", "/v1/sessions/{sid}/entries/exact") => get(entry_named("exact")),
        ("GET", "/v1/sessions/{sid}/entries/if") => get(entry_named("if")),
        ("GET", "/v1/sessions/{sid}/entries/many") => get(entry_named("many")),
        ("GET", "/v1/sessions/{sid}/children") => get(children),
        ("GET", "/v1/sessions/{sid}/branch") => get(branch),
        ("GET", "/v1/sessions/{sid}/path") => get(path),
        ("GET", "/v1/sessions/{sid}/context") => get(context),
        ("GET", "/v1/sessions/{sid}/tree") => get(tree),
        ("GET", "/v1/sessions/{sid}/labels") => get(labels),
        ("POST", "/v1/sessions/{sid}/labels") => post(set_label),
        ("GET", "/v1/sessions/{sid}/labels/{eid}") => get(label),
        ("GET", "/v1/sessions/{sid}/name") => get(name),
        ("PUT", "/v1/sessions/{sid}/name") => put(set_name),
        ("GET", "/v1/sessions/{sid}/stats") => get(stats),
        ("GET", "/v1/sessions/{sid}/leaf") => get(leaf),
        ("PUT", "/v1/sessions/{sid}/leaf") => put(move_leaf),
        ("GET", "/v1/sessions/{sid}/leaf/history") => get(leaf_history),
        ("GET", "/v1/sessions/{sid}/operations") => get(oplog::operations),
        ("POST", "/v1/sessions/{sid}/undo") => post(oplog::undo),
        ("GET", "/v1/sessions/{sid}/seal") => get(oplog::seal),
        ("POST", "/v1/sessions/{sid}/seal/check") => post(oplog::check_seal),
        ("GET", "/v1/sessions/{sid}/replay") => get(oplog::replay),
        ("POST", "/v1/sessions/{sid}/navigate") => post(navigate),
        ("POST", "/v1/sessions/{sid}/ids") => post(fresh_ids),
        ("POST", "/v1/sessions/{sid}/turns") => post(begin_turn),
        ("POST", "/v1/sessions/{sid}/turns/{lease}/renew") => post(renew_turn),
        ("DELETE", "/v1/sessions/{sid}/turns/{lease}") => delete(end_turn),
        _ => return None,
    })
}

/// The router of exactly the routes of [`ROUTES`]; with `token`, every request must carry
/// it as a bearer token. `GET /view`, the HTML view, is added after the token check.
pub fn router(state: State, token: Option<Arc<str>>) -> Router {
    let max_body = state.inner.limits.max_body;
    let limits = state.inner.limits.clone();
    let tracked = state.clone();
    let guarded = state.clone();
    let mut app = Router::new();
    for (method, path) in ROUTES {
        if let Some(h) = handler(method, path) {
            app = app.route(path, h);
        }
    }
    let app = app
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                super::full_disk::refuse_writes(guarded.clone(), req, next)
            },
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| super::health::track_writes(tracked.clone(), req, next),
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                super::limits::declared_length(limits.clone(), req, next)
            },
        ))
        .with_state(state);
    let app = match token {
        None => app,
        Some(token) => app.layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let token = token.clone();
                async move { authorize(&token, req, next).await }
            },
        )),
    };
    // The HTML view holds no data: it is served without the token (`view.rs`).
    app.merge(super::view::router())
}

async fn authorize(token: &str, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(super::guard::bearer_token);
    match given {
        Some(t) if constant_time_eq(t.as_bytes(), token.as_bytes()) => next.run(req).await,
        Some(_) => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the bearer token is wrong",
        )
        .into_response(),
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this listener needs `authorization: Bearer TOKEN`",
        )
        .into_response(),
    }
}

/// Compares without an early exit, so the time taken says nothing about the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn unknown_route(req: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route {} {} (docs/api.md lists the routes)",
        req.method(),
        req.uri().path()
    ))
}

async fn wrong_method(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}

/// Runs `f` on the blocking pool.
pub(super) async fn blocking<T, F>(f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> grove::Result<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(e) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            format!("the request failed inside the server: {e}"),
        )),
    }
}

/// Runs `f` on session `sid` on the blocking pool.
async fn on_session<T, F>(state: &State, sid: String, f: F) -> ApiResult<T>
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
async fn writing<T, I, F>(state: &State, sid: String, input: I, f: F) -> ApiResult<T>
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
fn raw_json(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

pub(super) fn json_answer(status: StatusCode, value: Value) -> Response {
    raw_json(status, value.to_string())
}

fn summary_json(s: &SessionSummary) -> Value {
    json!({
        "id": s.id,
        "created": s.created,
        "cwd": s.cwd,
        "entries": s.entries,
        "parentSessionId": s.parent_session_id,
        "parentSession": s.parent_session,
    })
}

/// A session's summary, header metadata, leaf and name, as JSON text. The metadata is the
/// stored header's text as it is (not parsed into a value, which could fail on a deep one:
/// what is stored is answered as stored).
fn session_json(session: &Session) -> grove::Result<String> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Info<'a> {
        id: &'a str,
        created: &'a str,
        cwd: &'a str,
        entries: u64,
        parent_session_id: Option<&'a str>,
        parent_session: Option<&'a str>,
        metadata: Option<&'a RawValue>,
        leaf: Option<String>,
        name: Option<String>,
    }
    let rec = session.record();
    let metadata = grove::codec::header::Header::parse(&rec.header)
        .ok()
        .and_then(|h| h.metadata);
    let info = Info {
        id: &rec.id,
        created: &rec.created,
        cwd: &rec.cwd,
        entries: session.head()?.entries,
        parent_session_id: rec.parent_session_id.as_deref(),
        parent_session: rec.parent_session.as_deref(),
        metadata: metadata
            .as_deref()
            .and_then(|m| serde_json::from_str::<&RawValue>(m).ok()),
        leaf: session.leaf()?,
        name: session.name()?,
    };
    serde_json::to_string(&info)
        .map_err(|e| grove::GroveError::Corrupt(format!("session {}: {e}", rec.id)))
}

// ---- server ----

/// `POST /v1/gc`: removes the payloads no session references, as `grove gc --json` reports.
async fn gc(state: State) -> ApiResult<Response> {
    if state.is_sharded() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_state",
            "sessions are sharded over several clusters: run `grove gc` on each cluster's store",
        ));
    }
    let store = state.store()?;
    let report = blocking(move || store.gc()).await?;
    Ok(json_answer(
        StatusCode::OK,
        crate::output::gc_value(&report),
    ))
}

async fn verify(state: State) -> ApiResult<Response> {
    // Sharded: every cluster's store, the counts summed.
    let stores = state.stores()?.all();
    let reports: Vec<grove::VerifyReport> =
        blocking(move || stores.iter().map(Store::verify).collect()).await?;
    let problems: Vec<String> = reports
        .iter()
        .flat_map(|r| r.problems.iter().map(|p| p.to_string()))
        .collect();
    Ok(json_answer(
        StatusCode::OK,
        json!({
            "sessions": reports.iter().map(|r| r.sessions).sum::<u64>(),
            "records": reports.iter().map(|r| r.records).sum::<u64>(),
            "ok": problems.is_empty(),
            "problems": problems,
        }),
    ))
}

// ---- sessions ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    after: Option<String>,
    limit: Option<usize>,
}

async fn list_sessions(state: State, Query(page): Query<Page>) -> ApiResult<Response> {
    let stores = state.stores()?.clone();
    let limit = page.limit.unwrap_or(1000);
    if limit == 0 {
        return Err(ApiError::invalid_argument("limit must be at least 1"));
    }
    // Sharded: every cluster's sessions, merged by id.
    let all = blocking(move || stores.sessions()).await?;
    let start = match &page.after {
        None => 0,
        Some(after) => all.partition_point(|s| s.id.as_str() <= after.as_str()),
    };
    let end = start.saturating_add(limit).min(all.len());
    let next = (end < all.len()).then(|| all[end - 1].id.clone());
    let sessions: Vec<Value> = all[start..end].iter().map(summary_json).collect();
    Ok(json_answer(
        StatusCode::OK,
        json!({ "sessions": sessions, "next": next }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NewSession {
    id: Option<String>,
    cwd: Option<String>,
    metadata: Option<Box<RawValue>>,
    parent_session: Option<String>,
}

/// Header `metadata`: a JSON object's text, or none (absent or null).
fn metadata_object(metadata: Option<Box<RawValue>>) -> ApiResult<Option<String>> {
    match metadata {
        None => Ok(None),
        Some(m) if m.get() == "null" => Ok(None),
        Some(m) if m.get().trim_start().starts_with('{') => Ok(Some(m.get().to_owned())),
        Some(_) => Err(ApiError::invalid_argument("metadata must be a JSON object")),
    }
}

async fn create_session(state: State, Body(body): Body<NewSession>) -> ApiResult<Response> {
    let metadata = metadata_object(body.metadata)?;
    // Sharded: the store of the id (generated here when not given).
    let (store, id) = state.for_new_session(body.id)?;
    let info = blocking(move || {
        let session = store.create_session(CreateSession {
            id,
            cwd: body.cwd.unwrap_or_default(),
            metadata,
            parent_session: body.parent_session,
            parent_session_id: None,
        })?;
        session_json(&session)
    })
    .await?;
    Ok(raw_json(StatusCode::CREATED, info))
}

async fn get_session(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let store = state.store()?;
    let info = blocking(move || session_json(&store.session(&sid)?)).await?;
    Ok(raw_json(StatusCode::OK, info))
}

async fn delete_session(state: State, Path(sid): Path<String>) -> ApiResult<StatusCode> {
    let store = state.store()?;
    blocking(move || store.delete_session(&sid)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The longest header line a sharded server reads to route an import.
const MAX_HEADER_LINE: u64 = 1 << 20;

async fn import(state: State, body: axum::body::Body) -> ApiResult<Response> {
    // Streamed into the import as it arrives: memory is a few chunks, whatever the size.
    // Sharded, the session's id is read from the header line first, and routes the import.
    let direct = state.store.clone();
    let stores = state.stores()?.clone();
    let actor = state.actor();
    let (reader, feed) = BodyReader::new();
    let job = tokio::task::spawn_blocking(move || -> ApiResult<grove::ImportReport> {
        let mut input = std::io::BufReader::with_capacity(64 << 10, reader);
        match direct {
            Some(store) => Ok(store.import_reader(input, ImportOptions::default())?),
            None => {
                use std::io::{BufRead, Read};
                let mut header = Vec::new();
                (&mut input)
                    .take(MAX_HEADER_LINE)
                    .read_until(b'\n', &mut header)
                    .map_err(|e| ApiError::invalid_request(format!("reading the body: {e}")))?;
                let id = serde_json::from_slice::<Value>(&header)
                    .ok()
                    .and_then(|h| h["id"].as_str().map(str::to_owned))
                    .ok_or_else(|| {
                        ApiError::new(
                            StatusCode::UNPROCESSABLE_ENTITY,
                            "invalid_session",
                            "the first line is not a pi session header with an id",
                        )
                    })?;
                let store = stores.for_session(&id, true)?.with_actor(&actor);
                let input = std::io::Cursor::new(header).chain(input);
                Ok(store.import_reader(input, ImportOptions::default())?)
            }
        }
    });
    let limits = state.limits();
    let end = forward_body(body, feed, limits.max_import, limits.body_timeout).await;
    let result = job.await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            format!("the import task failed: {e}"),
        )
    })?;
    let report = match (end, result) {
        (BodyEnd::TooLarge, _) => {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the session is larger than the server's import limit (--max-import); nothing \
                 was imported",
            ))
        }
        (BodyEnd::TimedOut, _) => return Err(super::limits::body_timed_out(limits.body_timeout)),
        (BodyEnd::Broken, Err(_)) => {
            return Err(ApiError::invalid_request(
                "the connection failed while sending the body; nothing was imported",
            ))
        }
        (_, result) => result?,
    };
    Ok(json_answer(
        StatusCode::CREATED,
        json!({
            "session": report.session,
            "entries": report.entries,
            "leafRecords": report.leaf_records,
            "leaf": report.leaf,
            "duplicateIds": report.duplicate_ids,
            "warnings": report.warnings,
        }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    flavor: Option<String>,
}

async fn export(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<ExportQuery>,
) -> ApiResult<Response> {
    let flavors = [("harness", Flavor::Harness), ("cli", Flavor::Cli)];
    let flavor = choice("flavor", q.flavor.as_deref(), &flavors)?.unwrap_or(Flavor::Harness);
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        let mut out = SinkWriter { sink };
        session.export(flavor, &mut out).map(drop)
    })
    .await
}

/// `std::io::Write` over a [`Sink`], for the engine's export.
struct SinkWriter<'a> {
    sink: &'a mut Sink,
}

impl std::io::Write for SinkWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.sink.bytes(buf) {
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ForkBody {
    entry_id: Option<String>,
    position: Option<String>,
    mode: Option<String>,
    id: Option<String>,
    cwd: Option<String>,
    metadata: Option<Box<RawValue>>,
    parent_session: Option<String>,
}

async fn fork(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<ForkBody>,
) -> ApiResult<Response> {
    let positions = [("before", ForkPosition::Before), ("at", ForkPosition::At)];
    let position =
        choice("position", body.position.as_deref(), &positions)?.unwrap_or(ForkPosition::Before);
    let modes = [
        ("path", ForkMode::Path),
        ("rechained", ForkMode::Rechained),
        ("copy", ForkMode::Copy),
    ];
    let mode = choice("mode", body.mode.as_deref(), &modes)?.unwrap_or(ForkMode::Path);
    let metadata = metadata_object(body.metadata)?;
    let options = ForkOptions {
        entry: body.entry_id,
        position,
        mode,
        cwd: body.cwd,
        metadata,
        id: state.stores()?.fork_id(&sid, body.id)?,
        parent_session: body.parent_session,
    };
    let store = state.store()?;
    let info = blocking(move || {
        let source = store.session(&sid)?;
        let forked = store.fork(&source, options)?;
        session_json(&forked)
    })
    .await?;
    Ok(raw_json(StatusCode::CREATED, info))
}

// ---- appends ----

/// A new entry: an entry object (`type`) or a message object (`role`).
pub(super) fn new_entry(raw: &RawValue) -> ApiResult<NewEntry> {
    // Only whether the fields are there: their values are not built.
    #[derive(Deserialize)]
    struct Shape {
        #[serde(rename = "type")]
        ty: Option<serde::de::IgnoredAny>,
        role: Option<serde::de::IgnoredAny>,
    }
    let text = raw.get();
    let shape: Shape = serde_json::from_str(text).map_err(|_| {
        ApiError::invalid_argument("an entry must be a JSON object with a \"type\" or a \"role\"")
    })?;
    match (shape.ty, shape.role) {
        (Some(_), _) => Ok(NewEntry::Raw {
            object: text.to_owned(),
        }),
        (None, Some(_)) => Ok(NewEntry::Message {
            message: text.to_owned(),
        }),
        (None, None) => Err(ApiError::invalid_argument(
            "the entry object has neither a \"type\" (an entry) nor a \"role\" (a message)",
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendBody {
    entry: Box<RawValue>,
    id: Option<String>,
    timestamp: Option<String>,
}

async fn append(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<AppendBody>,
) -> ApiResult<Response> {
    let entry = new_entry(&body.entry)?;
    let options = grove::AppendOptions {
        id: body.id,
        timestamp: body.timestamp,
        ..Default::default()
    };
    let id = writing(
        &state,
        sid,
        (entry, options),
        |session, (entry, options)| session.append_with(entry, options),
    )
    .await?;
    Ok(json_answer(StatusCode::CREATED, json!({ "id": id })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ExactQuery {
    #[serde(default)]
    keep_leaf: bool,
}

async fn append_exact(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<ExactQuery>,
    Raw(bytes): Raw,
) -> ApiResult<Response> {
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|_| ApiError::invalid_request("the body is not UTF-8"))?;
    let (id, leaf) = writing(&state, sid, text, move |session, text| {
        let options = grove::ExactOptions {
            keep_leaf: q.keep_leaf,
            ..Default::default()
        };
        let id = session.append_exact_with(&text, options)?;
        Ok((id, session.leaf()?))
    })
    .await?;
    Ok(json_answer(
        StatusCode::CREATED,
        json!({ "id": id, "leaf": leaf }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AppendIfBody {
    #[serde(default)]
    expected_leaf: Option<String>,
    entry: Box<RawValue>,
}

async fn append_if(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<AppendIfBody>,
) -> ApiResult<Response> {
    let entry = new_entry(&body.entry)?;
    let expected = body.expected_leaf;
    let outcome = writing(&state, sid, entry, move |session, entry| {
        session.append_if(expected.as_deref(), entry)
    })
    .await?;
    Ok(match outcome {
        AppendOutcome::Appended(id) => {
            json_answer(StatusCode::OK, json!({ "appended": true, "id": id }))
        }
        AppendOutcome::Conflict { actual_leaf } => json_answer(
            StatusCode::OK,
            json!({ "appended": false, "leaf": actual_leaf }),
        ),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManyBody {
    entries: Vec<Box<RawValue>>,
}

async fn append_many(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<ManyBody>,
) -> ApiResult<Response> {
    let entries = body
        .entries
        .iter()
        .map(|e| new_entry(e))
        .collect::<ApiResult<Vec<_>>>()?;
    let ids = writing(&state, sid, entries, |s, entries| s.append_many(&entries)).await?;
    Ok(json_answer(StatusCode::CREATED, json!({ "ids": ids })))
}

// ---- reads ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cursor {
    after: Option<u64>,
    limit: Option<u64>,
    #[serde(rename = "type")]
    ty: Option<String>,
}

fn type_of(line: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Ty {
        #[serde(rename = "type")]
        ty: String,
    }
    serde_json::from_str::<Ty>(line).ok().map(|t| t.ty)
}

/// Streams `lines` (at most `limit`), stopping when the client goes away.
/// One entry as a line of an NDJSON answer; a client that went away ends the walk.
fn send_one(sink: &mut Sink, entry: &Entry) -> grove::Result<()> {
    match sink.line(&entry.line) {
        true => Ok(()),
        false => Err(grove::GroveError::Io {
            path: "<client>".into(),
            source: std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"),
        }),
    }
}

fn send_all(
    sink: &mut Sink,
    lines: impl Iterator<Item = grove::Result<Entry>>,
    limit: Option<u64>,
    ty: Option<&str>,
) -> grove::Result<()> {
    sink.ready();
    let mut left = limit.unwrap_or(u64::MAX);
    for entry in lines {
        if left == 0 {
            break;
        }
        let entry = entry?;
        if let Some(ty) = ty {
            if type_of(&entry.line).as_deref() != Some(ty) {
                continue;
            }
        }
        left -= 1;
        if !sink.line(&entry.line) {
            break;
        }
    }
    Ok(())
}

async fn entries(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<Cursor>,
) -> ApiResult<Response> {
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        let skip = usize::try_from(q.after.unwrap_or(0)).unwrap_or(usize::MAX);
        send_all(sink, session.entries().skip(skip), q.limit, q.ty.as_deref())
    })
    .await
}

async fn log(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<Cursor>,
) -> ApiResult<Response> {
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        send_all(
            sink,
            session.log_from(q.after.unwrap_or(0)),
            q.limit,
            q.ty.as_deref(),
        )
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryQuery {
    log: Option<bool>,
}

async fn entry(
    state: State,
    Path((sid, eid)): Path<(String, String)>,
    Query(q): Query<EntryQuery>,
) -> ApiResult<Response> {
    read_entry(state, sid, eid, q.log.unwrap_or(false)).await
}

/// An entry with its digest, its path digest and its parent's (`grove show --json`).
async fn proof(state: State, Path((sid, eid)): Path<(String, String)>) -> ApiResult<Response> {
    let proof = on_session(&state, sid, move |s| s.proof(&eid)).await?;
    Ok(raw_json(StatusCode::OK, crate::output::proof_json(&proof)))
}

/// The future of a GET on `entries/NAME`.
type EntryFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ApiResult<Response>> + Send>>;

/// A GET on `entries/NAME`, where NAME is also an append route.
fn entry_named(
    name: &'static str,
) -> impl Fn(State, Path<String>, Query<EntryQuery>) -> EntryFuture + Clone + Send + Sync + 'static
{
    move |state, Path(sid), Query(q)| {
        Box::pin(read_entry(
            state,
            sid,
            name.to_owned(),
            q.log.unwrap_or(false),
        ))
    }
}

async fn read_entry(state: State, sid: String, eid: String, any: bool) -> ApiResult<Response> {
    let store = state.store()?;
    let line = blocking(move || {
        let session = store.session(&sid)?;
        let entry = if any {
            session.log_record(&eid)?
        } else {
            session.entry(&eid)?
        };
        Ok(entry.line)
    })
    .await?;
    Ok(raw_json(StatusCode::OK, line))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChildrenQuery {
    parent: Option<String>,
}

async fn children(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<ChildrenQuery>,
) -> ApiResult<Response> {
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        let children = session.children(q.parent.as_deref())?;
        send_all(sink, children.into_iter().map(Ok), None, None)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FromQuery {
    from: Option<String>,
    /// As the session stood after this operation.
    #[serde(rename = "atOp")]
    at_op: Option<u64>,
    /// As the session stood at this time.
    #[serde(rename = "atTime")]
    at_time: Option<String>,
}

impl FromQuery {
    fn at(&mut self) -> ApiResult<Option<At>> {
        At::from_query(
            self.at_op,
            self.at_time.take(),
            self.from.as_ref().map(|_| "from"),
        )
    }
}

async fn branch(
    state: State,
    Path(sid): Path<String>,
    Query(mut q): Query<FromQuery>,
) -> ApiResult<Response> {
    let at = q.at()?;
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        match at {
            None => session.for_each_on_branch(q.from.as_deref(), &mut |e| send_one(sink, &e)),
            Some(at) => {
                let entries = session.branch_as_of(&at.resolve(&session)?)?;
                send_all(sink, entries.into_iter().map(Ok), None, None)
            }
        }
    })
    .await
}

async fn path(
    state: State,
    Path(sid): Path<String>,
    Query(mut q): Query<FromQuery>,
) -> ApiResult<Response> {
    let at = q.at()?;
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        match at {
            None => session.for_each_on_path(q.from.as_deref(), &mut |e| send_one(sink, &e)),
            Some(at) => {
                let entries = session.path_as_of(&at.resolve(&session)?)?;
                send_all(sink, entries.into_iter().map(Ok), None, None)
            }
        }
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ContextQuery {
    preset: Option<String>,
    leaf: Option<String>,
    /// `full` or `branch`: where the model, thinking level and tools come from.
    settings: Option<String>,
    /// `full` or `branch`: the path the entries are selected from.
    selection: Option<String>,
    /// `use` or `ignore`: a compaction's retained tail.
    retained_tail: Option<String>,
    /// `normalize` or `preserve`: messages whose content is null.
    null_content: Option<String>,
    /// Whether `activeToolNames` is reported.
    active_tools: Option<bool>,
    /// As the session stood after this operation.
    #[serde(rename = "atOp")]
    at_op: Option<u64>,
    /// As the session stood at this time.
    #[serde(rename = "atTime")]
    at_time: Option<String>,
}

/// `value` as one of `choices` (name, meaning), or `invalid_argument` naming `field`.
fn choice<T: Copy>(
    field: &str,
    value: Option<&str>,
    choices: &[(&str, T)],
) -> ApiResult<Option<T>> {
    let Some(value) = value else { return Ok(None) };
    choices
        .iter()
        .find(|(name, _)| *name == value)
        .map(|(_, v)| Some(*v))
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            ApiError::invalid_argument(format!(
                "{field} {value:?} is not one of {}",
                names.join(", ")
            ))
        })
}

async fn context(
    state: State,
    Path(sid): Path<String>,
    Query(mut q): Query<ContextQuery>,
) -> ApiResult<Response> {
    let at = At::from_query(q.at_op, q.at_time.take(), q.leaf.as_ref().map(|_| "leaf"))?;
    let presets = [
        ("grove", ContextOptions::grove()),
        ("harness", ContextOptions::pi_harness()),
        ("cli", ContextOptions::pi_cli()),
    ];
    let mut options =
        choice("preset", q.preset.as_deref(), &presets)?.unwrap_or(ContextOptions::grove());
    use grove::{NullContent, RetainedTail, SelectionPath, SettingsScope};
    let scopes = [
        ("full", SettingsScope::Full),
        ("branch", SettingsScope::Branch),
    ];
    if let Some(v) = choice("settings", q.settings.as_deref(), &scopes)? {
        options.settings_scope = v;
    }
    let paths = [
        ("full", SelectionPath::Full),
        ("branch", SelectionPath::Branch),
    ];
    if let Some(v) = choice("selection", q.selection.as_deref(), &paths)? {
        options.selection_path = v;
    }
    let tails = [("use", RetainedTail::Use), ("ignore", RetainedTail::Ignore)];
    if let Some(v) = choice("retainedTail", q.retained_tail.as_deref(), &tails)? {
        options.retained_tail = v;
    }
    let nulls = [
        ("normalize", NullContent::Normalize),
        ("preserve", NullContent::Preserve),
    ];
    if let Some(v) = choice("nullContent", q.null_content.as_deref(), &nulls)? {
        options.null_content = v;
    }
    if let Some(v) = q.active_tools {
        options.report_active_tools = v;
    }
    let store = state.store()?;
    json_stream(&state, move |sink| {
        let session = store.session(&sid)?;
        match at {
            None => session.write_context(q.leaf.as_deref(), options, &mut SinkWriter { sink }),
            Some(at) => {
                let context = session.context_as_of(&at.resolve(&session)?, options)?;
                // A client that went away has nothing more to be sent.
                let _ = sink.bytes(context.to_json().as_bytes());
                Ok(())
            }
        }
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TreeQuery {
    /// As the session stood after this operation.
    #[serde(rename = "atOp")]
    at_op: Option<u64>,
    /// As the session stood at this time.
    #[serde(rename = "atTime")]
    at_time: Option<String>,
}

async fn tree(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<TreeQuery>,
) -> ApiResult<Response> {
    let at = At::from_query(q.at_op, q.at_time, None)?;
    let tree = on_session(&state, sid, move |s| match at {
        None => s.tree(),
        Some(at) => s.tree_as_of(&at.resolve(s)?),
    })
    .await?;
    let nodes: Vec<Value> = tree
        .nodes
        .iter()
        .map(crate::output::tree_node_value)
        .collect();
    Ok(json_answer(
        StatusCode::OK,
        json!({ "nodes": nodes, "roots": tree.roots }),
    ))
}

async fn labels(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let labels = on_session(&state, sid, move |s| s.labels()).await?;
    let map: serde_json::Map<String, Value> = labels
        .into_iter()
        .map(|(target, l)| (target, Value::String(l.label)))
        .collect();
    Ok(json_answer(StatusCode::OK, Value::Object(map)))
}

async fn label(state: State, Path((sid, eid)): Path<(String, String)>) -> ApiResult<Response> {
    let label = on_session(&state, sid, move |s| s.label(&eid)).await?;
    Ok(json_answer(
        StatusCode::OK,
        json!({ "label": label.map(|l| l.label) }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LabelBody {
    target_id: String,
    label: Option<String>,
}

async fn set_label(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<LabelBody>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let id = blocking(move || {
        store
            .session(&sid)?
            .set_label(&body.target_id, body.label.as_deref())
    })
    .await?;
    Ok(json_answer(StatusCode::CREATED, json!({ "id": id })))
}

async fn name(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let name = on_session(&state, sid, move |s| s.name()).await?;
    Ok(json_answer(StatusCode::OK, json!({ "name": name })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameBody {
    name: String,
}

async fn set_name(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<NameBody>,
) -> ApiResult<Response> {
    let id = on_session(&state, sid, move |s| s.set_name(&body.name)).await?;
    Ok(json_answer(StatusCode::CREATED, json!({ "id": id })))
}

/// pi's `getSessionStats`: messages counted over every entry; the usage of assistant
/// messages, compactions and branch summaries whose five numbers are all present summed.
async fn stats(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let store = state.store()?;
    let stats = blocking(move || {
        let session = store.session(&sid)?;
        let mut s = Stats::default();
        for entry in session.entries() {
            s.add(&entry?.line);
        }
        Ok(s)
    })
    .await?;
    Ok(json_answer(
        StatusCode::OK,
        json!({
            "messageCount": stats.messages,
            "cachedTokens": stats.cached,
            "uncachedTokens": stats.uncached,
            "totalTokens": stats.total,
            "costTotal": stats.cost,
        }),
    ))
}

#[derive(Default)]
struct Stats {
    messages: u64,
    cached: f64,
    uncached: f64,
    total: f64,
    cost: f64,
}

impl Stats {
    fn add(&mut self, line: &str) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let usage = match v.get("type").and_then(Value::as_str) {
            Some("message") => {
                self.messages += 1;
                let m = v.get("message");
                match m.and_then(|m| m.get("role")).and_then(Value::as_str) {
                    Some("assistant") => m.and_then(|m| m.get("usage")),
                    _ => None,
                }
            }
            Some("compaction" | "branch_summary") => v.get("usage"),
            _ => None,
        };
        let Some(usage) = usage else { return };
        let num = |k: &str| usage.get(k).and_then(Value::as_f64);
        let cost = usage
            .get("cost")
            .and_then(|c| c.get("total"))
            .and_then(Value::as_f64);
        if let (Some(input), Some(output), Some(read), Some(write), Some(cost)) = (
            num("input"),
            num("output"),
            num("cacheRead"),
            num("cacheWrite"),
            cost,
        ) {
            self.cached += read;
            self.uncached += input + write;
            self.total += input + output + read + write;
            self.cost += cost;
        }
    }
}

async fn leaf(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let leaf = on_session(&state, sid, move |s| s.leaf()).await?;
    Ok(json_answer(StatusCode::OK, json!({ "leaf": leaf })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MoveBody {
    target: Option<String>,
    /// The mover's turn lease: the holder of a turn may move the leaf.
    lease: Option<String>,
}

async fn move_leaf(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<MoveBody>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let leaf = blocking(move || {
        let session = store.session(&sid)?;
        match &body.lease {
            None => session.move_to(body.target.as_deref())?,
            Some(lease) => session.move_in_turn(lease, body.target.as_deref())?,
        }
        session.leaf()
    })
    .await?;
    Ok(json_answer(StatusCode::OK, json!({ "leaf": leaf })))
}

async fn leaf_history(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let history = on_session(&state, sid, move |s| s.leaf_history()).await?;
    let rows: Vec<Value> = history
        .into_iter()
        .map(|(id, target)| json!({ "id": id, "target": target }))
        .collect();
    Ok(json_answer(StatusCode::OK, Value::Array(rows)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `METHOD /v1/...` pairs written in docs/api.md as code (a query string cut off).
    fn documented() -> std::collections::BTreeSet<(String, String)> {
        let doc = include_str!("../../../docs/api.md");
        let mut out = std::collections::BTreeSet::new();
        for piece in doc.split('`') {
            let mut words = piece.splitn(2, ' ');
            let (Some(method), Some(path)) = (words.next(), words.next()) else {
                continue;
            };
            if ["GET", "POST", "PUT", "DELETE"].contains(&method) && path.starts_with("/v1/") {
                let path = path.split(['?', ' ']).next().unwrap_or_default();
                out.insert((method.to_owned(), path.to_owned()));
            }
        }
        out
    }

    #[test]
    fn every_route_is_documented_and_every_documented_route_is_served() {
        let served: std::collections::BTreeSet<(String, String)> = ROUTES
            .iter()
            .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
            .collect();
        let documented = documented();
        let undocumented: Vec<_> = served.difference(&documented).collect();
        assert!(
            undocumented.is_empty(),
            "served but not in docs/api.md: {undocumented:?}"
        );
        let unserved: Vec<_> = documented.difference(&served).collect();
        assert!(
            unserved.is_empty(),
            "in docs/api.md but not served: {unserved:?}"
        );
        for (method, path) in ROUTES {
            assert!(
                handler(method, path).is_some(),
                "{method} {path} has no handler"
            );
        }
    }
}

// ---- turns and navigation ----

/// The longest turn lease a client may ask for.
const MAX_TTL: std::time::Duration = std::time::Duration::from_secs(3600);
/// The turn lease of a client that does not say.
const DEFAULT_TTL: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TurnBody {
    ttl_ms: Option<u64>,
}

async fn begin_turn(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<TurnBody>,
) -> ApiResult<Response> {
    let ttl = body
        .ttl_ms
        .map_or(DEFAULT_TTL, std::time::Duration::from_millis);
    if ttl.is_zero() || ttl > MAX_TTL {
        return Err(ApiError::invalid_argument(format!(
            "ttlMs must be between 1 and {}",
            MAX_TTL.as_millis()
        )));
    }
    let store = state.store()?;
    // The engine keeps the lease (in the database, for a store processes share), so that any
    // node of the server renews, ends or moves with it; the guard is let go of, not dropped.
    let lease = blocking(move || Ok(store.session(&sid)?.begin_turn_for(ttl)?.detach())).await?;
    Ok(json_answer(
        StatusCode::CREATED,
        json!({ "lease": lease, "ttlMs": ttl.as_millis() as u64 }),
    ))
}

fn no_lease(sid: &str, lease: &str) -> ApiError {
    ApiError::not_found(format!(
        "no turn lease {lease} on session {sid} (it ended or expired)"
    ))
}

async fn renew_turn(
    state: State,
    Path((sid, lease)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let (sid_, lease_) = (sid.clone(), lease.clone());
    if blocking(move || store.session(&sid_)?.renew_turn(&lease_)).await? {
        Ok(json_answer(StatusCode::OK, json!({ "lease": lease })))
    } else {
        Err(no_lease(&sid, &lease))
    }
}

async fn end_turn(
    state: State,
    Path((sid, lease)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let store = state.store()?;
    let (sid_, lease_) = (sid.clone(), lease.clone());
    if blocking(move || store.session(&sid_)?.end_turn(&lease_)).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(no_lease(&sid, &lease))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NavigateBody {
    target: String,
    #[serde(default)]
    summarize: bool,
    /// The summary text itself, as a navigation hook would supply it.
    summary: Option<String>,
    instructions: Option<String>,
    #[serde(default)]
    replace_instructions: bool,
    label: Option<String>,
    preset: Option<String>,
}

/// Supplies the summary text given in the request.
struct GivenSummary(String);

impl grove::NavigateHook for GivenSummary {
    fn before_navigate(
        &self,
        _event: &grove::NavigateEvent<'_>,
    ) -> std::result::Result<Option<grove::HookDecision>, String> {
        Ok(Some(grove::HookDecision {
            summary: Some(grove::HookSummary {
                summary: self.0.clone(),
                ..grove::HookSummary::default()
            }),
            ..grove::HookDecision::default()
        }))
    }
}

async fn navigate(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<NavigateBody>,
) -> ApiResult<Response> {
    let presets = [("grove", PathMode::Full), ("harness", PathMode::Branch)];
    let path_mode = choice("preset", body.preset.as_deref(), &presets)?.unwrap_or(PathMode::Full);
    let store = state.store()?;
    let summarizer = state.inner.summarizer.clone();
    let outcome = blocking(move || {
        let session = store.session(&sid)?;
        let hook = body.summary.clone().map(GivenSummary);
        let navigator = Navigator {
            hooks: hook.iter().map(|h| h as &dyn grove::NavigateHook).collect(),
            summarizer: summarizer.as_deref(),
            path_mode,
            ..Navigator::default()
        };
        let options = NavigateOptions {
            summarize: body.summarize,
            custom_instructions: body.instructions.clone(),
            replace_instructions: body.replace_instructions,
            label: body.label.clone(),
        };
        let outcome = session.navigate(&body.target, &options, &navigator)?;
        Ok((outcome, session.leaf()?))
    })
    .await?;
    let answer = match outcome {
        (NavigateOutcome::NoOp, leaf) => json!({ "oldLeafId": leaf, "newLeafId": leaf }),
        (NavigateOutcome::Cancelled { aborted }, _) => {
            json!({ "cancelled": true, "aborted": aborted })
        }
        (
            NavigateOutcome::Moved {
                old_leaf,
                new_leaf,
                summary_entry,
                editor_text,
                ..
            },
            _,
        ) => json!({
            "oldLeafId": old_leaf,
            "newLeafId": new_leaf,
            "summaryEntryId": summary_entry,
            "editorText": editor_text,
        }),
        // The engine's outcome is non-exhaustive: a new kind is reported, not dropped.
        #[allow(unreachable_patterns)]
        (other, leaf) => json!({ "outcome": format!("{other:?}"), "newLeafId": leaf }),
    };
    Ok(json_answer(StatusCode::OK, answer))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdsBody {
    count: usize,
}

/// At most this many fresh ids per request.
const MAX_IDS: usize = 1024;

async fn fresh_ids(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<IdsBody>,
) -> ApiResult<Response> {
    if body.count == 0 || body.count > MAX_IDS {
        return Err(ApiError::invalid_argument(format!(
            "count must be between 1 and {MAX_IDS}"
        )));
    }
    let ids = on_session(&state, sid, move |s| s.fresh_ids(body.count)).await?;
    Ok(json_answer(StatusCode::OK, json!({ "ids": ids })))
}
