//! The routes of docs/api.md's "Reading": a session's entries and log (streamed, from a
//! position, of a type), one entry and its proof, children, the branch and the path of an
//! entry (streamed), the context (streamed as it is built), the tree, labels and the name
//! (read and set), and pi's session stats. Context, branch, path and tree may be read as the
//! session stood at a point in time (`atOp`, `atTime`: [`At`]). This room owns those routes.
//! It calls the engine's public API, the state (the blocking pool, JSON answers), `api`,
//! `stream`, the point in time (`at.rs`) and `output` to write proofs and tree nodes as the
//! CLI's `--json` does.

use axum::http::StatusCode;
use axum::response::Response;
use grove::{ContextOptions, Entry};
use serde::Deserialize;
use serde_json::{json, Value};

use super::at::At;
use crate::serve::api::{choice, ApiResult, Body, Path, Query};
use crate::serve::state::{blocking, json_answer, on_session, raw_json, State};
use crate::serve::stream::{self, json_stream, ndjson, ndjson_overlapped, Sink, SinkWriter};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Cursor {
    after: Option<u64>,
    limit: Option<u64>,
    #[serde(rename = "type")]
    ty: Option<String>,
}

fn type_of(line: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Ty {
        #[serde(rename = "type")]
        ty: String,
    }
    serde_json::from_str::<Ty>(line).ok().map(|t| t.ty)
}

/// One entry as a line of an NDJSON answer; a client that went away ends the walk.
fn send_one(sink: &mut Sink, entry: &Entry) -> grove::Result<()> {
    match sink.line(&entry.line) {
        true => Ok(()),
        false => Err(grove::GroveError::Io {
            path: "<client>".into(),
            source: std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"),
        }),
    }
}

fn send_all(
    sink: &mut Sink,
    lines: impl Iterator<Item = grove::Result<Entry>>,
    limit: Option<u64>,
    ty: Option<&str>,
) -> grove::Result<()> {
    sink.ready();
    let mut left = limit.unwrap_or(u64::MAX);
    for entry in lines {
        if left == 0 {
            break;
        }
        let entry = entry?;
        if let Some(ty) = ty {
            if type_of(&entry.line).as_deref() != Some(ty) {
                continue;
            }
        }
        left -= 1;
        if !sink.line(&entry.line) {
            break;
        }
    }
    Ok(())
}

pub(super) async fn entries(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<Cursor>,
) -> ApiResult<Response> {
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        let skip = usize::try_from(q.after.unwrap_or(0)).unwrap_or(usize::MAX);
        send_all(sink, session.entries().skip(skip), q.limit, q.ty.as_deref())
    })
    .await
}

