//! The public face of a store: [`Store`] opens one (through `crate::open`), hands out
//! [`Session`]s, and hands each store-wide call to the layer that owns it — the catalogue to
//! the session log (`crate::log::catalogue`), forks and imports to `crate::exchange`,
//! verification and payload collection to `crate::maintain`, commits and flushes to the
//! core (`crate::core::shared`).
//!
//! May call: every layer below it, and the session face.

use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use crate::context::views::Views;
use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::payloads::PayloadStats;
use crate::core::shared::Inner;
use crate::exchange::fork::ForkOptions;
use crate::exchange::import::{ImportOptions, ImportReport};
use crate::kv::Kv;
use crate::log::handle::Handle;
use crate::log::shared::Logs;
use crate::maintain::gc::GcReport;
use crate::maintain::report::VerifyReport;
use crate::open::Parts;
use crate::ops::lease::Leases;
use crate::session::Session;

pub use crate::core::config::{Backend, SledRescue, StoreConfig, DEFAULT_CACHE_BYTES};
pub use crate::kv::{Durability, ZSTD_LEVEL};
pub use crate::log::catalogue::{CreateSession, SessionFilter, SessionSummary};
pub use crate::log::handle::DEFAULT_ACTOR;

/// A grove store. Cheap to clone; every clone shares the backend and the writer locks.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
    pub(crate) logs: Arc<Logs>,
    pub(crate) views: Arc<Views>,
    pub(crate) leases: Arc<Leases>,
    /// Who this handle's operations are stamped with ([`Store::with_actor`]); `None`:
    /// [`DEFAULT_ACTOR`].
    pub(crate) actor: Option<Arc<str>>,
    /// The full-text index, opened at the first search.
    #[cfg(feature = "search")]
    pub(crate) search: Arc<crate::search::Search>,
}

impl Store {
    /// The face of an opened store.
    fn of(parts: Parts) -> Store {
        Store {
            inner: parts.inner,
            logs: parts.logs,
            views: parts.views,
            leases: parts.leases,
            actor: None,
            #[cfg(feature = "search")]
            search: parts.search,
        }
    }

    /// The face of the log's session handle `h`, stamped with this handle's actor.
    fn face(&self, h: Handle) -> Session {
        Session::of(
            h.with_actor_of(self.actor.clone()),
            self.views.clone(),
            self.leases.clone(),
        )
    }

