//! A session's tree read from its log: paths to the root and branches ([`paths`]), walks up
//! the jump chains ([`ancestors`]), the children of an entry ([`children`]), the whole tree
//! ([`whole`]) and proofs of entries ([`proof`]).
//!
//! May call: [`crate::log`], [`crate::core`], [`crate::kv`].

pub mod ancestors;
pub mod children;
pub mod paths;
pub mod proof;
pub mod whole;
