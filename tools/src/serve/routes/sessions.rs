//! The routes of docs/api.md's "Sessions": listing, creating, reading and deleting sessions,
//! importing a pi JSONL body (streamed into the import as it arrives; sharded, routed by the
//! id of its header line), exporting one (streamed) and forking one. This room owns those
//! routes and the JSON of a session's summary. It calls the engine's public API, the state
//! (the blocking pool and JSON answers), `api`, `stream` and `limits`.

use axum::http::StatusCode;
use axum::response::Response;
use grove::codec::foreign::Format;
use grove::{
    CreateSession, Flavor, ForkMode, ForkOptions, ForkPosition, ImportOptions, Session,
    SessionSummary,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::serve::api::{choice, ApiError, ApiResult, Body, Path, Query};
use crate::serve::state::{blocking, json_answer, raw_json, State};
use crate::serve::stream::{forward_body, ndjson, BodyEnd, BodyReader, SinkWriter};

fn summary_json(s: &SessionSummary) -> Value {
    json!({
        "id": s.id,
        "created": s.created,
        "cwd": s.cwd,
        "entries": s.entries,
        "parentSessionId": s.parent_session_id,
        "parentSession": s.parent_session,
    })
}

/// A session's summary, header metadata, leaf and name, as JSON text. The metadata is the
/// stored header's text as it is (not parsed into a value, which could fail on a deep one:
/// what is stored is answered as stored).
fn session_json(session: &Session) -> grove::Result<String> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Info<'a> {
        id: &'a str,
        created: &'a str,
        cwd: &'a str,
        entries: u64,
        parent_session_id: Option<&'a str>,
        parent_session: Option<&'a str>,
        metadata: Option<&'a RawValue>,
        leaf: Option<String>,
        name: Option<String>,
    }
    let rec = session.record();
    let metadata = grove::codec::header::Header::parse(&rec.header)
        .ok()
        .and_then(|h| h.metadata);
    let info = Info {
        id: &rec.id,
        created: &rec.created,
        cwd: &rec.cwd,
        entries: session.head()?.entries,
        parent_session_id: rec.parent_session_id.as_deref(),
        parent_session: rec.parent_session.as_deref(),
        metadata: metadata
            .as_deref()
            .and_then(|m| serde_json::from_str::<&RawValue>(m).ok()),
        leaf: session.leaf()?,
        name: session.name()?,
    };
    serde_json::to_string(&info)
        .map_err(|e| grove::GroveError::Corrupt(format!("session {}: {e}", rec.id)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct SessionsQuery {
    after: Option<String>,
    limit: Option<usize>,
    order: Option<String>,
    cwd: Option<String>,
    name: Option<String>,
    label: Option<String>,
    created_after: Option<String>,
    created_before: Option<String>,
    updated_after: Option<String>,
    updated_before: Option<String>,
}

pub(super) async fn list_sessions(
    state: State,
    Query(page): Query<SessionsQuery>,
) -> ApiResult<Response> {
    let stores = state.stores()?.clone();
    let limit = page.limit.unwrap_or(1000);
    if limit == 0 {
        return Err(ApiError::invalid_argument("limit must be at least 1"));
    }
    let descending = match page.order.as_deref() {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(other) => {
            return Err(ApiError::invalid_argument(format!(
                "order must be asc or desc, not {other:?}"
            )))
        }
    };
    let filter = crate::listing::filter(
        &crate::listing::FilterText {
            cwd: page.cwd.as_deref(),
            name: page.name.as_deref(),
            label: page.label.as_deref(),
            created_after: page.created_after.as_deref(),
            created_before: page.created_before.as_deref(),
            updated_after: page.updated_after.as_deref(),
            updated_before: page.updated_before.as_deref(),
        },
        crate::when::now_ms(),
    )
    .map_err(ApiError::invalid_argument)?;
    // One more than the page: whether there is a next one.
    let mut listed = blocking(move || {
        stores.sessions_page(
            page.after.as_deref(),
            limit.saturating_add(1),
            descending,
            &filter,
        )
    })
    .await?;
    let next = (listed.len() > limit).then(|| listed[limit - 1].id.clone());
    listed.truncate(limit);
    let sessions: Vec<Value> = listed.iter().map(summary_json).collect();
    Ok(json_answer(
        StatusCode::OK,
        json!({ "sessions": sessions, "next": next }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct NewSession {
    id: Option<String>,
    cwd: Option<String>,
    metadata: Option<Box<RawValue>>,
    parent_session: Option<String>,
}

/// Header `metadata`: a JSON object's text, or none (absent or null).
fn metadata_object(metadata: Option<Box<RawValue>>) -> ApiResult<Option<String>> {
    match metadata {
        None => Ok(None),
        Some(m) if m.get() == "null" => Ok(None),
        Some(m) if m.get().trim_start().starts_with('{') => Ok(Some(m.get().to_owned())),
        Some(_) => Err(ApiError::invalid_argument("metadata must be a JSON object")),
    }
}

pub(super) async fn create_session(
    state: State,
    Body(body): Body<NewSession>,
) -> ApiResult<Response> {
    let metadata = metadata_object(body.metadata)?;
    // Sharded: the store of the id (generated here when not given).
    let (store, id) = state.for_new_session(body.id)?;
    let info = blocking(move || {
        let session = store.create_session(CreateSession {
            id,
            cwd: body.cwd.unwrap_or_default(),
            metadata,
            parent_session: body.parent_session,
            parent_session_id: None,
        })?;
        session_json(&session)
    })
    .await?;
    Ok(raw_json(StatusCode::CREATED, info))
}

pub(super) async fn get_session(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let store = state.store()?;
    let info = blocking(move || session_json(&store.session(&sid)?)).await?;
    Ok(raw_json(StatusCode::OK, info))
}

pub(super) async fn delete_session(state: State, Path(sid): Path<String>) -> ApiResult<StatusCode> {
    let store = state.store()?;
    blocking(move || store.delete_session(&sid)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The longest header line a sharded server reads to route an import.
const MAX_HEADER_LINE: u64 = 1 << 20;

pub(super) async fn import(state: State, body: axum::body::Body) -> ApiResult<Response> {
    // Streamed into the import as it arrives: memory is a few chunks, whatever the size.
    // Sharded, the session's id is read from the header line first, and routes the import.
    let direct = state.routed();
    let stores = state.stores()?.clone();
    let actor = state.actor();
    let (reader, feed) = BodyReader::new();
    let job = tokio::task::spawn_blocking(move || -> ApiResult<grove::ImportReport> {
        let mut input = std::io::BufReader::with_capacity(64 << 10, reader);
        match direct {
            Some(store) => Ok(store.import_reader(input, ImportOptions::default())?),
            None => {
                use std::io::{BufRead, Read};
                let mut header = Vec::new();
                (&mut input)
                    .take(MAX_HEADER_LINE)
                    .read_until(b'\n', &mut header)
                    .map_err(|e| ApiError::invalid_request(format!("reading the body: {e}")))?;
                let id = serde_json::from_slice::<Value>(&header)
                    .ok()
                    .and_then(|h| h["id"].as_str().map(str::to_owned))
                    .ok_or_else(|| {
                        ApiError::new(
                            StatusCode::UNPROCESSABLE_ENTITY,
                            "invalid_session",
                            "the first line is not a pi session header with an id",
                        )
                    })?;
                let store = stores.for_session(&id, true)?.with_actor(&actor);
                let input = std::io::Cursor::new(header).chain(input);
                Ok(store.import_reader(input, ImportOptions::default())?)
            }
        }
    });
    let limits = state.limits();
    let end = forward_body(body, feed, limits.max_import, limits.body_timeout).await;
    let result = job.await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            format!("the import task failed: {e}"),
        )
    })?;
    let report = match (end, result) {
        (BodyEnd::TooLarge, _) => {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the session is larger than the server's import limit (--max-import); nothing \
                 was imported",
            ))
        }
        (BodyEnd::TimedOut, _) => {
            return Err(crate::serve::limits::body_timed_out(limits.body_timeout))
        }
        (BodyEnd::Broken, Err(_)) => {
            return Err(ApiError::invalid_request(
                "the connection failed while sending the body; nothing was imported",
            ))
        }
        (_, result) => result?,
    };
    Ok(json_answer(
        StatusCode::CREATED,
        json!({
            "session": report.session,
            "entries": report.entries,
            "leafRecords": report.leaf_records,
            "leaf": report.leaf,
            "duplicateIds": report.duplicate_ids,
            "warnings": report.warnings,
        }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExportQuery {
    flavor: Option<String>,
}

pub(super) async fn export(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<ExportQuery>,
) -> ApiResult<Response> {
    let flavors = [
        ("harness", Flavor::Harness),
        ("cli", Flavor::Cli),
        ("claude-code", Flavor::Foreign(Format::ClaudeCode)),
        ("codex", Flavor::Foreign(Format::Codex)),
        ("pi-lanes", Flavor::Foreign(Format::PiLanes)),
        ("pi-commits", Flavor::Foreign(Format::PiCommits)),
    ];
    let flavor = choice("flavor", q.flavor.as_deref(), &flavors)?.unwrap_or(Flavor::Harness);
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        let mut out = SinkWriter {
            sink,
            values: false,
        };
        session.export(flavor, &mut out).map(drop)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ForkBody {
    entry_id: Option<String>,
    position: Option<String>,
    mode: Option<String>,
    id: Option<String>,
    cwd: Option<String>,
    metadata: Option<Box<RawValue>>,
    parent_session: Option<String>,
}

pub(super) async fn fork(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<ForkBody>,
) -> ApiResult<Response> {
    let positions = [("before", ForkPosition::Before), ("at", ForkPosition::At)];
    let position =
        choice("position", body.position.as_deref(), &positions)?.unwrap_or(ForkPosition::Before);
    let modes = [
        ("path", ForkMode::Path),
        ("rechained", ForkMode::Rechained),
        ("copy", ForkMode::Copy),
    ];
    let mode = choice("mode", body.mode.as_deref(), &modes)?.unwrap_or(ForkMode::Path);
    let metadata = metadata_object(body.metadata)?;
    let options = ForkOptions {
        entry: body.entry_id,
        position,
        mode,
        cwd: body.cwd,
        metadata,
        id: state.stores()?.fork_id(&sid, body.id)?,
        parent_session: body.parent_session,
    };
    let store = state.store()?;
    let info = blocking(move || {
        let source = store.session(&sid)?;
        let forked = store.fork(&source, options)?;
        session_json(&forked)
    })
    .await?;
    Ok(raw_json(StatusCode::CREATED, info))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PinBody {
    pinned: bool,
}

/// `PUT .../pin`: pins the session (retention spares it) or unpins it.
pub(super) async fn pin(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<PinBody>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let id = sid.clone();
    blocking(move || store.set_pinned(&id, body.pinned)).await?;
    Ok(json_answer(
        StatusCode::OK,
        serde_json::json!({ "session": sid, "pinned": body.pinned }),
    ))
}
