//! Command errors: what a subcommand can fail with, the exit code each maps to, and the
//! hint printed under the message.
//!
//! Exit codes: 0 success, 1 a user error (not found, ambiguous, invalid input, a file of
//! the user's that cannot be read or written), 2 a usage error (reported by clap before any
//! command runs), 3 a storage error (the store cannot be opened, is corrupt, or a write
//! failed).

use std::fmt;
use std::io;
use std::path::PathBuf;

use grove::GroveError;

use crate::exit::{EXIT_STORAGE, EXIT_USER};

/// Every error a subcommand returns.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// An engine error.
    #[error(transparent)]
    Grove(#[from] GroveError),
    /// Input given on the command line or on stdin is not acceptable.
    #[error("{message}")]
    InvalidInput {
        /// What is wrong.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
    /// A file of the user's (not the store) could not be read or written.
    #[error("{}: {source}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An input (stdin) is longer than its limit (`--max-line-bytes`).
    #[error("{}: the input is longer than the limit of {limit} bytes", .path.display())]
    InputTooLong {
        /// The input.
        path: PathBuf,
        /// The limit, in bytes.
        limit: usize,
    },
    /// An error while working on one of several input files.
    #[error("{}: {source}", .path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error.
        source: Box<CommandError>,
    },
    /// A system resource of the server (a socket, its runtime) failed.
    #[error("{what}: {source}")]
    System {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A `grove serve` server answered a request with an error.
    #[error("{url}: the server answered {status} {code}: {message}")]
    Server {
        /// The server.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The error code (docs/api.md, "Errors").
        code: String,
        /// The server's message.
        message: String,
    },
    /// The shard map in etcd could not be read or written, or a move between clusters
    /// failed (`grove shard`, `grove serve --etcd`).
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Shard(#[from] crate::shard::mover::MoveError),
    /// The default store location is unknown on this platform.
    #[error("no data directory on this platform")]
    NoDataDir,
    /// Writing to stdout failed; a closed pipe ends the command quietly.
    #[error("writing output: {0}")]
    Stdout(io::Error),
    /// `grove verify` found problems (listed on stdout).
    #[error("verification found {0} problem(s)")]
    VerifyFailed(usize),
    /// `grove salvage` could not copy every session, or found damage outside the sessions
    /// (listed on stdout).
    #[error("{lost} session(s) not recovered{}", damaged_tables(*.damage))]
    SalvageIncomplete {
        /// Sessions found but not copied.
        lost: usize,
        /// Problems of the source outside any one session (lost writes, unreadable tables).
        damage: usize,
    },
}

/// The tail of the `SalvageIncomplete` message about damaged tables, if there were any.
fn damaged_tables(damage: usize) -> String {
    if damage == 0 {
        String::new()
    } else {
        format!(", {damage} store-wide problem(s) of the source")
    }
}

#[cfg(feature = "postgres")]
impl From<crate::shard::etcd::EtcdError> for CommandError {
    fn from(e: crate::shard::etcd::EtcdError) -> CommandError {
        CommandError::Shard(e.into())
    }
}

#[cfg(feature = "postgres")]
impl From<crate::shard::map::MapError> for CommandError {
    fn from(e: crate::shard::map::MapError) -> CommandError {
        CommandError::Shard(e.into())
    }
}

#[cfg(feature = "postgres")]
impl From<crate::shard::router::ShardError> for CommandError {
    fn from(e: crate::shard::router::ShardError) -> CommandError {
        use crate::shard::mover::MoveError;
        use crate::shard::router::ShardError;
        CommandError::Shard(match e {
            ShardError::Etcd(e) => MoveError::Etcd(e),
            ShardError::Map(e) => MoveError::Map(e),
            ShardError::Store { cluster, source } => MoveError::Store { cluster, source },
            ShardError::Unrouted { sid, .. } => {
                MoveError::UnknownCluster(format!("(none for {sid})"))
            }
        })
    }
}

impl From<io::Error> for CommandError {
    /// Only stdout/stderr writes convert implicitly; file errors name their path.
    fn from(e: io::Error) -> CommandError {
        CommandError::Stdout(e)
    }
}

impl CommandError {
    /// An [`CommandError::InvalidInput`] with a hint.
    pub fn invalid(message: impl Into<String>, hint: impl Into<String>) -> CommandError {
        CommandError::InvalidInput {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// A [`CommandError::System`] error: `what` failed with `source`.
    pub fn io(what: impl Into<String>, source: io::Error) -> CommandError {
        CommandError::System {
            what: what.into(),
            source,
        }
    }

    /// The name printed after `error:`.
    pub fn name(&self) -> &'static str {
        match self {
            CommandError::Grove(e) => e.name(),
            CommandError::InFile { source, .. } => source.name(),
            CommandError::InvalidInput { .. } => "InvalidInput",
            CommandError::InputTooLong { .. } => "InputTooLong",
            CommandError::File { .. } | CommandError::System { .. } => "Io",
            CommandError::NoDataDir => "NoDataDir",
            CommandError::Server { .. } => "ServerError",
            #[cfg(feature = "postgres")]
            CommandError::Shard(_) => "ShardError",
            CommandError::Stdout(_) => "Io",
            CommandError::VerifyFailed(_) => "VerifyFailed",
            CommandError::SalvageIncomplete { .. } => "SalvageIncomplete",
        }
    }

    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Grove(e) if matches!(e.code(), "storage" | "unavailable") => EXIT_STORAGE,
            CommandError::Grove(_) => EXIT_USER,
            CommandError::InFile { source, .. } => source.exit_code(),
            CommandError::InvalidInput { .. }
            | CommandError::InputTooLong { .. }
            | CommandError::File { .. }
            | CommandError::System { .. }
            | CommandError::NoDataDir
            | CommandError::Stdout(_) => EXIT_USER,
            CommandError::VerifyFailed(_) | CommandError::SalvageIncomplete { .. } => EXIT_STORAGE,
            CommandError::Server { status, .. } if *status >= 500 => EXIT_STORAGE,
            CommandError::Server { .. } => EXIT_USER,
            #[cfg(feature = "postgres")]
            CommandError::Shard(e) => e.exit_code(),
        }
    }

    /// Whether the error is a closed stdout pipe (`grove ... | head`), which is not
    /// reported.
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            CommandError::Stdout(e) => e.kind() == io::ErrorKind::BrokenPipe,
            CommandError::Grove(GroveError::Io { source, .. }) => {
                source.kind() == io::ErrorKind::BrokenPipe
            }
            _ => false,
        }
    }

    /// What the user may do about the error.
    pub fn hint(&self) -> Option<String> {
        let text = match self {
            CommandError::InvalidInput { hint, .. } => return hint.clone(),
            CommandError::InFile { source, .. } => return source.hint(),
            CommandError::NoDataDir => "pass --store DIR or set GROVE_STORE",
            CommandError::InputTooLong { .. } => {
                "give one JSON object; if it really is this long, raise --max-line-bytes"
            }
            CommandError::VerifyFailed(_) => {
                "the problems are listed above; `grove salvage SRC DEST` copies every session \
                 that verifies into a new store"
            }
            CommandError::SalvageIncomplete { .. } => {
                "the sessions listed above were not copied; DEST holds every session that was"
            }
            CommandError::File { .. } | CommandError::System { .. } | CommandError::Stdout(_) => {
                return None
            }
            CommandError::Server { code, .. } if code == "unauthorized" => {
                "give the server's token with --token or GROVE_TOKEN"
            }
            CommandError::Server { .. } => return None,
            #[cfg(feature = "postgres")]
            CommandError::Shard(e) => return e.hint().map(str::to_owned),
            CommandError::Grove(e) => match e {
                GroveError::SessionNotFound(_) => "run `grove ls` to list the sessions",
                GroveError::EntryNotFound(_) => {
                    "run `grove tree SESSION` to see entry ids; `@` is the leaf, `@-` its parent, \
                     `root` the root position"
                }
                GroveError::AmbiguousPrefix { .. } => "give more characters of the id",
                GroveError::InvalidEntry { .. } => {
                    "fix the line, or import with --lenient to skip malformed lines"
                }
                GroveError::LineTooLong { .. } => {
                    "is it a pi session file? if its lines really are this long, raise \
                     --max-line-bytes"
                }
                GroveError::InvalidSession { reason, .. } if reason.contains("header") => {
                    "the file must start with a pi session header line"
                }
                GroveError::SessionExists(_) => {
                    "the store already holds a session with this id (the file header's id)"
                }
                GroveError::DuplicateId(_) => "leave out the \"id\" field to get a fresh id",
                GroveError::ExportIncompatible { .. } => "export with --flavor harness",
                GroveError::Busy(_) => "another process is working on this session; try again",
                GroveError::InvalidState(_) => {
                    "give a summarizer (--summarizer-cmd CMD, or --openai-url URL --openai-model \
                     M) or the summary text (--summary TEXT)"
                }
                GroveError::BranchSummary(_) => {
                    "nothing was written; check the summarizer, or give the text with --summary"
                }
                GroveError::InvalidForkTarget(_) => {
                    "--before needs a user message; --at forks at any entry"
                }
                _ => return crate::storage_hint::hint(e),
            },
        };
        Some(text.to_owned())
    }
}

/// `error: <Name>: <message>` and, when there is one, `hint: <hint>`.
pub struct Report<'a>(pub &'a CommandError);

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}: {}", self.0.name(), self.0)?;
        if let Some(hint) = self.0.hint() {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

/// Result alias of the commands.
pub type CmdResult<T = ()> = Result<T, CommandError>;
