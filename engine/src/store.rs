//! The store: opening a backend, the session catalogue, and the write path shared by every
//! operation (ordered single writes or one atomic batch per operation, flushed per the
//! store's [`Durability`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use grove_codec::header::Header;
use grove_codec::record::{self, HeadRecord, NodeRecord, SessionRecord};
use parking_lot::Mutex;

use crate::context::views::Views;
use crate::core::dir::{DirLock, LockMode};
use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::space::Space;
use crate::core::util;
use crate::kv::{
    self, Bounded, BufferedKv, Guarded, Kv, MemoryKv, PostgresKv, RedbKv, SledKv, WriteBatch,
};
use crate::ops::lease::Leases;
use crate::session::Session;

/// What survives a crash once a write call has returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// The write is applied atomically but not flushed, and may wait up to 50 ms in the
    /// store's write buffer ([`crate::kv::BufferedKv`]): a process kill may lose it only if
    /// the buffer or the backend had not yet written it out (sled flushes in the background
    /// every 500 ms); a power loss may lose recent writes. What survives is a prefix of the
    /// writes, never a torn one.
    None,
    /// Group commit: the call returns after a flush that covers the write, shared with every
    /// writer waiting at the same time (one writer flushes for all; the others wait for it).
    /// What survives is what `Sync` promises — a returned write survives a process kill and a
    /// power loss — at a fraction of the flushes under concurrent writers. A writer waits at
    /// most for the flush in progress plus one more.
    Group,
    /// The backend is flushed before the call returns: the write survives a process kill and
    /// a power loss.
    #[default]
    Sync,
}

/// Which key-value backend holds the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// sled in the given directory (the embedded default).
    Sled(PathBuf),
    /// redb in the given directory (its database file is `grove.redb` there).
    Redb(PathBuf),
    /// A sled database in a temporary directory, removed on drop.
    SledTemporary,
    /// Memory only (tests).
    Memory,
    /// A table in a PostgreSQL database (docs/design.md, "Backends"): `url` as libpq takes
    /// it (`postgres://user@host:port/db`), `table` a plain lowercase identifier
    /// ([`kv::DEFAULT_TABLE`] by default), made when missing.
    Postgres {
        /// The database's URL.
        url: String,
        /// The table holding the store.
        table: String,
    },
}

/// A sled store sled could not open, read by [`Store::open_for_salvage`] without it.
#[derive(Debug)]
pub struct SledRescue {
    /// Why sled's own reading was not used: its error, or the writes it lost.
    pub error: String,
    /// What the scan of its files read and could not read.
    pub scan: kv::sled_scan::SledScan,
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The backend.
    pub backend: Backend,
    /// The default durability of writes.
    pub durability: Durability,
    /// The backend's page cache, in bytes (default [`DEFAULT_CACHE_BYTES`]). With the view
    /// cache ([`crate::context::views::VIEW_CACHE_SESSIONS`] sessions) it bounds the memory of a store.
    pub cache_bytes: u64,
    /// sled only: compress pages with zstd (level [`ZSTD_LEVEL`]) when **creating** a store.
    /// It roughly halves the bytes on disk (or better) and costs 3–6× in append throughput
    /// and 2–5× in import time (docs/benchmarks.md): meant for archives, replay and audit
    /// stores. An existing store keeps the setting it was created with, whatever this says.
    pub compress: bool,
    /// Commits made with [`Durability::None`] wait in a write buffer and reach the backend in
    /// batches (default on; docs/design.md, "Write buffer"). Off, each is applied to the
    /// backend as it is made, as [`Store::from_kv`] does.
    pub write_buffer: bool,
    /// Open the store only to read it (default off): a missing store is
    /// [`GroveError::NoStore`] instead of being created, grove writes nothing (views are not
    /// persisted, interrupted imports are left for the next writer), every write is refused
    /// with [`GroveError::ReadOnly`], and a store on a read-only mount, or one that lost
    /// acknowledged writes ([`Store::lost_writes`]), opens.
    pub read_only: bool,
    /// How long an open waits for another process that holds the store (its lock file
    /// `grove.lock`) before failing with [`GroveError::Locked`]; default zero, fail at once.
    pub lock_wait: std::time::Duration,
    /// Free space, in bytes, that writes leave on the store's disk (default
    /// [`crate::core::space::DEFAULT_RESERVE`]): a write that would eat into it is refused with
    /// [`GroveError::DiskFull`] before it reaches the backend (docs/design.md, "A full disk").
    pub disk_reserve: u64,
    /// Open for writing a store whose backend lost acknowledged writes (see
    /// [`GroveError::LostWrites`]), taking what it holds now as its state (default off).
    pub accept_lost_writes: bool,
    /// The longest grove waits for one flush of the backend, or for closing it (default
    /// [`kv::DEFAULT_FLUSH_TIMEOUT`]). A flush that takes longer fails the write with
    /// [`kv::KvError::Stalled`] and the store refuses writes from then on; a close that takes
    /// longer is abandoned (docs/design.md, "A full disk"). Zero waits without a bound.
    pub flush_timeout: std::time::Duration,
    /// String values of at least this many bytes (base64 images, large tool outputs) are
    /// stored once as content-addressed payloads (default
    /// [`crate::core::payloads::DEFAULT_PAYLOAD_THRESHOLD`]); `None` stores every line whole.
    pub payload_threshold: Option<usize>,
}

/// The zstd level of compressed sled stores.
pub const ZSTD_LEVEL: i32 = 3;

/// The default page-cache size of a store: 256 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;

impl StoreConfig {
    /// sled at `path` with sync durability.
    pub fn new(path: impl Into<PathBuf>) -> StoreConfig {
        StoreConfig {
            backend: Backend::Sled(path.into()),
            durability: Durability::default(),
            cache_bytes: DEFAULT_CACHE_BYTES,
            compress: false,
            write_buffer: true,
            read_only: false,
            lock_wait: std::time::Duration::ZERO,
            disk_reserve: crate::core::space::DEFAULT_RESERVE,
            accept_lost_writes: false,
            flush_timeout: kv::DEFAULT_FLUSH_TIMEOUT,
            payload_threshold: Some(crate::core::payloads::DEFAULT_PAYLOAD_THRESHOLD),
        }
    }

    /// Sets the payload threshold (see [`StoreConfig::payload_threshold`]).
    pub fn payload_threshold(mut self, threshold: Option<usize>) -> StoreConfig {
        self.payload_threshold = threshold;
        self
    }

    /// Sets the longest wait for a flush or a close (see [`StoreConfig::flush_timeout`]).
    pub fn flush_timeout(mut self, timeout: std::time::Duration) -> StoreConfig {
        self.flush_timeout = timeout;
        self
    }

    /// Opens the store only to read it (see [`StoreConfig::read_only`]).
    pub fn read_only(mut self, on: bool) -> StoreConfig {
        self.read_only = on;
        self
    }

