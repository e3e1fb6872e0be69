//! The routes of docs/api.md's "Appending": one entry (`POST .../entries`, `.../exact`,
//! `.../if`), many entries to one session in one write (`.../entries/many`), fresh entry ids
//! (`.../ids`), and appends to many sessions in one request, acknowledged by one flush
//! (`POST /v1/appends`). This room owns those routes, the shape check of a new entry
//! ([`new_entry`]) that they share, and the batch: its body, the order in which its items
//! are applied (as given, so a session's items keep theirs), one result per item, and the one
//! durability barrier ([`grove::Store::make_durable`]) that covers them all before the
//! answer. It calls the engine's public API, the state (the blocking pool, writes that retry
//! once on a shared backend, JSON answers) and `api`.
//!
//! Why the batch: a client that writes many sessions at once (a benchmark harness, an agent
//! platform with many agents in one process) pays one HTTP round trip and one flush per
//! request rather than per append; the TypeScript client's `AppendBatcher` gathers concurrent
//! appends into these requests.

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::Response;
use grove::{AppendOptions, AppendOutcome, Durability, NewEntry, Session};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::serve::api::{ApiError, ApiResult, Body, Path, Query, Raw};
use crate::serve::state::{blocking, json_answer, on_session, writing, State};

/// A new entry: an entry object (`type`) or a message object (`role`).
fn new_entry(raw: &RawValue) -> ApiResult<NewEntry> {
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
pub(super) struct AppendBody {
    entry: Box<RawValue>,
    id: Option<String>,
    timestamp: Option<String>,
}

pub(super) async fn append(
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
pub(super) struct ExactQuery {
    #[serde(default)]
    keep_leaf: bool,
}

pub(super) async fn append_exact(
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
pub(super) struct AppendIfBody {
    #[serde(default)]
    expected_leaf: Option<String>,
    entry: Box<RawValue>,
}

pub(super) async fn append_if(
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
pub(super) struct ManyBody {
    entries: Vec<Box<RawValue>>,
}

pub(super) async fn append_many(
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IdsBody {
    count: usize,
}

/// At most this many fresh ids per request.
const MAX_IDS: usize = 1024;

pub(super) async fn fresh_ids(
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

// ---- appends to many sessions ----

/// The most items one request may carry (a larger batch is refused whole, before any write).
pub const MAX_APPENDS: usize = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AppendsBody {
    appends: Vec<Item>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Item {
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
