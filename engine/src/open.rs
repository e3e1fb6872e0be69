//! Opening a store: the backend as configured (with its guards, bounds and write buffer),
//! the store directory's lock, the durable-commit check, the layout's migrations, and the
//! wiring of the layers: the core's shared state, the session log's ([`Logs`]), the context
//! views and the leases, built here and handed down ([`Parts`]).
//!
//! May call: every layer below the faces.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::context::views::{PersistDueViews, Views};
use crate::core::config::{Backend, SledRescue, StoreConfig};
use crate::core::dir::{DirLock, LockMode};
use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::{GroupCommit, Inner};
use crate::core::space::Space;
use crate::core::util;
#[cfg(feature = "postgres")]
use crate::kv::PostgresKv;
use crate::kv::{
    self, Bounded, BufferedKv, Durability, Guarded, Kv, MemoryKv, RedbKv, SledKv, WriteBatch,
};
use crate::log::coalesce::LogCoalesce;
use crate::log::shared::Logs;
use crate::ops::lease::Leases;

/// An open store's layers, wired: what a `Store` holds.
#[derive(Clone)]
pub(crate) struct Parts {
    pub(crate) inner: Arc<Inner>,
    pub(crate) logs: Arc<Logs>,
    pub(crate) views: Arc<Views>,
    pub(crate) leases: Arc<Leases>,
    #[cfg(feature = "search")]
    pub(crate) search: Arc<crate::search::Search>,
}

impl Parts {
    /// Wires the layers over the core's shared state `inner`.
    fn wire(inner: Inner) -> Parts {
        let inner = Arc::new(inner);
        let views = Arc::new(Views::default());
        let hook = Arc::new(PersistDueViews(views.clone()));
        Parts {
            logs: Arc::new(Logs::new(inner.clone(), Some(hook))),
            #[cfg(feature = "search")]
            search: Arc::new(crate::search::Search::new(inner.spool_dir.clone())),
            inner,
            views,
            leases: Arc::new(Leases::default()),
        }
    }
}

const FORMAT_MARKER_13: &[u8] = b"grove\x00\x0d";
/// Layout 14 is layout 13 with redaction records (its first redaction wrote the marker):
/// layout 15 is layout 14 with the catalogue indexes, built when it is opened.
const FORMAT_MARKER_14: &[u8] = b"grove\x00\x0e";
use crate::core::keys::FORMAT_MARKER;
/// Layout 12 is layout 13 with no payload stored compressed: layout 13 reads its payloads as
/// they are (behind the tags `01` and `"`), so opening it only rewrites the marker (a layout-12
/// build cannot read a payload stored compressed, docs/format.md, "Payloads").
const FORMAT_MARKER_12: &[u8] = b"grove\x00\x0c";
/// Layout 11 is layout 12 with every payload stored as written: layout 12 reads those as they
/// are (a value that starts with its quote), so opening it only rewrites the marker (a
/// layout-11 build cannot read a payload stored decoded, docs/format.md, "Payloads").
const FORMAT_MARKER_11: &[u8] = b"grove\x00\x0b";
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

/// How [`start`] opens a backend.
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

