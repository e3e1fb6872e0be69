//! The narrow key-value interface grove stores everything through.
//!
//! What grove assumes of a backend (docs/format.md, "The medium"): keys sort bytewise;
//! a [`WriteBatch`] is applied atomically (all or nothing, also across a crash); writes are
//! recovered in the order they were applied — after a crash, what survives is a prefix of
//! the applied writes (sled recovers its log up to the first gap; redb and the memory
//! backend apply every call atomically); after [`Kv::flush`] returns, every write applied
//! before it survives a process kill and a power loss. No transactions.

mod bounded;
pub mod buffered;
mod durability;
mod existing;
pub(crate) mod files;
mod forward;
mod guarded;
mod memory;
#[cfg(feature = "postgres")]
mod postgres_kv;
mod redb_kv;
mod sled_kv;
pub mod sled_scan;

pub use bounded::{Bounded, DEFAULT_FLUSH_TIMEOUT};
pub use buffered::{AsTheyAre, BufferedKv, Coalesce, BUFFER_BYTES, BUFFER_INTERVAL, BUFFER_OPS};
pub use durability::{Durability, ZSTD_LEVEL};
pub use existing::existing_backend;
pub use forward::Forward;
pub(crate) use guarded::guarded;
pub use guarded::{quiet_backend_panics, Guarded};
pub use memory::MemoryKv;
#[cfg(feature = "postgres")]
pub use postgres_kv::{valid_table, PostgresKv, DEFAULT_TABLE, PAGE_ROWS};
pub use redb_kv::{RedbKv, REDB_FILE};
pub use sled_kv::{stored_compression, SledKv};

/// A failure of the backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KvError {
    /// sled reported an error.
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    /// redb reported an error.
    #[error("redb: {0}")]
    Redb(#[from] redb::Error),
    /// Handing buffered writes to the backend failed earlier ([`BufferedKv`]): the store
    /// takes no more writes.
    #[error("buffered writes could not be written: {0}")]
    Buffer(String),
    /// The backend panicked (a damaged page it does not expect); the call was abandoned
    /// ([`Guarded`]).
    #[error("{backend} panicked: {message}")]
    Panic {
        /// The backend's name.
        backend: &'static str,
        /// The panic's message.
        message: String,
    },
    /// A scan of the backend handed out a key outside the range asked for, or out of order:
    /// a damaged page (redb reads the keys of a zeroed leaf page as zeros).
    #[error("{backend} returned a key outside the range scanned or out of order (a damaged page)")]
    Disorder {
        /// The backend's name.
        backend: &'static str,
    },
    /// PostgreSQL refused a statement (a missing database, a permission, a bad value): the
    /// same call would fail again.
    #[cfg(feature = "postgres")]
    #[error("postgres: {0}")]
    Postgres(String),
    /// PostgreSQL could not be reached or gave up a statement that may succeed when tried
    /// again: the connection was refused or broke, the server is starting, shutting down or
    /// out of connections, or it cancelled a transaction to resolve a conflict. Nothing of
    /// the statement was applied unless it committed before the connection broke; the
    /// connection is reopened by the next call.
    #[error("postgres unavailable: {0}")]
    Unavailable(String),
    /// The backend was opened only to read.
    #[error("the backend was opened read-only")]
    ReadOnly,
    /// The backend did not finish `what` within the bound ([`Bounded`]): its disk stopped
    /// taking writes (full, or failing). The store refuses writes from then on.
    #[error(
        "{backend} did not finish a {what} within {} s (its disk stopped taking writes); \
         nothing more is written",
        .waited.as_secs_f64()
    )]
    Stalled {
        /// The backend's name.
        backend: &'static str,
        /// What it did not finish ("flush").
        what: &'static str,
        /// How long grove waited.
        waited: std::time::Duration,
    },
    /// The backend was used while being closed.
    #[error("the backend is closed")]
    Closed,
    /// Preparing the store directory failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// A guard of a conditional batch ([`Kv::apply_if_all`]): a key and the value it must hold
/// (`None`: it must be absent).
pub type Guard<'a> = (&'a [u8], Option<&'a [u8]>);

/// A key-value pair read from a scan.
pub type Pair = (Vec<u8>, Vec<u8>);

/// An iterator over a key range.
pub type Scan<'a> = Box<dyn Iterator<Item = Result<Pair, KvError>> + 'a>;

/// Puts and deletes applied atomically by [`Kv::apply`], in order: of several operations on
/// one key, the last wins.
#[derive(Debug, Default, Clone)]
pub struct WriteBatch {
    ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    bytes: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.bytes += key.len() + value.len();
        self.ops.push((key, Some(value)));
    }

    /// Removes `key`.
    pub fn delete(&mut self, key: Vec<u8>) {
        self.bytes += key.len();
        self.ops.push((key, None));
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Approximate payload size in bytes.
    pub fn size(&self) -> usize {
        self.bytes
    }

    /// The operations, in order, borrowed.
    pub fn ops(&self) -> &[(Vec<u8>, Option<Vec<u8>>)] {
        &self.ops
    }

    /// The operations, in order.
    pub fn into_ops(self) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        self.ops
    }
}

