//! A server started on a disk with less free space than the store's reserve (docs/design.md,
//! "A full disk"): the engine refuses to open a store for writing there, since its backend
//! writes at open. The server opens it to read instead and serves reads; every write request
//! is answered with the engine's `DiskFull` error (`storage`), naming the free space now,
//! rather than the server refusing to start. This room owns that mode: what it remembers of
//! the refused open, the answer to a write, and the way out of it.
//!
//! Writes come back without a restart: [`reopen_when_room`] looks at the free space every
//! [`CHECK`], and once the reserve is free it swaps the store. The store opened to read must
//! be closed first (it holds the store's lock, and sled's may be a private copy), so the
//! stores are taken out of the server's state ([`State::take_stores`]): requests that begin
//! then wait for the swap (writes still get `DiskFull` at once), followed replays end (their
//! clients resume from their last operation), and the requests in flight are given
//! [`DRAIN`] to let go of the store ([`grove::Store::handles`]). Then it is closed and the
//! store opened for writing and served. When requests still hold it after [`DRAIN`] (streamed
//! reads to slow clients), it is served again and the next try is after [`BACKOFF`]; when the
//! open for writing fails (the disk filled again), the store is opened to read again and
//! served, and the next look is after [`CHECK`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::api::ApiError;
use super::state::{FullDisk, State};
use super::stores::Stores;
use crate::env::StoreOpener;

/// The routes that are posted to but write nothing.
fn reads(path: &str) -> bool {
    path == "/v1/verify" || path.ends_with("/seal/check")
}

/// On a server started on a full disk, answers every write request with `DiskFull`.
pub async fn refuse_writes(state: State, req: Request, next: Next) -> Response {
    let write = !matches!(*req.method(), Method::GET | Method::HEAD) && !reads(req.uri().path());
    match state.full_disk() {
        Some(full) if write => ApiError::from(full.error()).into_response(),
        _ => next.run(req).await,
    }
}

/// How often the free space is looked at while the store is open only to read.
pub const CHECK: Duration = Duration::from_secs(1);

/// The longest the requests in flight are given to let go of the store opened to read before
/// it is closed (meanwhile new requests wait).
pub const DRAIN: Duration = Duration::from_secs(5);

/// The wait before another try when requests held the store past [`DRAIN`].
pub const BACKOFF: Duration = Duration::from_secs(30);

/// What opens the store again: for writing, and (when that fails) to read.
pub struct Openers {
    pub write: StoreOpener,
    pub read: StoreOpener,
}

/// How a try at reopening the store for writing ended.
enum Tried {
    /// The store is open for writing and served.
    Reopened,
    /// Requests held the store opened to read past [`DRAIN`]; it is served again.
    Held,
    /// The open for writing failed.
    Failed,
}

/// Reopens the store for writing once its disk has the reserve free, then ends (or when the
/// server stops). See the module's docs.
pub async fn reopen_when_room(state: State, full: FullDisk, openers: Openers) {
    let openers = Arc::new(openers);
    let mut stopping = state.stopping();
    let mut wait = CHECK;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stopping.wait_for(|stopped| *stopped) => return,
        }
        wait = CHECK;
        if !full.has_room() {
            // An earlier try closed the store and could not open it to read: try again.
            if state.current_stores().is_none() {
                serve_to_read(&state, &full, &openers).await;
            }
            continue;
        }
        match reopen(&state, &full, &openers).await {
            Tried::Reopened => return,
            Tried::Held => wait = BACKOFF,
            Tried::Failed => serve_to_read(&state, &full, &openers).await,
        }
    }
}

/// One try: takes the store out, waits for the requests holding it, closes it and opens it
/// for writing.
async fn reopen(state: &State, full: &FullDisk, openers: &Arc<Openers>) -> Tried {
    let dir = full.dir.display();
    let old = state.take_stores();
    if let Some(Stores::One(store)) = &old {
        if !drained(store, DRAIN).await {
            eprintln!(
                "grove serve: {dir} has room again, but requests still read the store \
                 opened to read after {} s; serving reads, trying again in {} s",
                DRAIN.as_secs(),
                BACKOFF.as_secs()
            );
            if let Some(old) = old {
                state.put_stores(old);
            }
            return Tried::Held;
        }
    }
    let opener = openers.clone();
    // Closing the store (sled's private copy is removed) and opening it touch the disk.
    let opened = tokio::task::spawn_blocking(move || {
        drop(old);
        (opener.write)()
    })
    .await;
    match opened {
        Ok(Ok(store)) => {
            state.put_stores(Stores::One(store));
            state.clear_full_disk();
            eprintln!("grove serve: {dir} has room again: the store is open for writing");
            Tried::Reopened
        }
        Ok(Err(e)) => {
            eprintln!("grove serve: reopening {dir} for writing failed: {e}; serving reads");
            Tried::Failed
        }
        Err(e) => {
            eprintln!("grove serve: reopening {dir} for writing failed inside the server: {e}");
            Tried::Failed
        }
    }
}

/// Whether the requests in flight let go of `store` (taken out of the state: its own handle is
/// the last) within `within`.
pub async fn drained(store: &grove::Store, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while store.handles() > 1 {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// Opens the store to read again and serves it; on failure requests keep waiting (and are
/// answered `503 busy`) until a later try succeeds.
async fn serve_to_read(state: &State, full: &FullDisk, openers: &Arc<Openers>) {
    let opener = openers.clone();
    match tokio::task::spawn_blocking(move || (opener.read)()).await {
        Ok(Ok(store)) => state.put_stores(Stores::One(store)),
        Ok(Err(e)) => eprintln!(
            "grove serve: opening {} to read failed: {e}; trying again in {} s",
            full.dir.display(),
            CHECK.as_secs()
        ),
        Err(e) => eprintln!(
            "grove serve: opening {} to read failed inside the server: {e}",
            full.dir.display()
        ),
    }
}
