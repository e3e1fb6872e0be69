//! Operations on sessions above their contexts: turn leases ([`lease`]), the operation log
//! with point-in-time reads, undo and seals ([`oplog`]), the replay stream ([`replay`]),
//! navigation with editing semantics ([`navigate`]) and branch summaries ([`summary`]).
//!
//! May call: [`crate::context`], [`crate::tree`], [`crate::log`], [`crate::core`],
//! [`crate::kv`].

pub mod lease;
pub mod navigate;
pub mod oplog;
pub mod redact;
pub mod replay;
pub mod summary;
