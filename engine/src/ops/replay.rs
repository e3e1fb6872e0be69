//! Replay (`grove replay`): a session's history in log order, its operations and records,
//! each record with the change it makes to the active context, as an iterator that can
//! follow new writes.
//!
//! The context is carried along the log by one view ([`crate::context::views::Tracker`]) that moves
//! with the leaf: an entry appended at the leaf adds its messages; a leaf move keeps the
//! context up to the deepest common ancestor and reads only the new side; a compaction is
//! built afresh. So "what did the model see at every step" costs one pass over the log, not
//! one context build per step.
//!
//! This room owns the replay events and their JSON lines. It reads the log and the operation
//! list through `Handle`, the context through the view tracker, and waits on the store's
//! commit notices; it writes nothing. docs/design.md, "Replay", explains the design.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use grove_codec::jsstr::quote;
use grove_codec::op::{OpKind, OpStamp};
use grove_codec::time;

use crate::context::build::{Context, ContextOptions, ModelRef};
use crate::context::views::Tracker;
use crate::core::error::{GroveError, Result};
use crate::log::handle::{decode_row_stamped, Entry, Handle};
use crate::ops::oplog;
use crate::ops::oplog::leaf_after;

/// Records read from the log at a time.
const CHUNK: u64 = 1024;

/// What `crate::ops::replay::replay` replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayOptions {
    /// Start at this operation (`None`: the first). The operation count itself is allowed:
    /// nothing yet, only what a follow brings.
    pub from_op: Option<u64>,
    /// End after this operation (`None`: at the end of the log, or never when following).
    pub until_op: Option<u64>,
    /// At the end of the log, wait for new writes instead of ending.
    pub follow: bool,
    /// How contexts are built.
    pub context: ContextOptions,
}

/// An operation as replay meets it: at its first record, before its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationStart {
    /// Its number.
    pub number: u64,
    /// What it was.
    pub kind: OpKind,
    /// When it was committed (ms since the Unix epoch); for a `legacy` operation, its first
    /// record's timestamp when that parses.
    pub time_ms: Option<i64>,
    /// Who made it; `None` for a `legacy` operation.
    pub actor: Option<String>,
    /// Its first record.
    pub first_seq: u64,
    /// The leaf before it (`None`: the root position).
    pub leaf_before: Option<String>,
}

/// The change one record makes to the active context: keep the first `keep` messages,
/// append `append`; a setting is `Some` only when it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextChange {
    /// Messages of the previous context kept (all of them for an append at the leaf; fewer
    /// after a leaf move or a compaction).
    pub keep: usize,
    /// Messages added after the kept ones.
    pub append: Vec<Arc<str>>,
    /// The number of messages after the change.
    pub messages: usize,
    /// The new model, when it changed (`Some(None)`: none now).
    pub model: Option<Option<ModelRef>>,
    /// The new thinking level (raw JSON), when it changed.
    pub thinking_level: Option<String>,
    /// The new active tools (raw JSON), when they changed (`Some(None)`: none now).
    pub active_tool_names: Option<Option<String>>,
}

impl ContextChange {
    /// Whether the context stayed as it was.
    pub fn is_none(&self) -> bool {
        self.keep == self.messages
            && self.append.is_empty()
            && self.model.is_none()
            && self.thinking_level.is_none()
            && self.active_tool_names.is_none()
    }

    /// Applies the change to `ctx` (the context before the record): its messages and
    /// settings become the context after it. `entry_ids` are left as they are.
    pub fn apply(&self, ctx: &mut Context) {
        let messages = Arc::make_mut(&mut ctx.messages);
        messages.truncate(self.keep);
        messages.extend(self.append.iter().cloned());
        if let Some(model) = &self.model {
            ctx.model = model.clone();
        }
        if let Some(level) = &self.thinking_level {
            ctx.thinking_level = level.clone();
        }
        if let Some(tools) = &self.active_tool_names {
            ctx.active_tool_names = tools.clone();
        }
    }
}

/// One record as replay gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRecord {
    /// The operation that wrote it.
    pub op: u64,
    /// The record (an entry, or a leaf record).
    pub entry: Entry,
    /// The leaf after it (`None`: the root position).
    pub leaf: Option<String>,
    /// The change it made to the active context.
    pub change: ContextChange,
}

/// One event of a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayEvent {
    /// First: the session as it stood before the first replayed operation.
    Start {
        /// The first replayed operation.
        op: u64,
        /// Its first record.
        seq: u64,
        /// The leaf then.
        leaf: Option<String>,
        /// The context then.
        context: Context,
    },
    /// An operation begins; its records follow.
    Operation(OperationStart),
    /// A record.
    Record(Box<ReplayRecord>),
}

