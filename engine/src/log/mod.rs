//! The session log: reading and writing log rows and packs, the fold that derives each
//! record's node, the id index and its packs, labels, the session catalogue, the commit path
//! of a session ([`write`](mod@write)), recovery and repair of an interrupted last record, and the
//! session handle's log face ([`handle`]).
//!
//! Files, bottom to top: [`tip`], [`id_state`], [`fold`], [`index_packs`], [`coalesce`] and
//! [`shared`] hold types and state; [`handle`] the handle; [`rows`], [`ids`], [`labels`],
//! [`write`](mod@write), [`append`] and [`catalogue`] work on it.
//!
//! May call: [`crate::core`], [`crate::kv`].

pub mod append;
pub mod catalogue;
pub mod coalesce;
pub mod fold;
pub mod handle;
pub mod id_state;
pub mod ids;
pub mod index_packs;
pub mod labels;
pub mod redactions;
pub mod rows;
pub mod shared;
pub mod store_ops;
pub mod tip;
pub mod write;
