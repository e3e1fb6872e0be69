//! `POST /v1/appends`: appends to many sessions in one request, acknowledged by one flush
//! (docs/api.md, "Appends to many sessions"). This room owns the batch: its body, the order in
//! which its items are applied (as given, so a session's items keep theirs), one result per
//! item, and the one durability barrier ([`grove::Store::make_durable`]) that covers them all
//! before the answer. It calls the engine's public API and, from `routes`, the blocking pool
//! and the shape check of a new entry that `POST .../entries` uses.
//!
//! Why: a client that writes many sessions at once (a benchmark harness, an agent platform
//! with many agents in one process) pays one HTTP round trip and one flush per request rather
//! than per append; the TypeScript client's `AppendBatcher` gathers concurrent appends into
//! these requests.

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::Response;
use grove::{AppendOptions, Durability, Session};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::api::{ApiError, ApiResult, Body};
use super::routes::{blocking, json_answer, new_entry, State};

/// The most items one request may carry (a larger batch is refused whole, before any write).
pub const MAX_APPENDS: usize = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AppendsBody {
    appends: Vec<Item>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    session: String,
    entry: Box<RawValue>,
    id: Option<String>,
    timestamp: Option<String>,
}

pub(super) async fn appends(state: State, Body(body): Body<AppendsBody>) -> ApiResult<Response> {
    if body.appends.len() > MAX_APPENDS {
        return Err(ApiError::invalid_argument(format!(
            "{} appends in one request; at most {MAX_APPENDS} are taken",
            body.appends.len()
        )));
    }
    // Sharded, each item goes to its session's store, and every store written is flushed.
    let stores = state.stores()?.clone();
    let direct = state.routed();
    let actor = state.actor();
    let durability = state.durability();
    let results = blocking(move || {
        let mut sessions: HashMap<String, Result<Session, ApiError>> = HashMap::new();
        let mut results = Vec::with_capacity(body.appends.len());
        for item in body.appends {
            let store = match &direct {
                Some(store) => Ok(store.clone()),
                None => stores
                    .for_session(&item.session, true)
                    .map(|s| s.with_actor(&actor)),
            };
            let applied = store.and_then(|store| apply(&store, &mut sessions, item));
            results.push(match applied {
                Ok(id) => json!({ "id": id }),
                Err(e) => {
                    json!({ "code": e.code, "message": e.message, "status": e.status.as_u16() })
                }
            });
        }
        // One flush (per store, sharded) acknowledges every item written above; if one fails,
        // none is acknowledged (the request fails and that store refuses writes from then on).
        let written = match direct {
            Some(store) => vec![store],
            None => stores.all(),
        };
        for store in &written {
            store.make_durable(durability)?;
        }
        Ok(results)
    })
    .await?;
    Ok(json_answer(
        StatusCode::OK,
        json!({ "results": Value::Array(results) }),
    ))
}

/// Applies one item, at no durability (the batch's barrier gives it the server's).
fn apply(
    store: &grove::Store,
    sessions: &mut HashMap<String, Result<Session, ApiError>>,
    item: Item,
) -> Result<String, ApiError> {
    let entry = new_entry(&item.entry)?;
    let options = || AppendOptions {
        id: item.id.clone(),
        timestamp: item.timestamp.clone(),
        durability: Some(Durability::None),
    };
    // Opened for writing (no catalogue read on a shared backend for a session this node
    // knows); a session another node deleted meanwhile is looked up again once, in case the
    // id now names a new one.
    let slot = sessions
        .entry(item.session)
        .or_insert_with_key(|sid| store.session_for_write(sid).map_err(ApiError::from));
    let session = slot.as_ref().map_err(ApiError::clone)?;
    if !store.is_shared() {
        return session
            .append_with(entry, options())
            .map_err(ApiError::from);
    }
    match session.append_with(entry.clone(), options()) {
        Err(grove::GroveError::SessionNotFound(_)) => {
            let again = store.session(session.id());
            *slot = again.map_err(ApiError::from);
            let session = slot.as_ref().map_err(ApiError::clone)?;
            session
                .append_with(entry, options())
                .map_err(ApiError::from)
        }
        done => done.map_err(ApiError::from),
    }
}
