//! The routes of docs/api.md's "The leaf" and "Turns and navigation": the leaf (read, moved,
//! its history), turn leases (begun, renewed, ended; kept by the engine, so that any node of
//! the server honours them), and navigation with an optional branch summary (the server's
//! summarizer, or the text the request gives). This room owns those routes. It calls the
//! engine's public API, the state (the blocking pool, the summarizer, JSON answers) and
//! `api`.

use axum::http::StatusCode;
use axum::response::Response;
use grove::summary::PathMode;
use grove::{NavigateOptions, NavigateOutcome, Navigator};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::serve::api::{choice, ApiError, ApiResult, Body, Path};
use crate::serve::state::{blocking, json_answer, on_session, State};

pub(super) async fn leaf(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let leaf = on_session(&state, sid, move |s| s.leaf()).await?;
    Ok(json_answer(StatusCode::OK, json!({ "leaf": leaf })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MoveBody {
    target: Option<String>,
    /// The mover's turn lease: the holder of a turn may move the leaf.
    lease: Option<String>,
}

pub(super) async fn move_leaf(
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

pub(super) async fn leaf_history(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let history = on_session(&state, sid, move |s| s.leaf_history()).await?;
    let rows: Vec<Value> = history
        .into_iter()
        .map(|(id, target)| json!({ "id": id, "target": target }))
        .collect();
    Ok(json_answer(StatusCode::OK, Value::Array(rows)))
}

/// The longest turn lease a client may ask for.
const MAX_TTL: std::time::Duration = std::time::Duration::from_secs(3600);
/// The turn lease of a client that does not say.
const DEFAULT_TTL: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct TurnBody {
    ttl_ms: Option<u64>,
}

pub(super) async fn begin_turn(
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

pub(super) async fn renew_turn(
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

pub(super) async fn end_turn(
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
pub(super) struct NavigateBody {
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

pub(super) async fn navigate(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<NavigateBody>,
) -> ApiResult<Response> {
    let presets = [("grove", PathMode::Full), ("harness", PathMode::Branch)];
    let path_mode = choice("preset", body.preset.as_deref(), &presets)?.unwrap_or(PathMode::Full);
    let store = state.store()?;
    let summarizer = state.summarizer();
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
