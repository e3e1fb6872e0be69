//! The public face of a session: [`Session`] hands each call to the layer that owns it —
//! reads and writes of the log to the log's handle (`crate::log`), paths and the tree to
//! `crate::tree`, contexts to `crate::context`, turns, operations, replay, navigation and
//! summaries to `crate::ops`, export and audit files to `crate::exchange`, verification
//! to `crate::maintain`. It holds the handle and the caches of the layers above the log
//! (context views, leases) that the store was opened with (`crate::open`).
//!
//! May call: every layer below it.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use grove_codec::op::OpStamp;
use grove_codec::record::{HeadRecord, SessionRecord};
use grove_codec::writer::NewEntry;

use crate::context::build::{Context, ContextOptions};
use crate::context::plan::Walk;
use crate::context::views::Views;
use crate::core::error::Result;
use crate::exchange::export::{ExportReport, Flavor};
use crate::exchange::signing::AuditKey;
use crate::kv::Durability;
use crate::log::handle::Handle;
use crate::log::labels::Label;
use crate::maintain::report::VerifyReport;
use crate::ops::lease::{self, Leases};
use crate::ops::navigate::{NavigateOptions, NavigateOutcome, Navigator};
use crate::ops::oplog::{Operation, PointInTime, Seal, SealCheck};
use crate::ops::replay::{Replay, ReplayOptions};
use crate::ops::summary::PathMode;
use crate::tree::proof::EntryProof;
use crate::tree::whole::Tree;

pub use crate::log::handle::{AppendOptions, AppendOutcome, Entry, ExactOptions, DEFAULT_ACTOR};

/// A handle on one session. Cheap to clone; handles of the same store share writer locks.
#[derive(Clone)]
pub struct Session {
    pub(crate) h: Handle,
    pub(crate) views: Arc<Views>,
    pub(crate) leases: Arc<Leases>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.h.record.id)
            .finish()
    }
}

impl Session {
    /// The face of the log's handle `h`, with the store's views and leases.
    pub(crate) fn of(h: Handle, views: Arc<Views>, leases: Arc<Leases>) -> Session {
        Session { h, views, leases }
    }

    /// The guard of the turn lease `token` just taken.
    fn turn(&self, token: String) -> TurnGuard {
        TurnGuard {
            session: self.clone(),
            token,
            detached: false,
        }
    }

    /// Writes the session's audit file to `out` (signed with `key` when given) and returns
    /// its seal. The records are read twice: once to count them, once to write them, so the
    /// memory it takes is one record.
    pub fn export_audit(&self, out: &mut dyn Write, key: Option<&AuditKey>) -> Result<String> {
        crate::exchange::audit::export_audit(&self.h, out, key)
    }

    /// The context at the active leaf with grove's default options.
    pub fn build_context(&self) -> Result<Context> {
        crate::context::read::build_context(&self.h, &self.views)
    }

    /// The context at `leaf` (`None`: the active leaf) with the given options.
    pub fn build_context_with(
        &self,
        leaf: Option<&str>,
        options: ContextOptions,
    ) -> Result<Context> {
        crate::context::read::build_context_with(&self.h, &self.views, leaf, options)
    }

    /// The context at `leaf` (`None`: the active leaf) computed from scratch, bypassing
    /// every cached and persisted view: the reference the views are tested against.
    pub fn build_context_from_scratch(
        &self,
        leaf: Option<&str>,
        options: ContextOptions,
    ) -> Result<Context> {
        crate::context::read::build_context_from_scratch(&self.h, leaf, options)
    }

    /// Writes the session as pi JSONL.
    pub fn export(&self, flavor: Flavor, out: &mut dyn Write) -> Result<ExportReport> {
        crate::exchange::export::export(&self.h, flavor, out)
    }

    /// The head: next sequence number, active leaf, entry count.
    pub fn head(&self) -> Result<HeadRecord> {
        self.h.head()
    }

    /// Every current label, keyed by target id (spec §6.1: last in log order wins, trimmed,
    /// blank clears).
    pub fn labels(&self) -> Result<BTreeMap<String, Label>> {
        self.h.labels()
    }