pub(super) async fn log(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<Cursor>,
) -> ApiResult<Response> {
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        send_all(
            sink,
            session.log_from(q.after.unwrap_or(0)),
            q.limit,
            q.ty.as_deref(),
        )
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EntryQuery {
    log: Option<bool>,
}

pub(super) async fn entry(
    state: State,
    Path((sid, eid)): Path<(String, String)>,
    Query(q): Query<EntryQuery>,
) -> ApiResult<Response> {
    read_entry(state, sid, eid, q.log.unwrap_or(false)).await
}

/// An entry with its digest, its path digest and its parent's (`grove show --json`).
pub(super) async fn proof(
    state: State,
    Path((sid, eid)): Path<(String, String)>,
) -> ApiResult<Response> {
    let proof = on_session(&state, sid, move |s| s.proof(&eid)).await?;
    Ok(raw_json(StatusCode::OK, crate::output::proof_json(&proof)))
}

/// The future of a GET on `entries/NAME`.
type EntryFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ApiResult<Response>> + Send>>;

/// A GET on `entries/NAME`, where NAME is also an append route.
pub(super) fn entry_named(
    name: &'static str,
) -> impl Fn(State, Path<String>, Query<EntryQuery>) -> EntryFuture + Clone + Send + Sync + 'static
{
    move |state, Path(sid), Query(q)| {
        Box::pin(read_entry(
            state,
            sid,
            name.to_owned(),
            q.log.unwrap_or(false),
        ))
    }
}

pub(super) async fn read_entry(
    state: State,
    sid: String,
    eid: String,
    any: bool,
) -> ApiResult<Response> {
    let store = state.store()?;
    let line = blocking(move || {
        let session = store.session(&sid)?;
        let entry = if any {
            session.log_record(&eid)?
        } else {
            session.entry(&eid)?
        };
        Ok(entry.line)
    })
    .await?;
    Ok(raw_json(StatusCode::OK, line))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ChildrenQuery {
    parent: Option<String>,
}

pub(super) async fn children(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<ChildrenQuery>,
) -> ApiResult<Response> {
    let store = state.store()?;
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        let children = session.children(q.parent.as_deref())?;
        send_all(sink, children.into_iter().map(Ok), None, None)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FromQuery {
    from: Option<String>,
    /// As the session stood after this operation.
    #[serde(rename = "atOp")]
    at_op: Option<u64>,
    /// As the session stood at this time.
    #[serde(rename = "atTime")]
    at_time: Option<String>,
}

impl FromQuery {
    fn at(&mut self) -> ApiResult<Option<At>> {
        At::from_query(
            self.at_op,
            self.at_time.take(),
            self.from.as_ref().map(|_| "from"),
        )
    }
}

/// Which walk [`walk`] streams.
#[derive(Clone, Copy)]
enum Walk {
    /// pi's branch (`getPathToRootOrCompaction`).
    Branch,
    /// The full path to the root.
    Path,
}

pub(super) async fn branch(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<FromQuery>,
) -> ApiResult<Response> {
    walk(state, sid, q, Walk::Branch).await
}

pub(super) async fn path(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<FromQuery>,
) -> ApiResult<Response> {
    walk(state, sid, q, Walk::Path).await
}

/// The entries of a walk from which it is a large answer ([`stream::ndjson_overlapped`]): a
/// shorter one is a chunk or two of lines, gathered sooner than handed over.
const LARGE_WALK_ENTRIES: u64 = 512;

/// The entries of a large walk read on the caller's thread, as its first chunk, while the
/// pool reads the rest: about what the caller makes values of while the pool's first chunk
/// is on its way (64 or 128 had node wait longer for the first chunk, on a bushy branch).
const HEAD_ENTRIES: u64 = 32;

/// Streams the entries of `walk` from `q.from` (or the leaf), now or at `q`'s point in time.
async fn walk(state: State, sid: String, mut q: FromQuery, walk: Walk) -> ApiResult<Response> {
    let at = q.at()?;
    let store = state.store()?;
    if at.is_none() && stream::overlapping().is_some() {
        // Run on the caller's thread for a caller that takes a large answer chunk by chunk:
        // the walk up the tree here, its entries read where its length says.
        let session = store.session(&sid)?;
        let from = q.from.as_deref();
        let planned = match walk {
            Walk::Branch => session.plan_branch(from)?,
            Walk::Path => session.plan_path(from)?,
        };
        if planned.len() >= LARGE_WALK_ENTRIES {
            let (head, tail) = planned.split_at(HEAD_ENTRIES);
            let head = |sink: &mut Sink| head.for_each(&mut |e: Entry| send_one(sink, &e));
            let tail = |sink: &mut Sink| tail.for_each(&mut |e: Entry| send_one(sink, &e));
            return ndjson_overlapped(&state, head, tail).await;
        }
        return ndjson(&state, move |sink| {
            planned.for_each(&mut |e: Entry| send_one(sink, &e))
        })
        .await;
    }
    ndjson(&state, move |sink| {
        let session = store.session(&sid)?;
        let from = q.from.as_deref();
        let mut each = |e: Entry| send_one(sink, &e);
        match (at, walk) {
            (None, Walk::Branch) => session.for_each_on_branch(from, &mut each),
            (None, Walk::Path) => session.for_each_on_path(from, &mut each),
            (Some(at), walk) => {
                let point = at.resolve(&session)?;
                let entries = match walk {
                    Walk::Branch => session.branch_as_of(&point)?,
                    Walk::Path => session.path_as_of(&point)?,
                };
                send_all(sink, entries.into_iter().map(Ok), None, None)
            }
        }
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ContextQuery {
    preset: Option<String>,
    leaf: Option<String>,
    /// `full` or `branch`: where the model, thinking level and tools come from.
    settings: Option<String>,
    /// `full` or `branch`: the path the entries are selected from.
    selection: Option<String>,
    /// `use` or `ignore`: a compaction's retained tail.
    retained_tail: Option<String>,
    /// `normalize` or `preserve`: messages whose content is null.
    null_content: Option<String>,
    /// Whether `activeToolNames` is reported.
    active_tools: Option<bool>,
    /// As the session stood after this operation.
    #[serde(rename = "atOp")]
    at_op: Option<u64>,
    /// As the session stood at this time.
    #[serde(rename = "atTime")]
    at_time: Option<String>,
}

pub(super) async fn context(
    state: State,
    Path(sid): Path<String>,
    Query(mut q): Query<ContextQuery>,
) -> ApiResult<Response> {
    let at = At::from_query(q.at_op, q.at_time.take(), q.leaf.as_ref().map(|_| "leaf"))?;
    let presets = [
        ("grove", ContextOptions::grove()),
        ("harness", ContextOptions::pi_harness()),
        ("cli", ContextOptions::pi_cli()),
    ];
    let mut options =
        choice("preset", q.preset.as_deref(), &presets)?.unwrap_or(ContextOptions::grove());
    use grove::{NullContent, RetainedTail, SelectionPath, SettingsScope};
    let scopes = [
        ("full", SettingsScope::Full),
        ("branch", SettingsScope::Branch),
    ];
    if let Some(v) = choice("settings", q.settings.as_deref(), &scopes)? {
        options.settings_scope = v;
    }
    let paths = [
        ("full", SelectionPath::Full),
        ("branch", SelectionPath::Branch),
    ];
    if let Some(v) = choice("selection", q.selection.as_deref(), &paths)? {
        options.selection_path = v;
    }
    let tails = [("use", RetainedTail::Use), ("ignore", RetainedTail::Ignore)];
    if let Some(v) = choice("retainedTail", q.retained_tail.as_deref(), &tails)? {
        options.retained_tail = v;
    }
    let nulls = [
        ("normalize", NullContent::Normalize),
        ("preserve", NullContent::Preserve),
    ];
    if let Some(v) = choice("nullContent", q.null_content.as_deref(), &nulls)? {
        options.null_content = v;
    }
    if let Some(v) = q.active_tools {
        options.report_active_tools = v;
    }
    let store = state.store()?;
    json_stream(&state, move |sink| {
        let session = store.session(&sid)?;
        match at {
            // Each message one write of its whole JSON (`Session::write_context`).
            None => session.write_context(
                q.leaf.as_deref(),
                options,
                &mut SinkWriter { sink, values: true },
            ),
            Some(at) => {
                let context = session.context_as_of(&at.resolve(&session)?, options)?;
                // A client that went away has nothing more to be sent.
                let _ = sink.bytes(context.to_json().as_bytes());
                Ok(())
            }
        }
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TreeQuery {
    /// As the session stood after this operation.
    #[serde(rename = "atOp")]
    at_op: Option<u64>,
    /// As the session stood at this time.
    #[serde(rename = "atTime")]
    at_time: Option<String>,
}

pub(super) async fn tree(
    state: State,
    Path(sid): Path<String>,
    Query(q): Query<TreeQuery>,
) -> ApiResult<Response> {
    let at = At::from_query(q.at_op, q.at_time, None)?;
    let tree = on_session(&state, sid, move |s| match at {
        None => s.tree(),
        Some(at) => s.tree_as_of(&at.resolve(s)?),
    })
    .await?;
    let nodes: Vec<Value> = tree
        .nodes
        .iter()
        .map(crate::output::tree_node_value)
        .collect();
    Ok(json_answer(
        StatusCode::OK,
        json!({ "nodes": nodes, "roots": tree.roots }),
    ))
}

pub(super) async fn labels(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let labels = on_session(&state, sid, move |s| s.labels()).await?;
    let map: serde_json::Map<String, Value> = labels
        .into_iter()
        .map(|(target, l)| (target, Value::String(l.label)))
        .collect();
    Ok(json_answer(StatusCode::OK, Value::Object(map)))
}

pub(super) async fn label(
    state: State,
    Path((sid, eid)): Path<(String, String)>,
) -> ApiResult<Response> {
    let label = on_session(&state, sid, move |s| s.label(&eid)).await?;
    Ok(json_answer(
        StatusCode::OK,
        json!({ "label": label.map(|l| l.label) }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct LabelBody {
    target_id: String,
    label: Option<String>,
}

pub(super) async fn set_label(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<LabelBody>,
) -> ApiResult<Response> {
    let store = state.store()?;
    let id = blocking(move || {
        store
            .session(&sid)?
            .set_label(&body.target_id, body.label.as_deref())
    })
    .await?;
    Ok(json_answer(StatusCode::CREATED, json!({ "id": id })))
}

pub(super) async fn name(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let name = on_session(&state, sid, move |s| s.name()).await?;
    Ok(json_answer(StatusCode::OK, json!({ "name": name })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NameBody {
    name: String,
}

pub(super) async fn set_name(
    state: State,
    Path(sid): Path<String>,
    Body(body): Body<NameBody>,
) -> ApiResult<Response> {
    let id = on_session(&state, sid, move |s| s.set_name(&body.name)).await?;
    Ok(json_answer(StatusCode::CREATED, json!({ "id": id })))
}

/// pi's `getSessionStats`: messages counted over every entry; the usage of assistant
/// messages, compactions and branch summaries whose five numbers are all present summed.
pub(super) async fn stats(state: State, Path(sid): Path<String>) -> ApiResult<Response> {
    let store = state.store()?;
    let stats = blocking(move || {
        let session = store.session(&sid)?;
        let mut s = Stats::default();
        for entry in session.entries() {
            s.add(&entry?.line);
        }
        Ok(s)
    })
    .await?;
    Ok(json_answer(
        StatusCode::OK,
        json!({
            "messageCount": stats.messages,
            "cachedTokens": stats.cached,
            "uncachedTokens": stats.uncached,
            "totalTokens": stats.total,
            "costTotal": stats.cost,
        }),
    ))
}

#[derive(Default)]
struct Stats {
    messages: u64,
    cached: f64,
    uncached: f64,
    total: f64,
    cost: f64,
}

impl Stats {
    fn add(&mut self, line: &str) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let usage = match v.get("type").and_then(Value::as_str) {
            Some("message") => {
                self.messages += 1;
                let m = v.get("message");
                match m.and_then(|m| m.get("role")).and_then(Value::as_str) {
                    Some("assistant") => m.and_then(|m| m.get("usage")),
                    _ => None,
                }
            }
            Some("compaction" | "branch_summary") => v.get("usage"),
            _ => None,
        };
        let Some(usage) = usage else { return };
        let num = |k: &str| usage.get(k).and_then(Value::as_f64);
        let cost = usage
            .get("cost")
            .and_then(|c| c.get("total"))
            .and_then(Value::as_f64);
        if let (Some(input), Some(output), Some(read), Some(write), Some(cost)) = (
            num("input"),
            num("output"),
            num("cacheRead"),
            num("cacheWrite"),
            cost,
        ) {
            self.cached += read;
            self.uncached += input + write;
            self.total += input + output + read + write;
            self.cost += cost;
        }
    }
}