impl ReplayEvent {
    /// The event as one JSON object (docs/cli.md, "grove replay"): `{"type":"start", "op",
    /// "seq", "leaf", "context"}`, `{"type":"operation", "op", "kind", "time", "timeMs",
    /// "actor", "firstSeq", "leafBefore"}` or `{"type":"record", "op", "seq", "id", "leaf",
    /// "entry", "context":{"keep", "append", "messages", ["model"], ["thinkingLevel"],
    /// ["activeToolNames"]}}`. Entries and messages are their stored JSON text.
    pub fn to_json(&self) -> String {
        match self {
            ReplayEvent::Start {
                op,
                seq,
                leaf,
                context,
            } => format!(
                "{{\"type\":\"start\",\"op\":{op},\"seq\":{seq},\"leaf\":{},\"context\":{}}}",
                opt_str(leaf.as_deref()),
                context.to_json()
            ),
            ReplayEvent::Operation(op) => format!(
                "{{\"type\":\"operation\",\"op\":{},\"kind\":{},\"time\":{},\"timeMs\":{},\
                 \"actor\":{},\"firstSeq\":{},\"leafBefore\":{}}}",
                op.number,
                quote(op.kind.name()),
                opt_str(op.time_ms.map(time::format_ms).as_deref()),
                op.time_ms.map_or("null".to_owned(), |t| t.to_string()),
                opt_str(op.actor.as_deref()),
                op.first_seq,
                opt_str(op.leaf_before.as_deref()),
            ),
            ReplayEvent::Record(r) => {
                let c = &r.change;
                let mut change = format!(
                    "{{\"keep\":{},\"append\":[{}],\"messages\":{}",
                    c.keep,
                    c.append.join(","),
                    c.messages
                );
                if let Some(model) = &c.model {
                    change.push_str(",\"model\":");
                    change.push_str(&ModelRef::json(model.as_ref()));
                }
                if let Some(level) = &c.thinking_level {
                    change.push_str(",\"thinkingLevel\":");
                    change.push_str(level);
                }
                if let Some(tools) = &c.active_tool_names {
                    change.push_str(",\"activeToolNames\":");
                    change.push_str(tools.as_deref().unwrap_or("null"));
                }
                change.push('}');
                format!(
                    "{{\"type\":\"record\",\"op\":{},\"seq\":{},\"id\":{},\"leaf\":{},\
                     \"entry\":{},\"context\":{change}}}",
                    r.op,
                    r.entry.seq,
                    quote(r.entry.id()),
                    opt_str(r.leaf.as_deref()),
                    r.entry.line,
                )
            }
        }
    }
}

fn opt_str(s: Option<&str>) -> String {
    s.map_or("null".to_owned(), quote)
}

/// What [`Replay::poll`] found.
#[derive(Debug)]
pub enum Poll {
    /// The next event.
    Event(ReplayEvent),
    /// Following, and nothing new was written within the wait.
    Idle,
    /// The replay is over.
    End,
}

/// A replay of a session (`crate::ops::replay::replay`): an iterator of events that, when following,
/// blocks until the session's next write. [`Replay::poll`] waits a bounded time instead.
pub struct Replay {
    session: Handle,
    options: ReplayOptions,
    tracker: Tracker,
    /// The next record to read.
    next_seq: u64,
    /// Operations begun before `next_seq`.
    ops_begun: u64,
    /// The leaf's id after the last record.
    leaf_id: Option<String>,
    rows: VecDeque<(Entry, Option<OpStamp>)>,
    events: VecDeque<ReplayEvent>,
    /// The store's commit count when the log was last read.
    commits_seen: u64,
    done: bool,
}

/// Replays the session's history ([`ReplayOptions`]): first a `Start` event (the session
/// before the first replayed operation), then every operation and its records in log
/// order. `OperationNotFound` when `from_op` is past the operation count.
pub(crate) fn replay(s: &Handle, options: ReplayOptions) -> Result<Replay> {
    if let (Some(from), Some(until)) = (options.from_op, options.until_op) {
        if until < from {
            return Err(GroveError::InvalidArgument(format!(
                "the replay would end at operation {until}, before it starts at operation \
                 {from}"
            )));
        }
    }
    let commits_seen = s.inner.commits.count();
    let mut tracker = Tracker::new(options.context);
    let (from, next_seq, leaf_id) = match options.from_op {
        None | Some(0) => (0, 0, None),
        Some(n) => {
            let ops = oplog::operations(s)?;
            let count = ops.len() as u64;
            let (seq, leaf_seq, leaf_id) = match ops.get(n as usize) {
                Some(op) => (op.first_seq, op.leaf_before_seq(), op.leaf_before.clone()),
                None if n == count => match ops.last() {
                    Some(last) => (last.end_seq, last.leaf_after_seq(), last.leaf_after.clone()),
                    None => (0, None, None),
                },
                None => {
                    return Err(GroveError::OperationNotFound {
                        session: s.id().to_owned(),
                        op: n,
                        count,
                    })
                }
            };
            tracker.move_to(s, leaf_seq, None)?;
            (n, seq, leaf_id)
        }
    };
    let start = ReplayEvent::Start {
        op: from,
        seq: next_seq,
        leaf: leaf_id.clone(),
        context: tracker.context().clone(),
    };
    Ok(Replay {
        session: s.clone(),
        options,
        tracker,
        next_seq,
        ops_begun: from,
        leaf_id,
        rows: VecDeque::new(),
        events: VecDeque::from([start]),
        commits_seen,
        done: false,
    })
}