    /// The label of one entry.
    pub fn label(&self, target: &str) -> Result<Option<Label>> {
        self.h.label(target)
    }

    /// Appends a `label` entry (`None` clears). The target must be an entry.
    pub fn set_label(&self, target: &str, label: Option<&str>) -> Result<String> {
        self.h.set_label(target, label)
    }

    /// Appends a `session_info` entry with the name normalized as pi does (CR/LF runs become
    /// one space, then trimmed); it is written even when empty.
    pub fn set_name(&self, name: &str) -> Result<String> {
        self.h.set_name(name)
    }

    /// The session name: the last `session_info` in log order, trimmed; `None` if empty.
    pub fn name(&self) -> Result<Option<String>> {
        self.h.name()
    }

    /// Starts an agent turn: until the guard is dropped, `navigate` and `move_to` on this
    /// session fail with `Busy`, from every handle of the store — and, in a store whose backend
    /// processes share, from every process; there the turn expires after
    /// [`crate::DEFAULT_TURN_TTL`] unless renewed ([`TurnGuard::renew`]).
    pub fn begin_turn(&self) -> Result<TurnGuard> {
        let token = lease::begin_turn(&self.h, &self.leases)?;
        Ok(self.turn(token))
    }

    /// [`Session::begin_turn`] for `ttl`: the turn ends when its guard is dropped, or when
    /// `ttl` passes without a renewal ([`Session::renew_turn`]), whichever comes first.
    pub fn begin_turn_for(&self, ttl: Duration) -> Result<TurnGuard> {
        let token = lease::begin_turn_for(&self.h, &self.leases, ttl)?;
        Ok(self.turn(token))
    }

    /// Extends the turn lease `lease` by its time, from now; `false` when it is not the
    /// session's live turn (it ended or expired).
    pub fn renew_turn(&self, lease: &str) -> Result<bool> {
        crate::ops::lease::renew_turn(&self.h, &self.leases, lease)
    }

    /// Ends the turn lease `lease`; `false` when it is not the session's live turn.
    pub fn end_turn(&self, lease: &str) -> Result<bool> {
        crate::ops::lease::end_turn(&self.h, &self.leases, lease)
    }

    /// Moves the leaf on behalf of the holder of turn `lease` (spec §7.1: the holder may);
    /// `InvalidState` when it is not the session's live turn. In a shared store the move's
    /// commit checks the lease row it read, in the same statement.
    pub fn move_in_turn(&self, lease: &str, target: Option<&str>) -> Result<()> {
        crate::ops::lease::move_in_turn(&self.h, &self.leases, lease, target)
    }

    /// Whether a turn or a navigation holds the session (a lease that cannot be read counts
    /// as held).
    pub fn is_busy(&self) -> bool {
        crate::ops::lease::is_busy(&self.h, &self.leases)
    }

    /// Navigates to `target` (spec §7.2).
    pub fn navigate(
        &self,
        target: &str,
        options: &NavigateOptions,
        nav: &Navigator<'_>,
    ) -> Result<NavigateOutcome> {
        crate::ops::navigate::navigate(&self.h, &self.leases, target, options, nav)
    }

    /// Every operation, oldest first (one pass over the log).
    pub fn operations(&self) -> Result<Vec<Operation>> {
        crate::ops::oplog::operations(&self.h)
    }

    /// The stamps of the session's log: each record that begins an operation, by position,
    /// with its stamp as stored (unknown kinds included). A copy imported with them
    /// ([`ImportOptions::stamps`](crate::ImportOptions::stamps)) has the same operations and
    /// the same seal.
    pub fn stamps(&self) -> Result<Vec<(u64, OpStamp)>> {
        crate::ops::oplog::stamps(&self.h)
    }

    /// Operation `n`, or `OperationNotFound`.
    pub fn operation(&self, n: u64) -> Result<Operation> {
        crate::ops::oplog::operation(&self.h, n)
    }

