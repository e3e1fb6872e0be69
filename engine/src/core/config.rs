//! How to open a store: the backend and the settings of an open ([`StoreConfig`]).
//!
//! May call: [`crate::kv`].

use std::path::PathBuf;

use crate::kv::{self, Durability};

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
    /// ([`kv::DEFAULT_TABLE`] by default), made when missing. Feature `postgres`.
    #[cfg(feature = "postgres")]
    Postgres {
        /// The database's URL.
        url: String,
        /// The table holding the store.
        table: String,
    },
}

/// A sled store sled could not open, read by [`crate::Store::open_for_salvage`] without it.
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
    /// cache (`crate::context::views::VIEW_CACHE_SESSIONS` sessions) it bounds the memory of a store.
    pub cache_bytes: u64,
    /// sled only: compress pages with zstd (level [`crate::kv::ZSTD_LEVEL`]) when **creating** a store.
    /// It roughly halves the bytes on disk (or better) and costs 3–6× in append throughput
    /// and 2–5× in import time (docs/benchmarks.md): meant for archives, replay and audit
    /// stores. An existing store keeps the setting it was created with, whatever this says.
    pub compress: bool,
    /// Commits made with [`Durability::None`] wait in a write buffer and reach the backend in
    /// batches (default on; docs/design.md, "Write buffer"). Off, each is applied to the
    /// backend as it is made, as [`crate::Store::from_kv`] does.
    pub write_buffer: bool,
    /// Open the store only to read it (default off): a missing store is
    /// [`crate::GroveError::NoStore`] instead of being created, grove writes nothing (views are not
    /// persisted, interrupted imports are left for the next writer), every write is refused
    /// with [`crate::GroveError::ReadOnly`], and a store on a read-only mount, or one that lost
    /// acknowledged writes ([`crate::Store::lost_writes`]), opens.
    pub read_only: bool,
    /// How long an open waits for another process that holds the store (its lock file
    /// `grove.lock`) before failing with [`crate::GroveError::Locked`]; default zero, fail at once.
    pub lock_wait: std::time::Duration,
    /// Free space, in bytes, that writes leave on the store's disk (default
    /// `crate::core::space::DEFAULT_RESERVE`): a write that would eat into it is refused with
    /// [`crate::GroveError::DiskFull`] before it reaches the backend (docs/design.md, "A full disk").
    pub disk_reserve: u64,
    /// Open for writing a store whose backend lost acknowledged writes (see
    /// [`crate::GroveError::LostWrites`]), taking what it holds now as its state (default off).
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
