//! The core of an open store, above the key-value substrate ([`crate::kv`]) and below the
//! session log: the error type, the key layout, the store's directory and lock, free space,
//! the durable-commit record, the commit counter, the payload store's bytes and the shared
//! state of an open store with its commit path.
//!
//! May call: [`crate::kv`]. Knows nothing of sessions' trees or contexts.

pub mod commits;
pub mod config;
pub mod dir;
pub mod durable;
pub mod error;
pub mod keys;
pub mod payloads;
pub mod shared;
pub mod space;
pub mod util;