    /// The session as it stood after operation `n`.
    pub fn at_op(&self, n: u64) -> Result<PointInTime> {
        crate::ops::oplog::at_op(&self.h, n)
    }

    /// The session as it stood at `time` (an ISO-8601 / RFC 3339 time): after the last
    /// operation committed at or before it, in log order.
    pub fn at_time(&self, time: &str) -> Result<PointInTime> {
        crate::ops::oplog::at_time(&self.h, time)
    }

    /// The context as the session stood at `at`: the context at the leaf it had then (a
    /// context depends only on the path, which later records never change).
    pub fn context_as_of(
        &self,
        at: &PointInTime,
        options: crate::ContextOptions,
    ) -> Result<crate::Context> {
        crate::ops::oplog::context_as_of(&self.h, &self.views, at, options)
    }

    /// The branch as the session stood at `at` (leaf to root, or to the compaction
    /// boundary, like [`Session::branch`]).
    pub fn branch_as_of(&self, at: &PointInTime) -> Result<Vec<crate::log::handle::Entry>> {
        crate::ops::oplog::branch_as_of(&self.h, at)
    }

    /// The full path (root to leaf) as the session stood at `at`.
    pub fn path_as_of(&self, at: &PointInTime) -> Result<Vec<crate::log::handle::Entry>> {
        crate::ops::oplog::path_as_of(&self.h, at)
    }

    /// The tree as the session stood at `at`: its entries then, its labels then, its
    /// active path then.
    pub fn tree_as_of(&self, at: &PointInTime) -> Result<Tree> {
        crate::ops::oplog::tree_as_of(&self.h, at)
    }

    /// Puts the leaf back where it was before the last operation, or before operation
    /// `to_op`: a leaf move recorded as an `undo` operation, which a later undo can undo in
    /// turn. History is never rewritten. Refused with `Busy` while a turn or a navigation
    /// holds the session. Returns the undo operation.
    pub fn undo(&self, to_op: Option<u64>) -> Result<Operation> {
        crate::ops::oplog::undo(&self.h, &self.leases, to_op)
    }

    /// Redacts entry `entry`: the value at `path` (a JSON pointer such as
    /// `/message/content/0/text`), or with `None` the entry's whole content, is replaced by
    /// `"[redacted]"` in every read, and the original bytes leave the log (docs/design.md,
    /// "Redaction"; [`crate::Store::gc`] removes what else still holds them). The redaction is
    /// an operation of kind `redact` with its actor, time, `reason` and the blake3 of what was
    /// removed; seals and chain digests still verify. Durable when it returns.
    pub fn redact(
        &self,
        entry: &str,
        path: Option<&str>,
        reason: &str,
    ) -> Result<crate::ops::redact::Redaction> {
        crate::ops::redact::redact(&self.h, &self.views, entry, path, reason)
    }

    /// The session's redactions, oldest first.
    pub fn redactions(&self) -> Result<Vec<crate::ops::redact::Redaction>> {
        crate::ops::redact::redactions(&self.h)
    }

    /// The session's seal: a digest of its header and of every record (its line's blake3 and
    /// its operation stamp) in log order, so it covers the records and the operation log
    /// (docs/format.md, "Seal").
    pub fn seal(&self) -> Result<Seal> {
        crate::ops::oplog::seal(&self.h)
    }

    /// Whether the session still extends the seal `digest` (hex): whether the running
    /// digest after some operation equals it. One pass over the log.
    pub fn check_seal(&self, digest_hex: &str) -> Result<SealCheck> {
        crate::ops::oplog::check_seal(&self.h, digest_hex)
    }

    /// The full path from the root to `from` (default: the active leaf), root first. It never
    /// stops at a compaction; a missing parent, a self-parent or a cycle ends it quietly.
    pub fn path_to_root(&self, from: Option<&str>) -> Result<Vec<Entry>> {
        crate::tree::paths::path_to_root(&self.h, from)
    }

    /// pi harness `getBranch(from)` (spec §4.1): the path cut at the compaction boundary,
    /// root first. A missing parent or a cycle is `InvalidSession`.
    pub fn branch(&self, from: Option<&str>) -> Result<Vec<Entry>> {
        crate::tree::paths::branch(&self.h, from)
    }

