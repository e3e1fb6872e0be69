//! Sessions in and out of a store: pi JSONL import ([`import`]) and export ([`export`]), other
//! tools' transcripts imported line for line ([`foreign`]),
//! forks into new sessions ([`fork`]) and audit files ([`audit`]), signed with an ed25519 key
//! ([`signing`], the `audit-sign` feature).
//!
//! May call: [`crate::ops`], [`crate::context`], [`crate::tree`], [`crate::log`],
//! [`crate::core`], [`crate::kv`].

pub mod audit;
pub mod export;
pub mod foreign;
pub mod fork;
pub mod import;
pub mod signing;
