//! The routes of docs/api.md's "Operations": a session's operations newest first, undo,
//! redaction and the list of redactions, the seal and its check, and the replay stream
//! (followed as long as the client stays and the server runs: `serve/follow.rs`). This room owns those routes. Operations and seals are
//! written as the CLI's `--json` writes them (`output::operation_value`, `seal_value`,
//! `seal_check_value`). It calls the engine's public API, the state (the blocking pool, JSON
//! answers), `api`, `stream`, `follow` and `output`.

use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::output::{operation_value, redaction_value, seal_check_value, seal_value};
use crate::serve::api::{ApiError, ApiResult, Body, Path, Query};
use crate::serve::state::{blocking, json_answer, State};
use crate::serve::stream::ndjson;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OperationsQuery {
    limit: Option<usize>,
}

/// `GET .../operations`: newest first, at most `limit`.
pub(super) async fn operations(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<OperationsQuery>,
) -> ApiResult<Response> {
    if q.limit == Some(0) {
        return Err(ApiError::invalid_argument("limit must be at least 1"));
    }
    let limit = q.limit.unwrap_or(usize::MAX);
    let store = state.store()?;
    let ops = blocking(move || store.session(&sid)?.operations()).await?;
    let ops: Vec<Value> = ops.iter().rev().take(limit).map(operation_value).collect();
    Ok(json_answer(StatusCode::OK, json!({ "operations": ops })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UndoBody {
    #[serde(rename = "toOp")]
    to_op: Option<u64>,
}

/// `POST .../undo`: the leaf back to where it was before the last operation (or `to_op`),
/// recorded as an operation; the answer is that operation.
pub(super) async fn undo(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<UndoBody>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let op = blocking(move || store.session(&sid)?.undo(body.to_op)).await?;
    Ok(json_answer(StatusCode::OK, operation_value(&op)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RedactBody {
    #[serde(rename = "entryId")]
    entry_id: String,
    path: Option<String>,
    reason: String,
}

/// `POST .../redact`: the value at `path` of entry `entryId` (or its whole content) replaced
/// by the redaction marker, recorded as an operation; the answer is the redaction.
pub(super) async fn redact(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<RedactBody>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let redaction = blocking(move || {
        store
            .session(&sid)?
            .redact(&body.entry_id, body.path.as_deref(), &body.reason)
    })
    .await?;
    Ok(json_answer(StatusCode::OK, redaction_value(&redaction)))
}

/// `GET .../redactions`: the session's redactions, oldest first.
pub(super) async fn redactions(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let store = state.store()?;
    let found = blocking(move || store.session(&sid)?.redactions()).await?;
    let list: Vec<Value> = found.iter().map(redaction_value).collect();
    Ok(json_answer(StatusCode::OK, json!({ "redactions": list })))
}

/// `GET .../seal`.
pub(super) async fn seal(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let store = state.store()?;
    let seal = blocking(move || store.session(&sid)?.seal()).await?;
    Ok(json_answer(StatusCode::OK, seal_value(&seal)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckBody {
    digest: String,
}

/// `POST .../seal/check`: whether the session still extends a seal.
pub(super) async fn check_seal(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<CheckBody>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let check = blocking(move || store.session(&sid)?.check_seal(&body.digest)).await?;
    Ok(json_answer(StatusCode::OK, seal_check_value(&check)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReplayQuery {
    #[serde(rename = "fromOp")]
    from_op: Option<u64>,
    #[serde(rename = "untilOp")]
    until_op: Option<u64>,
    follow: Option<bool>,
}

/// `GET .../replay`: the session's history as JSON lines (`grove replay`); with
/// `follow=true`, new operations as they are committed, until `untilOp`, the client leaves,
/// or the server stops (`follow.rs`).
pub(super) async fn replay(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<ReplayQuery>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let options = grove::ReplayOptions {
        from_op: q.from_op,
        until_op: q.until_op,
        follow: q.follow.unwrap_or(false),
        ..grove::ReplayOptions::default()
    };
    if options.follow {
        return crate::serve::follow::follow(state, store, sid, options).await;
    }
    ndjson(&state, move |sink| {
        for event in store.session(&sid)?.replay(options)? {
            if !sink.line(&event?.to_json()) {
                return Ok(());
            }
        }
        Ok(())
    })
    .await
}
