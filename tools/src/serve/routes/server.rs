//! The routes of docs/api.md's "Server": `POST /v1/verify` and `POST /v1/gc` (over every store
//! served, as `grove verify` and `grove gc --json` report), retention (`POST /v1/retain`, `GET
//! /v1/retain/log`, as `grove retain` plans, applies and lists; `crate::retain`), and `GET /v1/health`: whether the
//! server can do its work now, which a load balancer or an operator may trust. This room owns the
//! checks and the middleware that counts the write requests in flight (the count itself is
//! `state::Writes`): `ok` is false, and the answer `503`, when a store refuses writes (`poisoned`,
//! code `storage`), when the database server could not be reached at its last round trip
//! (`unavailable`), or when writes are stuck (`stuck`, code `unavailable`): the blocking pool every
//! engine call runs on did not run a task within `--health-timeout`, or a write request has been in
//! flight for longer. A plain check costs no round trip to the database (it says what the stores
//! last saw); `?deep=true` also makes one read of every store's backend, on the blocking pool,
//! within `--health-timeout`. It calls the engine's public API, the state (the blocking pool, JSON
//! answers, the writes in flight), `api`, `stores` and `output`.

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use grove::Store;
use serde::Deserialize;
use serde_json::json;

use crate::serve::api::{ApiError, ApiResult, Body, Query};
use crate::serve::state::{blocking, json_answer, State};
use crate::serve::stores::Stores;

/// Counts the write requests in flight, for [`health`]. An import (whose time is its upload's)
/// and a navigation (whose time is its summarizer's) are not counted.
pub async fn track_writes(state: State, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let write = !matches!(*req.method(), Method::GET | Method::HEAD)
        && path != "/v1/import"
        && !path.ends_with("/navigate");
    if !write {
        return next.run(req).await;
    }
    let _in_flight = state.writes().begin();
    next.run(req).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HealthQuery {
    deep: Option<bool>,
}

/// `GET /v1/health[?deep=true]`.
pub(super) async fn health(state: State, Query(q): Query<HealthQuery>) -> Response {
    let stores = state.stores().map(Stores::all).unwrap_or_default();
    let bound = state.limits().health_timeout;
    let poisoned = stores.iter().find_map(Store::poisoned).or_else(|| {
        // Opened only to read: the disk was too full to open it for writing.
        state.full_disk().map(|full| full.error().to_string())
    });
    let mut failed: Option<String> = None;
    let mut unavailable = None;
    let mut stuck = None;
    // Every engine call runs on the blocking pool: if it runs nothing, every request waits.
    let pool = tokio::time::timeout(bound, tokio::task::spawn_blocking(|| ())).await;
    if pool.is_err() {
        stuck = Some(format!(
            "the server's blocking pool did not run a task within {} s: requests wait",
            bound.as_secs_f64()
        ));
    } else if let Some(age) = state.writes().oldest().filter(|age| *age > bound) {
        stuck = Some(format!(
            "a write request has been in flight for {:.1} s",
            age.as_secs_f64()
        ));
    }
    if q.deep == Some(true) && stuck.is_none() {
        let readers = stores.clone();
        let read =
            tokio::task::spawn_blocking(move || readers.iter().try_for_each(Store::check_backend));
        match tokio::time::timeout(bound, read).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) if e.code() == "unavailable" => unavailable = Some(e.to_string()),
            Ok(Ok(Err(e))) => failed = Some(e.to_string()),
            Ok(Err(e)) => failed = Some(format!("the read failed inside the server: {e}")),
            Err(_) => {
                unavailable = Some(format!(
                    "the backend did not answer a read within {} s",
                    bound.as_secs_f64()
                ))
            }
        }
    }
    // What the stores saw last (a deep read that succeeded has cleared it).
    if unavailable.is_none() {
        unavailable = stores.iter().find_map(Store::backend_unavailable);
    }
    let backend = stores.first().map_or("postgres", Store::backend_name);
    // Sharded: the statements sent to every cluster.
    let round_trips = stores
        .iter()
        .filter_map(Store::round_trips)
        .reduce(u64::saturating_add);
    let problem = match (&unavailable, &stuck, &poisoned, &failed) {
        (Some(why), _, _, _) => Some(("unavailable", format!("the database: {why}"))),
        (None, Some(why), _, _) => Some(("unavailable", why.clone())),
        (None, None, Some(why), _) => Some(("storage", format!("writes are refused: {why}"))),
        (None, None, None, Some(why)) => Some(("storage", why.clone())),
        (None, None, None, None) => None,
    };
    let mut body = json!({
        "ok": problem.is_none(),
        "backend": backend,
        "durability": format!("{:?}", state.durability()).to_lowercase(),
        "version": env!("CARGO_PKG_VERSION"),
        "poisoned": poisoned,
        "unavailable": unavailable,
        "stuck": stuck,
        "roundTrips": round_trips,
    });
    let Some((code, message)) = problem else {
        return json_answer(StatusCode::OK, body);
    };
    body["code"] = json!(code);
    body["message"] = json!(message);
    let mut response = json_answer(StatusCode::SERVICE_UNAVAILABLE, body);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GcQuery {
    rewrite: Option<bool>,
}

