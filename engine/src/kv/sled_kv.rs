//! The sled backend, grove's embedded default. All of grove lives in sled's default tree:
//! a `sled::Batch` makes the writes of a multi-record operation atomic, and one-record
//! operations use single inserts in order ([`Kv::apply_ordered`]), which sled recovers as a
//! prefix of its log after a crash.
//!
//! Start-up guard: sled 0.34.7 writes a snapshot to `snap.<lsn>.generating` and renames it
//! when done. A process killed mid-write leaves the half-written file behind, and every later
//! open may take it for the newest snapshot and fail with `Corruption` for good (sled issues
//! #1527 and #1533), although the log underneath is intact. [`SledKv::open`] therefore
//! removes stale `*.generating` files before opening: a snapshot is only an accelerator, and
//! sled rebuilds state from its log without it. The caller holds the store's lock
//! ([`crate::core::dir`]) by then, so the files removed cannot be another live process's.
//!
//! Read-only opening: sled has no read-only mode — it writes at every open (it may zero and
//! fsync free segments, write a snapshot) and opens its files for writing. A store whose
//! files cannot be written (a read-only mount, immutable files) or whose disk is full is
//! therefore opened read-only as a **private copy** in the system's temporary directory,
//! removed when the store is closed ([`SledKv::open_read_only`]).

use std::path::Path;

use super::{Kv, KvError, Scan, WriteBatch};

/// The sled backend.
pub struct SledKv {
    db: sled::Db,
    /// The temporary copy a read-only store was opened from (dropped after `db`).
    _copy: Option<tempfile::TempDir>,
}

impl SledKv {
    /// Opens (or creates) the sled database in `dir`. `compress` (zstd pages) applies when
    /// the database is created; an existing one keeps the setting recorded in its `conf` file
    /// (sled refuses to open a database with a different one).
    /// A new database's files are made owner-only, and so are the snapshots earlier runs
    /// left in a directory only its owner may enter (`crate::kv::files`).
    pub fn open(dir: &Path, cache_bytes: u64, compress: bool) -> Result<SledKv, KvError> {
        remove_stale_snapshots(dir)?;
        let new = !dir.join("db").exists();
        let db = SledKv::open_db(dir, cache_bytes, compress)?;
        if new {
            for file in ["db", "conf", "blobs"] {
                crate::kv::files::restrict(&dir.join(file));
            }
        }
        if crate::kv::files::is_private(dir) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if entry.file_name().to_string_lossy().starts_with("snap.") {
                    crate::kv::files::restrict(&entry.path());
                }
            }
        }
        Ok(SledKv { db, _copy: None })
    }

    /// Opens the existing sled database in `dir` to read it. Where sled cannot open it in
    /// place — its files cannot be written, or the disk has no room for what sled writes at
    /// open (`in_place` false: the caller saw too little free space) — or where the log sled
    /// reads at open holds a message that fails its checksum
    /// ([`super::sled_scan::recovery_is_damaged`]: sled would zero the rest of its segment)
    /// — the database is copied to a temporary directory and opened there.
    pub fn open_read_only(dir: &Path, cache_bytes: u64, in_place: bool) -> Result<SledKv, KvError> {
        // sled zeroes a damaged log's segment from the damage on when it opens it, even to
        // read: such a store is read from a copy, its files left for `grove salvage`.
        let in_place = in_place && !super::sled_scan::recovery_is_damaged(dir).unwrap_or(false);
        let writable = if in_place {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(dir.join("db"))
        } else {
            Err(std::io::Error::from(std::io::ErrorKind::StorageFull))
        };
        let in_place = match writable {
            Ok(_) => {
                let _ = remove_stale_snapshots(dir);
                SledKv::open_db(dir, cache_bytes, false)
            }
            Err(e) => Err(KvError::Io {
                context: format!("opening {} for writing", dir.join("db").display()),
                source: e,
            }),
        };
        match in_place {
            Ok(db) => Ok(SledKv { db, _copy: None }),
            Err(e) if cannot_write(&e) => {
                let copy = copy_store(dir)?;
                let db = SledKv::open_db(copy.path(), cache_bytes, false)?;
                Ok(SledKv {
                    db,
                    _copy: Some(copy),
                })
            }
            Err(e) => Err(e),
        }
    }

    fn open_db(dir: &Path, cache_bytes: u64, compress: bool) -> Result<sled::Db, KvError> {
        let compress = stored_compression(dir)?.unwrap_or(compress);
        // sled releases its file lock from a background thread shortly after the last handle
        // of a database is dropped; a reopen in the same process may race it. Retry for up to
        // 10 s (a loaded machine can take seconds to release it).
        let mut attempts = 0;
        loop {
            match sled::Config::new()
                .path(dir)
                .cache_capacity(cache_bytes)
                .use_compression(compress)
                .compression_factor(super::ZSTD_LEVEL)
                .open()
            {
                Ok(db) => return Ok(db),
                Err(e) if attempts < 500 && is_lock_busy(&e) => {
                    attempts += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Opens a private copy of the sled database in `dir`, never the files themselves: sled
    /// 0.34.7 cuts its log at the first message that fails its checksum when it opens a
    /// database — it zeroes the rest of that segment, even when the open then fails — so a
    /// store that may be damaged is opened this way (salvage), leaving its files for
    /// [`super::sled_scan`] to read.
    pub fn open_private_copy(dir: &Path, cache_bytes: u64) -> Result<SledKv, KvError> {
        let copy = copy_store(dir)?;
        let db = SledKv::open_db(copy.path(), cache_bytes, false)?;
        Ok(SledKv {
            db,
            _copy: Some(copy),
        })
    }

    /// A temporary database, deleted when dropped.
    pub fn temporary() -> Result<SledKv, KvError> {
        let db = sled::Config::new().temporary(true).open()?;
        Ok(SledKv { db, _copy: None })
    }
}

/// Whether opening failed because the files cannot be written or the disk is full.
fn cannot_write(e: &KvError) -> bool {
    let io = match e {
        KvError::Io { source, .. } => source,
        KvError::Sled(sled::Error::Io(io)) => io,
        _ => return false,
    };
    super::files::is_unwritable(io) || io.kind() == std::io::ErrorKind::StorageFull
}

/// Copies the sled files of `dir` (its `conf`, `db`, snapshots and blobs) into a new
/// temporary directory.
fn copy_store(dir: &Path) -> Result<tempfile::TempDir, KvError> {
    let io = |context: String| move |source| KvError::Io { context, source };
    let copy = tempfile::Builder::new()
        .prefix("grove-read-only-")
        .tempdir()
        .map_err(io(
            "creating a temporary copy of a read-only store".to_owned()
        ))?;
    let copy_dir = |from: &Path, to: &Path| -> Result<(), KvError> {
        let entries = std::fs::read_dir(from).map_err(io(format!("listing {}", from.display())))?;
        for entry in entries {
            let entry = entry.map_err(io(format!("listing {}", from.display())))?;
            let name = entry.file_name();
            let text = name.to_string_lossy();
            let wanted = text == "conf" || text == "db" || text.starts_with("snap.");
            if !wanted || text.ends_with(".generating") {
                continue;
            }
            let target = to.join(&name);
            std::fs::copy(entry.path(), &target).map_err(io(format!(
                "copying {} to {}",
                entry.path().display(),
                target.display()
            )))?;
        }
        Ok(())
    };
    copy_dir(dir, copy.path())?;
    let blobs = dir.join("blobs");
    if blobs.is_dir() {
        let target = copy.path().join("blobs");
        std::fs::create_dir(&target).map_err(io(format!("creating {}", target.display())))?;
        for entry in
            std::fs::read_dir(&blobs).map_err(io(format!("listing {}", blobs.display())))?
        {
            let entry = entry.map_err(io(format!("listing {}", blobs.display())))?;
            let to = target.join(entry.file_name());
            std::fs::copy(entry.path(), &to).map_err(io(format!(
                "copying {} to {}",
                entry.path().display(),
                to.display()
            )))?;
        }
    }
    Ok(copy)
}

/// The `use_compression` setting of the sled database in `dir`, from its `conf` file (lines
/// of `name: value`, then a binary checksum), or `None` when there is no database yet.
pub fn stored_compression(dir: &Path) -> Result<Option<bool>, KvError> {
    let path = dir.join("conf");
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(KvError::Io {
                context: format!("reading {}", path.display()),
                source,
            })
        }
    };
    Ok(String::from_utf8_lossy(&text).lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name.trim() == "use_compression").then(|| value.trim() == "true")
    }))
}

