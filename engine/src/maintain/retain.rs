//! Retention (`grove retain`, `POST /v1/retain`, docs/design.md "Retention"): which sessions a
//! policy removes, and removing them — each archived first when the policy asks (its pi JSONL
//! or its audit file, written and synced before the session goes) — recorded in the store's
//! operation log ([`crate::log::store_ops`]) before anything is deleted, so no run is silent.
//!
//! A policy is a list of rules. A rule selects the sessions whose id starts with its prefix
//! (every session without one) for which each condition it gives holds: last activity older
//! than an age, a size (its pi JSONL export's bytes) over a limit, or a place beyond the newest
//! N of the rule's sessions by last activity. A session any rule selects goes, unless it is
//! pinned (`Store::set_pinned`, or `"pinned": true` in its header's metadata) or, for a rule
//! that spares them (the default), it has a label.
//!
//! May call: [`crate::exchange`] (exports and audit files), [`crate::log`], [`crate::core`].

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use grove_codec::record::{SessionRecord, StoreOpRecord};
use serde_json::json;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::log::handle::Handle;
use crate::log::shared::Logs;
use crate::log::store_ops;

/// One rule of a [`RetentionPolicy`] (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionRule {
    /// Only sessions whose id starts with this.
    pub prefix: Option<String>,
    /// Last activity (the last record's timestamp, else the creation time) older than this
    /// many milliseconds before now.
    pub older_than_ms: Option<u64>,
    /// The session's pi JSONL export larger than this many bytes.
    pub larger_than_bytes: Option<u64>,
    /// Beyond the newest N of the rule's sessions, by last activity.
    pub keep_newest: Option<usize>,
    /// Spare sessions that have a label (default true).
    pub spare_labelled: bool,
}

/// What a session is archived as before it is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveFormat {
    /// Its pi JSONL export (`<id>.jsonl`): importable again.
    Jsonl,
    /// Its audit file (`<id>.audit.jsonl`): checkable without a store.
    Audit,
}

/// A retention policy: rules, and where sessions are archived before they go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// The rules; a session any of them selects goes.
    pub rules: Vec<RetentionRule>,
    /// Archive each session into this directory first, in this format.
    pub archive: Option<(PathBuf, ArchiveFormat)>,
}

/// One session a plan names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionItem {
    /// The session.
    pub session: String,
    /// Its pi JSONL export's bytes.
    pub bytes: u64,
    /// Its entries.
    pub entries: u64,
    /// Its last activity (ms since the Unix epoch), when known.
    pub last_activity_ms: Option<i64>,
    /// Why it was selected: the rule (its index) and the conditions it met.
    pub reasons: Vec<String>,
    /// Why it stays although selected (`pinned`, `labelled`); `None`: it goes.
    pub spared: Option<String>,
}

/// What a policy would remove now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RetentionPlan {
    /// The time the plan was made for (ms since the Unix epoch).
    pub now_ms: i64,
    /// The sessions that go.
    pub remove: Vec<RetentionItem>,
    /// The sessions selected but spared.
    pub spared: Vec<RetentionItem>,
}

impl RetentionPlan {
    /// Bytes of the sessions that go.
    pub fn bytes(&self) -> u64 {
        self.remove.iter().map(|i| i.bytes).sum()
    }
}

/// What one applied run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionRun {
    /// Its number in the store's operation log.
    pub op: u64,
    /// The plan it carried out.
    pub plan: RetentionPlan,
    /// Each session removed, with the archive written for it.
    pub removed: Vec<(String, Option<PathBuf>)>,
    /// Each session it could not remove, and why (it stays).
    pub failed: Vec<(String, String)>,
}

/// A store operation as listed ([`crate::Store::store_operations`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOperation {
    /// Its number, from 0.
    pub op: u64,
    /// What it is (`retain`).
    pub kind: String,
    /// When it began (ms since the Unix epoch).
    pub time_ms: u64,
    /// Who made it.
    pub actor: String,
    /// `started` (still running, or interrupted by a crash) or `done`.
    pub status: String,
    /// What it did, as a JSON object's text.
    pub detail: String,
}

/// Every store operation, oldest first.
pub(crate) fn store_operations(logs: &Arc<Logs>) -> Result<Vec<StoreOperation>> {
    Ok(store_ops::list(&logs.inner)?
        .into_iter()
        .map(|(op, r)| StoreOperation {
            op,
            kind: r.kind,
            time_ms: r.time_ms,
            actor: r.actor,
            status: r.status,
            detail: r.detail,
        })
        .collect())
}

/// A session as a plan weighs it.
struct Weighed {
    id: String,
    handle: Handle,
    entries: u64,
    last_activity_ms: Option<i64>,
    bytes: Option<u64>,
}

