//! The shared state of an open store ([`Inner`]) and its commit path: every write of every
//! layer above is one [`Inner::commit`] (an atomic batch, or ordered single writes), made as
//! durable as the store's [`Durability`] says — synchronously with the durable-commit record,
//! by group commit, or through the write buffer — or a fenced commit in a store other processes
//! share. A failed embedded write poisons the store. Also the session numbers of the catalogue.
//! It holds no cache of a layer above it (those are built by `crate::open` and handed down).
//!
//! May call: [`crate::core`]'s other modules, [`crate::kv`].

use std::path::PathBuf;

use grove_codec::record;
use parking_lot::Mutex;

use crate::core::dir::DirLock;
use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::space::Space;
use crate::core::util;
use crate::kv::{self, Durability, Kv, WriteBatch};

pub(crate) struct Inner {
    pub(crate) kv: Box<dyn Kv>,
    pub(crate) durability: Durability,
    /// Other processes write the backend too ([`Kv::shared`]): commits are fenced and caches
    /// checked against the log (docs/design.md, "Fenced commits").
    pub(crate) shared: bool,
    /// Serializes changes of the catalogue in this process; holds the session numbers taken
    /// from the counter and not handed out yet (`next .. end`).
    pub(crate) catalogue: Mutex<(u64, u64)>,
    /// Bumped after every acknowledged write, for readers that follow a session.
    pub(crate) commits: crate::core::commits::Commits,
    /// String values of at least this many bytes are stored as payloads (0: none).
    pub(crate) payload_threshold: std::sync::atomic::AtomicUsize,
    /// Held to read by writers of lines, from the payload check to the commit, and to write
    /// by the payload collection ([`crate::core::payloads`]).
    pub(crate) payload_gate: parking_lot::RwLock<()>,
    pub(crate) poisoned: Mutex<Option<String>>,
    pub(crate) group: GroupCommit,
    /// Where imports spool their lines: the store directory for on-disk stores (the same disk
    /// as the data, not a possibly small tmpfs), the system temporary directory otherwise.
    pub(crate) spool_dir: Option<PathBuf>,
    /// Opened only to read: every write is refused.
    pub(crate) read_only: bool,
    /// The catalogue indexes (`0x09`–`0x0C`, layout 15) are there: false only for a store of
    /// an older layout opened to read, which filtered listings then scan.
    pub(crate) catalogue_indexed: bool,
    /// What the backend lost of its acknowledged writes (read-only or accepted opens).
    pub(crate) lost: Option<crate::core::error::LostWrites>,
    /// The durable-commit record of an on-disk store opened for writing.
    pub(crate) durable: Option<Mutex<crate::core::durable::Durable>>,
    /// The free-space guard of an on-disk store opened for writing.
    pub(crate) space: Option<Space>,
    /// The store directory's lock, released after the backend is closed (fields drop in
    /// order).
    pub(crate) _lock: Option<DirLock>,
}

/// Group-commit bookkeeping: how many writes were applied and how many are covered by a
/// finished flush.
#[derive(Default)]
pub(crate) struct GroupCommit {
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
        let touched = self
            .commits
            .watching()
            .then(|| crate::core::commits::touched_by(&ops));
        let committed = self.commit_unnoticed(ops, ordered, durability);
        if committed.is_ok() {
            if let Some(touched) = touched {
                self.commits.note(touched);
            }
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
        let touched = self
            .commits
            .watching()
            .then(|| crate::core::commits::touched_by(&ops));
        match self.kv.apply_if_all(guards, ops) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => return Err(self.write_failed(e)),
        }
        if durability != Durability::None {
            self.flush_or_poison()?;
        }
        if let Some(touched) = touched {
            self.commits.note(touched);
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
    pub(crate) fn durable_commit(&self, mut ops: WriteBatch, ordered: bool) -> Result<()> {
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
            #[cfg(feature = "postgres")]
            kv::KvError::Postgres(_) => GroveError::Storage(e),
            kv::KvError::Unavailable(_) => GroveError::Storage(e),
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
    pub(crate) fn group_flush(&self) -> Result<()> {
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

/// Handle numbers a process of a shared store takes from the counter at once
/// ([`Inner::alloc_sid`]); those it does not use are never used.
const SID_BLOCK: u64 = 64;

impl Inner {
    /// Lists session `sid` as `id` with the rest of `batch`, in one atomic write; the id must
    /// not be listed yet (`SessionExists`). In a shared store the catalogue row is the guard,
    /// so that of two processes listing one id one gets it; a refusal that was not that (a
    /// serialization failure of unrelated writes) is tried again.
    pub(crate) fn list(
        &self,
        id: &str,
        sid: u64,
        batch: WriteBatch,
        durability: Durability,
    ) -> Result<()> {
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
