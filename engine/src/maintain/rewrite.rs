//! Rewriting a store's backend files (`grove gc` after a redaction, `grove gc --rewrite`):
//! every live key and value copied into a fresh backend of the same kind, which then takes
//! the store directory's place, so that nothing the store deleted or overwrote — a redacted
//! line, a collected payload, a deleted session — is left in the free space of the old files
//! (docs/design.md, "Redaction": sled keeps stale page versions in its segments until it
//! reclaims them, redb reuses freed pages without clearing them).
//!
//! The copy is built beside the store, in `<dir>.rewrite`, while the store is held open (its
//! lock keeps writers out); once complete and flushed it is marked with `grove.rewritten`, the
//! store directory is renamed to `<dir>.rewrite-old`, the copy renamed into its place, and the
//! old files removed. A crash before the copy is marked leaves the store as it was (the next
//! rewrite starts the copy again); a crash between the two renames leaves no store directory
//! but a marked copy, which the next open renames into place ([`recover`]).
//!
//! The face ([`crate::Store::rewrite`]) opens the store, then calls [`copy`], [`swap`] and,
//! once the store is closed, [`finish`].
//!
//! May call: [`crate::kv`], [`crate::core`].

use std::path::{Path, PathBuf};

use crate::core::config::{Backend, StoreConfig};
use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::kv::{Kv, WriteBatch};

/// The file that marks a complete copy.
const MARK: &str = "grove.rewritten";

/// Bytes of keys and values per batch of the copy.
const BATCH_BYTES: usize = 4 << 20;

/// What `Store::rewrite` did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RewriteReport {
    /// Keys copied.
    pub keys: u64,
    /// Bytes of the backend's files before (the search index not counted).
    pub bytes_before: u64,
    /// And after.
    pub bytes_after: u64,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> GroveError + '_ {
    move |source| GroveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `<dir>` with `suffix` appended to its last component.
fn beside(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    dir.with_file_name(name)
}

/// Bytes of the files under `dir`, but those of `search/`.
fn size_of(dir: &Path) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else {
        return 0;
    };
    read.flatten()
        .filter(|e| e.file_name() != "search")
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => size_of(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

/// Completes a rewrite a crash interrupted between its two renames: when `dir` is missing and
/// a marked copy is beside it, the copy takes its place. Called before a directory store is
/// opened.
pub(crate) fn recover(dir: &Path) -> Result<()> {
    let copy = beside(dir, ".rewrite");
    if dir.exists() || !copy.join(MARK).exists() {
        return Ok(());
    }
    std::fs::rename(&copy, dir).map_err(io(dir))?;
    std::fs::remove_file(dir.join(MARK)).map_err(io(dir))?;
    let old = beside(dir, ".rewrite-old");
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(io(&old))?;
    }
    Ok(())
}

/// The directory of a store that has files to rewrite.
pub(crate) fn dir_of(config: &StoreConfig) -> Result<PathBuf> {
    match &config.backend {
        Backend::Sled(dir) | Backend::Redb(dir) => Ok(dir.clone()),
        _ => Err(GroveError::InvalidArgument(
            "only a store in a directory (sled or redb) has files to rewrite".to_owned(),
        )),
    }
}

/// Copies every key of `kv`, the open store in `dir`, into a fresh backend of the same kind
/// in `<dir>.rewrite`, with the durable-commit record and the search index, and marks the
/// copy complete (module docs). Returns the copy.
pub(crate) fn copy(
    dir: &Path,
    config: &StoreConfig,
    kv: &dyn Kv,
) -> Result<(PathBuf, RewriteReport)> {
    let copy = beside(dir, ".rewrite");
    let old = beside(dir, ".rewrite-old");
    for leftover in [&copy, &old] {
        if leftover.exists() {
            std::fs::remove_dir_all(leftover).map_err(io(leftover))?;
        }
    }
    crate::kv::files::create_dir_all(&copy).map_err(io(&copy))?;
    let mut report = RewriteReport {
        bytes_before: size_of(dir),
        ..RewriteReport::default()
    };
    {
        let fresh: Box<dyn Kv> = match &config.backend {
            Backend::Redb(_) => Box::new(crate::kv::RedbKv::open(
                &copy,
                crate::kv::Durability::Sync,
                config.cache_bytes,
            )?),
            _ => {
                let compress = crate::kv::stored_compression(dir)?.unwrap_or(config.compress);
                Box::new(crate::kv::SledKv::open(
                    &copy,
                    config.cache_bytes,
                    compress,
                )?)
            }
        };
        let skip = keys::meta(keys::META_REWRITE_DUE);
        let mut batch = WriteBatch::new();
        let mut bytes = 0;
        for pair in kv.scan(&[], &[0xFF]) {
            let (k, v) = pair?;
            if k == skip {
                continue;
            }
            bytes += k.len() + v.len();
            report.keys += 1;
            batch.put(k.to_vec(), v.to_vec());
            if bytes >= BATCH_BYTES {
                fresh.apply(std::mem::take(&mut batch))?;
                bytes = 0;
            }
        }
        if !batch.is_empty() {
            fresh.apply(batch)?;
        }
        fresh.flush()?;
    }
    // The durable-commit record goes with the keys it describes; the search index moves.
    let record = dir.join("grove.commit");
    if record.exists() {
        std::fs::copy(&record, copy.join("grove.commit")).map_err(io(&record))?;
    }
    let search = dir.join("search");
    if search.exists() {
        std::fs::rename(&search, copy.join("search")).map_err(io(&search))?;
    }
    {
        use std::io::Write as _;
        let mark = copy.join(MARK);
        let mut file = std::fs::File::create(&mark).map_err(io(&mark))?;
        file.write_all(b"complete\n").map_err(io(&mark))?;
        file.sync_all().map_err(io(&mark))?;
    }
    report.bytes_after = size_of(&copy);
    Ok((copy, report))
}

/// Puts the marked `copy` in `dir`'s place, the old directory aside (still held open by the
/// caller, whose lock keeps other processes out until then).
pub(crate) fn swap(dir: &Path, copy: &Path) -> Result<()> {
    let old = beside(dir, ".rewrite-old");
    std::fs::rename(dir, &old).map_err(io(dir))?;
    if let Err(e) = std::fs::rename(copy, dir) {
        // Someone made a store in the empty place meanwhile: the old one goes back.
        let _ = std::fs::rename(&old, dir);
        return Err(io(dir)(e));
    }
    Ok(())
}

/// Removes the old files and the copy's mark, once the old store is closed.
pub(crate) fn finish(dir: &Path) -> Result<()> {
    let mark = dir.join(MARK);
    if mark.exists() {
        std::fs::remove_file(&mark).map_err(io(&mark))?;
    }
    let old = beside(dir, ".rewrite-old");
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(io(&old))?;
    }
    Ok(())
}