/// Hands a pair found by [`Kv::read_last`] to its reader; whether there was one.
pub(crate) fn deliver<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    found: Option<(K, V)>,
    read: &mut dyn FnMut(&[u8], &[u8]),
) -> bool {
    found.map(|(k, v)| read(k.as_ref(), v.as_ref())).is_some()
}

/// A sorted, atomic-batch key-value store.
pub trait Kv: Send + Sync {
    /// The value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError>;
    /// Calls `read` with the value of `key`, in place where the backend allows (no copy of
    /// a large value when only its head is decoded); `false` when the key is absent.
    fn read_value(&self, key: &[u8], read: &mut dyn FnMut(&[u8])) -> Result<bool, KvError> {
        Ok(match self.get(key)? {
            Some(v) => {
                read(&v);
                true
            }
            None => false,
        })
    }
    /// Calls `read` with the key and value of the greatest key in `[start, end)`, in place
    /// where the backend allows; `false` when the range is empty. (A floor lookup: how a
    /// record is found in its pack.)
    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        Ok(deliver(self.scan_rev(start, end).next().transpose()?, read))
    }
    /// Keys in `[start, end)`, ascending.
    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_>;
    /// Keys in `[start, end)`, descending.
    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_>;
    /// Applies every operation of `batch` atomically.
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError>;
    /// Applies the operations of `batch` in order, not necessarily atomically: after a crash
    /// a prefix of them survives. Backends whose batches cost more than single writes (sled
    /// writes out its buffer for every batch) override this; the default is [`Kv::apply`].
    fn apply_ordered(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.apply(batch)
    }
    /// Applies `batch` as [`Kv::apply`] (or, with `ordered`, [`Kv::apply_ordered`]) does, or
    /// later: a backend with a write buffer ([`BufferedKv`]) keeps it in memory, where every
    /// read sees it, and applies it with later buffered batches in one atomic batch, before
    /// any other write and on [`Kv::flush`]. For commits that need not be durable yet.
    fn apply_buffered(&self, batch: WriteBatch, ordered: bool) -> Result<(), KvError> {
        if ordered {
            self.apply_ordered(batch)
        } else {
            self.apply(batch)
        }
    }
    /// Applies `batch` atomically if, at that moment, `guard` holds `expected` (`None`: the
    /// key is absent), and says whether it did: a conditional batch. A writer that finds the
    /// guard changed (by a writer in another process sharing the backend) re-reads what it
    /// cached and tries again; nothing of a refused batch is applied.
    fn apply_if(
        &self,
        guard: &[u8],
        expected: Option<&[u8]>,
        batch: WriteBatch,
    ) -> Result<bool, KvError> {
        self.apply_if_all(&[(guard, expected)], batch)
    }
    /// [`Kv::apply_if`] with several guards, every one of which must hold.
    ///
    /// The default checks, then applies: right for a backend one process holds (sled and
    /// redb, behind the directory lock), whose writers of what a guard protects are
    /// serialized by the engine (a session's lock). A backend that processes share checks
    /// inside the write ([`PostgresKv`]).
    fn apply_if_all(&self, guards: &[Guard<'_>], batch: WriteBatch) -> Result<bool, KvError> {
        for (key, expected) in guards {
            if self.get(key)?.as_deref() != *expected {
                return Ok(false);
            }
        }
        self.apply(batch)?;
        Ok(true)
    }
    /// Makes every applied batch durable.
    fn flush(&self) -> Result<(), KvError>;
    /// A short name for reports ("sled", "redb", "memory").
    fn name(&self) -> &'static str;
    /// The requests this handle has sent to a database server since it opened, each one
    /// round trip (connections opened not counted: they are pooled); `None` for an embedded
    /// backend, whose reads and writes are calls.
    fn round_trips(&self) -> Option<u64> {
        None
    }
    /// Whether other processes may write this backend while this handle is open (a database
    /// server: [`PostgresKv`]). The engine then fences its commits with [`Kv::apply_if`],
    /// checks what it caches against the log, and buffers no write (docs/design.md,
    /// "Fenced commits"). An embedded backend is one process's, behind its directory lock.
    fn shared(&self) -> bool {
        false
    }
    /// Why the database server could not be reached, when the last round trip to it failed
    /// with [`KvError::Unavailable`] (cleared by the next one that succeeds); `None` for an
    /// embedded backend, which has no server to lose. What a server's health reports.
    fn unavailable(&self) -> Option<String> {
        None
    }
    /// Rewrites the backend's storage while it is open, so that no byte of a value since
    /// overwritten or deleted is left in it, and says whether it could: a database server
    /// rewrites the table (PostgreSQL: `VACUUM FULL`, which holds the table for its time).
    /// An embedded backend cannot while open (`false`): its files are rewritten by
    /// `Store::rewrite`, with the store closed.
    fn compact(&self) -> Result<bool, KvError> {
        Ok(false)
    }
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xF)]));
    }
    out
}
