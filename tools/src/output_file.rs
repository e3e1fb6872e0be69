//! Writing a file the user named with `-o` (`grove export`): what is at the path decides how.
//!
//! * Nothing, or a regular file with one link: the content goes to a temporary file in the
//!   same directory, which is synced and renamed over the path (then the directory is
//!   synced), so the path holds either its old content or the complete new one. The new file
//!   keeps the old one's permission bits (and its owner and group where the user may set
//!   them); a new path gets `0666` less the umask, as a shell redirection would.
//! * A symbolic link: followed, link by link; the file it ends at is written as above and
//!   the link stays a link.
//! * A regular file with several hard links: the content is written to a temporary file
//!   first (a failed export leaves the file untouched), then copied into the file in place,
//!   so that every link still names it. A crash during that copy can leave it partly written.
//! * Anything else (a character or block device, a FIFO): opened and written directly, as a
//!   shell redirection does; nothing is created, renamed or synced.
//!
//! Temporary files are named `.NAME.grove-export.PID.tmp` (NAME cut to 100 bytes) and are
//! removed on every error path. One left behind by a process that was killed is removed by
//! the next write into the same directory, once `/proc` shows that its process is gone (on
//! systems without `/proc` leftovers are kept).

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{CmdResult, CommandError};

/// The tag between the file's name and the pid in a temporary file's name.
const TAG: &str = ".grove-export.";
/// The suffix of a temporary file's name.
const SUFFIX: &str = ".tmp";
/// The bytes of the target's name kept in a temporary file's name.
const NAME_BYTES: usize = 100;
/// Symbolic links followed before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Writes the output `fill` produces to `path` (see the module doc for how). Errors name
/// `path`; `fill`'s own errors are returned as they are.
pub fn write_output<T>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> CmdResult<T>,
) -> CmdResult<T> {
    let file_err = |source| CommandError::File {
        path: path.to_owned(),
        source,
    };
    let target = follow_links(path).map_err(file_err)?;
    let meta = match fs::symlink_metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(file_err(e)),
    };
    match meta {
        Some(m) if m.is_dir() => Err(file_err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ))),
        Some(m) if !m.is_file() => write_through(&target, fill, &file_err),
        meta => replace(&target, meta.as_ref(), fill, &file_err),
    }
}

/// The path that `path` names once every symbolic link at its end is followed (a link
/// whose target does not exist yet gives that target).
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut at = path.to_owned();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&at)?;
                // A relative target is relative to the link's directory; `join` keeps an
                // absolute one as it is.
                at = match at.parent() {
                    Some(dir) => dir.join(to),
                    None => to,
                };
            }
            Ok(_) => return Ok(at),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(at),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Writes straight into a device or FIFO.
fn write_through<T>(
    target: &Path,
    fill: impl FnOnce(&mut dyn Write) -> CmdResult<T>,
    file_err: &dyn Fn(io::Error) -> CommandError,
) -> CmdResult<T> {
    let file = OpenOptions::new()
        .write(true)
        .open(target)
        .map_err(file_err)?;
    let mut writer = BufWriter::new(file);
    let value = fill(&mut writer)?;
    writer.flush().map_err(file_err)?;
    Ok(value)
}

/// Writes a temporary file, then renames it over `target` or, when `target` has several
/// hard links, copies it into `target`.
fn replace<T>(
    target: &Path,
    old: Option<&Metadata>,
    fill: impl FnOnce(&mut dyn Write) -> CmdResult<T>,
    file_err: &dyn Fn(io::Error) -> CommandError,
) -> CmdResult<T> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .ok_or_else(|| file_err(io::Error::other("not a file name")))?;
    remove_leftovers(&dir);
    let mut tmp = Temp::create(&dir, name, old).map_err(file_err)?;
    let mut writer = BufWriter::new(&tmp.file);
    let value = fill(&mut writer)?;
    writer.flush().map_err(file_err)?;
    drop(writer);
    match old {
        Some(m) if platform::links(m) > 1 => {
            copy_in_place(&mut tmp.file, target).map_err(file_err)?;
            // `tmp` is removed when dropped.
        }
        _ => {
            tmp.file.sync_all().map_err(file_err)?;
            fs::rename(&tmp.path, target).map_err(file_err)?;
            tmp.renamed = true;
            sync_dir(&dir).map_err(file_err)?;
        }
    }
    Ok(value)
}

/// Replaces the content of `target` with that of `from`, keeping `target`'s inode.
fn copy_in_place(from: &mut File, target: &Path) -> io::Result<()> {
    let mut to = OpenOptions::new().write(true).open(target)?;
    from.seek(SeekFrom::Start(0))?;
    to.set_len(0)?;
    io::copy(from, &mut to)?;
    to.sync_all()
}

/// A temporary file, removed when dropped unless it was renamed into place.
struct Temp {
    path: PathBuf,
    file: File,
    renamed: bool,
}