    /// Waits up to `wait` for another process that holds the store.
    pub fn lock_wait(mut self, wait: std::time::Duration) -> StoreConfig {
        self.lock_wait = wait;
        self
    }

    /// Sets the free space writes leave on the disk (see [`StoreConfig::disk_reserve`]).
    pub fn disk_reserve(mut self, bytes: u64) -> StoreConfig {
        self.disk_reserve = bytes;
        self
    }

    /// Accepts the loss of acknowledged writes (see [`StoreConfig::accept_lost_writes`]).
    pub fn accept_lost_writes(mut self, on: bool) -> StoreConfig {
        self.accept_lost_writes = on;
        self
    }

    /// Creates sled stores with zstd page compression (see [`StoreConfig::compress`]).
    pub fn compress(mut self, on: bool) -> StoreConfig {
        self.compress = on;
        self
    }

    /// Turns the write buffer on or off (see [`StoreConfig::write_buffer`]).
    pub fn write_buffer(mut self, on: bool) -> StoreConfig {
        self.write_buffer = on;
        self
    }

    /// Sets the page-cache size in bytes.
    pub fn cache_bytes(mut self, bytes: u64) -> StoreConfig {
        self.cache_bytes = bytes;
        self
    }

    /// Sets the durability.
    pub fn durability(mut self, d: Durability) -> StoreConfig {
        self.durability = d;
        self
    }

    /// Sets the backend.
    pub fn backend(mut self, b: Backend) -> StoreConfig {
        self.backend = b;
        self
    }
}

/// Options of a new session.
#[derive(Debug, Clone, Default)]
pub struct CreateSession {
    /// The session id; a lowercase UUIDv7 when `None`. Must match
    /// `^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`.
    pub id: Option<String>,
    /// Working directory recorded in the header; empty means the process's current
    /// directory (pi requires a non-empty `cwd` in version-3 headers).
    pub cwd: String,
    /// Header `metadata` as JSON object text.
    pub metadata: Option<String>,
    /// Header `parentSession` (pi: the parent's file path).
    pub parent_session: Option<String>,
    /// The grove id of the session this one derives from.
    pub parent_session_id: Option<String>,
}

/// A session as listed by [`Store::sessions`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// Session id.
    pub id: String,
    /// Creation timestamp.
    pub created: String,
    /// Working directory.
    pub cwd: String,
    /// Number of entries.
    pub entries: u64,
    /// The grove session this one was forked from.
    pub parent_session_id: Option<String>,
    /// Header `parentSession`.
    pub parent_session: Option<String>,
}

pub(crate) struct Inner {
    pub(crate) kv: Box<dyn Kv>,
    pub(crate) durability: Durability,
    /// Other processes write the backend too ([`Kv::shared`]): commits are fenced and caches
    /// checked against the log (docs/design.md, "Fenced commits").
    pub(crate) shared: bool,
    /// Serializes changes of the catalogue in this process; holds the session numbers taken
    /// from the counter and not handed out yet (`next .. end`).
    catalogue: Mutex<(u64, u64)>,
    session_locks: Mutex<HashMap<u64, Arc<Mutex<Tip>>>>,
    /// Each session's id index, loaded on first use ([`crate::log::ids`]).
    pub(crate) id_indexes: Mutex<HashMap<u64, Arc<crate::log::ids::IdIndexSlot>>>,
    pub(crate) leases: Leases,
    /// What a session's number stands for, read once: its record and packed count, written
    /// when the session is and never changed (a number is not reused), so that opening a
    /// session by id reads only its catalogue row.
    described: Mutex<HashMap<u64, (Arc<SessionRecord>, u64)>>,
    /// The session numbers of ids this process opened, for [`Store::session_for_write`] in a
    /// shared store: trusted without reading the catalogue row, because every commit there
    /// checks that row in its own statement.
    named: Mutex<HashMap<String, u64>>,
    pub(crate) views: Views,
    /// Bumped after every acknowledged write, for readers that follow a session.
    pub(crate) commits: crate::core::commits::Commits,
    /// String values of at least this many bytes are stored as payloads (0: none).
    pub(crate) payload_threshold: std::sync::atomic::AtomicUsize,
    /// Held to read by writers of lines, from the payload check to the commit, and to write
    /// by the payload collection ([`crate::core::payloads`]).
    pub(crate) payload_gate: parking_lot::RwLock<()>,
    poisoned: Mutex<Option<String>>,
    group: GroupCommit,
    /// Where imports spool their lines: the store directory for on-disk stores (the same disk
    /// as the data, not a possibly small tmpfs), the system temporary directory otherwise.
    pub(crate) spool_dir: Option<PathBuf>,
    /// Opened only to read: every write is refused.
    read_only: bool,
    /// What the backend lost of its acknowledged writes (read-only or accepted opens).
    lost: Option<crate::core::durable::LostWrites>,
    /// The durable-commit record of an on-disk store opened for writing.
    durable: Option<Mutex<crate::core::durable::Durable>>,
    /// The free-space guard of an on-disk store opened for writing.
    space: Option<Space>,
    /// The store directory's lock, released after the backend is closed (fields drop in
    /// order).
    _lock: Option<DirLock>,
}

/// Group-commit bookkeeping: how many writes were applied and how many are covered by a
/// finished flush.
#[derive(Default)]
struct GroupCommit {
    state: Mutex<GroupState>,
    done: parking_lot::Condvar,
}

#[derive(Default)]
struct GroupState {
    applied: u64,
    flushed: u64,
    leader: bool,
    failed: Option<String>,
}

impl Inner {
    pub(crate) fn get<T: bincode::Decode<()>>(&self, key: &[u8]) -> Result<Option<T>> {
        match self.kv.get(key)? {
            None => Ok(None),
            Some(bytes) => record::decode(&bytes)
                .map(Some)
                .map_err(|e| GroveError::Corrupt(format!("key {}: {e}", util::hex(key)))),
        }
    }

    pub(crate) fn require<T: bincode::Decode<()>>(&self, key: &[u8]) -> Result<T> {
        self.get(key)?
            .ok_or_else(|| GroveError::Corrupt(format!("missing key {}", util::hex(key))))
    }

    /// Applies a batch atomically and makes it as durable as `durability` says. A failed
    /// write or flush poisons the store: every later write is refused, reads go on.
    pub(crate) fn commit(&self, batch: WriteBatch, durability: Durability) -> Result<()> {
        self.commit_ops(batch, false, durability)
    }

    /// [`Inner::commit`], or with `ordered`, the operations as ordered single writes
    /// ([`Kv::apply_ordered`]): the commit protocol of one-record transactions. A write the
    /// disk could not take is refused before it reaches the backend ([`Space`]).
    pub(crate) fn commit_ops(
        &self,
        ops: WriteBatch,
        ordered: bool,
        durability: Durability,
    ) -> Result<()> {
        let committed = self.commit_unnoticed(ops, ordered, durability);
        if committed.is_ok() {
            self.commits.bump();
        }
        committed
    }

