//! The session log: reading and writing log rows and packs, the fold that derives each
//! record's node, the id index and its packs, labels, the commit path of a session
//! ([`write`]), recovery and repair of an interrupted last record.
//!
//! May call: [`crate::core`], [`crate::kv`].

pub mod fold;
pub mod ids;
pub mod index_packs;
pub mod labels;
pub mod rows;
pub mod write;
