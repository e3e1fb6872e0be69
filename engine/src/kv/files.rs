//! Owner-only modes for what grove creates for a store (docs/design.md, "What a store
//! survives"): the directories it creates are 0700, so nothing inside can be reached by
//! another user whatever its own mode; its own files (the lock, the durable-commit record)
//! are created 0600, and so are a new database's files (sled's `db` and `conf`, redb's
//! `grove.redb`). A store that exists keeps the modes it has. Files a backend makes later
//! (sled's snapshots, written as it closes) take the process's umask, inside the 0700
//! directory; the next open of a directory only its owner may enter makes them 0600 too. No
//! process umask is changed: a library does not own it.
//!
//! This module calls only the standard library; off unix it changes no mode.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;

/// Creates the directory `path` and its missing parents, each with mode 0700.
pub(crate) fn create_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// `options` creating a file with mode 0600 (an existing file keeps its mode).
pub(crate) fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

/// Whether only its owner may enter the directory `dir` (always, off unix).
pub(crate) fn is_private(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o077 == 0)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        true
    }
}

/// Takes group and others' permissions off `path` (a file a backend just created), when it
/// exists. Best effort: the directory's 0700 is what keeps it private.
pub(crate) fn restrict(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            let mode = meta.permissions().mode();
            if mode & 0o077 != 0 && !meta.file_type().is_symlink() {
                let _ =
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o7700));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Whether an I/O error says the directory cannot be written at all (a read-only mount,
/// immutable files, no permission).
pub(crate) fn is_unwritable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
    ) || e.raw_os_error() == Some(1) // EPERM: an immutable file
}
