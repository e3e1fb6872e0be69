//! Rewriting the files of the store served, so that no page keeps a redacted byte
//! (docs/design.md, "Redaction"): `POST /v1/gc?rewrite=true` on a store in a directory (sled,
//! redb) closes the store, rewrites its files (`grove::Store::rewrite`: every live key copied
//! into fresh files that take the directory's place) and opens it again, without a restart.
//! It pauses every request, so it runs only when asked. As a full disk's reopening does (`full_disk.rs`), the stores are taken out of the
//! server's state: requests that begin meanwhile wait for them, followed replays end (their
//! clients resume from their last operation), and the requests in flight are given
//! [`DRAIN`] to let go of the store; when they hold it longer, it is served again as it was
//! and the gc answers `rewriteDue` (the next gc tries again).
//!
//! Calls the server's state and `full_disk::drained`, and the engine's `Store::rewrite`.

use std::sync::Arc;
use std::time::Duration;

use super::full_disk::drained;
use super::state::{Rewriter, State};
use super::stores::Stores;

/// The longest the requests in flight are given to let go of the store before its files are
/// rewritten (meanwhile new requests wait).
pub const DRAIN: Duration = Duration::from_secs(5);

/// How often a store that would not open again after its rewrite is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// Closes the store served, rewrites its files and serves it opened again: what the rewrite
/// did, or why it did not happen (the store is served either way, as soon as it opens).
pub async fn rewrite(
    state: &State,
    rewriter: &Arc<Rewriter>,
) -> Result<grove::RewriteReport, String> {
    let Some(old) = state.take_stores() else {
        return Err("the store is being reopened".to_owned());
    };
    // (Sharded stores exist only with the `postgres` feature.)
    #[allow(irrefutable_let_patterns)]
    let Stores::One(store) = &old
    else {
        state.put_stores(old);
        return Err("sessions are sharded over several stores".to_owned());
    };
    if !drained(store, DRAIN).await {
        state.put_stores(old);
        return Err(format!(
            "requests still held the store after {} s; its files were not rewritten",
            DRAIN.as_secs()
        ));
    }
    let job = rewriter.clone();
    let done = tokio::task::spawn_blocking(move || {
        drop(old);
        let rewritten = grove::Store::rewrite(&job.config);
        (rewritten, (job.open)())
    })
    .await;
    match done {
        Ok((rewritten, Ok(store))) => {
            state.put_stores(Stores::One(store));
            rewritten.map_err(|e| format!("rewriting the store's files failed: {e}"))
        }
        Ok((_, Err(e))) => {
            eprintln!(
                "grove serve: opening the store again after rewriting its files failed: {e}; \
                 trying again every {} s",
                RETRY.as_secs()
            );
            tokio::spawn(open_again(state.clone(), rewriter.clone()));
            Err(format!("opening the store again failed: {e}"))
        }
        Err(e) => Err(format!(
            "rewriting the store's files failed inside the server: {e}"
        )),
    }
}

/// Tries to open the store every [`RETRY`] until it opens (requests wait meanwhile, and are
/// answered `busy` after a while) or the server stops.
async fn open_again(state: State, rewriter: Arc<Rewriter>) {
    let mut stopping = state.stopping();
    loop {
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            _ = stopping.wait_for(|stopped| *stopped) => return,
        }
        let job = rewriter.clone();
        if let Ok(Ok(store)) = tokio::task::spawn_blocking(move || (job.open)()).await {
            state.put_stores(Stores::One(store));
            eprintln!("grove serve: the store is open again");
            return;
        }
    }
}
