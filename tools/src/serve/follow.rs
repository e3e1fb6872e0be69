//! Followed replays (`GET .../replay?follow=true`): a stream that stays open at the end of a
//! session's log and carries each new operation as it is committed, until `untilOp`, the
//! client leaving, the server stopping, or the store being reopened for writing (a server
//! started on a full disk, once there is room: `full_disk.rs`).
//!
//! A follower holds no thread while it waits: a task awaits the store's commit notice
//! ([`grove::Store::on_commit`]) and runs only the short reads of what was written, without
//! waiting, on the blocking pool. On a shared backend, whose other nodes' commits send no
//! notice here, it also reads every [`SHARED_CHECK`]. While nothing is written it sends an
//! empty line every `--keepalive` (clients skip blank lines): writing is what finds a client
//! that went away without closing cleanly, and its stream, socket and task are then dropped.
//! Followers at once are capped by `--max-followers` (`503 busy` over it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use grove::{Poll, Replay, ReplayOptions, Store};
use tokio::sync::{mpsc, Notify};

use super::api::{ApiError, ApiResult};
use super::state::{blocking, State};

/// How often a follower on a shared backend reads the log though it was not notified.
const SHARED_CHECK: Duration = Duration::from_millis(250);
/// Bytes read before they are handed to the connection.
const CHUNK: usize = 64 << 10;
/// Chunks in flight between the follower and the connection.
const DEPTH: usize = 8;

/// What one read of the log brought.
struct Read {
    bytes: Vec<u8>,
    /// The replay is over (`untilOp` reached).
    end: bool,
    /// It stopped at [`CHUNK`] bytes: the log has more.
    more: bool,
}

/// `GET .../replay?follow=true` of session `sid` in `store`.
pub(super) async fn follow(
    state: State,
    store: Store,
    sid: String,
    options: ReplayOptions,
) -> ApiResult<Response> {
    let place = state.limits().follower()?;
    // Before the replay holds the store: a reopening that begins during its first read is seen.
    let mut reopened = state.store_changes();
    // Listening before the replay starts: no commit after its first read goes unnoticed.
    let woken = Arc::new(Notify::new());
    let wake = woken.clone();
    let listener: Arc<grove::CommitListener> = Arc::new(move || wake.notify_one());
    store.on_commit(&listener);
    let check = if store.is_shared() {
        SHARED_CHECK.min(state.limits().keepalive)
    } else {
        state.limits().keepalive
    };
    let replay = blocking(move || store.session(&sid)?.replay(options)).await?;
    let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(DEPTH);
    let keepalive = state.limits().keepalive;
    let mut stopping = state.stopping();
    tokio::spawn(async move {
        // Held for as long as the stream runs.
        let _place = place;
        let _listener = listener;
        let mut replay = replay;
        let mut last_sent = Instant::now();
        loop {
            let read = tokio::task::spawn_blocking(move || {
                let read = read_now(&mut replay);
                (replay, read)
            })
            .await;
            let read = match read {
                Ok((r, read)) => {
                    replay = r;
                    read
                }
                Err(e) => {
                    let e = format!("the replay failed inside the server: {e}");
                    let _ = tx.send(Err(std::io::Error::other(e))).await;
                    return;
                }
            };
            match read {
                Ok(read) => {
                    if !read.bytes.is_empty() {
                        if tx.send(Ok(Bytes::from(read.bytes))).await.is_err() {
                            return;
                        }
                        last_sent = Instant::now();
                    }
                    if read.end {
                        return;
                    }
                    if read.more {
                        continue;
                    }
                }
                Err(e) => {
                    // After the status: the client sees a broken stream, not a short one.
                    let _ = tx.send(Err(std::io::Error::other(e))).await;
                    return;
                }
            }
            // Caught up: wait for a commit, the time of a keep-alive line or a check, the
            // client leaving, the server stopping, or the store being reopened.
            let quiet = keepalive.saturating_sub(last_sent.elapsed());
            let quiet_for_long = tokio::select! {
                () = woken.notified() => false,
                () = tokio::time::sleep(check.min(quiet)) => last_sent.elapsed() >= keepalive,
                () = tx.closed() => return,
                _ = stopping.wait_for(|stopped| *stopped) => return,
                // The store is reopened for writing (`full_disk.rs`): the stream ends, and
                // with it this replay's hold on the old store; the client resumes from its
                // last operation.
                _ = reopened.changed() => return,
            };
            if quiet_for_long {
                if tx.send(Ok(Bytes::from_static(b"\n"))).await.is_err() {
                    return;
                }
                last_sent = Instant::now();
            }
        }
    });
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        body,
    )
        .into_response())
}

/// Reads what the log holds now, without waiting, up to about [`CHUNK`] bytes of lines.
fn read_now(replay: &mut Replay) -> Result<Read, String> {
    let mut bytes = Vec::new();
    loop {
        match replay.poll(Duration::ZERO) {
            Ok(Poll::Event(event)) => {
                bytes.extend_from_slice(event.to_json().as_bytes());
                bytes.push(b'\n');
                if bytes.len() >= CHUNK {
                    return Ok(Read {
                        bytes,
                        end: false,
                        more: true,
                    });
                }
            }
            Ok(Poll::Idle) => {
                return Ok(Read {
                    bytes,
                    end: false,
                    more: false,
                })
            }
            Ok(Poll::End) => {
                return Ok(Read {
                    bytes,
                    end: true,
                    more: false,
                })
            }
            Err(e) => return Err(ApiError::from(e).message),
        }
    }
}
