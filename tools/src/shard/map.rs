//! The shard map (docs/scale-out.md, "The shard map in etcd"): which cluster holds a session.
//!
//! A session id hashes to one of [`SLOTS`] slots (blake3 of its UTF-8 bytes, the first 8
//! bytes as a big-endian integer, modulo [`SLOTS`]). Under the map's prefix (default
//! `/grove/`), etcd holds:
//! - `slots`: the slot map, a JSON array of ranges `{"first", "last", "cluster"}` that cover
//!   every slot exactly once;
//! - `clusters/<name>`: `{"url", "table"}`, the PostgreSQL database and table of a cluster;
//! - `moves/<sid>`: `{"from", "to", "state": "copying"|"moved"}`, a session pinned to a
//!   cluster other than its slot's while it moves (`copying`: still served by `from`, writes
//!   refused) and after it moved (`moved`: served by `to`);
//! - `writers/<sid>`: the writer key a mover holds under an etcd lease.
//!
//! This file owns the layout and its parsing; it reads nothing itself (`router.rs` and the
//! `grove shard` command read and write etcd).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::etcd::KeyValue;

/// The number of slots sessions hash to.
pub const SLOTS: u32 = 4096;

/// The default prefix of the map's keys.
pub const DEFAULT_PREFIX: &str = "/grove/";

/// The slot of a session id.
pub fn slot(session_id: &str) -> u32 {
    let hash = blake3::hash(session_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    // SLOTS fits in u32, so the remainder does.
    u32::try_from(u64::from_be_bytes(first) % u64::from(SLOTS)).unwrap_or(0)
}

/// What is wrong with a stored map.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// A value is not the JSON its key holds.
    #[error("{key} does not hold the JSON the shard map documents: {source}")]
    Json {
        /// The key.
        key: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The slot ranges do not cover every slot exactly once, or name an unknown cluster.
    #[error("the slot map is not whole: {0}")]
    Slots(String),
    /// There is no map under the prefix.
    #[error("no shard map under {0} (write one with `grove shard init`)")]
    Missing(String),
}

/// A cluster: where its sessions' store is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// The PostgreSQL URL.
    pub url: String,
    /// The table of the store in that database.
    pub table: String,
}

/// Slots `first..=last` belong to `cluster`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotRange {
    /// The first slot of the range.
    pub first: u32,
    /// The last slot of the range.
    pub last: u32,
    /// The cluster holding them.
    pub cluster: String,
}

/// Where a moving or moved session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MoveState {
    /// Being copied: the source serves it, writes are refused.
    Copying,
    /// Moved: the target serves it.
    Moved,
}

/// A session pinned while and after it moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Move {
    /// The cluster it moves from.
    pub from: String,
    /// The cluster it moves to.
    pub to: String,
    /// How far the move is.
    pub state: MoveState,
}

/// Where a session's requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<'a> {
    /// The cluster serving it.
    pub cluster: &'a str,
    /// Whether a move is copying it (writes are refused until it is done).
    pub frozen: bool,
}

/// The key names of a map under a prefix.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// The keys under `prefix` (a trailing `/` is added when missing).
    pub fn new(prefix: &str) -> Keys {
        let mut prefix = prefix.to_owned();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        Keys { prefix }
    }

    /// The prefix every key starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The slot map.
    pub fn slots(&self) -> String {
        format!("{}slots", self.prefix)
    }

    /// A cluster's location.
    pub fn cluster(&self, name: &str) -> String {
        format!("{}clusters/{name}", self.prefix)
    }

    /// A session's move pin.
    pub fn moves(&self, sid: &str) -> String {
        format!("{}moves/{sid}", self.prefix)
    }

    /// A session's writer key.
    pub fn writer(&self, sid: &str) -> String {
        format!("{}writers/{sid}", self.prefix)
    }
}

/// The whole map as read at one revision.
#[derive(Debug, Clone)]
pub struct ShardMap {
    /// The etcd revision it was read at.
    pub revision: i64,
    /// The clusters by name.
    pub clusters: BTreeMap<String, Cluster>,
    /// The slot ranges, sorted by first slot.
    pub slots: Vec<SlotRange>,
    /// The pinned sessions, with their pins' revisions.
    pub moves: BTreeMap<String, (Move, i64)>,
}