    /// A commit other processes' writers are fenced from: in a shared store ([`Kv::shared`]),
    /// `ops` are applied, atomically, only if every guard holds its expected value at that
    /// moment ([`Kv::apply_if_all`]); `false`: one did not, and nothing was written. A store one
    /// process holds commits as [`Inner::commit_ops`] does, with `ordered`: its callers' locks
    /// keep what the guards protect (a session's log, the catalogue, the leases) from changing
    /// under them.
    pub(crate) fn commit_fenced(
        &self,
        guards: &[kv::Guard<'_>],
        ops: WriteBatch,
        ordered: bool,
        durability: Durability,
    ) -> Result<bool> {
        if !self.shared {
            return self.commit_ops(ops, ordered, durability).map(|()| true);
        }
        self.check_writable()?;
        match self.kv.apply_if_all(guards, ops) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => return Err(self.write_failed(e)),
        }
        if durability != Durability::None {
            self.flush_or_poison()?;
        }
        self.commits.bump();
        Ok(true)
    }

    /// [`Inner::commit_ops`] without the commit notice.
    fn commit_unnoticed(
        &self,
        ops: WriteBatch,
        ordered: bool,
        durability: Durability,
    ) -> Result<()> {
        self.check_writable()?;
        if let Some(space) = &self.space {
            space.admit(ops.size())?;
        }
        if durability == Durability::Sync {
            return self.durable_commit(ops, ordered);
        }
        if let Some(durable) = &self.durable {
            durable.lock().note(&ops);
        }
        let applied = match durability {
            // Not durable yet: the write buffer may hold it (docs/design.md, "Write buffer").
            Durability::None => self.kv.apply_buffered(ops, ordered),
            _ if ordered => self.kv.apply_ordered(ops),
            _ => self.kv.apply(ops),
        };
        if let Err(e) = applied {
            return Err(self.write_failed(e));
        }
        match durability {
            Durability::None => Ok(()),
            _ => self.group_flush(),
        }
    }

    /// A durable commit: `ops` with the next durable-commit epoch ([`crate::core::durable`]),
    /// applied and flushed, then recorded beside the backend. With no record (a store not in
    /// a directory) it is an apply and a flush.
    fn durable_commit(&self, mut ops: WriteBatch, ordered: bool) -> Result<()> {
        let mut durable = self.durable.as_ref().map(|d| d.lock());
        let epoch = durable.as_mut().map(|d| {
            d.note(&ops);
            d.stage(&mut ops)
        });
        if !ops.is_empty() {
            let applied = if ordered {
                self.kv.apply_ordered(ops)
            } else {
                self.kv.apply(ops)
            };
            if let Err(e) = applied {
                return Err(self.write_failed(e));
            }
        }
        self.flush_or_poison()?;
        match (durable, epoch) {
            (Some(mut d), Some(epoch)) => d
                .record(epoch, &*self.kv)
                .map_err(|e| self.poison(format!("recording the durable commit failed: {e}"))),
            _ => Ok(()),
        }
    }

    /// Refuses writes on a read-only store and once the store is poisoned.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(GroveError::ReadOnly(
                "the store was opened only to read".to_owned(),
            ));
        }
        match self.poisoned.lock().as_ref() {
            Some(reason) => Err(GroveError::Poisoned(reason.clone())),
            None => Ok(()),
        }
    }

    /// A write the backend failed. A database server's statement is atomic, and a broken
    /// connection is reopened by the next call, so its failure (the server restarting, a
    /// standby being promoted) leaves the store usable: the failed commit's caches of its
    /// session are already dropped (its tip and id index), the next operation reloads them,
    /// and the caller may retry. An embedded backend's failed write leaves its state unknown:
    /// the store is poisoned.
    fn write_failed(&self, e: kv::KvError) -> GroveError {
        match e {
            kv::KvError::Postgres(_) | kv::KvError::Unavailable(_) => GroveError::Storage(e),
            e => self.poison(format!("write failed: {e}")),
        }
    }

    fn poison(&self, reason: String) -> GroveError {
        let mut p = self.poisoned.lock();
        if p.is_none() {
            *p = Some(reason.clone());
        }
        GroveError::Poisoned(reason)
    }

    fn flush_or_poison(&self) -> Result<()> {
        self.kv
            .flush()
            .map_err(|e| self.poison(format!("flush failed: {e}")))
    }

    /// Leader-based group commit: the first waiter flushes for everyone applied so far.
    fn group_flush(&self) -> Result<()> {
        let mut state = self.group.state.lock();
        state.applied += 1;
        let mine = state.applied;
        loop {
            if state.flushed >= mine {
                return Ok(());
            }
            if let Some(reason) = &state.failed {
                return Err(GroveError::Poisoned(reason.clone()));
            }
            if state.leader {
                self.group.done.wait(&mut state);
                continue;
            }
            state.leader = true;
            let target = state.applied;
            drop(state);
            let result = self.durable_commit(WriteBatch::new(), false);
            state = self.group.state.lock();
            state.leader = false;
            match result {
                Ok(()) => state.flushed = state.flushed.max(target),
                Err(e) => {
                    state.failed = Some(e.to_string());
                    self.group.done.notify_all();
                    return Err(e);
                }
            }
            self.group.done.notify_all();
        }
    }

    /// The writer lock of one session: writes to a session are serialized, writes to
    /// different sessions are not.
    /// The writer lock of session `sid`, which also guards its [`Tip`]. Locks nobody holds
    /// are dropped once more than [`SESSION_LOCKS_KEPT`] sessions have one, so memory stays
    /// bounded when a process writes many sessions.
    pub(crate) fn session_lock(&self, sid: u64) -> Arc<Mutex<Tip>> {
        let mut locks = self.session_locks.lock();
        if locks.len() >= SESSION_LOCKS_KEPT && !locks.contains_key(&sid) {
            locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        }
        locks.entry(sid).or_default().clone()
    }

    /// Whether `id` still names session `sid` in the catalogue; when it does not (another
    /// process deleted the session), this process forgets the name
    /// ([`Store::session_for_write`]).
    pub(crate) fn still_listed(&self, id: &str, sid: u64) -> Result<bool> {
        let listed = self.sid_of(id)? == Some(sid);
        if !listed {
            let mut named = self.named.lock();
            if named.get(id) == Some(&sid) {
                named.remove(id);
            }
        }
        Ok(listed)
    }

    pub(crate) fn sid_of(&self, id: &str) -> Result<Option<u64>> {
        Ok(self
            .kv
            .get(&keys::session_id(id))?
            .and_then(|v| keys::u64_value(&v)))
    }

    /// Allocates a session number (never reused). In a shared store numbers are taken from the
    /// counter a block of [`SID_BLOCK`] at a time, fenced on its value (two processes never
    /// take the same block), and handed out from the block: processes creating sessions at
    /// once meet on the counter once per block, not once per session.
    pub(crate) fn alloc_sid(&self) -> Result<u64> {
        let mut block = self.catalogue.lock();
        if block.0 < block.1 {
            block.0 += 1;
            return Ok(block.0 - 1);
        }
        let take = if self.shared { SID_BLOCK } else { 1 };
        let key = keys::meta(keys::META_NEXT_SID);
        // Meeting other processes on the counter is the point of it: more tries than a session's
        // writes get, each after a longer wait.
        for tries in 0..FENCE_TRIES * 4 {
            util::backoff(tries.min(FENCE_TRIES));
            let stored = self.kv.get(&key)?;
            let next = stored.as_deref().and_then(keys::u64_value).unwrap_or(0);
            let mut batch = WriteBatch::new();
            batch.put(key.clone(), (next + take).to_be_bytes().to_vec());
            if self.commit_fenced(&[(&key, stored.as_deref())], batch, false, Durability::None)? {
                *block = (next + 1, next + take);
                return Ok(next);
            }
        }
        Err(fenced_out("the session counter"))
    }
}

