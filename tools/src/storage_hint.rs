//! The hint under a storage error: what actually happened, told from the error itself — the
//! backend that reported it (sled or redb, named only when it is the one), and whether the
//! store is held by another process, damaged, on a full disk or a read-only file system, not
//! accessible to this user, or refusing writes after an earlier failure.

use std::io;

use grove::kv::KvError;
use grove::GroveError;

/// What went wrong underneath a storage error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// Another process holds the backend's own lock.
    Held,
    /// The disk is full.
    Full,
    /// The file system is mounted read-only.
    ReadOnlyFs,
    /// The user may not read or write the files.
    Denied,
    /// The store path, or a directory on it, is not a directory.
    NotADirectory,
    /// The files do not hold a database of the backend, or it is damaged.
    Damaged,
    /// The files are of a format version the backend does not read.
    Version,
    /// Another I/O error.
    Io,
    /// Anything else the backend said.
    Other,
}

/// The hint of a storage error (`None` for other errors).
pub fn hint(e: &GroveError) -> Option<String> {
    let text = match e {
        GroveError::Storage(kv) => return Some(kv_hint(kv)),
        GroveError::Io { source, .. } => cause_hint(io_cause(source), None),
        GroveError::Corrupt(_) => {
            "the store holds data grove cannot read (damaged, or written by a newer grove): \
             `grove verify` lists the problems, `grove salvage SRC DEST` copies every session \
             that is intact"
                .to_owned()
        }
        GroveError::Poisoned(reason) => poisoned_hint(reason),
        GroveError::Locked { .. } => {
            "wait for that process to finish, or give --lock-wait SECONDS to wait for it".to_owned()
        }
        GroveError::NoStore(_) => {
            "check --store (or GROVE_STORE); commands that only read never create a store, \
             `grove import` creates one"
                .to_owned()
        }
        GroveError::ReadOnly(_) => {
            "this command writes; the store can only be read here (read commands still work)"
                .to_owned()
        }
        GroveError::DiskFull { .. } => {
            "free space on that disk (or lower --disk-reserve), then run the command again"
                .to_owned()
        }
        GroveError::LostWrites(_) => {
            "copy what the store still holds with `grove salvage SRC DEST`, or take it as it is \
             with --accept-lost-writes"
                .to_owned()
        }
        _ => return None,
    };
    Some(text)
}

/// The hint of a backend error.
fn kv_hint(e: &KvError) -> String {
    let (backend, cause) = match e {
        KvError::Sled(e) => (Some("sled"), sled_cause(e)),
        KvError::Redb(e) => (Some("redb"), redb_cause(e)),
        KvError::Io { source, .. } => (None, io_cause(source)),
        // salvage reads a sled store sled cannot (`grove::kv::sled_scan`), but a redb file
        // only through redb: where redb fails at open, salvage fails the same way.
        KvError::Panic {
            backend: "redb", ..
        } => {
            return format!(
                "redb failed on data it did not expect (a damaged store): `grove verify` lists the \
                 problems and `grove salvage SRC DEST` copies every session that is intact, as long \
                 as redb can open the file; if they fail the same way, {REDB_RESTORE}"
            )
        }
        KvError::Panic { backend, .. } => {
            return format!(
                "{backend} failed on data it did not expect (a damaged store): `grove verify` \
                 lists the problems, `grove salvage SRC DEST` copies every session that is intact"
            )
        }
        KvError::ReadOnly => {
            return "this command writes; the store was opened only to read".to_owned();
        }
        KvError::Buffer(_) => {
            return "buffered writes could not be handed to the backend (the message says why); \
                    the writes after them were refused: fix the cause, then run the command \
                    again"
                .to_owned();
        }
        _ => (None, Cause::Other),
    };
    cause_hint(cause, backend)
}

/// What a sled error says happened.
fn sled_cause(e: &sled::Error) -> Cause {
    use sled::Error;
    match e {
        // sled reports a held lock file as an `Other` I/O error with this text.
        Error::Io(io) if io.to_string().contains("could not acquire lock") => Cause::Held,
        Error::Io(io) => io_cause(io),
        Error::Corruption { .. } => Cause::Damaged,
        _ => Cause::Other,
    }
}