    /// Calls `each` with every entry of `path_to_root(from)` (default: the active leaf), root
    /// first, reading one entry at a time.
    pub fn for_each_on_path(
        &self,
        from: Option<&str>,
        each: &mut dyn FnMut(Entry) -> Result<()>,
    ) -> Result<()> {
        crate::context::read::for_each_on_path(&self.h, from, each)
    }

    /// Calls `each` with every entry of `branch(from)` (pi harness `getBranch`), root first,
    /// reading one entry at a time. Its errors are `branch`'s, raised before any entry.
    pub fn for_each_on_branch(
        &self,
        from: Option<&str>,
        each: &mut dyn FnMut(Entry) -> Result<()>,
    ) -> Result<()> {
        crate::context::read::for_each_on_branch(&self.h, from, each)
    }

    /// [`Session::for_each_on_path`] in two steps: the walk up the tree now (its errors
    /// too), the entries when the [`Walk`] is read, on this thread or another.
    pub fn plan_path(&self, from: Option<&str>) -> Result<Walk> {
        crate::context::read::plan_path(&self.h, from)
    }

    /// [`Session::for_each_on_branch`] in two steps: the walk up the tree now (its errors
    /// too), the entries when the [`Walk`] is read, on this thread or another.
    pub fn plan_branch(&self, from: Option<&str>) -> Result<Walk> {
        crate::context::read::plan_branch(&self.h, from)
    }

    /// Writes the context at `leaf` (`None`: the active leaf) as [`Context::to_json`] does,
    /// message by message as the entries are read: the memory it takes is one entry, not the
    /// context. Each message is written by one `write_all` of its whole JSON (a writer may keep
    /// it apart: the server's piecewise answers do). Errors found before the first byte is
    /// written leave `out` untouched.
    pub fn write_context(
        &self,
        leaf: Option<&str>,
        options: ContextOptions,
        out: &mut dyn Write,
    ) -> Result<()> {
        crate::context::read::write_context(&self.h, &self.views, leaf, options, out)
    }

    /// Calls `each` with every message of the context at `leaf` (`None`: the active leaf),
    /// in order, reading one entry at a time, and returns the context's settings (with no
    /// messages or entry ids). A context the session's view cache holds is read from there.
    /// Errors of the selection (a branch with a missing parent) come before any message.
    pub fn for_each_message(
        &self,
        leaf: Option<&str>,
        options: ContextOptions,
        each: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<Context> {
        crate::context::read::for_each_message(&self.h, &self.views, leaf, options, each)
    }

    /// The proof of tree entry `id` (`EntryNotFound` for an unknown id or a leaf record). A
    /// line whose bytes no longer hash to the stored content digest, or a chain digest that
    /// does not follow from the parent's, is `Corrupt`.
    pub fn proof(&self, id: &str) -> Result<EntryProof> {
        crate::tree::proof::proof(&self.h, id)
    }

    /// Replays the session's history ([`ReplayOptions`]): first a `Start` event (the session
    /// before the first replayed operation), then every operation and its records in log
    /// order. `OperationNotFound` when `from_op` is past the operation count.
    pub fn replay(&self, options: ReplayOptions) -> Result<Replay> {
        crate::ops::replay::replay(&self.h, options)
    }

    /// This handle, stamping its operations with `actor`.
    pub fn with_actor(mut self, actor: &str) -> Session {
        self.h = self.h.with_actor(actor);
        self
    }

    /// Who this handle's operations are stamped with.
    pub fn actor(&self) -> &str {
        self.h.actor()
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.h.id()
    }

    /// The session's stored description (header line, cwd, lineage).
    pub fn record(&self) -> &SessionRecord {
        self.h.record()
    }

    /// The record at `seq`.
    pub fn entry_at(&self, seq: u64) -> Result<Entry> {
        self.h.entry_at(seq)
    }

    /// The entry with this id (the last one, if the id was duplicated on import).
    pub fn entry(&self, id: &str) -> Result<Entry> {
        self.h.entry(id)
    }

    /// Resolves an entry id or unique id prefix; `@` is the leaf and `@-` its parent.
    pub fn resolve_entry(&self, spec: &str) -> Result<Option<String>> {
        self.h.resolve_entry(spec)
    }

    /// Every record of the log in order: entries and leaf records.
    pub fn log(&self) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.h.log()
    }

