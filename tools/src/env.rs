//! What every command gets ([`Env`]): where the store is, how to open it (the global options
//! `--backend`, `--durability` and the rest, as [`BackendArg`] and [`DurabilityArg`]), and
//! stdout. This module owns opening the store the way the command line asks, for the
//! subcommands (`commands/`) and the server (`serve/`) alike. It calls the engine's public
//! API (`grove::Store`, `grove::StoreConfig`), `error` for its errors and `shard::router` for
//! the type of a shard cluster's opener, nothing else of the tool.

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;
use grove::{Backend, Durability, GroveError, Session, Store, StoreConfig};

use crate::error::CmdResult;

/// The backend page cache of a command that only reads the store.
pub const READ_CACHE_BYTES: u64 = 16 << 20;

/// The key-value backend of a store (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// sled, the default.
    Sled,
    /// redb (the database file `grove.redb` in the store directory).
    Redb,
    /// A table in a PostgreSQL database (`--pg URL`, `--pg-table NAME`); `--store` is not
    /// used. (Feature `postgres`.)
    #[cfg(feature = "postgres")]
    Postgres,
}

/// The durability of every write (`--durability`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    /// Not flushed per write: written out by the backend in the background and when the store
    /// is closed at the end of the command; a crash may lose the latest writes, never part of
    /// one.
    None,
    /// Group commit: each write returns after a flush that covers it, shared with the writes
    /// of other threads waiting at the same time (as durable as `sync`).
    Group,
    /// Flushed before each write returns (the default).
    Sync,
}

impl DurabilityArg {
    /// The engine's durability level. (The engine's `Durability` is `#[non_exhaustive]`, so a
    /// new level cannot break this match: add a variant here when one should be offered.)
    pub fn durability(self) -> Durability {
        match self {
            DurabilityArg::None => Durability::None,
            DurabilityArg::Group => Durability::Group,
            DurabilityArg::Sync => Durability::Sync,
        }
    }
}

/// Opens a store ([`Env::store_opener`]).
pub type StoreOpener = Box<dyn Fn() -> CmdResult<Store> + Send + Sync>;

/// `store`, opened to read, unless it lost acknowledged writes and `accept` is false
/// (`--accept-lost-writes`): then `LostWrites`. With `accept`, a warning says what was lost.
fn lost_writes_checked(store: Store, accept: bool) -> CmdResult<Store> {
    if let Some(lost) = store.lost_writes() {
        if !accept {
            return Err(GroveError::LostWrites(lost.clone()).into());
        }
        eprintln!("warning: {lost}");
    }
    Ok(store)
}

/// What every command gets: where the store is, how to open it, and stdout.
pub struct Env<'a> {
    /// The store directory.
    pub store_dir: PathBuf,
    /// The backend the store is opened with.
    pub backend: BackendArg,
    /// `--pg`: the PostgreSQL database of the postgres backend.
    #[cfg(feature = "postgres")]
    pub pg: Option<String>,
    /// `--pg-table`: the table holding the store in that database.
    #[cfg(feature = "postgres")]
    pub pg_table: String,
    /// The durability of every write.
    pub durability: DurabilityArg,
    /// Whether a new sled store compresses its pages.
    pub compress: bool,
    /// How long an open waits for another process holding the store.
    pub lock_wait: std::time::Duration,
    /// Free space writes leave on the disk (`None`: the engine's default).
    pub disk_reserve: Option<u64>,
    /// `--cache`: the backend's page cache in bytes (default by command kind).
    pub cache: Option<u64>,
    /// `--payload-threshold` (`None`: the engine's default; 0: no payloads).
    pub payload_threshold: Option<usize>,
    /// Open a store that lost acknowledged writes for writing anyway.
    pub accept_lost_writes: bool,
    /// Whether control characters of stored text are escaped in human output (`--escape`).
    /// `out` already escapes the human output of every command but `tree` and `demo`, whose
    /// graph escapes its own text.
    pub escape: bool,
    /// Standard output (locked).
    pub out: &'a mut dyn Write,
}