impl Temp {
    /// Creates `.NAME.grove-export.PID.tmp` in `dir`, with `old`'s permission bits (and
    /// owner, where allowed) or `0666` less the umask. A file of that name can only be left
    /// by an earlier process with this pid, which no longer runs: it is replaced.
    fn create(dir: &Path, name: &OsStr, old: Option<&Metadata>) -> io::Result<Temp> {
        let path = dir.join(temp_name(name, std::process::id()));
        let open = || {
            let mut options = OpenOptions::new();
            options.read(true).write(true).create_new(true);
            platform::new_file_mode(&mut options);
            options.open(&path)
        };
        let file = match open() {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                fs::remove_file(&path)?;
                open()?
            }
            other => other?,
        };
        let temp = Temp {
            path,
            file,
            renamed: false,
        };
        if let Some(old) = old {
            platform::copy_owner_and_mode(&temp.file, old)?;
        }
        Ok(temp)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.renamed {
            // Best effort: a file that cannot be removed now is a leftover the next export
            // into this directory removes.
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// `.NAME.grove-export.PID.tmp`.
fn temp_name(name: &OsStr, pid: u32) -> OsString {
    let mut out = OsString::from(".");
    out.push(platform::cut(name, NAME_BYTES));
    out.push(format!("{TAG}{pid}{SUFFIX}"));
    out
}

/// The pid in a temporary file's name, when `name` is one.
fn temp_pid(name: &OsStr) -> Option<u32> {
    let name = name.to_string_lossy();
    let rest = name.strip_prefix('.')?.strip_suffix(SUFFIX)?;
    let (before, pid) = rest.rsplit_once('.')?;
    if !before.ends_with(TAG.trim_end_matches('.')) || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Removes the temporary files in `dir` whose process no longer runs, saying so on stderr.
/// Best effort: what cannot be listed or removed stays.
fn remove_leftovers(dir: &Path) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = temp_pid(&entry.file_name()) else {
            continue;
        };
        if pid == std::process::id() || proc.join(pid.to_string()).exists() {
            continue;
        }
        let path = entry.path();
        match fs::remove_file(&path) {
            Ok(()) => eprintln!(
                "removed {}, left by process {pid} (no longer running)",
                path.display()
            ),
            Err(e) => eprintln!(
                "warning: could not remove {}, left by process {pid}: {e}",
                path.display()
            ),
        }
    }
}

/// Makes a rename in `dir` durable (a no-op where directories cannot be opened).
fn sync_dir(dir: &Path) -> io::Result<()> {
    if cfg!(unix) {
        File::open(dir)?.sync_all()
    } else {
        Ok(())
    }
}

#[cfg(unix)]
mod platform {
    use std::borrow::Cow;
    use std::ffi::OsStr;
    use std::fs::{File, Metadata, OpenOptions, Permissions};
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};

    /// The number of hard links of a file.
    pub fn links(meta: &Metadata) -> u64 {
        meta.nlink()
    }

    /// A new file is `0666` less the umask, as a shell redirection makes it.
    pub fn new_file_mode(options: &mut OpenOptions) {
        options.mode(0o666);
    }

    /// Gives `file` the owner and group of `old` where the user may (as root, or a group
    /// the user is in), then `old`'s permission bits.
    pub fn copy_owner_and_mode(file: &File, old: &Metadata) -> io::Result<()> {
        let new = file.metadata()?;
        if (new.uid(), new.gid()) != (old.uid(), old.gid())
            && std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid())).is_err()
        {
            // Not allowed to give the file away: keep at least the group when allowed, else
            // the file is the user's, as any file the user creates.
            let _ = std::os::unix::fs::fchown(file, None, Some(old.gid()));
        }
        file.set_permissions(Permissions::from_mode(old.mode() & 0o777))
    }

    /// The first `max` bytes of `name`.
    pub fn cut(name: &OsStr, max: usize) -> Cow<'_, OsStr> {
        let bytes = name.as_bytes();
        Cow::Borrowed(OsStr::from_bytes(&bytes[..bytes.len().min(max)]))
    }
}

#[cfg(not(unix))]
mod platform {
    use std::borrow::Cow;
    use std::ffi::OsStr;
    use std::fs::{File, Metadata, OpenOptions};
    use std::io;

    pub fn links(_: &Metadata) -> u64 {
        1
    }

    pub fn new_file_mode(_: &mut OpenOptions) {}

    pub fn copy_owner_and_mode(file: &File, old: &Metadata) -> io::Result<()> {
        file.set_permissions(old.permissions())
    }

    pub fn cut(name: &OsStr, max: usize) -> Cow<'_, OsStr> {
        let text = name.to_string_lossy();
        let end = text
            .char_indices()
            .map(|(i, c)| i + c.len_utf8())
            .take_while(|&end| end <= max)
            .last()
            .unwrap_or(0);
        Cow::Owned(OsStr::new(&text[..end]).to_owned())
    }
}