fn is_lock_busy(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}

/// Removes `snap.*.generating` files left by a process killed while sled wrote a snapshot.
/// Returns how many were removed.
pub fn remove_stale_snapshots(dir: &Path) -> Result<usize, KvError> {
    let io = |context: String| move |source| KvError::Io { context, source };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io(format!("listing {}", dir.display()))(e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(io(format!("listing {}", dir.display())))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(io(format!("removing {}", path.display())))?;
            removed += 1;
        }
    }
    Ok(removed)
}

impl Kv for SledKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        Ok(self.db.get(key)?.map(|v| v.to_vec()))
    }

    fn read_value(&self, key: &[u8], read: &mut dyn FnMut(&[u8])) -> Result<bool, KvError> {
        // An `IVec` shares sled's buffer: nothing is copied.
        Ok(match self.db.get(key)? {
            Some(v) => {
                read(&v);
                true
            }
            None => false,
        })
    }

    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        let found = if start < end {
            self.db.range(start..end).next_back().transpose()?
        } else {
            None
        };
        Ok(super::deliver(found, read))
    }

    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        if start >= end {
            return Box::new(std::iter::empty());
        }
        Box::new(self.db.range(start.to_vec()..end.to_vec()).map(|r| {
            r.map(|(k, v)| (k.to_vec(), v.to_vec()))
                .map_err(KvError::from)
        }))
    }

    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        if start >= end {
            return Box::new(std::iter::empty());
        }
        Box::new(self.db.range(start.to_vec()..end.to_vec()).rev().map(|r| {
            r.map(|(k, v)| (k.to_vec(), v.to_vec()))
                .map_err(KvError::from)
        }))
    }

    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        let mut b = sled::Batch::default();
        for (k, v) in batch.into_ops() {
            match v {
                Some(v) => b.insert(k, v),
                None => b.remove(k),
            }
        }
        self.db.apply_batch(b)?;
        Ok(())
    }

    fn apply_ordered(&self, batch: WriteBatch) -> Result<(), KvError> {
        // Single writes join sled's current log buffer; a batch would first write the buffer
        // out (one `pwrite` and `sync_file_range` per batch).
        for (k, v) in batch.into_ops() {
            match v {
                Some(v) => self.db.insert(k, v)?,
                None => self.db.remove(k)?,
            };
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), KvError> {
        self.db.flush()?;
        Ok(())
    }

    fn name(&self) -> &'static str {
        "sled"
    }
}