impl Env<'_> {
    /// Opens the store to write (creating it when missing) with the chosen backend and
    /// durability.
    /// Its operations are stamped with the actor `cli`.
    pub fn open_store(&self) -> CmdResult<Store> {
        Ok(Store::open_with(self.config(false)?)?.with_actor("cli"))
    }

    /// The configuration [`Env::open_store`] opens the store with.
    pub fn store_config(&self) -> CmdResult<StoreConfig> {
        self.config(false)
    }

    /// Opens the existing store only to read it: a missing store is an error, nothing is
    /// written, and a store on a read-only mount opens. A store that lost acknowledged writes
    /// is refused with `LostWrites` (what it serves is not what was acknowledged) unless
    /// `--accept-lost-writes` was given, then read with a warning.
    pub fn read_store(&self) -> CmdResult<Store> {
        lost_writes_checked(self.inspect_store()?, self.accept_lost_writes)
    }

    /// What opens the store again later, without this `Env` (`grove serve`, whose store was
    /// opened to read on a full disk, reopens it for writing once there is room): for writing
    /// as [`Env::open_store`], or (`read_only`) to read as [`Env::read_store`].
    pub fn store_opener(&self, read_only: bool) -> CmdResult<StoreOpener> {
        let config = self.config(read_only)?;
        let accept_lost_writes = self.accept_lost_writes;
        Ok(Box::new(move || {
            let store = Store::open_with(config.clone())?;
            match read_only {
                true => lost_writes_checked(store, accept_lost_writes),
                false => Ok(store.with_actor("cli")),
            }
        }))
    }

    /// Opens the existing store only to read it, as it is: a store that lost acknowledged
    /// writes opens too (`Store::lost_writes` says what), for `verify` and `salvage`.
    pub fn inspect_store(&self) -> CmdResult<Store> {
        Ok(Store::open_with(self.config(true)?)?)
    }

    /// Opens the store to read and the session named by `spec`.
    pub fn read_session(&self, spec: &str) -> CmdResult<(Store, Session)> {
        let store = self.read_store()?;
        let session = store.find_session(spec)?;
        Ok((store, session))
    }

    /// The store's configuration; a command that only reads opens it with a small page cache
    /// ([`READ_CACHE_BYTES`]): it reads what it prints once, so a cache the size of the
    /// output would only add to its memory.
    fn config(&self, read_only: bool) -> CmdResult<StoreConfig> {
        let dir = self.store_dir.clone();
        let backend = match self.backend {
            BackendArg::Sled => Backend::Sled(dir),
            BackendArg::Redb => Backend::Redb(dir),
            #[cfg(feature = "postgres")]
            BackendArg::Postgres => Backend::Postgres {
                url: self.pg.clone().ok_or_else(|| {
                    crate::error::CommandError::invalid(
                        "--backend postgres needs the database's URL",
                        "give --pg postgres://USER@HOST:PORT/DB (or set GROVE_PG)",
                    )
                })?,
                table: self.pg_table.clone(),
            },
        };
        let mut config = StoreConfig::new(&self.store_dir)
            .backend(backend)
            .durability(self.durability.durability())
            .compress(self.compress)
            .read_only(read_only)
            .cache_bytes(self.cache.unwrap_or(if read_only {
                READ_CACHE_BYTES
            } else {
                grove::store::DEFAULT_CACHE_BYTES
            }))
            .lock_wait(self.lock_wait)
            .accept_lost_writes(self.accept_lost_writes);
        if let Some(bytes) = self.disk_reserve {
            config = config.disk_reserve(bytes);
        }
        if let Some(bytes) = self.payload_threshold {
            config = config.payload_threshold((bytes > 0).then_some(bytes));
        }
        Ok(config)
    }

    /// Opens the store of a shard cluster (`grove serve --etcd`, `grove shard move`): its
    /// PostgreSQL table, with the global options' durability, cache and limits, and no write
    /// buffer, so that every commit reaches the database when it is made (other nodes read the
    /// same table). Operations are stamped with `actor`.
    #[cfg(feature = "postgres")]
    pub fn cluster_opener(&self, actor: &str) -> Box<crate::shard::router::Opener> {
        let mut base = StoreConfig::new(&self.store_dir)
            .durability(self.durability.durability())
            .cache_bytes(self.cache.unwrap_or(grove::store::DEFAULT_CACHE_BYTES))
            .lock_wait(self.lock_wait)
            .write_buffer(false);
        if let Some(bytes) = self.payload_threshold {
            base = base.payload_threshold((bytes > 0).then_some(bytes));
        }
        let actor = actor.to_owned();
        Box::new(move |_name, cluster| {
            let config = base.clone().backend(Backend::Postgres {
                url: cluster.url.clone(),
                table: cluster.table.clone(),
            });
            Ok(Store::open_with(config)?.with_actor(&actor))
        })
    }

    /// Opens the store and the session named by `spec` (an id or a unique id prefix).
    pub fn open_session(&self, spec: &str) -> CmdResult<(Store, Session)> {
        let store = self.open_store()?;
        let session = store.find_session(spec)?;
        Ok((store, session))
    }
}