    /// `n` distinct 8-hex entry ids unused in the session right now (pi's `createEntryId`,
    /// in bulk): nothing reserves them, so they stay unused for a caller that is the
    /// session's only writer; an id taken meanwhile is refused by the append that uses it.
    pub fn fresh_ids(&self, n: usize) -> Result<Vec<String>> {
        self.h.fresh_ids(n)
    }

    /// The records of the log from position `start` on (0-based: pi's `afterEntrySeq`),
    /// entries and leaf records, in order; read as they are consumed.
    pub fn log_from(&self, start: u64) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.h.log_from(start)
    }

    /// The log record `id`, an entry or a leaf record (pi's `getEntry`, which finds both),
    /// or `EntryNotFound`.
    pub fn log_record(&self, id: &str) -> Result<Entry> {
        self.h.log_record(id)
    }

    /// The tree entries in log order (leaf records left out; shadowed duplicates kept).
    pub fn entries(&self) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.h.entries()
    }

    /// The children of `parent` (`None`: the roots), in log order.
    pub fn children(&self, parent: Option<&str>) -> Result<Vec<Entry>> {
        crate::tree::children::children(&self.h, parent)
    }

    /// The active leaf's id (`None`: the root position).
    pub fn leaf(&self) -> Result<Option<String>> {
        self.h.leaf()
    }

    /// Appends an entry as a child of the active leaf; it becomes the leaf. Returns its id.
    pub fn append(&self, entry: NewEntry) -> Result<String> {
        self.h.append(entry)
    }

    /// [`Session::append`] with per-call options. The id is `options.id`, else the `id` of a
    /// [`NewEntry::Raw`] object (both given, they must agree), else a fresh one. A given id
    /// must be new to the session, unless it names this same entry (same type and fields,
    /// `parentId` and `timestamp` aside; the timestamp compared when one is given): then the
    /// append is a retry of one that was applied, and answers its id, writing nothing. Under
    /// another entry it is [`crate::GroveError::DuplicateId`].
    pub fn append_with(&self, entry: NewEntry, options: AppendOptions) -> Result<String> {
        self.h.append_with(entry, options)
    }

    /// Appends the caller's exact entry, one pi entry object as JSON text (pi's
    /// `SessionStorage.appendEntry`): its `id`, `parentId` and `timestamp` are kept and its
    /// bytes stored as given. The id must be new to the session ([`crate::GroveError::DuplicateId`])
    /// and the parent one of its entries or null ([`crate::GroveError::RejectedEntry`]). The entry
    /// becomes the leaf; a `leaf` object moves the leaf to its `targetId` (an entry or null).
    /// Returns the id. A forked session's first entry, whose parent lies in the source
    /// session, is carried by [`crate::Store::fork`] and import, not by this call.
    pub fn append_exact(&self, entry: &str, durability: Option<Durability>) -> Result<String> {
        self.h.append_exact(entry, durability)
    }

    /// [`Session::append_exact`] with per-call options.
    pub fn append_exact_with(&self, entry: &str, options: ExactOptions) -> Result<String> {
        self.h.append_exact_with(entry, options)
    }

    /// Optimistic append: appends only if the leaf is still `expected_leaf` (`None`: the root
    /// position). When another writer moved the leaf meanwhile, nothing is written and the
    /// outcome says where the leaf is now — a value, not an error. An entry object's `id` is
    /// used as [`Session::append_with`] uses it; the same entry stored under it as a child of
    /// `expected_leaf` (a retry of an append that was applied) is `Appended` again.
    pub fn append_if(&self, expected_leaf: Option<&str>, entry: NewEntry) -> Result<AppendOutcome> {
        self.h.append_if(expected_leaf, entry)
    }

    /// Appends several entries as a chain (each the child of the one before), atomically: after
    /// a crash either all of them are in the log or none is (up to 256 entries and 128 KiB
    /// are one log value, more one atomic batch; docs/format.md, "Batches"). Returns their ids.
    /// An entry object's `id` is used as [`Session::append_with`] uses it. A batch whose every
    /// entry names the same entry stored under its id, as the same chain (a retry of a batch
    /// that was applied), answers their ids and writes nothing; a batch of which only some are
    /// stored is [`crate::GroveError::InvalidArgument`] naming the first.
    pub fn append_many(&self, entries: &[NewEntry]) -> Result<Vec<String>> {
        self.h.append_many(entries)
    }

    /// Moves the active leaf (`None`: the root position) and records the move as a leaf
    /// record, even when the target already is the leaf (spec §7.1). Refused with `Busy`
    /// while a turn or a navigation holds the session (use [`crate::TurnGuard::move_to`]).
    pub fn move_to(&self, target: Option<&str>) -> Result<()> {
        crate::ops::lease::check_idle(&self.h, &self.leases)?;
        let idle = |tries| crate::ops::lease::idle_lease(&self.h, &self.leases, tries);
        self.h
            .move_to_with(
                target,
                None,
                crate::log::append::NO_LABEL,
                None,
                grove_codec::op::OpKind::Move,
                &idle,
            )
            .map(|_| ())
    }

    /// The leaf history: every leaf record in log order, as (record id, target id).
    pub fn leaf_history(&self) -> Result<Vec<(String, Option<String>)>> {
        self.h.leaf_history()
    }

    /// Builds the tree of the session.
    pub fn tree(&self) -> Result<Tree> {
        crate::tree::whole::tree(&self.h)
    }

    /// Verifies this session.
    pub fn verify(&self) -> Result<VerifyReport> {
        crate::maintain::verify::verify(&self.h)
    }

    /// The entries a branch summary covers when moving from `old_leaf` to `target`, oldest
    /// first, and their deepest common ancestor (spec §8.1).
    pub fn collect_entries_for_branch_summary(
        &self,
        old_leaf: Option<&str>,
        target: &str,
        mode: PathMode,
    ) -> Result<(Vec<Entry>, Option<String>)> {
        crate::ops::summary::prepare::collect_entries_for_branch_summary(
            &self.h, old_leaf, target, mode,
        )
    }
}

