//! One random damage to a store's files: a flipped bit, a zeroed range, a truncation or a
//! deleted file, chosen from a seeded generator among the backend's own files (sled: `db`,
//! `conf`, `blobs/*`, `snap.*`; redb: `grove.redb`), never grove's lock or commit record.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::crash::protocol::Rng;

/// What is done to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DamageKind {
    /// One bit of one byte inverted.
    Flip,
    /// A range of bytes set to zero (1 B to 64 KiB, sizes spread logarithmically).
    Zero,
    /// The file cut to a shorter length (possibly empty).
    Truncate,
    /// The file removed.
    Delete,
}

impl DamageKind {
    /// Every kind.
    pub const ALL: [DamageKind; 4] = [
        DamageKind::Flip,
        DamageKind::Zero,
        DamageKind::Truncate,
        DamageKind::Delete,
    ];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            DamageKind::Flip => "flip",
            DamageKind::Zero => "zero",
            DamageKind::Truncate => "truncate",
            DamageKind::Delete => "delete",
        }
    }
}

/// One damage, precisely enough to apply it again to a copy of the same store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The file, relative to the store directory.
    pub file: PathBuf,
    /// Its size before the damage.
    pub size: u64,
    /// What is done.
    pub kind: DamageKind,
    /// Flip and zero: the first byte; truncate: the new length.
    pub offset: u64,
    /// Zero: the number of bytes.
    pub len: u64,
    /// Flip: the bit (0–7).
    pub bit: u8,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        let size = self.size;
        match self.kind {
            DamageKind::Flip => write!(
                f,
                "flip bit {} of byte {} of {file} ({size} bytes)",
                self.bit, self.offset
            ),
            DamageKind::Zero => write!(
                f,
                "zero bytes {}..{} of {file} ({size} bytes)",
                self.offset,
                self.offset + self.len
            ),
            DamageKind::Truncate => {
                write!(f, "truncate {file} from {size} to {} bytes", self.offset)
            }
            DamageKind::Delete => write!(f, "delete {file} ({size} bytes)"),
        }
    }
}

/// Whether `name` (a path relative to the store) is one of the backend's own files.
fn is_backend_file(name: &Path, backend: &str) -> bool {
    let text = name.to_string_lossy();
    match backend {
        "redb" => text == "grove.redb",
        _ => !text.starts_with("grove."),
    }
}

/// The backend's files under `dir`, relative to it, sorted (so a seed picks the same file).
pub fn backend_files(dir: &Path, backend: &str) -> Result<Vec<(PathBuf, u64)>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let read = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for item in read {
            let item = item.map_err(|e| format!("{}: {e}", d.display()))?;
            let path = item.path();
            let meta = item
                .metadata()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if meta.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(dir).unwrap_or(&path).to_owned();
            if is_backend_file(&rel, backend) {
                out.push((rel, meta.len()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Chooses one damage to the store in `dir`: a file uniformly among the backend's files,
/// then a kind (flip 35 %, zero 35 %, truncate 20 %, delete 10 %; delete is the only one
/// for an empty file) and a place.
pub fn plan(rng: &mut Rng, dir: &Path, backend: &str) -> Result<Damage, String> {
    let files = backend_files(dir, backend)?;
    if files.is_empty() {
        return Err(format!("no {backend} files in {}", dir.display()));
    }
    let (file, size) = files[rng.below(files.len() as u64) as usize].clone();
    // Flips and zeroed ranges find the most; a deleted or truncated redb file is much the
    // same case every time.
    let kind = match (size, rng.below(20)) {
        (0, _) => DamageKind::Delete,
        (_, 0..=6) => DamageKind::Flip,
        (_, 7..=13) => DamageKind::Zero,
        (_, 14..=17) => DamageKind::Truncate,
        _ => DamageKind::Delete,
    };
    let mut damage = Damage {
        file,
        size,
        kind,
        offset: 0,
        len: 0,
        bit: 0,
    };
    match kind {
        DamageKind::Flip => {
            damage.offset = rng.below(size);
            damage.bit = rng.below(8) as u8;
        }
        DamageKind::Zero => {
            damage.offset = rng.below(size);
            // 2^0 .. 2^16 bytes, each power equally likely.
            let max = 1u64 << rng.below(17);
            damage.len = (1 + rng.below(max)).min(size - damage.offset);
        }
        DamageKind::Truncate => damage.offset = rng.below(size),
        DamageKind::Delete => {}
    }
    Ok(damage)
}

/// Applies `damage` to the store in `dir`.
pub fn apply(dir: &Path, damage: &Damage) -> Result<(), String> {
    let path = dir.join(&damage.file);
    let err = |e: std::io::Error| format!("{damage}: {e}");
    match damage.kind {
        DamageKind::Delete => std::fs::remove_file(&path).map_err(err),
        DamageKind::Truncate => OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(damage.offset))
            .map_err(err),
        DamageKind::Flip => {
            let mut f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(err)?;
            let mut byte = [0u8];
            f.seek(SeekFrom::Start(damage.offset)).map_err(err)?;
            f.read_exact(&mut byte).map_err(err)?;
            byte[0] ^= 1 << damage.bit;
            f.seek(SeekFrom::Start(damage.offset)).map_err(err)?;
            f.write_all(&byte).map_err(err)?;
            f.sync_all().map_err(err)
        }
        DamageKind::Zero => {
            let mut f = OpenOptions::new().write(true).open(&path).map_err(err)?;
            f.seek(SeekFrom::Start(damage.offset)).map_err(err)?;
            let zeros = vec![0u8; usize::try_from(damage.len).unwrap_or(0)];
            f.write_all(&zeros).map_err(err)?;
            f.sync_all().map_err(err)
        }
    }
}

/// Copies the directory tree `from` to `to` (created).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let read = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for item in read {
        let item = item.map_err(|e| format!("{}: {e}", from.display()))?;
        let (src, dest) = (item.path(), to.join(item.file_name()));
        let meta = item
            .metadata()
            .map_err(|e| format!("{}: {e}", src.display()))?;
        if meta.is_dir() {
            copy_tree(&src, &dest)?;
        } else {
            std::fs::copy(&src, &dest).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}
