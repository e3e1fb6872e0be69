//! The redb backend: all of grove lives in one redb table, `grove`, of the database file
//! `grove.redb` in the store directory. One [`WriteBatch`] is one redb write transaction, so
//! it is atomic across a crash (redb's commit flips between two checksummed commit slots).
//!
//! Durability follows the store's [`Durability`], fixed when the backend is opened:
//!
//! - [`Durability::Sync`]: every transaction commits with `redb::Durability::Immediate` (fsync
//!   before `commit` returns); [`Kv::flush`] has nothing left to do.
//! - [`Durability::None`] and [`Durability::Group`]: transactions commit with
//!   `redb::Durability::None` (visible at once, written out by the next durable commit, or
//!   when the database is closed cleanly); [`Kv::flush`] commits an empty `Immediate`
//!   transaction, which makes every earlier commit durable (under `Group`, one such flush
//!   serves every writer waiting for it). A crash loses the commits since the last durable
//!   one, a suffix of whole batches.
//!
//! Scans stream: redb's read-only table ranges own a reference to their read transaction, so
//! a scan holds one consistent snapshot and reads pages as it goes, never the whole range.

use std::path::Path;

use redb::{ReadableDatabase, TableDefinition};

use super::Durability;
use super::{Kv, KvError, Pair, Scan, WriteBatch};

/// The file name of the database inside the store directory.
pub const REDB_FILE: &str = "grove.redb";

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("grove");

type RedbRange = redb::Range<'static, &'static [u8], &'static [u8]>;

/// The redb backend.
pub struct RedbKv {
    db: Db,
    /// Whether every transaction commits durably (the store's durability is `Sync`).
    durable_commits: bool,
    /// The temporary copy a read-only store that needed repair was opened from (dropped
    /// after `db`).
    _copy: Option<tempfile::TempDir>,
}

/// A database open for writing, or only for reading.
enum Db {
    Write(redb::Database),
    Read(redb::ReadOnlyDatabase),
}

impl Db {
    fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::Write(db) => db.begin_read(),
            Db::Read(db) => db.begin_read(),
        }
    }
}

fn err(e: impl Into<redb::Error>) -> KvError {
    KvError::Redb(e.into())
}

impl RedbKv {
    /// Opens (or creates) the database `grove.redb` in the directory `dir`, which must exist.
    pub fn open(dir: &Path, durability: Durability, cache_bytes: u64) -> Result<RedbKv, KvError> {
        RedbKv::open_file(&dir.join(REDB_FILE), durability, cache_bytes)
    }

