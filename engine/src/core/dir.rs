//! The store directory's lock file `grove.lock`, which makes one process the owner of a
//! store before anything in the directory is touched (docs/design.md, "Processes"). (The
//! directory's other file of grove's own, the durable-commit record, is [`crate::core::durable`]'s.)
//!
//! This module owns the lock file and nothing else; it calls only the standard library.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::core::error::{GroveError, Result};

/// The lock file's name.
pub const LOCK_FILE: &str = "grove.lock";

/// How a store is locked: one writer, or readers that share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockMode {
    /// The only process on the store (every read-write open; sled's read-only opens too, since
    /// sled itself takes its files for one process).
    Exclusive,
    /// Readers only (a read-only redb store).
    Shared,
}

/// A held store lock, released when dropped (the file is closed).
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: Option<File>,
    /// Whether the directory can be written (the lock file could be opened for writing).
    writable: bool,
}

impl DirLock {
    /// Whether the store directory can be written.
    pub(crate) fn writable(&self) -> bool {
        self.writable
    }
}

fn io_error(path: &Path, source: std::io::Error) -> GroveError {
    GroveError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Locks the store directory `dir` in `mode`, waiting up to `wait` for a process that holds
/// it. A directory that cannot be written (a read-only mount) takes a shared lock when the
/// lock file exists, and no lock when it cannot even be created: nobody can write there.
pub(crate) fn lock(dir: &Path, mode: LockMode, wait: Duration) -> Result<DirLock> {
    let path = dir.join(LOCK_FILE);
    let opened = crate::kv::files::owner_only(&mut OpenOptions::new())
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path);
    let writable = !matches!(&opened, Err(e) if crate::kv::files::is_unwritable(e));
    let file = match opened {
        Ok(f) => f,
        Err(e) if crate::kv::files::is_unwritable(&e) => match File::open(&path) {
            Ok(f) => f,
            // No lock file and no way to make one: a directory nobody can write.
            Err(_) => {
                return Ok(DirLock {
                    _file: None,
                    writable,
                })
            }
        },
        Err(e) => return Err(io_error(&path, e)),
    };
    let start = Instant::now();
    let deadline = start + wait;
    loop {
        let attempt = match mode {
            LockMode::Exclusive => file.try_lock(),
            LockMode::Shared => file.try_lock_shared(),
        };
        match attempt {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // This very process holds it: a store it closed, whose last handle a background
            // thread drops shortly after (as sled's own lock); a reopen waits for that.
            Err(TryLockError::WouldBlock)
                if start.elapsed() < OWN_RELEASE && held_by_this_process(&path) =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(GroveError::Locked {
                    dir: dir.to_owned(),
                    holder: holder(&path),
                })
            }
            Err(TryLockError::Error(e)) => return Err(io_error(&path, e)),
        }
    }
    if mode == LockMode::Exclusive && writable {
        // Who holds the store, for the message another process gets (best effort).
        let _ = write_holder(&file);
    }
    Ok(DirLock {
        _file: Some(file),
        writable,
    })
}

/// How long a lock held by this process itself is waited for (a closed store's handle that a
/// background thread drops; a loaded machine can take seconds).
const OWN_RELEASE: Duration = Duration::from_secs(10);

/// Whether the lock file at `path` names this process as its holder.
fn held_by_this_process(path: &Path) -> bool {
    let own = format!("pid {}", std::process::id());
    std::fs::read_to_string(path).is_ok_and(|text| text.lines().any(|l| l.trim() == own))
}

fn write_holder(mut file: &File) -> std::io::Result<()> {
    let mut command = std::env::args().collect::<Vec<_>>().join(" ");
    if command.len() > 300 {
        let mut cut = 300;
        while !command.is_char_boundary(cut) {
            cut -= 1;
        }
        command.truncate(cut);
        command.push_str(" ...");
    }
    let text = format!(
        "pid {}\ncommand {}\n",
        std::process::id(),
        command.replace('\n', " ")
    );
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(text.as_bytes())
}

/// What the lock file says of the process holding it.
fn holder(path: &Path) -> String {
    let mut text = String::new();
    let read = File::open(path).and_then(|mut f| f.read_to_string(&mut text));
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    match (read, field("pid "), field("command ")) {
        (Ok(_), Some(pid), Some(command)) => format!("process {pid} ({command})"),
        (Ok(_), Some(pid), None) => format!("process {pid}"),
        _ => "another process".to_owned(),
    }
}
