//! The server's state, as every route and middleware sees it ([`State`]), and what every
//! handler uses to run its engine calls and answer: the blocking pool ([`blocking`],
//! [`on_session`], [`writing`]) and JSON answers ([`json_answer`], [`raw_json`]). This is the
//! bottom of the routes: it owns the stores served (swapped when a store opened to read on a
//! full disk is reopened for writing), the limits, the write requests in flight
//! ([`Writes`]), what the server remembers of a refused open ([`FullDisk`]), and how a
//! request becomes a `State` and reads its body (`extract.rs`). It calls the engine's public
//! API, and of the server only what lies below it: `api` (errors and extractor types), `depth`,
//! `limits` and `stores`; no route module.

mod disk;
mod extract;
mod run;
mod writes;

use std::sync::Arc;

use axum::http::StatusCode;
use grove::summary::Summarizer;
use grove::{Durability, Store};

use super::api::{ApiError, ApiResult};
use super::limits::{self, Limits};
use super::stores::Stores;
pub use disk::FullDisk;
pub(in crate::serve) use extract::{checked, parsed};
pub use run::{
    blocking, json_answer, on_session, raw_json, writing, INLINE, OVERLAPPED, PIECEWISE,
};
pub use writes::Writes;

/// What every handler shares, as one request sees it: a handler takes `State` itself (not
/// `axum::extract::State<State>`), whose store stamps the request's writes with its client's
/// name (`Grove-Client`, `api::client_name`; `server` without one) and, sharded, is
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
    /// How the store's files are rewritten when a redaction asks (`POST /v1/gc`); `None` for
    /// a store not in a directory, a store opened to read, and an embedded server.
    rewriter: Option<Arc<Rewriter>>,
}

/// What rewrites the files of the store served (`grove::Store::rewrite`, with the store
/// closed: `serve/rewrite.rs`) and opens it again for writing.
pub struct Rewriter {
    /// The store's configuration.
    pub config: grove::StoreConfig,
    /// Opens it again for writing.
    pub open: crate::env::StoreOpener,
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
        rewriter: Option<Rewriter>,
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
                rewriter: rewriter.map(Arc::new),
            }),
        }
    }

    /// The server is stopping: followed streams end.
    pub fn stop(&self) {
        self.inner.stopping.send_replace(true);
    }

    /// Changes to `true` when the server stops.
    pub(in crate::serve) fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.stopping.subscribe()
    }

    /// Changes when the stores served are taken to be reopened: a stream that holds a store
    /// for long (a followed replay) ends then, so that the store can be closed.
    pub(in crate::serve) fn store_changes(&self) -> tokio::sync::watch::Receiver<Option<Stores>> {
        let mut changes = self.inner.stores.subscribe();
        // Taken out already, since this request began: that is a change too.
        if changes.borrow().is_none() {
            changes.mark_changed();
        }
        changes
    }

    /// The server's limits.
    pub(in crate::serve) fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The server's limits, to keep (a middleware's).
    pub(in crate::serve) fn shared_limits(&self) -> Arc<Limits> {
        self.inner.limits.clone()
    }

    /// The summarizer of navigations that ask for a summary (`--summarizer-cmd`, ...).
    pub(in crate::serve) fn summarizer(&self) -> Option<Arc<dyn Summarizer>> {
        self.inner.summarizer.clone()
    }

    /// The write requests in flight.
    pub(in crate::serve) fn writes(&self) -> &Writes {
        &self.inner.writes
    }

    /// Whether the store's disk is too full to open it for writing ([`FullDisk`]).
    pub(in crate::serve) fn full_disk(&self) -> Option<FullDisk> {
        self.inner.full_disk.lock().clone()
    }

    /// Writes are no longer refused: the store was reopened for writing.
    pub(in crate::serve) fn clear_full_disk(&self) {
        *self.inner.full_disk.lock() = None;
    }

    /// What rewrites the store's files, if the server can ([`Rewriter`]).
    pub(in crate::serve) fn rewriter(&self) -> Option<Arc<Rewriter>> {
        self.inner.rewriter.clone()
    }

    /// This state without the stores this request is served by (the router's own): what a
    /// handler keeps when it must let go of its store (a rewrite waits for every handle).
    pub(in crate::serve) fn detached(&self) -> State {
        State {
            inner: self.inner.clone(),
            stores: None,
            store: None,
        }
    }

    /// Whether sessions are sharded over several stores.
    pub(in crate::serve) fn is_sharded(&self) -> bool {
        self.inner.sharded
    }

    /// The stores served now (`None` while they are being reopened), for the server itself
    /// (its reopening and its shutdown), not a request.
    pub(in crate::serve) fn current_stores(&self) -> Option<Stores> {
        self.inner.stores.borrow().clone()
    }

    /// Takes the stores served out, to reopen them: requests that begin now wait (at most
    /// [`REOPEN_WAIT`]) until [`State::put_stores`], and followed replays end.
    pub(in crate::serve) fn take_stores(&self) -> Option<Stores> {
        self.inner.stores.send_replace(None)
    }

    /// Serves `stores` from now on.
    pub(in crate::serve) fn put_stores(&self, stores: Stores) {
        self.inner.stores.send_replace(Some(stores));
    }

    /// The store of this request, stamping operations with its client.
    pub(in crate::serve) fn store(&self) -> ApiResult<Store> {
        self.store.clone().ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "this route names no session, and sessions are sharded over several stores",
            )
        })
    }

    /// The stores this request is served by.
    pub(in crate::serve) fn stores(&self) -> ApiResult<&Stores> {
        self.stores.as_ref().ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "the server's own state has no stores; a request's has",
            )
        })
    }

    /// The store of this request, if it has one (not a sharded request naming no session).
    pub(in crate::serve) fn routed(&self) -> Option<Store> {
        self.store.clone()
    }

    /// The actor of this request's operations.
    pub(in crate::serve) fn actor(&self) -> String {
        self.store
            .as_ref()
            .map_or_else(|| DEFAULT_CLIENT.to_owned(), |s| s.actor().to_owned())
    }

    /// This state as a request from client `name` (none: [`DEFAULT_CLIENT`]) on session
    /// `sid` (if its path names one) sees it; `write` says whether the request writes. While
    /// the stores are being reopened it waits for them, at most [`REOPEN_WAIT`] (then
    /// `503 busy`).
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    pub(in crate::serve) async fn for_request(
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
            limits::busy("the store is being reopened for writing; try again later")
        })?;
        let name = name.unwrap_or(DEFAULT_CLIENT);
        let store = match (&stores, sid) {
            (Stores::One(store), _) => Some(store.with_actor(name)),
            #[cfg(feature = "postgres")]
            (Stores::Sharded(_), None) => None,
            #[cfg(feature = "postgres")]
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
    pub(in crate::serve) fn for_new_session(
        &self,
        id: Option<String>,
    ) -> ApiResult<(Store, Option<String>)> {
        let (store, id) = self.stores()?.for_new_session(id)?;
        Ok((store.with_actor(&self.actor()), id))
    }

    /// The durability every acknowledged write has (`--durability`).
    pub(in crate::serve) fn durability(&self) -> Durability {
        self.inner.durability
    }
}

/// The actor of a request that names no client.
pub const DEFAULT_CLIENT: &str = "server";