impl ShardMap {
    /// The map from every key under `keys`'s prefix, read at `revision`.
    pub fn parse(keys: &Keys, revision: i64, kvs: &[KeyValue]) -> Result<ShardMap, MapError> {
        let mut clusters = BTreeMap::new();
        let mut slots = None;
        let mut moves = BTreeMap::new();
        for kv in kvs {
            let Some(rest) = kv.key.strip_prefix(keys.prefix()) else {
                continue;
            };
            if rest == "slots" {
                slots = Some(typed::<Vec<SlotRange>>(kv)?);
            } else if let Some(name) = rest.strip_prefix("clusters/") {
                clusters.insert(name.to_owned(), typed::<Cluster>(kv)?);
            } else if let Some(sid) = rest.strip_prefix("moves/") {
                moves.insert(sid.to_owned(), (typed::<Move>(kv)?, kv.mod_revision));
            }
        }
        let mut slots = slots.ok_or_else(|| MapError::Missing(keys.prefix().to_owned()))?;
        slots.sort_by_key(|r| r.first);
        check_slots(&slots, &clusters)?;
        Ok(ShardMap {
            revision,
            clusters,
            slots,
            moves,
        })
    }

    /// The cluster of a slot by the slot map alone.
    pub fn slot_cluster(&self, slot: u32) -> Option<&str> {
        let at = self.slots.partition_point(|r| r.last < slot);
        self.slots
            .get(at)
            .filter(|r| r.first <= slot)
            .map(|r| r.cluster.as_str())
    }

    /// Where session `sid`'s requests go: its pin's cluster while it has one, else its slot's.
    pub fn route(&self, sid: &str) -> Option<Route<'_>> {
        match self.moves.get(sid) {
            Some((pin, _)) => Some(match pin.state {
                MoveState::Copying => Route {
                    cluster: &pin.from,
                    frozen: true,
                },
                MoveState::Moved => Route {
                    cluster: &pin.to,
                    frozen: false,
                },
            }),
            None => self.slot_cluster(slot(sid)).map(|cluster| Route {
                cluster,
                frozen: false,
            }),
        }
    }
}

/// The value of `kv` as the JSON of a `T`.
fn typed<T: serde::de::DeserializeOwned>(kv: &KeyValue) -> Result<T, MapError> {
    serde_json::from_slice(&kv.value).map_err(|source| MapError::Json {
        key: kv.key.clone(),
        source,
    })
}

/// The slot ranges of `names`, in order, sharing the slots evenly.
pub fn even_ranges(names: &[String]) -> Vec<SlotRange> {
    let n = u32::try_from(names.len().max(1)).unwrap_or(u32::MAX);
    let mut out = Vec::new();
    let mut first = 0;
    for (i, name) in (0u32..).zip(names) {
        let last = (SLOTS * (i + 1) / n).saturating_sub(1);
        out.push(SlotRange {
            first,
            last,
            cluster: name.clone(),
        });
        first = last + 1;
    }
    out
}

/// Checks that sorted `slots` cover `0..SLOTS` exactly once and name known clusters.
pub fn check_slots(
    slots: &[SlotRange],
    clusters: &BTreeMap<String, Cluster>,
) -> Result<(), MapError> {
    let mut next = 0u32;
    for r in slots {
        if r.first != next || r.last < r.first {
            return Err(MapError::Slots(format!(
                "the range {}..={} does not start at slot {next}",
                r.first, r.last
            )));
        }
        if !clusters.contains_key(&r.cluster) {
            return Err(MapError::Slots(format!(
                "slots {}..={} name the unknown cluster '{}'",
                r.first, r.last, r.cluster
            )));
        }
        next = r.last + 1;
    }
    if next != SLOTS {
        return Err(MapError::Slots(format!(
            "slots {next}..{SLOTS} belong to no cluster"
        )));
    }
    Ok(())
}