/// Session numbers a process of a shared store takes from the counter at once
/// ([`Inner::alloc_sid`]); those it does not use are never used.
const SID_BLOCK: u64 = 64;

impl Inner {
    /// Lists session `sid` as `id` with the rest of `batch`, in one atomic write; the id must
    /// not be listed yet (`SessionExists`). In a shared store the catalogue row is the guard,
    /// so that of two processes listing one id one gets it; a refusal that was not that (a
    /// serialization failure of unrelated writes) is tried again.
    fn list(&self, id: &str, sid: u64, batch: WriteBatch, durability: Durability) -> Result<()> {
        let _guard = self.catalogue.lock();
        let listed = keys::session_id(id);
        for tries in 0..FENCE_TRIES {
            util::backoff(tries);
            if self.sid_of(id)?.is_some() {
                return Err(GroveError::SessionExists(id.to_owned()));
            }
            let mut batch = batch.clone();
            batch.put(listed.clone(), sid.to_be_bytes().to_vec());
            if self.commit_fenced(&[(&listed, None)], batch, false, durability)? {
                return Ok(());
            }
        }
        Err(fenced_out(&format!("listing session {id}")))
    }
}

/// Times a fenced write is tried when other processes' writes keep coming first
/// ([`Inner::commit_fenced`]); then the operation fails with `busy`, which callers retry.
pub(crate) const FENCE_TRIES: usize = 8;

/// The `busy` error of a fenced write that lost [`FENCE_TRIES`] times.
pub(crate) fn fenced_out(what: &str) -> GroveError {
    GroveError::Busy(format!(
        "{what}: other processes' writes came first {FENCE_TRIES} times in a row; try again"
    ))
}

/// A grove store. Cheap to clone; every clone shares the backend and the writer locks.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
    /// Who this handle's operations are stamped with ([`Store::with_actor`]); `None`:
    /// [`DEFAULT_ACTOR`].
    pub(crate) actor: Option<Arc<str>>,
}

/// The actor of operations made through a handle that was given none.
pub const DEFAULT_ACTOR: &str = "library";

/// Writer locks (with their [`Tip`]s) kept for sessions nobody is writing.
const SESSION_LOCKS_KEPT: usize = 4096;

/// What a session's writer remembers between its transactions, under the writer lock: the
/// head as last committed and the node records it read or wrote most recently, so that an
/// append reads back neither the head, nor its parent, nor (mostly) the parent's jump target.
/// Empty until the first transaction; emptied by anything else that writes the head.
#[derive(Debug, Default)]
pub(crate) struct Tip {
    /// The head as last committed.
    pub(crate) head: Option<HeadRecord>,
    /// Recently read or written node records, most recent last.
    pub(crate) nodes: std::collections::VecDeque<(u64, NodeRecord)>,
}

/// Node records a [`Tip`] keeps besides its spine. An append reads its parent's jump target,
/// which is on the jump chain of the leaf (the spine: the leaf, its jump target, that one's,
/// ... — about 2 log2 n records), and the child's chain is a part of the parent's with the
/// child in front. So the tip keeps the spine of its newest record whatever its age, and 16
/// more recent records: after a few appends past a move, an append reads no node from the
/// backend (one round trip to a database server, the commit).
pub(crate) const TIP_NODES: usize = 16;

impl Tip {
    /// The cached node at `seq`.
    pub(crate) fn node(&self, seq: u64) -> Option<&NodeRecord> {
        self.nodes
            .iter()
            .rev()
            .find(|(s, _)| *s == seq)
            .map(|(_, n)| n)
    }

    /// Remembers `node` at `seq`, forgetting the oldest beyond [`TIP_NODES`] that are not on
    /// the spine of the newest.
    pub(crate) fn remember(&mut self, seq: u64, node: NodeRecord) {
        if let Some(i) = self.nodes.iter().position(|(s, _)| *s == seq) {
            self.nodes.remove(i);
        }
        self.nodes.push_back((seq, node));
        if self.nodes.len() <= TIP_NODES {
            return;
        }
        let spine = self.spine();
        let mut excess = self.nodes.len().saturating_sub(TIP_NODES + spine.len());
        self.nodes.retain(|(s, _)| {
            if excess > 0 && !spine.contains(s) {
                excess -= 1;
                false
            } else {
                true
            }
        });
    }

    /// The seqs of the newest record's jump chain, as far as the tip holds it.
    fn spine(&self) -> Vec<u64> {
        let mut spine = Vec::new();
        let mut at = self.nodes.back().map(|(s, _)| *s);
        while let Some(seq) = at {
            let Some(node) = self.node(seq) else { break };
            spine.push(seq);
            at = node.jump.map(|j| j.seq);
        }
        spine
    }
}