/// Counts what is written to it.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Weighed {
    fn bytes(&mut self) -> Result<u64> {
        if let Some(b) = self.bytes {
            return Ok(b);
        }
        let mut counter = Counter(0);
        crate::exchange::export::export(&self.handle, crate::Flavor::Harness, &mut counter)?;
        self.bytes = Some(counter.0);
        Ok(counter.0)
    }
}

fn pinned_in_header(record: &SessionRecord) -> bool {
    grove_codec::header::Header::parse(&record.header)
        .ok()
        .and_then(|h| h.metadata)
        .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).ok())
        .is_some_and(|m| m.get("pinned") == Some(&serde_json::Value::Bool(true)))
}

/// What `policy` removes now (`now_ms`): reads every session's head and labels, and the
/// export of each session a size condition weighs or the plan names.
pub(crate) fn plan(
    logs: &Arc<Logs>,
    policy: &RetentionPolicy,
    now_ms: i64,
) -> Result<RetentionPlan> {
    for (i, rule) in policy.rules.iter().enumerate() {
        if rule.older_than_ms.is_none()
            && rule.larger_than_bytes.is_none()
            && rule.keep_newest.is_none()
        {
            return Err(GroveError::InvalidArgument(format!(
                "retention rule {i} has no condition: give an age, a size or a number to keep"
            )));
        }
    }
    let mut sessions: Vec<Weighed> = Vec::new();
    for summary in logs.sessions()? {
        // Only the sessions some rule's prefix takes are read.
        let wanted = policy.rules.iter().any(|r| {
            r.prefix
                .as_deref()
                .is_none_or(|p| summary.id.starts_with(p))
        });
        if !wanted {
            continue;
        }
        // A session deleted meanwhile (by another client of the store) is not planned.
        let sid = match logs.inner.sid_of(&summary.id)? {
            Some(sid) => sid,
            None => continue,
        };
        let Some(record) = logs.inner.get::<SessionRecord>(&keys::session(sid))? else {
            continue;
        };
        let handle = match Handle::open(logs.clone(), sid, record) {
            Ok(h) => h,
            Err(GroveError::SessionNotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        let head = match handle.head() {
            Ok(h) => h,
            Err(GroveError::SessionNotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        let last_activity_ms = head
            .last_timestamp
            .as_deref()
            .and_then(grove_codec::time::parse_ms)
            .or_else(|| grove_codec::time::parse_ms(&summary.created));
        sessions.push(Weighed {
            id: summary.id,
            handle,
            entries: summary.entries,
            last_activity_ms,
            bytes: None,
        });
    }
    // Per session: the reasons rules selected it.
    let mut reasons: Vec<Vec<String>> = vec![Vec::new(); sessions.len()];
    for (r, rule) in policy.rules.iter().enumerate() {
        let mut members: Vec<usize> = (0..sessions.len())
            .filter(|&i| {
                rule.prefix
                    .as_deref()
                    .is_none_or(|p| sessions[i].id.starts_with(p))
            })
            .collect();
        // Newest first (a session without a time counts as oldest), then by id.
        members.sort_by(|&a, &b| {
            sessions[b]
                .last_activity_ms
                .cmp(&sessions[a].last_activity_ms)
                .then_with(|| sessions[a].id.cmp(&sessions[b].id))
        });
        for (rank, &i) in members.iter().enumerate() {
            let mut met = Vec::new();
            if let Some(n) = rule.keep_newest {
                if rank < n {
                    continue;
                }
                met.push(format!("beyond the newest {n}"));
            }
            if let Some(age) = rule.older_than_ms {
                let limit = now_ms.saturating_sub(i64::try_from(age).unwrap_or(i64::MAX));
                match sessions[i].last_activity_ms {
                    Some(t) if t < limit => {
                        met.push(format!("last active {}", grove_codec::time::format_ms(t)))
                    }
                    _ => continue,
                }
            }
            if let Some(limit) = rule.larger_than_bytes {
                let bytes = sessions[i].bytes()?;
                if bytes <= limit {
                    continue;
                }
                met.push(format!("{bytes} bytes"));
            }
            reasons[i].push(format!("rule {r}: {}", met.join(", ")));
        }
    }
    let mut out = RetentionPlan {
        now_ms,
        ..RetentionPlan::default()
    };
    for (i, why) in reasons.into_iter().enumerate() {
        if why.is_empty() {
            continue;
        }
        let s = &mut sessions[i];
        let pinned =
            store_ops::is_pinned(&logs.inner, s.handle.sid)? || pinned_in_header(s.handle.record());
        let spare_labels = policy.rules.iter().enumerate().all(|(r, rule)| {
            rule.spare_labelled || !why.iter().any(|w| w.starts_with(&format!("rule {r}:")))
        });
        let spared = if pinned {
            Some("pinned".to_owned())
        } else if spare_labels && !s.handle.labels()?.is_empty() {
            Some("labelled".to_owned())
        } else {
            None
        };
        let item = RetentionItem {
            session: s.id.clone(),
            bytes: s.bytes()?,
            entries: s.entries,
            last_activity_ms: s.last_activity_ms,
            reasons: why,
            spared: spared.clone(),
        };
        match spared {
            None => out.remove.push(item),
            Some(_) => out.spared.push(item),
        }
    }
    Ok(out)
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> GroveError + '_ {
    move |source| GroveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes session `h`'s archive into `dir` (a temporary file synced, then renamed); its path.
fn archive(h: &Handle, dir: &Path, format: ArchiveFormat) -> Result<PathBuf> {
    crate::kv::files::create_dir_all(dir).map_err(io(dir))?;
    let name = match format {
        ArchiveFormat::Jsonl => format!("{}.jsonl", h.id()),
        ArchiveFormat::Audit => format!("{}.audit.jsonl", h.id()),
    };
    let path = dir.join(name);
    let tmp = dir.join(format!(".{}.{}.tmp", h.id(), std::process::id()));
    {
        let file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
        let mut out = std::io::BufWriter::new(file);
        match format {
            ArchiveFormat::Jsonl => {
                crate::exchange::export::export(h, crate::Flavor::Harness, &mut out)?;
            }
            ArchiveFormat::Audit => {
                crate::exchange::audit::export_audit(h, &mut out, None)?;
            }
        }
        out.flush().map_err(io(&tmp))?;
        let file = out.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
        file.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(path)
}

fn plan_detail(plan: &RetentionPlan) -> serde_json::Value {
    let items = |list: &[RetentionItem]| -> Vec<serde_json::Value> {
        list.iter()
            .map(|i| {
                json!({
                    "session": i.session,
                    "bytes": i.bytes,
                    "entries": i.entries,
                    "lastActivityMs": i.last_activity_ms,
                    "reasons": i.reasons,
                    "spared": i.spared,
                })
            })
            .collect()
    };
    json!({
        "nowMs": plan.now_ms,
        "remove": items(&plan.remove),
        "spared": items(&plan.spared),
        "bytes": plan.bytes(),
    })
}

/// Applies `policy` now: plans, records the run in the store's operation log (`started`, with
/// the plan), archives and deletes each session in turn, then records what was done (`done`).
/// A session whose archive cannot be written is not deleted (it is listed as failed).
pub(crate) fn apply(
    logs: &Arc<Logs>,
    policy: &RetentionPolicy,
    actor: &str,
    now_ms: i64,
) -> Result<RetentionRun> {
    logs.inner.check_writable()?;
    let plan = plan(logs, policy, now_ms)?;
    let archive_detail = policy.archive.as_ref().map(|(dir, format)| {
        json!({
            "dir": dir.display().to_string(),
            "format": match format {
                ArchiveFormat::Jsonl => "jsonl",
                ArchiveFormat::Audit => "audit",
            },
        })
    });
    let mut detail = json!({ "plan": plan_detail(&plan), "archive": archive_detail });
    let time_ms = crate::core::util::now_ms();
    let mut record = StoreOpRecord {
        kind: "retain".to_owned(),
        time_ms,
        actor: actor.to_owned(),
        status: "started".to_owned(),
        detail: detail.to_string(),
    };
    let op = store_ops::begin(&logs.inner, &record)?;
    let mut removed = Vec::new();
    let mut failed = Vec::new();
    for item in &plan.remove {
        let outcome = (|| -> Result<Option<PathBuf>> {
            let archived = match &policy.archive {
                None => None,
                Some((dir, format)) => {
                    let h = logs.session(&item.session)?;
                    Some(archive(&h, dir, *format)?)
                }
            };
            logs.delete_session(&item.session)?;
            Ok(archived)
        })();
        match outcome {
            Ok(path) => removed.push((item.session.clone(), path)),
            Err(e) => failed.push((item.session.clone(), e.to_string())),
        }
    }
    detail["removed"] = removed
        .iter()
        .map(|(s, p)| json!({ "session": s, "archive": p.as_ref().map(|p| p.display().to_string()) }))
        .collect();
    detail["failed"] = failed
        .iter()
        .map(|(s, e)| json!({ "session": s, "error": e }))
        .collect();
    record.status = "done".to_owned();
    record.detail = detail.to_string();
    store_ops::finish(&logs.inner, op, &record)?;
    Ok(RetentionRun {
        op,
        plan,
        removed,
        failed,
    })
}