impl Replay {
    /// The next event, waiting at most `wait` for a new write when following.
    pub fn poll(&mut self, wait: Duration) -> Result<Poll> {
        loop {
            if let Some(event) = self.events.pop_front() {
                return Ok(Poll::Event(event));
            }
            if self.done {
                return Ok(Poll::End);
            }
            if let Some((entry, stamp)) = self.rows.pop_front() {
                self.step(entry, stamp)?;
                continue;
            }
            let seen = self.session.inner.commits.count();
            if self.read_rows()? {
                continue;
            }
            // The end of the log: every operation in it is whole (a transaction's records
            // are one write).
            let last_done = self
                .options
                .until_op
                .is_some_and(|until| self.ops_begun > until);
            if !self.options.follow || last_done {
                self.done = true;
                continue;
            }
            if seen == self.commits_seen {
                self.commits_seen = self.session.inner.commits.wait_past(seen, wait);
                if self.commits_seen == seen {
                    return Ok(Poll::Idle);
                }
            } else {
                self.commits_seen = seen;
            }
        }
    }

    /// Reads the next records of the log; `false` at its end.
    fn read_rows(&mut self) -> Result<bool> {
        let id = self.session.id().to_owned();
        let kv = self.session.inner.kv.as_ref();
        let end = self.session.head()?.next_seq;
        let hi = end.min(self.next_seq.saturating_add(CHUNK));
        for row in self.session.log_range(self.next_seq, hi) {
            let (seq, row) = row?;
            self.rows.push_back(decode_row_stamped(kv, &id, seq, row)?);
        }
        Ok(!self.rows.is_empty())
    }

    /// Turns one record into its events.
    fn step(&mut self, entry: Entry, stamp: Option<OpStamp>) -> Result<()> {
        let seq = entry.seq;
        self.next_seq = seq + 1;
        if stamp.is_some() || seq == 0 {
            if self
                .options
                .until_op
                .is_some_and(|until| self.ops_begun > until)
            {
                self.done = true;
                self.rows.clear();
                return Ok(());
            }
            let (kind, time_ms, actor) = match &stamp {
                Some(s) => (
                    s.kind().unwrap_or(OpKind::Legacy),
                    i64::try_from(s.time_ms).ok(),
                    Some(s.actor.clone()),
                ),
                None => (OpKind::Legacy, time::parse_ms(&entry.timestamp()), None),
            };
            self.events
                .push_back(ReplayEvent::Operation(OperationStart {
                    number: self.ops_begun,
                    kind,
                    time_ms,
                    actor,
                    first_seq: seq,
                    leaf_before: self.leaf_id.clone(),
                }));
            self.ops_begun += 1;
        }
        let leaf = leaf_after(seq, &entry.node);
        let before = self.tracker.context();
        let settings = (
            before.model.clone(),
            before.thinking_level.clone(),
            before.active_tool_names.clone(),
        );
        let known = (leaf == Some(seq)).then_some((&entry.node, entry.line.as_str()));
        let keep = self.tracker.move_to(&self.session, leaf, known)?;
        let after = self.tracker.context();
        let change = ContextChange {
            keep,
            append: after.messages[keep..].to_vec(),
            messages: after.messages.len(),
            model: (after.model != settings.0).then(|| after.model.clone()),
            thinking_level: (after.thinking_level != settings.1)
                .then(|| after.thinking_level.clone()),
            active_tool_names: (after.active_tool_names != settings.2)
                .then(|| after.active_tool_names.clone()),
        };
        self.leaf_id = match leaf {
            None => None,
            Some(l) if l == seq => Some(entry.id().to_owned()),
            Some(l) => Some(self.session.node(l)?.id.to_string()),
        };
        self.events
            .push_back(ReplayEvent::Record(Box::new(ReplayRecord {
                op: self.ops_begun.saturating_sub(1),
                entry,
                leaf: self.leaf_id.clone(),
                change,
            })));
        Ok(())
    }
}

impl Iterator for Replay {
    type Item = Result<ReplayEvent>;

    fn next(&mut self) -> Option<Result<ReplayEvent>> {
        loop {
            match self.poll(Duration::from_secs(1)) {
                Ok(Poll::Event(event)) => return Some(Ok(event)),
                Ok(Poll::Idle) => continue,
                Ok(Poll::End) => return None,
                Err(e) => {
                    self.done = true;
                    self.events.clear();
                    self.rows.clear();
                    return Some(Err(e));
                }
            }
        }
    }
}