const FORMAT_MARKER: &[u8] = b"grove\x00\x0b";
/// Layout 10 is layout 11 without payloads: none of its lines is stored cut, and it has no
/// payload table, so opening it only rewrites the marker (a layout-10 build cannot read a cut
/// line, docs/format.md, "Payloads").
const FORMAT_MARKER_10: &[u8] = b"grove\x00\x0a";
/// Layout 9 is layout 10 without operation stamps: its log rows are read as they are (their
/// records form one `legacy` operation, docs/design.md, "Operation log"), so opening it only
/// rewrites the marker (a layout-9 build cannot decode the stamped rows).
const FORMAT_MARKER_9: &[u8] = b"grove\x00\x09";
/// Layout 8 is layout 9 without the CRC-32 of the line in the node records of its log rows
/// (their version 1): layout 9 checks the lines of such rows against their content hash, so
/// opening it only rewrites the marker (a layout-8 build cannot decode the newer rows).
const FORMAT_MARKER_8: &[u8] = b"grove\x00\x08";
/// Layout 7 is layout 8 without index packs (`0x1D`, `0x1E`): its imported sessions keep
/// their children index and leaf history in one key per row, which layout 8 still reads, so
/// opening it only rewrites the marker (a layout-7 build would miss the packs of later imports).
const FORMAT_MARKER_7: &[u8] = b"grove\x00\x07";
/// Layout 6 is layout 7 with its persisted views under `0x17` and no materialized rows:
/// opening it removes those views (a cache, rebuilt and persisted under `0x06` at the next
/// context build) and rewrites the marker, in one batch.
const FORMAT_MARKER_6: &[u8] = b"grove\x00\x06";
/// Older layouts this build opens and upgrades. Layout 5 is layout 6 with id filters hashed by
/// blake3 rather than XXH3-128: opening such a store rebuilds them from their ids. Layout 4 is
/// layout 5 without batches (every log key holds one row), so its log is read as it is.
/// Layouts 2 and 3 keep the ids of appended records in id rows (layout 2 is layout 3 without
/// packs): opening such a store moves them into id runs, session by session. The marker is
/// rewritten last.
const FORMAT_MARKERS_OLD: [&[u8]; 4] = [
    b"grove\x00\x02",
    b"grove\x00\x03",
    b"grove\x00\x04",
    b"grove\x00\x05",
];

/// A batch deleting every persisted view of layouts up to 6 (`0x17`).
fn old_views_removed(inner: &Inner) -> Result<WriteBatch> {
    let mut batch = WriteBatch::new();
    let (start, end) = ([keys::T_VIEW_OLD], [keys::T_VIEW_OLD + 1]);
    for pair in inner.kv.scan(&start, &end) {
        batch.delete(pair?.0);
    }
    Ok(batch)
}

/// Creates the store directory `path` if missing (mode 0700, [`crate::kv::files`]), and refuses
/// one that holds another backend's database (opening it would start an empty store beside it).
fn prepare_dir(path: &Path, backend: &str) -> Result<()> {
    if let Some(found) = kv::existing_backend(path).filter(|found| *found != backend) {
        return Err(other_backend(path, found, backend));
    }
    crate::kv::files::create_dir_all(path).map_err(|source| GroveError::Io {
        path: path.to_owned(),
        source,
    })
}

/// How [`Store::start`] opens a backend.
struct Opening {
    durability: Durability,
    read_only: bool,
    accept_lost_writes: bool,
    disk_reserve: u64,
    /// Set by the free-space guard while the disk has room, read by [`Bounded`]: a flush
    /// runs on the caller's thread then, and under the bound only on a disk near full.
    roomy: Option<Arc<AtomicBool>>,
    /// The store directory (on-disk backends).
    dir: Option<PathBuf>,
    lock: Option<DirLock>,
}

/// The error of a format marker this build does not open (`read_only`: one it would upgrade
/// if it could write).
fn unknown_layout(marker: &[u8], read_only: bool) -> GroveError {
    let current = FORMAT_MARKER[FORMAT_MARKER.len() - 1];
    match marker.strip_prefix(b"grove\x00") {
        Some(&[layout]) if read_only && layout < current => GroveError::ReadOnly(format!(
            "this store has grove store layout {layout}, which this build upgrades to layout \
             {current} when it opens the store for writing"
        )),
        Some(&[layout]) => GroveError::Corrupt(format!(
            "this store has grove store layout {layout}; this build reads layout {current} \
             (export its sessions with the grove that wrote it, then import them)"
        )),
        _ => GroveError::Corrupt(format!(
            "not a grove store of a known format (marker {})",
            util::hex(marker)
        )),
    }
}

/// Locks the store directory `dir` of backend `name` for `config` — after checking that a
/// read finds a store there and creating the directory for a writer.
fn lock_dir(dir: &Path, name: &str, config: &StoreConfig) -> Result<DirLock> {
    if config.read_only {
        match kv::existing_backend(dir) {
            Some(found) if found == name => {}
            Some(found) => return Err(other_backend(dir, found, name)),
            // A directory whose backend files are gone but whose durable-commit record says
            // it held a store lost it: the check after opening says what.
            None if dir.join(crate::core::durable::COMMIT_FILE).exists() => {}
            None => return Err(GroveError::NoStore(dir.to_owned())),
        }
    } else {
        prepare_dir(dir, name)?;
    }
    // sled's files are one process's even to read; redb lets readers share.
    let mode = if config.read_only && name == "redb" {
        LockMode::Shared
    } else {
        LockMode::Exclusive
    };
    let lock = crate::core::dir::lock(dir, mode, config.lock_wait)?;
    if !config.read_only && !lock.writable() {
        return Err(GroveError::ReadOnly(format!(
            "{} cannot be written (a read-only file system, immutable files or no \
             permission); open it read-only to read it",
            dir.display()
        )));
    }
    Ok(lock)
}

/// Whether the data file of backend `name` in `dir` is missing or empty (sled's `db`, redb's
/// `grove.redb`).
fn no_data(dir: &Path, name: &str) -> bool {
    let file = match name {
        "sled" => "db",
        _ => kv::REDB_FILE,
    };
    std::fs::metadata(dir.join(file)).map_or(true, |m| m.len() == 0)
}

fn other_backend(dir: &Path, found: &str, backend: &str) -> GroveError {
    GroveError::InvalidArgument(format!(
        "{} holds a {found} store, not a {backend} store: open it with the {found} backend \
         (`--backend {found}` on the command line)",
        dir.display()
    ))
}