/// Opens the backend of `config` and the store on it.
pub(crate) fn open_configured(config: StoreConfig) -> Result<Parts> {
    let (dir, name) = match &config.backend {
        Backend::Sled(path) => (Some(path.clone()), "sled"),
        Backend::Redb(path) => (Some(path.clone()), "redb"),
        Backend::SledTemporary => (None, "sled"),
        Backend::Memory => (None, "memory"),
        #[cfg(feature = "postgres")]
        Backend::Postgres { .. } => (None, "postgres"),
    };
    if config.compress && name != "sled" {
        return Err(GroveError::InvalidArgument(
            "compression is a sled option; redb and memory stores are not compressed".into(),
        ));
    }
    // A rewrite a crash interrupted between its renames is completed first.
    if let Some(dir) = &dir {
        crate::maintain::rewrite::recover(dir)?;
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
                return start(
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
            Backend::Redb(path) if read_only => Ok(Box::new(Guarded::new(RedbKv::open_read_only(
                path,
                config.cache_bytes,
            )?))),
            Backend::Redb(path) => {
                let kv = Guarded::new(RedbKv::open(path, config.durability, config.cache_bytes)?);
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
            #[cfg(feature = "postgres")]
            Backend::Postgres { url, table } => Ok(Box::new(PostgresKv::open(url, table)?)),
        }
    })?;
    // Commits that need not be durable yet wait in a write buffer unless it is turned off
    // (docs/design.md, "Write buffer"); `Store::from_kv` takes a backend as it is.
    // A backend other processes write buffers nothing: they would not see it.
    let kv: Box<dyn Kv> = if config.write_buffer && !read_only && !kv.shared() {
        Box::new(BufferedKv::new(kv, Arc::new(LogCoalesce))?)
    } else {
        kv
    };
    start(
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
/// durable-commit record says was lost is reported (`Store::lost_writes`).
pub(crate) fn open_for_salvage(config: &StoreConfig) -> Result<(Parts, Option<SledRescue>)> {
    let config = config.clone().read_only(true);
    let Backend::Sled(dir) = &config.backend else {
        return Ok((open_configured(config)?, None));
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
                None => return Ok((start(Box::new(kv), opening(lock))?, None)),
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
    let store = start(Box::new(memory), opening(lock))?;
    Ok((store, Some(SledRescue { error, scan })))
}

/// Opens a store on any backend.
pub(crate) fn from_kv(kv: Box<dyn Kv>, durability: Durability) -> Result<Parts> {
    start(
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

fn start(kv: Box<dyn Kv>, opening: Opening) -> Result<Parts> {
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
    let marker_key = keys::meta(keys::META_FORMAT);
    let marker = kv.get(&marker_key)?;
    let inner = Inner {
        catalogue_indexed: !read_only || marker.as_deref() == Some(FORMAT_MARKER),
        shared: kv.shared(),
        kv,
        durability,
        catalogue: Mutex::new((0, 0)),
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
    if read_only {
        match marker {
            // Layouts 7 to 12 are read as they are (a writer only rewrites their marker).
            Some(m)
                if m == FORMAT_MARKER
                    || m == FORMAT_MARKER_14
                    || m == FORMAT_MARKER_13
                    || m == FORMAT_MARKER_12
                    || m == FORMAT_MARKER_11
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
        return Ok(Parts::wire(inner));
    }
    let parts = Parts::wire(inner);
    let inner = &parts.inner;
    match marker {
        Some(m) if m == FORMAT_MARKER => {}
        Some(m)
            if m == FORMAT_MARKER_14
                || m == FORMAT_MARKER_13
                || m == FORMAT_MARKER_12
                || m == FORMAT_MARKER_11
                || m == FORMAT_MARKER_10
                || m == FORMAT_MARKER_9
                || m == FORMAT_MARKER_8
                || m == FORMAT_MARKER_7 =>
        {
            crate::log::catalogue::index_catalogue(&parts.logs)?;
            let mut batch = WriteBatch::new();
            batch.put(marker_key, FORMAT_MARKER.to_vec());
            inner.commit(batch, Durability::Sync)?;
        }
        Some(m) if m == FORMAT_MARKER_6 => {
            crate::log::catalogue::index_catalogue(&parts.logs)?;
            let mut batch = old_views_removed(inner)?;
            batch.put(marker_key, FORMAT_MARKER.to_vec());
            inner.commit(batch, Durability::Sync)?;
        }
        Some(m) if FORMAT_MARKERS_OLD.contains(&m.as_slice()) => {
            while crate::log::ids::migrate_id_rows(inner)? {}
            crate::log::ids::rebuild_id_filters(inner)?;
            crate::log::catalogue::index_catalogue(&parts.logs)?;
            let mut batch = old_views_removed(inner)?;
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
    parts.logs.discard_unfinished_imports()?;
    Ok(parts)
}
