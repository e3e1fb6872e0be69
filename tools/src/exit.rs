//! The process exit codes of the `grove` tool, one constant each. This module owns the
//! numbers alone: `error.rs` maps a command error to one of them, and the error types of the
//! tool's lower modules (`shard::mover::MoveError`) name theirs here, so that neither has to
//! import the other. It calls nothing.
//!
//! 0 is success and 2 a usage error (reported by clap before any command runs).

/// Exit code of a user error: not found, ambiguous, invalid input, a file of the user's that
/// cannot be read or written.
pub const EXIT_USER: u8 = 1;
/// Exit code of a storage or corruption error: the store cannot be opened, is corrupt, or a
/// write failed.
pub const EXIT_STORAGE: u8 = 3;