impl Store {
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
        let store = Store::open_configured(config)?;
        store.set_payload_threshold(threshold);
        Ok(store)
    }

    fn open_configured(config: StoreConfig) -> Result<Store> {
        let (dir, name) = match &config.backend {
            Backend::Sled(path) => (Some(path.clone()), "sled"),
            Backend::Redb(path) => (Some(path.clone()), "redb"),
            Backend::SledTemporary => (None, "sled"),
            Backend::Memory => (None, "memory"),
            Backend::Postgres { .. } => (None, "postgres"),
        };
        if config.compress && name != "sled" {
            return Err(GroveError::InvalidArgument(
                "compression is a sled option; redb and memory stores are not compressed".into(),
            ));
        }
        // The store's lock is taken before anything in the directory is touched
        // (docs/design.md, "Processes").
        let lock = match &dir {
            Some(dir) => Some(lock_dir(dir, name, &config)?),
            None => None,
        };
        let read_only = config.read_only;
        // A store whose data file is gone or empty: what its durable-commit record says was
        // lost is reported before a backend would take the directory for a new store.
        if let Some(dir) = dir.as_ref().filter(|dir| no_data(dir, name)) {
            let empty = MemoryKv::new();
            match crate::core::durable::check(dir, &empty)? {
                Some(_) if read_only => {
                    return Store::start(
                        Box::new(empty),
                        Opening {
                            durability: config.durability,
                            read_only,
                            accept_lost_writes: false,
                            disk_reserve: config.disk_reserve,
                            roomy: None,
                            dir: Some(dir.clone()),
                            lock,
                        },
                    );
                }
                Some(lost) if !config.accept_lost_writes => {
                    return Err(GroveError::LostWrites(lost));
                }
                _ => {}
            }
        }
        // Both backends write at open: a disk without the reserve refuses a writer here, and
        // a reader of sled opens a private copy instead (docs/design.md, "A full disk").
        if let (Some(dir), false) = (&dir, read_only) {
            crate::core::space::room_to_open(dir, config.disk_reserve)?;
        }
        let roomy = Arc::new(AtomicBool::new(false));
        let bound = |kv: Guarded<_>| -> Result<Box<dyn Kv>, kv::KvError> {
            if config.flush_timeout.is_zero() {
                return Ok(Box::new(kv));
            }
            Ok(Box::new(Bounded::new(
                kv,
                config.flush_timeout,
                roomy.clone(),
            )?))
        };
        // Opening runs under the panic guard too: redb panics on some damaged pages at open.
        let kv: Box<dyn Kv> = kv::guarded(name, || -> Result<Box<dyn Kv>, kv::KvError> {
            match &config.backend {
                Backend::Sled(path) if read_only => {
                    let in_place = crate::core::space::has_room(path, config.disk_reserve);
                    bound(Guarded::new(SledKv::open_read_only(
                        path,
                        config.cache_bytes,
                        in_place,
                    )?))
                }
                Backend::Sled(path) => bound(Guarded::new(SledKv::open(
                    path,
                    config.cache_bytes,
                    config.compress,
                )?)),
                Backend::Redb(path) if read_only => Ok(Box::new(Guarded::new(
                    RedbKv::open_read_only(path, config.cache_bytes)?,
                ))),
                Backend::Redb(path) => {
                    let kv =
                        Guarded::new(RedbKv::open(path, config.durability, config.cache_bytes)?);
                    if config.flush_timeout.is_zero() {
                        Ok(Box::new(kv))
                    } else {
                        Ok(Box::new(Bounded::new(
                            kv,
                            config.flush_timeout,
                            roomy.clone(),
                        )?))
                    }
                }
                Backend::SledTemporary => Ok(Box::new(Guarded::new(SledKv::temporary()?))),
                Backend::Memory => Ok(Box::new(MemoryKv::new())),
                Backend::Postgres { url, table } => Ok(Box::new(PostgresKv::open(url, table)?)),
            }
        })?;
        // Commits that need not be durable yet wait in a write buffer unless it is turned off
        // (docs/design.md, "Write buffer"); `Store::from_kv` takes a backend as it is.
        // A backend other processes write buffers nothing: they would not see it.
        let kv: Box<dyn Kv> = if config.write_buffer && !read_only && !kv.shared() {
            Box::new(BufferedKv::new(kv)?)
        } else {
            kv
        };
        Store::start(
            kv,
            Opening {
                durability: config.durability,
                read_only,
                accept_lost_writes: config.accept_lost_writes,
                disk_reserve: config.disk_reserve,
                roomy: Some(roomy),
                dir,
                lock,
            },
        )
    }

    /// Opens the store of `config` read-only for salvage, never letting a backend change
    /// its files. A sled store is opened from a private copy ([`SledKv::open_private_copy`]:
    /// sled cuts a damaged log at open); when sled finds it damaged, its files are read
    /// **without sled** ([`kv::sled_scan`]) and the scan comes back with the store, sled's
    /// error beside it. The store's lock is taken as for any reader, and what its
    /// durable-commit record says was lost is reported ([`Store::lost_writes`]).
    pub fn open_for_salvage(config: &StoreConfig) -> Result<(Store, Option<SledRescue>)> {
        let config = config.clone().read_only(true);
        let Backend::Sled(dir) = &config.backend else {
            return Ok((Store::open_with(config)?, None));
        };
        let lock = lock_dir(dir, "sled", &config)?;
        let opening = |lock| Opening {
            durability: config.durability,
            read_only: true,
            accept_lost_writes: false,
            disk_reserve: config.disk_reserve,
            roomy: None,
            dir: Some(dir.clone()),
            lock: Some(lock),
        };
        let cache = config.cache_bytes;
        let opened = kv::guarded("sled", || {
            Ok(Guarded::new(SledKv::open_private_copy(dir, cache)?))
        });
        // sled may also open a damaged log cut at the damage (it takes it for a torn tail),
        // holding less than the durable-commit record says: the files are scanned then too.
        let error = match opened {
            Ok(kv) => {
                let lost = crate::core::durable::check(dir, &kv)?;
                match lost {
                    None => return Ok((Store::start(Box::new(kv), opening(lock))?, None)),
                    Some(lost) => {
                        format!("sled opened it holding less than it acknowledged: {lost}")
                    }
                }
            }
            Err(e) if kv::sled_scan::is_damage(&e) => format!("sled could not open it: {e}"),
            Err(e) => return Err(e.into()),
        };
        let mut scan = kv::sled_scan::scan(dir)?;
        let memory = MemoryKv::new();
        let mut batch = WriteBatch::new();
        for (key, value) in std::mem::take(&mut scan.pairs) {
            batch.put(key, value);
        }
        memory.apply(batch)?;
        let store = Store::start(Box::new(memory), opening(lock))?;
        Ok((store, Some(SledRescue { error, scan })))
    }

    /// Opens a store on any backend.
    pub fn from_kv(kv: Box<dyn Kv>, durability: Durability) -> Result<Store> {
        Store::start(
            kv,
            Opening {
                durability,
                read_only: false,
                accept_lost_writes: false,
                disk_reserve: 0,
                roomy: None,
                dir: None,
                lock: None,
            },
        )
    }

    fn start(kv: Box<dyn Kv>, opening: Opening) -> Result<Store> {
        let Opening {
            durability,
            read_only,
            accept_lost_writes,
            disk_reserve,
            roomy,
            dir,
            lock,
        } = opening;
        // Acknowledged writes the backend no longer holds, checked before anything is written
        // (a store emptied by a truncated file would otherwise be taken for a new one).
        let lost = match &dir {
            Some(dir) => crate::core::durable::check(dir, &*kv)?,
            None => None,
        };
        if let Some(lost) = &lost {
            if !read_only && !accept_lost_writes {
                return Err(GroveError::LostWrites(lost.clone()));
            }
        }
        let writable_dir = dir.as_ref().filter(|_| !read_only);
        let durable = match writable_dir {
            Some(dir) => Some(Mutex::new(crate::core::durable::Durable::open(dir, &*kv)?)),
            None => None,
        };
        let inner = Inner {
            shared: kv.shared(),
            kv,
            durability,
            catalogue: Mutex::new((0, 0)),
            session_locks: Mutex::new(HashMap::new()),
            id_indexes: Mutex::new(HashMap::new()),
            leases: Leases::default(),
            described: Mutex::new(HashMap::new()),
            named: Mutex::new(HashMap::new()),
            views: Views::default(),
            commits: crate::core::commits::Commits::default(),
            payload_threshold: std::sync::atomic::AtomicUsize::new(
                crate::core::payloads::DEFAULT_PAYLOAD_THRESHOLD,
            ),
            payload_gate: parking_lot::RwLock::new(()),
            poisoned: Mutex::new(None),
            group: GroupCommit::default(),
            space: writable_dir.map(|dir| Space::new(dir, disk_reserve, roomy)),
            spool_dir: dir.clone(),
            read_only,
            lost,
            durable,
            _lock: lock,
        };
        let marker_key = keys::meta(keys::META_FORMAT);
        let marker = inner.kv.get(&marker_key)?;
        if read_only {
            match marker {
                // Layouts 7 to 10 are read as they are (a writer only rewrites their marker).
                Some(m)
                    if m == FORMAT_MARKER
                        || m == FORMAT_MARKER_10
                        || m == FORMAT_MARKER_9
                        || m == FORMAT_MARKER_8
                        || m == FORMAT_MARKER_7 => {}
                // A backend without a marker holds no store (or lost it: see `lost`).
                None if inner.lost.is_some() => {}
                None => {
                    return Err(GroveError::NoStore(dir.unwrap_or_default()));
                }
                Some(m) => return Err(unknown_layout(&m, true)),
            }
            return Ok(Store {
                inner: Arc::new(inner),
                actor: None,
            });
        }
        match marker {
            Some(m) if m == FORMAT_MARKER => {}
            Some(m)
                if m == FORMAT_MARKER_10
                    || m == FORMAT_MARKER_9
                    || m == FORMAT_MARKER_8
                    || m == FORMAT_MARKER_7 =>
            {
                let mut batch = WriteBatch::new();
                batch.put(marker_key, FORMAT_MARKER.to_vec());
                inner.commit(batch, Durability::Sync)?;
            }
            Some(m) if m == FORMAT_MARKER_6 => {
                let mut batch = old_views_removed(&inner)?;
                batch.put(marker_key, FORMAT_MARKER.to_vec());
                inner.commit(batch, Durability::Sync)?;
            }
            Some(m) if FORMAT_MARKERS_OLD.contains(&m.as_slice()) => {
                while crate::log::ids::migrate_id_rows(&inner)? {}
                crate::log::ids::rebuild_id_filters(&inner)?;
                let mut batch = old_views_removed(&inner)?;
                batch.put(marker_key, FORMAT_MARKER.to_vec());
                inner.commit(batch, Durability::Sync)?;
            }
            Some(m) => return Err(unknown_layout(&m, false)),
            None => {
                let mut batch = WriteBatch::new();
                batch.put(marker_key, FORMAT_MARKER.to_vec());
                inner.commit(batch, Durability::Sync)?;
            }
        }
        let store = Store {
            inner: Arc::new(inner),
            actor: None,
        };
        store.discard_unfinished_imports()?;
        Ok(store)
    }

    /// How many handles share this open store: every `Store` cloned from it (whatever its
    /// actor) and every [`Session`] or replay made through one. The backend is closed when the
    /// last is dropped, so a caller that must reopen the store (`grove serve` on a disk that
    /// got room again) waits for this to reach 1, its own.
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// Whether the store was opened only to read ([`StoreConfig::read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// The acknowledged writes the backend lost, when a store that lost some was opened
    /// read-only or with [`StoreConfig::accept_lost_writes`].
    pub fn lost_writes(&self) -> Option<&crate::core::durable::LostWrites> {
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
            inner: self.inner.clone(),
            actor: Some(Arc::from(actor)),
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
        for sid in self.inner.views.sids() {
            let Some(record) = self.inner.get::<SessionRecord>(&keys::session(sid))? else {
                continue;
            };
            let session = Session::open(self.inner.clone(), sid, record)?;
            let lock = self.inner.session_lock(sid);
            let _writer = lock.lock();
            // A cache: a view that cannot be written is rebuilt next time.
            let _ = session.persist_due_view(session.head()?.leaf);
        }
        self.inner.durable_commit(WriteBatch::new(), false)
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
                self.inner.durable_commit(WriteBatch::new(), false)
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

    /// The key-value backend, for tools that inspect or repair stores at the lowest level.
    pub fn kv(&self) -> &dyn Kv {
        &*self.inner.kv
    }

    /// Creates an empty session.
    pub fn create_session(&self, options: CreateSession) -> Result<Session> {
        let id = match options.id {
            Some(id) => {
                util::check_session_id(&id)?;
                id
            }
            None => util::new_session_id(),
        };
        let cwd = if options.cwd.is_empty() {
            std::env::current_dir().map_or_else(|_| "/".to_owned(), |d| d.display().to_string())
        } else {
            options.cwd
        };
        let header = Header::create(
            &id,
            &util::now_iso(),
            &cwd,
            options.parent_session.as_deref(),
            options.metadata.as_deref(),
        );
        let sid = self.inner.alloc_sid()?;
        let record = SessionRecord {
            id: id.clone(),
            header: header.raw,
            created: header.timestamp,
            cwd: header.cwd,
            parent_session: header.parent_session,
            parent_session_id: options.parent_session_id,
            source_path: None,
        };
        let head = HeadRecord {
            next_seq: 0,
            leaf: None,
            entries: 0,
            name_at: None,
            last_timestamp: None,
        };
        let mut batch = WriteBatch::new();
        batch.put(keys::session(sid), record::encode(&record));
        batch.put(keys::head(sid), record::encode(&head));
        self.inner.list(&id, sid, batch, self.inner.durability)?;
        let session = Session::new(self.inner.clone(), sid, record).with_actor_of(self);
        if self.inner.shared {
            // What this process just wrote, it need not read back: the session's number, record
            // and empty state, for its first writes by id ([`Store::session_for_write`]).
            self.remember(&id, sid, &session);
            self.inner.session_lock(sid).lock().head = Some(head.clone());
            session.install_new_state(head);
        }
        Ok(session)
    }

    /// Remembers that `id` names session `sid`, and what it is ([`Store::session_for_write`]).
    fn remember(&self, id: &str, sid: u64, session: &Session) {
        if self.inner.shared {
            let mut named = self.inner.named.lock();
            if named.len() >= SESSION_LOCKS_KEPT {
                named.clear();
            }
            named.insert(id.to_owned(), sid);
        }
        let mut described = self.inner.described.lock();
        if described.len() >= SESSION_LOCKS_KEPT {
            described.clear();
        }
        described.insert(sid, (session.record.clone(), session.packed));
    }

    /// Publishes a fully written session under its id (the last write of an import).
    pub(crate) fn publish(&self, sid: u64, id: &str, mut batch: WriteBatch) -> Result<()> {
        batch.delete(keys::pending(sid));
        self.inner.list(id, sid, batch, Durability::Sync)
    }

    /// Opens the session with exactly this id.
    pub fn session(&self, id: &str) -> Result<Session> {
        let sid = self
            .inner
            .sid_of(id)?
            .ok_or_else(|| GroveError::SessionNotFound(id.to_owned()))?;
        self.open_listed(id, sid)
    }

    /// Whether other processes may write this store's backend too (PostgreSQL): its commits
    /// are fenced (docs/design.md, "Fenced commits").
    pub fn is_shared(&self) -> bool {
        self.inner.shared
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
        if self.inner.shared {
            let known = self.inner.named.lock().get(id).copied();
            if let Some(sid) = known {
                let described = self.inner.described.lock().get(&sid).cloned();
                if let Some((record, packed)) = described {
                    return Ok(
                        Session::known(self.inner.clone(), sid, record, packed).with_actor_of(self)
                    );
                }
            }
        }
        self.session(id)
    }

    /// Opens session `sid`, listed as `id`; `SessionNotFound` when it was deleted meanwhile
    /// (its catalogue row goes first, its record last).
    fn open_listed(&self, id: &str, sid: u64) -> Result<Session> {
        let known = self.inner.described.lock().get(&sid).cloned();
        if let Some((record, packed)) = known {
            let session =
                Session::known(self.inner.clone(), sid, record, packed).with_actor_of(self);
            self.remember(id, sid, &session);
            return Ok(session);
        }
        match self.inner.require::<SessionRecord>(&keys::session(sid)) {
            Ok(record) => {
                let session = Session::open(self.inner.clone(), sid, record)?;
                self.remember(id, sid, &session);
                Ok(session.with_actor_of(self))
            }
            Err(_) if self.inner.sid_of(id)? != Some(sid) => {
                Err(GroveError::SessionNotFound(id.to_owned()))
            }
            Err(e) => Err(e),
        }
    }

    /// Opens the session whose id is `prefix` or starts with it (unique prefixes only).
    pub fn find_session(&self, prefix: &str) -> Result<Session> {
        if let Some(sid) = self.inner.sid_of(prefix)? {
            return self.open_listed(prefix, sid);
        }
        let start = keys::session_id(prefix);
        let end = keys::prefix_end(&start);
        let mut matches = Vec::new();
        for pair in self.inner.kv.scan(&start, &end).take(6) {
            let (k, _) = pair?;
            matches.push(keys::string_suffix(&k, 1).unwrap_or_default());
        }
        match matches.len() {
            0 => Err(GroveError::SessionNotFound(prefix.to_owned())),
            1 => self.session(&matches[0]),
            _ => Err(GroveError::AmbiguousPrefix {
                what: "session",
                prefix: prefix.to_owned(),
                candidates: matches.join(", "),
            }),
        }
    }

    /// Every session, ordered by id, read from the catalogue (a few reads per session, no
    /// entry loaded; docs/design.md, "Commit protocol"). A session deleted meanwhile is left out.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>> {
        let start = vec![keys::T_SESSION_ID];
        let end = keys::prefix_end(&start);
        let mut out = Vec::new();
        for pair in self.inner.kv.scan(&start, &end) {
            let (key, v) = pair?;
            let sid = keys::u64_value(&v)
                .ok_or_else(|| GroveError::Corrupt("session id index value".to_owned()))?;
            let summary = self.summary(sid);
            // A session deleted meanwhile (its catalogue row goes first, then its rows) is
            // not listed, whatever reading it gave.
            let id = keys::string_suffix(&key, 1).unwrap_or_default();
            if self.inner.sid_of(&id)? != Some(sid) {
                continue;
            }
            out.push(summary?);
        }
        Ok(out)
    }

    /// The listing of session `sid`.
    fn summary(&self, sid: u64) -> Result<SessionSummary> {
        let rec: SessionRecord = self.inner.require(&keys::session(sid))?;
        let entries = Session::open(self.inner.clone(), sid, rec.clone())?.entry_count()?;
        Ok(SessionSummary {
            id: rec.id,
            created: rec.created,
            cwd: rec.cwd,
            entries,
            parent_session_id: rec.parent_session_id,
            parent_session: rec.parent_session,
        })
    }

    /// Deletes a session and everything stored for it. It disappears from the catalogue
    /// first, atomically; its rows are then removed in bounded batches.
    pub fn delete_session(&self, id: &str) -> Result<()> {
        let sid = {
            let _guard = self.inner.catalogue.lock();
            let sid = self
                .inner
                .sid_of(id)?
                .ok_or_else(|| GroveError::SessionNotFound(id.to_owned()))?;
            let listed = keys::session_id(id);
            let value = sid.to_be_bytes();
            let mut tries = 0;
            loop {
                let mut batch = WriteBatch::new();
                batch.delete(listed.clone());
                batch.put(keys::pending(sid), Vec::new());
                // Another process may have deleted it meanwhile: the row is the guard.
                if self.inner.commit_fenced(
                    &[(&listed, Some(&value))],
                    batch,
                    false,
                    self.inner.durability,
                )? {
                    break;
                }
                if self.inner.sid_of(id)? != Some(sid) {
                    return Err(GroveError::SessionNotFound(id.to_owned()));
                }
                tries += 1;
                if tries == FENCE_TRIES {
                    return Err(fenced_out(&format!("deleting session {id}")));
                }
                util::backoff(tries);
            }
            sid
        };
        self.purge(sid)
    }

    /// Removes every row of an unpublished session (the pending marker last, so a crash
    /// midway leaves it to the next open).
    pub(crate) fn purge(&self, sid: u64) -> Result<()> {
        let lock = self.inner.session_lock(sid);
        let mut tip = lock.lock();
        *tip = Tip::default();
        self.inner.forget_id_index(sid);
        self.inner.described.lock().remove(&sid);
        for tag in keys::SESSION_TABLES {
            if tag == keys::T_PENDING {
                continue;
            }
            let start = keys::session_prefix(tag, sid);
            let end = keys::prefix_end(&start);
            loop {
                let mut batch = WriteBatch::new();
                for pair in self.inner.kv.scan(&start, &end).take(10_000) {
                    batch.delete(pair?.0);
                }
                if batch.is_empty() {
                    break;
                }
                self.inner.commit(batch, Durability::None)?;
            }
        }
        let mut batch = WriteBatch::new();
        batch.delete(keys::session(sid));
        batch.delete(keys::pending(sid));
        self.inner.commit(batch, self.inner.durability)
    }

    /// Removes what imports and deletions interrupted by a crash left behind. Not in a shared
    /// store: there a pending session may be another process's import on its way.
    fn discard_unfinished_imports(&self) -> Result<()> {
        if self.inner.shared {
            return Ok(());
        }
        let start = vec![keys::T_PENDING];
        let end = keys::prefix_end(&start);
        let pending: Vec<u64> = self
            .inner
            .kv
            .scan(&start, &end)
            .map(|p| p.map(|(k, _)| keys::last_u64(&k)))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        for sid in pending {
            self.purge(sid)?;
        }
        Ok(())
    }
}
