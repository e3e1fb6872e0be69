//! Sessions sharded over several PostgreSQL clusters, with the shard map in etcd
//! (docs/scale-out.md, "Many databases: sharding by session").
//!
//! This room owns: etcd access through its v3 JSON gateway (`etcd.rs`), the map's key layout
//! and routing of a session id to its cluster (`map.rs`), a serving node's map and per-cluster
//! stores kept fresh from etcd (`router.rs`, used by `grove serve --etcd`), and moving one
//! session between clusters (`mover.rs`, used by `grove shard move`). It calls the engine's
//! public API (`grove::Store`, `grove::Session`) on stores a caller opens for it (an
//! [`router::Opener`]), ureq for HTTP, and of the tool only the exit codes (`exit.rs`) that a
//! failed move maps to.

pub mod etcd;
pub mod map;
pub mod mover;
pub mod router;

#[cfg(test)]
mod tests;
