//! A server started on a disk with less free space than the store's reserve (docs/design.md,
//! "A full disk"): the engine refuses to open a store for writing there, since its backend
//! writes at open. The server opens it to read instead and serves reads; every write request
//! is answered with the engine's `DiskFull` error (`storage`), naming the free space now,
//! rather than the server refusing to start. This room owns that mode: what it remembers of
//! the refused open and the answer to a write.

use std::path::PathBuf;

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use grove::GroveError;

use super::api::ApiError;
use super::routes::State;

/// The open for writing the disk refused at start.
#[derive(Debug, Clone)]
pub struct FullDisk {
    /// The store directory.
    pub dir: PathBuf,
    /// The free space a writer needs there (the reserve).
    pub reserve: u64,
}

impl FullDisk {
    /// The error a write gets, with the free space now.
    pub fn error(&self) -> GroveError {
        GroveError::DiskFull {
            dir: self.dir.clone(),
            needed: 0,
            required: self.reserve,
            available: fs2::available_space(&self.dir).unwrap_or(0),
        }
    }
}

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