    /// Opens (or creates) the redb database file `path`.
    pub fn open_file(
        path: &Path,
        durability: Durability,
        cache_bytes: u64,
    ) -> Result<RedbKv, KvError> {
        // Written as a match without a wildcard: a new durability level must be decided here.
        let durable_commits = match durability {
            Durability::None | Durability::Group => false,
            Durability::Sync => true,
        };
        // A new database file is created owner-only (`crate::kv::files`); redb takes an empty
        // file for a new database.
        match crate::kv::files::owner_only(&mut std::fs::OpenOptions::new())
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(KvError::Io {
                    context: format!("creating {}", path.display()),
                    source,
                })
            }
        }
        let db = redb::Builder::new()
            .set_cache_size(usize::try_from(cache_bytes).unwrap_or(usize::MAX))
            .create(path)
            .map_err(err)?;
        let kv = RedbKv {
            db: Db::Write(db),
            durable_commits,
            _copy: None,
        };
        // Create the table, so that readers can always open it.
        let txn = kv.begin_write(true)?;
        txn.open_table(TABLE).map_err(err)?;
        txn.commit().map_err(err)?;
        Ok(kv)
    }

    /// Opens the existing database `grove.redb` in `dir` to read it, without changing the
    /// file. A database that needs repair (its writer was killed) is not repaired in place:
    /// it is copied to a temporary directory and the copy is repaired and read, so that a
    /// read never makes a store harder to open than it was.
    pub fn open_read_only(dir: &Path, cache_bytes: u64) -> Result<RedbKv, KvError> {
        let path = dir.join(REDB_FILE);
        let builder = || {
            let mut b = redb::Builder::new();
            b.set_cache_size(usize::try_from(cache_bytes).unwrap_or(usize::MAX));
            b
        };
        match builder().open_read_only(&path) {
            Ok(db) => Ok(RedbKv {
                db: Db::Read(db),
                durable_commits: false,
                _copy: None,
            }),
            Err(redb::DatabaseError::RepairAborted) => {
                let io = |context: String| move |source| KvError::Io { context, source };
                let copy = tempfile::Builder::new()
                    .prefix("grove-read-only-")
                    .tempdir()
                    .map_err(io(
                        "creating a temporary copy of a store to repair".to_owned()
                    ))?;
                let target = copy.path().join(REDB_FILE);
                std::fs::copy(&path, &target).map_err(io(format!(
                    "copying {} to {}",
                    path.display(),
                    target.display()
                )))?;
                let db = builder().create(&target).map_err(err)?;
                Ok(RedbKv {
                    db: Db::Write(db),
                    durable_commits: false,
                    _copy: Some(copy),
                })
            }
            Err(e) => Err(err(e)),
        }
    }

    fn begin_write(&self, durable: bool) -> Result<redb::WriteTransaction, KvError> {
        let Db::Write(db) = &self.db else {
            return Err(KvError::ReadOnly);
        };
        let mut txn = db.begin_write().map_err(err)?;
        let level = if durable {
            redb::Durability::Immediate
        } else {
            redb::Durability::None
        };
        txn.set_durability(level).map_err(err)?;
        Ok(txn)
    }

    fn range(&self, start: &[u8], end: &[u8]) -> Result<RedbRange, KvError> {
        let txn = self.db.begin_read().map_err(err)?;
        let table = txn.open_table(TABLE).map_err(err)?;
        table.range::<&[u8]>(start..end).map_err(err)
    }

    fn stream(&self, start: &[u8], end: &[u8], rev: bool) -> Scan<'_> {
        if start >= end {
            return Box::new(std::iter::empty());
        }
        let range = match self.range(start, end) {
            Ok(range) => range,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let pair = |item: Result<_, redb::StorageError>| -> Result<Pair, KvError> {
            let (k, v): (redb::AccessGuard<&[u8]>, redb::AccessGuard<&[u8]>) = item.map_err(err)?;
            Ok((k.value().to_vec(), v.value().to_vec()))
        };
        if rev {
            Box::new(range.rev().map(pair))
        } else {
            Box::new(range.map(pair))
        }
    }
}

impl Kv for RedbKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        let txn = self.db.begin_read().map_err(err)?;
        let table = txn.open_table(TABLE).map_err(err)?;
        let value = redb::ReadableTable::get(&table, key).map_err(err)?;
        Ok(value.map(|v| v.value().to_vec()))
    }

    fn read_value(&self, key: &[u8], read: &mut dyn FnMut(&[u8])) -> Result<bool, KvError> {
        let txn = self.db.begin_read().map_err(err)?;
        let table = txn.open_table(TABLE).map_err(err)?;
        let found = match redb::ReadableTable::get(&table, key).map_err(err)? {
            Some(v) => {
                read(v.value());
                true
            }
            None => false,
        };
        Ok(found)
    }

    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        let found = if start < end {
            self.range(start, end)?
                .next_back()
                .transpose()
                .map_err(err)?
        } else {
            None
        };
        let pair = found.as_ref().map(|(k, v)| (k.value(), v.value()));
        Ok(super::deliver(pair, read))
    }

    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.stream(start, end, false)
    }

    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.stream(start, end, true)
    }

    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        let txn = self.begin_write(self.durable_commits)?;
        {
            let mut table = txn.open_table(TABLE).map_err(err)?;
            for (k, v) in batch.into_ops() {
                match v {
                    Some(v) => {
                        table.insert(k.as_slice(), v.as_slice()).map_err(err)?;
                    }
                    None => {
                        table.remove(k.as_slice()).map_err(err)?;
                    }
                }
            }
        }
        // An error before this point drops `txn`, which aborts it: nothing of the batch is
        // applied.
        txn.commit().map_err(err)
    }

    fn flush(&self) -> Result<(), KvError> {
        if self.durable_commits || matches!(self.db, Db::Read(_)) {
            return Ok(());
        }
        // An empty durable commit persists every non-durable commit before it.
        self.begin_write(true)?.commit().map_err(err)
    }

    fn name(&self) -> &'static str {
        "redb"
    }
}
