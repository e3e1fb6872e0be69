//! Each storage error gets the hint of what happened. (Issue 16 §5: every storage error
//! suggested "another grove process", and redb errors named sled.)
#![allow(clippy::unwrap_used)]

use std::io;
use std::path::PathBuf;

use grove::kv::KvError;
use grove::GroveError;

use super::hint;

fn io_err(kind: io::ErrorKind, text: &str) -> io::Error {
    io::Error::new(kind, text)
}

fn sled(e: sled::Error) -> GroveError {
    GroveError::Storage(KvError::Sled(e))
}

fn redb(e: redb::Error) -> GroveError {
    GroveError::Storage(KvError::Redb(e))
}

/// The hint of `e`, checked to name only the backend it may name and to blame another
/// process only when `held`.
fn checked(e: &GroveError, backend: Option<&str>, held: bool) -> String {
    let text = hint(e).unwrap();
    for name in ["sled", "redb"] {
        assert_eq!(
            text.contains(name),
            backend == Some(name),
            "{e:?}: hint {text:?} and the backend {name}"
        );
    }
    assert_eq!(
        text.contains("another process"),
        held,
        "{e:?}: hint {text:?}"
    );
    text
}

#[test]
fn a_held_lock_names_its_backend() {
    let e = sled(sled::Error::Io(io_err(
        io::ErrorKind::Other,
        "could not acquire lock on \"/s/db\": Os { code: 11, kind: WouldBlock }",
    )));
    assert!(checked(&e, Some("sled"), true).contains("--lock-wait"));
    let e = redb(redb::Error::DatabaseAlreadyOpen);
    assert!(checked(&e, Some("redb"), true).contains("--lock-wait"));
    let e = GroveError::Locked {
        dir: PathBuf::from("/s"),
        holder: "process 7 (grove import x)".to_owned(),
    };
    assert!(checked(&e, None, false).contains("--lock-wait"));
}

#[test]
fn a_damaged_or_foreign_file_is_not_blamed_on_another_process() {
    // What redb says of a file that is not its database.
    let e = redb(redb::Error::Io(io_err(
        io::ErrorKind::InvalidData,
        "Not a redb database: magic number mismatch",
    )));
    let text = checked(&e, Some("redb"), false);
    // salvage reads redb's file only through redb: it is not recommended where redb refuses.
    assert!(
        text.contains("not a redb database")
            && !text.contains("grove salvage SRC DEST")
            && text.contains("from a copy or a backup"),
        "{text}"
    );
    let e = redb(redb::Error::Corrupted("bad page".to_owned()));
    let text = checked(&e, Some("redb"), false);
    assert!(
        text.contains("damaged") && !text.contains("grove salvage SRC DEST"),
        "{text}"
    );
    let e = sled(sled::Error::Corruption { at: None, bt: () });
    assert!(checked(&e, Some("sled"), false).contains("damaged"));
    let e = GroveError::Storage(KvError::Panic {
        backend: "sled",
        message: "index out of bounds".to_owned(),
    });
    assert!(checked(&e, Some("sled"), false).contains("salvage"));
    let e = GroveError::Corrupt("log record 3: bad length".to_owned());
    assert!(checked(&e, None, false).contains("grove verify"));
    let e = redb(redb::Error::UpgradeRequired(1));
    assert!(checked(&e, Some("redb"), false).contains("older format"));
}

#[test]
fn io_errors_say_what_the_system_said() {
    let cases = [
        (io::ErrorKind::StorageFull, "disk holding the store is full"),
        (io::ErrorKind::ReadOnlyFilesystem, "read-only file system"),
        (io::ErrorKind::PermissionDenied, "may not read or write"),
        (io::ErrorKind::NotADirectory, "name a directory"),
        (io::ErrorKind::TimedOut, "check the disk"),
    ];
    for (kind, says) in cases {
        // Whichever layer reports it (sled, redb, grove preparing the directory, the engine),
        // the hint is the system's cause, not the backend's.
        let errors = [
            sled(sled::Error::Io(io_err(kind, "x"))),
            redb(redb::Error::Io(io_err(kind, "x"))),
            GroveError::Storage(KvError::Io {
                context: "creating /s".to_owned(),
                source: io_err(kind, "x"),
            }),
            GroveError::Io {
                path: PathBuf::from("/s"),
                source: io_err(kind, "x"),
            },
        ];
        for e in &errors {
            let text = checked(e, None, false);
            assert!(text.contains(says), "{e:?}: {text}");
        }
    }
}

#[test]
fn a_poisoned_store_says_what_failed_first() {
    let e = GroveError::Poisoned(
        "write failed: storage: sled: No space left on device (os error 28)".to_owned(),
    );
    let text = checked(&e, None, false);
    assert!(
        text.contains("earlier write") && text.contains("disk is full"),
        "{text}"
    );
    let e = GroveError::Poisoned(
        "flush failed: storage: redb: I/O error: Read-only file system (os error 30)".to_owned(),
    );
    assert!(checked(&e, None, false).contains("read-only"));
    let e = GroveError::Poisoned("flush failed: something else".to_owned());
    let text = checked(&e, None, false);
    assert!(text.contains("the message says why"), "{text}");
}

#[test]
fn the_store_states_of_the_engine_have_their_own_hints() {
    let e = GroveError::NoStore(PathBuf::from("/s"));
    assert!(checked(&e, None, false).contains("--store"));
    let e = GroveError::ReadOnly("the store was opened only to read".to_owned());
    assert!(checked(&e, None, false).contains("this command writes"));
    let e = GroveError::DiskFull {
        dir: PathBuf::from("/s"),
        needed: 10,
        required: 20,
        available: 5,
    };
    assert!(checked(&e, None, false).contains("free space"));
    let e = GroveError::Storage(KvError::ReadOnly);
    assert!(checked(&e, None, false).contains("opened only to read"));
    // Not a storage error: no storage hint.
    assert!(hint(&GroveError::SessionNotFound("x".to_owned())).is_none());
}
