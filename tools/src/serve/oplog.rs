//! The operation log over HTTP (docs/api.md, "Operations"): a session's operations newest
//! first, undo, the seal and its check, the replay stream (followed as long as the client
//! stays and the server runs), and the point in time (`atOp=N` or `atTime=TIME`) the reads
//! of context, branch, path and tree may ask for. This room owns those routes and the
//! parsing of a point in time; the reads themselves stay in `routes`, which call [`At`].
//! Operations and seals are written as the CLI's `--json` writes them
//! (`output::operation_value`, `seal_value`, `seal_check_value`).

use axum::http::StatusCode;
use axum::response::Response;
use grove::{PointInTime, Session};
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::{ApiError, ApiResult, Body, Path, Query};
use super::routes::{blocking, json_answer, State};
use super::stream::ndjson;
use crate::output::{operation_value, seal_check_value, seal_value};

/// A point in time a read asks for.
#[derive(Debug, Clone)]
pub(super) enum At {
    /// After operation N.
    Op(u64),
    /// After the last operation committed at or before this RFC 3339 time.
    Time(String),
}

impl At {
    /// The point in time of a read's query (`atOp`, `atTime`; neither: now). `start` names
    /// the read's own start field (`leaf`, `from`) when the query gives it: a start names a
    /// position now, so it is refused with a point in time.
    pub(super) fn from_query(
        at_op: Option<u64>,
        at_time: Option<String>,
        start: Option<&str>,
    ) -> ApiResult<Option<At>> {
        let at = match (at_op, at_time) {
            (None, None) => return Ok(None),
            (Some(op), None) => At::Op(op),
            (None, Some(time)) => At::Time(time),
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_argument(
                    "atOp and atTime name two points in time; give one",
                ))
            }
        };
        if let Some(field) = start {
            return Err(ApiError::invalid_argument(format!(
                "{field} cannot be given with atOp or atTime: the read starts at the leaf \
                 the session had then"
            )));
        }
        Ok(Some(at))
    }

    /// The session as it stood then (`not_found` for an operation it does not have, or a
    /// time before its first operation).
    pub(super) fn resolve(&self, session: &Session) -> grove::Result<PointInTime> {
        match self {
            At::Op(op) => session.at_op(*op),
            At::Time(time) => session.at_time(time),
        }
    }
}

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
        return super::follow::follow(state, store, sid, options).await;
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