/// `POST /v1/gc[?rewrite=true]`: removes the payloads no session references, as `grove gc
/// --json` reports; with `rewrite`, then rewrites the files of a store in a directory, with
/// the store closed meanwhile (`serve/rewrite.rs`): every request waits for it.
pub(super) async fn gc(state: State, Query(query): Query<GcQuery>) -> ApiResult<Response> {
    if state.is_sharded() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_state",
            "sessions are sharded over several clusters: run `grove gc` on each cluster's store",
        ));
    }
    let rewriter = match (query.rewrite.unwrap_or(false), state.rewriter()) {
        (false, _) => None,
        (true, Some(rewriter)) => Some(rewriter),
        (true, None) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "invalid_state",
                "this server cannot rewrite its store's files: only a store in a directory \
                 (sled, redb) served by `grove serve` can (a PostgreSQL store's gc rewrites its \
                 table when a redaction asks for it)",
            ))
        }
    };
    let store = state.store()?;
    let report = blocking(move || store.gc()).await?;
    let mut value = crate::output::gc_value(&report);
    value["rewritten"] = serde_json::Value::Null;
    if let Some(rewriter) = rewriter {
        // This request lets go of the store: the rewrite waits for every handle.
        let server = state.detached();
        drop(state);
        match crate::serve::rewrite::rewrite(&server, &rewriter).await {
            Ok(r) => {
                value["rewriteDue"] = json!(false);
                value["rewritten"] = json!({
                    "keys": r.keys,
                    "bytesBefore": r.bytes_before,
                    "bytesAfter": r.bytes_after,
                });
            }
            Err(why) => eprintln!("grove serve: gc: {why}"),
        }
    }
    Ok(json_answer(StatusCode::OK, value))
}

pub(super) async fn verify(state: State) -> ApiResult<Response> {
    // Sharded: every cluster's store, the counts summed.
    let stores = state.stores()?.all();
    let reports: Vec<grove::VerifyReport> =
        blocking(move || stores.iter().map(Store::verify).collect()).await?;
    let problems: Vec<String> = reports
        .iter()
        .flat_map(|r| r.problems.iter().map(|p| p.to_string()))
        .collect();
    Ok(json_answer(
        StatusCode::OK,
        json!({
            "sessions": reports.iter().map(|r| r.sessions).sum::<u64>(),
            "records": reports.iter().map(|r| r.records).sum::<u64>(),
            "redacted": reports.iter().map(|r| r.redacted).sum::<u64>(),
            "ok": problems.is_empty(),
            "problems": problems,
        }),
    ))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RetainBody {
    policy: crate::retain::PolicyJson,
    apply: Option<bool>,
}

/// `POST /v1/retain`: what a retention policy removes (`apply` false, the default), or a run
/// of it, recorded in the store's operation log. A policy given here archives nothing: files
/// are written where the server's own policy (`grove serve --retain`) says, not where a
/// client asks.
pub(super) async fn retain(state: State, Body(body): Body<RetainBody>) -> ApiResult<Response> {
    if state.is_sharded() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_state",
            "sessions are sharded over several clusters: run `grove retain` on each cluster's store",
        ));
    }
    if body.policy.archives() {
        return Err(ApiError::invalid_argument(
            "a policy sent to the server archives nothing: give the archive in the server's own \
             policy (grove serve --retain FILE), or run grove retain --apply --archive DIR",
        ));
    }
    let policy = crate::retain::policy(body.policy, crate::when::now_ms())
        .map_err(ApiError::invalid_argument)?;
    let store = state.store()?;
    let answer = if body.apply.unwrap_or(false) {
        let run = blocking(move || store.retain(&policy)).await?;
        crate::retain::run_value(&run)
    } else {
        let plan = blocking(move || store.retention_plan(&policy)).await?;
        crate::retain::plan_value(&plan)
    };
    Ok(json_answer(StatusCode::OK, answer))
}

/// `GET /v1/retain/log`: the store's operations (retention runs), oldest first.
pub(super) async fn retain_log(state: State) -> ApiResult<Response> {
    let store = state.store()?;
    let ops = blocking(move || store.store_operations()).await?;
    let list: Vec<serde_json::Value> = ops.iter().map(crate::retain::store_op_value).collect();
    Ok(json_answer(StatusCode::OK, json!({ "operations": list })))
}