    /// Opens (or creates) the sled store in `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(StoreConfig::new(path.as_ref()))
    }

    /// A store on a temporary sled database, removed when the last clone is dropped.
    pub fn temporary() -> Result<Store> {
        Store::open_with(StoreConfig {
            backend: Backend::SledTemporary,
            durability: Durability::None,
            ..StoreConfig::new("")
        })
    }

    /// A store held in memory only.
    pub fn in_memory() -> Result<Store> {
        Store::open_with(StoreConfig {
            backend: Backend::Memory,
            durability: Durability::None,
            ..StoreConfig::new("")
        })
    }

    /// Opens a store as configured.
    pub fn open_with(config: StoreConfig) -> Result<Store> {
        let threshold = config.payload_threshold;
        let store = Store::of(crate::open::open_configured(config)?);
        store.set_payload_threshold(threshold);
        Ok(store)
    }

    /// How many handles share this open store: every `Store` cloned from it (whatever its
    /// actor) and every [`Session`] or replay made through one. The backend is closed when the
    /// last is dropped, so a caller that must reopen the store (`grove serve` on a disk that
    /// got room again) waits for this to reach 1, its own.
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.logs)
    }

    /// Whether the store was opened only to read ([`StoreConfig::read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// The acknowledged writes the backend lost, when a store that lost some was opened
    /// read-only or with [`StoreConfig::accept_lost_writes`].
    pub fn lost_writes(&self) -> Option<&crate::core::error::LostWrites> {
        self.inner.lost.as_ref()
    }

    /// The name of the backend ("sled", "memory").
    pub fn backend_name(&self) -> &'static str {
        self.inner.kv.name()
    }

    /// The requests this store has sent to its database server, each one round trip
    /// (`None`: an embedded backend). The difference around an operation is what it cost.
    pub fn round_trips(&self) -> Option<u64> {
        self.inner.kv.round_trips()
    }

    /// A handle on the same store whose operations are stamped with `actor` (the CLI stamps
    /// `cli`, the server the client's name); sessions opened through it inherit it.
    pub fn with_actor(&self, actor: &str) -> Store {
        Store {
            actor: Some(Arc::from(actor)),
            ..self.clone()
        }
    }

    /// Who this handle's operations are stamped with.
    pub fn actor(&self) -> &str {
        self.actor.as_deref().unwrap_or(DEFAULT_ACTOR)
    }

    /// Flushes every write so far to durable storage, with the context views reads built
    /// since their session was last written (reads never write them themselves; they let a
    /// process that opens the store later resume without rebuilding them).
    pub fn flush(&self) -> Result<()> {
        self.inner.check_writable()?;
        crate::context::views::persist_due_views(&self.logs, &self.views)?;
        self.inner
            .durable_commit(crate::kv::WriteBatch::new(), false)
    }

    /// Makes every write applied so far as durable as `durability` says, as if the last of
    /// them had been made with it: `Group` joins (or leads) a group flush, `Sync` flushes and
    /// records a durable commit, `None` does nothing. A caller that makes many writes with
    /// `Durability::None` and then this call acknowledges them all with one flush (the
    /// server's `POST /v1/appends`). Unlike [`Store::flush`], it writes no context view.
    pub fn make_durable(&self, durability: Durability) -> Result<()> {
        match durability {
            Durability::None => Ok(()),
            Durability::Group => {
                self.inner.check_writable()?;
                self.inner.group_flush()
            }
            Durability::Sync => {
                self.inner.check_writable()?;
                self.inner
                    .durable_commit(crate::kv::WriteBatch::new(), false)
            }
        }
    }

    /// Why the store refuses writes, if it does (a write or flush failed earlier).
    pub fn poisoned(&self) -> Option<String> {
        self.inner.poisoned.lock().clone()
    }

    /// Why the database server could not be reached, when the last round trip to it failed
    /// that way (`None` once one succeeds again, and always for an embedded backend). Costs
    /// no round trip: what the store last saw. [`Store::check_backend`] looks now.
    pub fn backend_unavailable(&self) -> Option<String> {
        self.inner.kv.unavailable()
    }

    /// Makes one read of the backend (the store's format marker): `Unavailable` when its
    /// database server cannot be reached, another error when the read fails otherwise.
    pub fn check_backend(&self) -> Result<()> {
        self.inner.kv.get(&keys::meta(keys::META_FORMAT))?;
        Ok(())
    }

    /// Calls `listener` after every write this store commits from now on, for as long as
    /// the caller holds it: the store keeps only a weak reference, so a dropped listener is
    /// forgotten. A listener runs inside the commit path (after the write is acknowledged), so
    /// it must be quick and must not use the store: waking a waiter that is not a thread (a
    /// task on an async runtime following a replay) is what it is for. Writes other
    /// processes make to a shared backend are not seen.
    pub fn on_commit(&self, listener: &Arc<crate::core::commits::CommitListener>) {
        self.inner.commits.listen(listener);
    }

    /// The entries whose text matches `query` (tantivy's query syntax; words must all occur
    /// unless joined by `OR`; a malformed query is read leniently, never refused), best first.
    /// The index first catches up with everything committed before the call, so an
    /// acknowledged entry is always found (docs/design.md, "Search").
    #[cfg(feature = "search")]
    pub fn search(
        &self,
        query: &str,
        options: &crate::search::SearchOptions,
    ) -> Result<crate::search::SearchResults> {
        self.search.search(&self.inner, &self.logs, query, options)
    }

    /// Brings the search index up to date with the log (what every search does first).
    #[cfg(feature = "search")]
    pub fn search_catch_up(&self) -> Result<crate::search::IndexReport> {
        self.search.catch_up(&self.inner, &self.logs)
    }

    /// Forgets the search index and builds it again from the log (`grove search --reindex`).
    #[cfg(feature = "search")]
    pub fn search_reindex(&self) -> Result<crate::search::IndexReport> {
        self.search.reindex(&self.inner, &self.logs)
    }

    /// The disagreements between the search index and the log, neither changed (part of
    /// [`Store::verify`] for a store that has an index).
    #[cfg(feature = "search")]
    pub fn search_verify(&self) -> Result<Vec<crate::maintain::report::Problem>> {
        let found = self.search.verify(&self.inner, &self.logs)?;
        Ok(found
            .into_iter()
            .map(|(session, what)| crate::maintain::report::Problem {
                session,
                entry: None,
                what,
            })
            .collect())
    }

    /// The key-value backend, for tools that inspect or repair stores at the lowest level.
    pub fn kv(&self) -> &dyn Kv {
        &*self.inner.kv
    }

    /// Whether other processes may write this store's backend too (PostgreSQL): its commits
    /// are fenced (docs/design.md, "Fenced commits").
    pub fn is_shared(&self) -> bool {
        self.inner.shared
    }

    /// Opens the store of `config` read-only for salvage, never letting a backend change
    /// its files. A sled store is opened from a private copy ([`crate::kv::SledKv::open_private_copy`]:
    /// sled cuts a damaged log at open); when sled finds it damaged, its files are read
    /// **without sled** ([`crate::kv::sled_scan`]) and the scan comes back with the store, sled's
    /// error beside it. The store's lock is taken as for any reader, and what its
    /// durable-commit record says was lost is reported ([`Store::lost_writes`]).
    pub fn open_for_salvage(config: &StoreConfig) -> Result<(Store, Option<SledRescue>)> {
        let (parts, rescue) = crate::open::open_for_salvage(config)?;
        Ok((Store::of(parts), rescue))
    }

    /// Opens a store on any backend.
    pub fn from_kv(kv: Box<dyn Kv>, durability: Durability) -> Result<Store> {
        crate::open::from_kv(kv, durability).map(Store::of)
    }

    /// Creates an empty session.
    pub fn create_session(&self, options: CreateSession) -> Result<Session> {
        self.logs.create_session(options).map(|h| self.face(h))
    }

    /// Opens the session with exactly this id.
    pub fn session(&self, id: &str) -> Result<Session> {
        self.logs.session(id).map(|h| self.face(h))
    }

    /// Opens the session with exactly this id to write to it. The same as [`Store::session`],
    /// except in a store other processes share: there a session this process opened before is
    /// opened from memory, without reading its catalogue row, so that an append through it
    /// costs one round trip (its commit). That is safe because each of its commits checks the
    /// catalogue row in the same statement: if another process deleted the session
    /// meanwhile, nothing is written and the operation fails with `SessionNotFound` (and the
    /// id is looked up again next time; the caller may retry with [`Store::session`], which
    /// finds a session created since under the same id). Reads through it trust the same
    /// memory, so read through [`Store::session`] what must reflect other processes' deletions.
    pub fn session_for_write(&self, id: &str) -> Result<Session> {
        self.logs.session_for_write(id).map(|h| self.face(h))
    }

    /// Opens the session whose id is `prefix` or starts with it (unique prefixes only).
    pub fn find_session(&self, prefix: &str) -> Result<Session> {
        self.logs.find_session(prefix).map(|h| self.face(h))
    }

    /// Every session, ordered by id, read from the catalogue (a few reads per session, no
    /// entry loaded; docs/design.md, "Commit protocol"). A session deleted meanwhile is left out.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>> {
        self.logs.sessions()
    }

    /// At most `limit` sessions in id order, or from the last with `descending`, starting
    /// after the session `after` (before it, descending): cursor paging whose cost is the page
    /// read, not the store's size. Session ids made by grove are UUIDv7, so id order is the
    /// order of creation.
    pub fn sessions_page(
        &self,
        after: Option<&str>,
        limit: usize,
        descending: bool,
    ) -> Result<Vec<SessionSummary>> {
        self.logs
            .sessions_page(after, limit, descending, &SessionFilter::default())
    }

    /// [`Store::sessions_page`] of the sessions that pass `filter`: it reads the sessions
    /// from the cursor until the page is full, so a selective filter reads more than its page.
    pub fn sessions_page_where(
        &self,
        after: Option<&str>,
        limit: usize,
        descending: bool,
        filter: &SessionFilter,
    ) -> Result<Vec<SessionSummary>> {
        self.logs.sessions_page(after, limit, descending, filter)
    }

    /// Deletes a session and everything stored for it. It disappears from the catalogue
    /// first, atomically; its rows are then removed in bounded batches.
    pub fn delete_session(&self, id: &str) -> Result<()> {
        self.logs.delete_session(id)
    }

    /// Forks `source` into a new session (spec §9).
    pub fn fork(&self, source: &Session, options: ForkOptions) -> Result<Session> {
        crate::exchange::fork::fork(&self.logs, self.actor(), &source.h, options)
            .map(|h| self.face(h))
    }

    /// Imports a pi session file.
    pub fn import_file(&self, path: &Path, options: ImportOptions) -> Result<ImportReport> {
        crate::exchange::import::import_file(&self.logs, self.actor(), path, options)
    }

    /// Imports another tool's transcript (a Claude Code session, a Codex rollout) as a new
    /// session whose entries keep each original line byte for byte (docs/format.md, "Foreign
    /// transcripts"); `Flavor::Foreign` exports it back.
    pub fn import_foreign_file(
        &self,
        path: &Path,
        format: grove_codec::foreign::Format,
        options: ImportOptions,
    ) -> Result<ImportReport> {
        crate::exchange::foreign::import_foreign_file(
            &self.logs,
            self.actor(),
            path,
            format,
            options,
            None,
        )
    }

    /// [`Store::import_foreign_file`] of the first `bytes` of the file only: the complete lines
    /// of a transcript its tool is still writing (`grove import --watch`).
    pub fn import_foreign_prefix(
        &self,
        path: &Path,
        format: grove_codec::foreign::Format,
        options: ImportOptions,
        bytes: u64,
    ) -> Result<ImportReport> {
        crate::exchange::foreign::import_foreign_file(
            &self.logs,
            self.actor(),
            path,
            format,
            options,
            Some(bytes),
        )
    }

    /// Imports pi session JSONL from any reader.
    pub fn import_reader(
        &self,
        input: impl BufRead,
        options: ImportOptions,
    ) -> Result<ImportReport> {
        crate::exchange::import::import_reader(&self.logs, self.actor(), input, options)
    }

    /// Sets the payload threshold: string values of at least `threshold` bytes written from
    /// now on are stored once as payloads; `None` (or 0) stores every line whole. Lines
    /// already written stay as they are.
    pub fn set_payload_threshold(&self, threshold: Option<usize>) {
        crate::core::payloads::set_payload_threshold(&self.inner, threshold)
    }

    /// The payloads stored and their bytes (one scan of the payload table).
    pub fn payload_stats(&self) -> Result<PayloadStats> {
        crate::core::payloads::payload_stats(&self.inner)
    }

    /// Removes the payloads no log row of any session references, and reports each one
    /// removed. Writers of payloads wait while it runs (it marks every reference in the log,
    /// then sweeps). Before that it finishes every redaction (applies one a crash left
    /// recorded but unwritten, drops copies of redacted lines in materialized views), and
    /// after it rewrites the search index's segments without the documents redactions and
    /// deletions removed. The backend's own files are rewritten by [`Store::rewrite`], which
    /// needs the store closed ([`GcReport::rewrite_due`] says when one is due). Read-only
    /// stores refuse it.
    pub fn gc(&self) -> Result<GcReport> {
        #[allow(unused_mut)]
        let mut report = crate::maintain::gc::gc(&self.logs, &self.views)?;
        #[cfg(feature = "search")]
        {
            report.search_compacted = self.search.compact(&self.inner, &self.logs)?;
        }
        Ok(report)
    }

    /// Rewrites the files of the sled or redb store `config` names: every live key copied
    /// into a fresh backend that takes the directory's place, so that no byte the store
    /// deleted or overwrote (a redacted line above all) stays in the old files' free space
    /// (docs/design.md, "Redaction"). The store must not be open elsewhere (`Locked`
    /// otherwise). `grove gc` runs it after [`Store::gc`] when redactions were made since
    /// the last rewrite ([`GcReport::rewrite_due`]), or when asked.
    pub fn rewrite(config: &StoreConfig) -> Result<crate::maintain::rewrite::RewriteReport> {
        let dir = crate::maintain::rewrite::dir_of(config)?;
        let store = Store::open_with(config.clone())?;
        store.flush()?;
        let (copy, report) = crate::maintain::rewrite::copy(&dir, config, store.kv())?;
        crate::maintain::rewrite::swap(&dir, &copy)?;
        drop(store);
        crate::maintain::rewrite::finish(&dir)?;
        Ok(report)
    }

    /// What the retention policy would remove now, and what it spares (docs/design.md,
    /// "Retention"): nothing is changed.
    pub fn retention_plan(
        &self,
        policy: &crate::maintain::retain::RetentionPolicy,
    ) -> Result<crate::maintain::retain::RetentionPlan> {
        let now = i64::try_from(crate::core::util::now_ms()).unwrap_or(i64::MAX);
        crate::maintain::retain::plan(&self.logs, policy, now)
    }

    /// Applies the retention policy now: records the run in the store's operation log, then
    /// archives (when the policy says where) and deletes each session its plan names, and
    /// records what was done. Returns the run.
    pub fn retain(
        &self,
        policy: &crate::maintain::retain::RetentionPolicy,
    ) -> Result<crate::maintain::retain::RetentionRun> {
        let now = i64::try_from(crate::core::util::now_ms()).unwrap_or(i64::MAX);
        crate::maintain::retain::apply(&self.logs, policy, self.actor(), now)
    }

    /// The store's own operations (retention runs), oldest first.
    pub fn store_operations(&self) -> Result<Vec<crate::maintain::retain::StoreOperation>> {
        crate::maintain::retain::store_operations(&self.logs)
    }

    /// Pins session `id` (`true`), so that retention spares it, or unpins it.
    pub fn set_pinned(&self, id: &str, pinned: bool) -> Result<()> {
        self.inner.check_writable()?;
        let sid = self
            .inner
            .sid_of(id)?
            .ok_or_else(|| GroveError::SessionNotFound(id.to_owned()))?;
        crate::log::store_ops::set_pinned(&self.inner, sid, pinned)
    }

    /// Whether session `id` is pinned ([`Store::set_pinned`]).
    pub fn is_pinned(&self, id: &str) -> Result<bool> {
        let sid = self
            .inner
            .sid_of(id)?
            .ok_or_else(|| GroveError::SessionNotFound(id.to_owned()))?;
        crate::log::store_ops::is_pinned(&self.inner, sid)
    }

    /// Verifies every session of the store.
    pub fn verify(&self) -> Result<VerifyReport> {
        #[allow(unused_mut)]
        let mut report = crate::maintain::verify::verify_store(&self.logs)?;
        // The search index, when the store has one; one that cannot be read is a problem.
        #[cfg(feature = "search")]
        if self.search.exists() {
            match self.search_verify() {
                Ok(problems) => report.problems.extend(problems),
                Err(e) => report.problems.push(crate::maintain::report::Problem {
                    session: "(search index)".to_owned(),
                    entry: None,
                    what: e.to_string(),
                }),
            }
        }
        Ok(report)
    }
}

/// Copies every session of `src` whose records read and verify into `dest`, which must hold
/// no session, and reports the sessions it could not copy. Fails only when `dest` is not
/// empty or cannot be read; every problem of the source is a
/// [`Lost`](crate::maintain::salvage::Lost) session or a
/// [`SalvageReport::damage`](crate::maintain::salvage::SalvageReport::damage) line of the
/// report.
pub fn salvage(src: &Store, dest: &Store) -> Result<crate::maintain::salvage::SalvageReport> {
    crate::maintain::salvage::salvage(&src.logs, &dest.logs, dest.actor())
}
