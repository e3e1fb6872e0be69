//! grove's errors: one umbrella enum whose variants follow pi's error codes (spec §11).

use std::path::PathBuf;

use grove_codec::{CodecError, IdError};

use crate::kv::KvError;

/// Every error the engine returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GroveError {
    /// An entry id that names no entry of the session (pi `not_found`).
    #[error("Entry {0} not found")]
    EntryNotFound(String),
    /// An operation number the session's operation log does not have.
    #[error("session {session} has no operation {op} (its operations are 0 to {last})", last = .count.saturating_sub(1))]
    OperationNotFound {
        /// The session.
        session: String,
        /// The number asked for.
        op: u64,
        /// How many operations the session has.
        count: u64,
    },
    /// A point in time before a session's first operation.
    #[error("session {session} had no operation yet at {time}")]
    BeforeFirstOperation {
        /// The session.
        session: String,
        /// The time asked for, as given.
        time: String,
    },
    /// No session with this id (or id prefix).
    #[error("Handle not found: {0}")]
    SessionNotFound(String),
    /// An id prefix that matches more than one candidate.
    #[error("ambiguous {what} prefix '{prefix}': matches {candidates}")]
    AmbiguousPrefix {
        /// "session" or "entry".
        what: &'static str,
        /// The prefix given.
        prefix: String,
        /// Some of the matches, comma-separated.
        candidates: String,
    },
    /// The session data is inconsistent or unsupported (pi `invalid_session`).
    #[error("invalid session{}: {reason}", source_name(.file))]
    InvalidSession {
        /// The file being read, if any.
        file: Option<PathBuf>,
        /// What is wrong.
        reason: String,
    },
    /// A line of an input file is not a valid entry (pi `invalid_entry`).
    #[error("invalid entry{}: line {line} (byte {byte_offset}): {reason}", source_name(.file))]
    InvalidEntry {
        /// The file being read, if any.
        file: Option<PathBuf>,
        /// Physical 1-based line number.
        line: u64,
        /// Byte offset of the line.
        byte_offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// An entry given whole to [`crate::Session::append_exact`] that the session cannot take
    /// (pi `invalid_entry`): not a valid pi entry, or its parent is not an entry of the session.
    #[error("invalid entry for session {session}: {reason}")]
    RejectedEntry {
        /// The session appended to.
        session: String,
        /// What is wrong.
        reason: String,
    },
    /// A line of an input is longer than the import's limit
    /// ([`crate::ImportOptions::max_line_bytes`]); nothing was imported.
    #[error(
        "line too long{}: line {line} (byte {byte_offset}) is longer than the limit of {limit} \
         bytes",
        source_name(.file)
    )]
    LineTooLong {
        /// The file being read, if any.
        file: Option<PathBuf>,
        /// Physical 1-based line number.
        line: u64,
        /// Byte offset of the start of the line.
        byte_offset: u64,
        /// The limit, in bytes.
        limit: usize,
    },
    /// A caller-supplied value is not acceptable (pi `invalid_argument`).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A session or entry id given to the store that breaks the id rule (empty, longer than
    /// [`grove_codec::MAX_ID_BYTES`], or holding a control character; docs/format.md, "Ids").
    #[error("invalid argument: {0}")]
    InvalidId(#[from] IdError),
    /// An entry id that the session already uses, by another entry.
    #[error("entry id {0} is already used in this session by another entry")]
    DuplicateId(String),
    /// A session id that the store already holds.
    #[error("session {0} already exists")]
    SessionExists(String),
    /// The session cannot be exported in the requested flavor (spec §3.6).
    #[error("export incompatible: {reason}")]
    ExportIncompatible {
        /// Why.
        reason: String,
    },
    /// The session is not idle: a turn or a navigation holds it (pi `busy`).
    #[error("busy: {0}")]
    Busy(String),
    /// A fork target is unknown or not allowed (pi `invalid_fork_target`).
    #[error("invalid fork target: {0}")]
    InvalidForkTarget(String),
    /// Branch-summary generation failed (pi `branch_summary`); nothing was moved.
    #[error("Branch summary failed: {0}")]
    BranchSummary(String),
    /// A navigation hook failed (pi `hook`); nothing was written.
    #[error("hook failed: {0}")]
    Hook(String),
    /// The operation needs something that is not configured (pi `invalid_state`).
    #[error("invalid state: {0}")]
    InvalidState(String),
    /// A write or flush failed earlier; the store refuses writes until reopened.
    #[error("store is poisoned: {0}; writes are refused, reads still work")]
    Poisoned(String),
    /// Another process holds the store (its lock file `grove.lock` is locked), and it was not
    /// released within the configured wait ([`crate::StoreConfig::lock_wait`]).
    #[error("the store {} is in use by {holder}", .dir.display())]
    Locked {
        /// The store directory.
        dir: PathBuf,
        /// Who holds it, as its lock file says ("process 1234 (grove append ...)").
        holder: String,
    },
    /// A store opened only to read does not exist (reads never create one).
    #[error("no grove store at {}", .0.display())]
    NoStore(PathBuf),
    /// The store was opened read-only (by choice, or because its files cannot be written).
    #[error("the store is read-only: {0}")]
    ReadOnly(String),
    /// The disk holding the store has too little free space for the write; nothing was
    /// written, and writing resumes once space is freed.
    #[error(
        "disk full: {} has {available} bytes free, a write of {needed} bytes needs {required} \
         (the write plus the store's reserve); nothing was written",
        .dir.display()
    )]
    DiskFull {
        /// The store directory.
        dir: PathBuf,
        /// The bytes of the refused write.
        needed: u64,
        /// What the write needs free: the write, its overhead and the reserve.
        required: u64,
        /// The bytes free on its file system.
        available: u64,
    },
    /// The backend no longer holds writes it acknowledged as durable (its files were damaged,
    /// truncated or replaced): the durable-commit record beside it says more were made.
    #[error("{0}")]
    LostWrites(LostWrites),
    /// A stored value failed to decode or an index disagrees with the log.
    #[error("corrupt store: {0}")]
    Corrupt(String),
    /// The full-text search index could not be opened, read or written (its files in the
    /// store directory's `search/`; `grove search --reindex` rebuilds them from the log).
    #[error("search index: {0}")]
    SearchIndex(String),
    /// The key-value backend failed.
    #[error("storage: {0}")]
    Storage(#[from] KvError),
    /// A file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

fn source_name(file: &Option<PathBuf>) -> String {
    file.as_ref()
        .map(|p| format!(" in {}", p.display()))
        .unwrap_or_default()
}

impl GroveError {
    /// pi's error code for this error (spec §11), for scripts and conformance tests.
    pub fn code(&self) -> &'static str {
        match self {
            GroveError::EntryNotFound(_)
            | GroveError::SessionNotFound(_)
            | GroveError::OperationNotFound { .. }
            | GroveError::BeforeFirstOperation { .. } => "not_found",
            GroveError::InvalidSession { .. } => "invalid_session",
            GroveError::InvalidEntry { .. }
            | GroveError::RejectedEntry { .. }
            | GroveError::LineTooLong { .. } => "invalid_entry",
            GroveError::InvalidArgument(_)
            | GroveError::InvalidId(_)
            | GroveError::AmbiguousPrefix { .. }
            | GroveError::DuplicateId(_)
            | GroveError::SessionExists(_) => "invalid_argument",
            GroveError::ExportIncompatible { .. } => "export_incompatible",
            GroveError::Busy(_) => "busy",
            GroveError::Storage(KvError::Unavailable(_)) => "unavailable",
            GroveError::InvalidForkTarget(_) => "invalid_fork_target",
            GroveError::BranchSummary(_) => "branch_summary",
            GroveError::Hook(_) => "hook",
            GroveError::InvalidState(_) => "invalid_state",
            GroveError::NoStore(_) => "not_found",
            GroveError::Locked { .. }
            | GroveError::ReadOnly(_)
            | GroveError::DiskFull { .. }
            | GroveError::LostWrites(_)
            | GroveError::Corrupt(_)
            | GroveError::SearchIndex(_)
            | GroveError::Storage(_)
            | GroveError::Io { .. }
            | GroveError::Poisoned(_) => "storage",
        }
    }

    /// The variant's name, as the CLI prints it.
    pub fn name(&self) -> &'static str {
        match self {
            GroveError::EntryNotFound(_) => "EntryNotFound",
            GroveError::SessionNotFound(_) => "SessionNotFound",
            GroveError::OperationNotFound { .. } => "OperationNotFound",
            GroveError::BeforeFirstOperation { .. } => "BeforeFirstOperation",
            GroveError::AmbiguousPrefix { .. } => "AmbiguousPrefix",
            GroveError::InvalidSession { .. } => "InvalidSession",
            GroveError::InvalidEntry { .. } => "InvalidEntry",
            GroveError::RejectedEntry { .. } => "RejectedEntry",
            GroveError::LineTooLong { .. } => "LineTooLong",
            GroveError::InvalidArgument(_) => "InvalidArgument",
            GroveError::InvalidId(_) => "InvalidId",
            GroveError::DuplicateId(_) => "DuplicateId",
            GroveError::SessionExists(_) => "SessionExists",
            GroveError::ExportIncompatible { .. } => "ExportIncompatible",
            GroveError::Busy(_) => "Busy",
            GroveError::InvalidForkTarget(_) => "InvalidForkTarget",
            GroveError::BranchSummary(_) => "BranchSummary",
            GroveError::Hook(_) => "Hook",
            GroveError::InvalidState(_) => "InvalidState",
            GroveError::Locked { .. } => "Locked",
            GroveError::NoStore(_) => "NoStore",
            GroveError::ReadOnly(_) => "ReadOnly",
            GroveError::DiskFull { .. } => "DiskFull",
            GroveError::LostWrites(_) => "LostWrites",
            GroveError::Corrupt(_) => "Corrupt",
            GroveError::SearchIndex(_) => "SearchIndex",
            GroveError::Poisoned(_) => "Poisoned",
            GroveError::Storage(KvError::Unavailable(_)) => "Unavailable",
            GroveError::Storage(_) => "Storage",
            GroveError::Io { .. } => "Io",
        }
    }

    pub(crate) fn from_codec(e: CodecError, file: Option<PathBuf>) -> GroveError {
        match e {
            CodecError::InvalidSession { reason } => GroveError::InvalidSession { file, reason },
            CodecError::InvalidEntry(l) | CodecError::TornTail(l) => GroveError::InvalidEntry {
                file,
                line: l.line,
                byte_offset: l.byte_offset,
                reason: l.reason,
            },
            CodecError::LineTooLong {
                line,
                byte_offset,
                limit,
            } => GroveError::LineTooLong {
                file,
                line,
                byte_offset,
                limit,
            },
            CodecError::Io { source, .. } => GroveError::Io {
                path: file.unwrap_or_default(),
                source,
            },
            other => GroveError::Corrupt(other.to_string()),
        }
    }
}

/// Result alias of the engine.
pub type Result<T, E = GroveError> = std::result::Result<T, E>;

/// What a store lost: acknowledged durable commits its backend no longer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostWrites {
    /// The store directory.
    pub dir: PathBuf,
    /// Durable commits acknowledged (the record's epoch).
    pub acknowledged: u64,
    /// Durable commits the backend holds.
    pub held: u64,
    /// Sessions whose last acknowledged writes are missing: `(session, what is missing)`.
    pub sessions: Vec<(String, String)>,
    /// Whether the record names every session the lost commits wrote (it keeps 64).
    pub complete: bool,
}

impl std::fmt::Display for LostWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the store {} lost acknowledged writes: {} durable commit(s) were acknowledged, its \
             backend holds {}",
            self.dir.display(),
            self.acknowledged,
            self.held
        )?;
        for (session, what) in &self.sessions {
            write!(f, "; session {session}: {what}")?;
        }
        if !self.complete {
            write!(f, "; other sessions written then are not named")?;
        } else if self.sessions.is_empty() {
            write!(
                f,
                "; the sessions the last durable commit wrote hold every record it wrote"
            )?;
        }
        Ok(())
    }
}