/// Held while an agent turn streams or runs tools; dropping it ends the turn (unless it was
/// detached: [`TurnGuard::detach`]).
#[must_use = "the turn ends when the guard is dropped"]
pub struct TurnGuard {
    session: Session,
    token: String,
    detached: bool,
}

impl TurnGuard {
    /// The session the turn runs on.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The turn's lease token: [`Session::renew_turn`], [`Session::end_turn`] and
    /// [`Session::move_in_turn`] take it, from any handle (or process, in a shared store).
    pub fn lease(&self) -> &str {
        &self.token
    }

    /// Extends the turn by its time from now; `false` when it already ended or expired.
    pub fn renew(&self) -> Result<bool> {
        lease::renew_turn(&self.session.h, &self.session.leases, &self.token)
    }

    /// Moves the leaf on behalf of the turn holder (spec §7.1: the holder may).
    pub fn move_to(&self, target: Option<&str>) -> Result<()> {
        lease::move_in_turn(&self.session.h, &self.session.leases, &self.token, target)
    }

    /// Lets go of the guard without ending the turn: its token ends it
    /// ([`Session::end_turn`]), or its time runs out. Returns the token. (The server holds
    /// turns this way for its clients.)
    pub fn detach(mut self) -> String {
        self.detached = true;
        std::mem::take(&mut self.token)
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        if !self.detached {
            // A turn whose end cannot be written expires (in a shared store) or is gone with
            // the process.
            let _ = lease::end_turn(&self.session.h, &self.session.leases, &self.token);
        }
    }
}