/// What a redb error says happened.
fn redb_cause(e: &redb::Error) -> Cause {
    use redb::Error;
    match e {
        Error::DatabaseAlreadyOpen | Error::LockProtocolMismatch => Cause::Held,
        Error::Corrupted(_) => Cause::Damaged,
        Error::UpgradeRequired(_) => Cause::Version,
        Error::Io(io) => io_cause(io),
        _ => Cause::Other,
    }
}

/// What an I/O error's kind says happened.
fn io_cause(e: &io::Error) -> Cause {
    match e.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => Cause::Full,
        io::ErrorKind::ReadOnlyFilesystem => Cause::ReadOnlyFs,
        io::ErrorKind::PermissionDenied => Cause::Denied,
        io::ErrorKind::NotADirectory | io::ErrorKind::AlreadyExists => Cause::NotADirectory,
        // A file that is not the backend's database (redb: "magic number mismatch").
        io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => Cause::Damaged,
        io::ErrorKind::WouldBlock => Cause::Held,
        _ => Cause::Io,
    }
}

/// What to do with a redb store redb cannot open.
const REDB_RESTORE: &str = "restore the store's directory from a copy or a backup, or import \
                            the sessions again from their exports";

/// The hint for a cause, naming the backend when the backend said it.
fn cause_hint(cause: Cause, backend: Option<&str>) -> String {
    let who = backend.unwrap_or("the backend");
    match cause {
        Cause::Held => format!(
            "another process has the store open ({who} lets one process at a time use it); \
             wait for it to finish, or give --lock-wait SECONDS"
        ),
        Cause::Full => "the disk holding the store is full: free space, then run the command \
                        again"
            .to_owned(),
        Cause::ReadOnlyFs => "the store is on a read-only file system: commands that only read \
                              work there, writes need a writable copy"
            .to_owned(),
        Cause::Denied => "this user may not read or write the store's files: check their owner \
                          and permissions (and those of the directories above)"
            .to_owned(),
        Cause::NotADirectory => "the store path (--store or GROVE_STORE), or a directory on it, \
                                 is a file: name a directory"
            .to_owned(),
        Cause::Damaged => match backend {
            // redb reports these when it opens the file; salvage reads it only through redb.
            Some("redb") => format!(
                "the store's redb file is damaged or is not a redb database (another backend's \
                 store? see --backend); `grove salvage` reads a redb store only through redb, so it \
                 cannot read this one either: {REDB_RESTORE}"
            ),
            Some(b) => format!(
                "the store's {b} files are damaged or are not a {b} database (another backend's \
                 store? see --backend): `grove salvage SRC DEST` copies every session that is \
                 intact"
            ),
            None => "the store's files are damaged: `grove salvage SRC DEST` copies every \
                     session that is intact"
                .to_owned(),
        },
        Cause::Version => format!(
            "the store's {who} files are of an older format this grove does not read: open them \
             with the grove that wrote them and export the sessions"
        ),
        Cause::Io => "reading or writing the store's files failed (the message says how): check \
                      the disk, then run the command again"
            .to_owned(),
        Cause::Other => format!("{who} reported the error above"),
    }
}

/// The hint of a poisoned store: what the earlier failure was, as far as its message tells.
fn poisoned_hint(reason: &str) -> String {
    let cause = if reason.contains("No space left") || reason.contains("Disk quota exceeded") {
        "the disk is full: free space"
    } else if reason.contains("Read-only file system") {
        "the file system is read-only: write to a writable copy"
    } else if reason.contains("Permission denied") {
        "this user may not write the store's files: check their permissions"
    } else {
        "the message says why: fix the cause"
    };
    format!(
        "an earlier write of this command failed and nothing after it was written; {cause}, \
         then run the command again"
    )
}

#[cfg(test)]
mod tests;
