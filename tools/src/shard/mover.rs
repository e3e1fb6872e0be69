//! Moving one session between clusters (docs/scale-out.md, "Moving a session between
//! shards"): freeze, copy, compare, switch, and delete the source after a grace period.
//!
//! The copy is the engine's own loss-free round trip: the source's pi JSONL export (harness
//! flavor: every record in log order, leaf lines included) imported under the same id with
//! the source's operation stamps (`Session::stamps`, `ImportOptions::stamps`: the kind, time
//! and actor of each operation, which the JSONL does not carry), and trusted only when the
//! target's export is the same bytes and its leaf, entry count, labels, name, operations,
//! seal and retention pin equal the source's and the copy verifies.

use std::time::Duration;

use grove::{GroveError, ImportOptions, Session, Store};

use super::etcd::{Compare, Etcd, EtcdError, Op};
use super::map::{Cluster, Keys, MapError, Move, MoveState, ShardMap};
use super::router::Opener;

/// How long the mover's writer key lives without a renewal, in seconds.
const WRITER_TTL: u64 = 30;

/// What a move can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MoveError {
    /// etcd could not be read or written.
    #[error(transparent)]
    Etcd(#[from] EtcdError),
    /// The stored map is not whole.
    #[error(transparent)]
    Map(#[from] MapError),
    /// The engine failed on a cluster's store.
    #[error("cluster '{cluster}': {source}")]
    Store {
        /// The cluster.
        cluster: String,
        /// The engine's error.
        #[source]
        source: GroveError,
    },
    /// The target is not a cluster of the map.
    #[error("no cluster '{0}' in the shard map")]
    UnknownCluster(String),
    /// The session is served by the target already.
    #[error("session {sid} is on cluster '{cluster}' already")]
    AlreadyThere {
        /// The session.
        sid: String,
        /// Its cluster.
        cluster: String,
    },
    /// The session had moved, and its copy left on the source by a mover that died after the
    /// switch was deleted now.
    #[error("session {sid} had moved; its copy left on '{from}' is deleted now")]
    Finished {
        /// The session.
        sid: String,
        /// The source cluster.
        from: String,
    },
    /// Another mover holds the session's writer key, or changed its pin meanwhile.
    #[error("session {0} is being moved by another mover (its writer key or pin is held)")]
    Busy(String),
    /// The copy does not equal the source; it was deleted and the source stays.
    #[error("the copy of {sid} on '{to}' differs from the source: {what}; the copy was removed, the source is unchanged")]
    CopyDiffers {
        /// The session.
        sid: String,
        /// The target cluster.
        to: String,
        /// What differs.
        what: String,
    },
    /// The mover's writer lease expired during the copy (it took longer than its TTL).
    #[error("the writer lease of the move of {0} expired; run the move again")]
    LeaseLost(String),
}

/// What a move did.
#[derive(Debug, Clone)]
pub struct MoveReport {
    /// The session.
    pub sid: String,
    /// The cluster it left.
    pub from: String,
    /// The cluster it is on now.
    pub to: String,
    /// Its records (entries and leaf records) copied.
    pub records: u64,
    /// The bytes of its pi JSONL.
    pub bytes: u64,
    /// The etcd revision of the switch.
    pub switched_at: i64,
}

/// Moves session `sid` to cluster `to`: freezes it (writer key and a `copying` pin, then
/// `grace` for every node to see the pin and finish writes in flight), copies and compares
/// it, switches the pin to `moved` in a transaction on the pin's revision, waits `grace`
/// again for every node to route to the target, and deletes the source's copy.
pub fn move_session(
    etcd: &Etcd,
    keys: &Keys,
    open: &Opener,
    sid: &str,
    to: &str,
    grace: Duration,
) -> Result<MoveReport, MoveError> {
    let (revision, kvs) = etcd.range_prefix(keys.prefix())?;
    let map = ShardMap::parse(keys, revision, &kvs)?;
    let target = map
        .clusters
        .get(to)
        .ok_or_else(|| MoveError::UnknownCluster(to.to_owned()))?;
    let pin = map.moves.get(sid);
    // A pin left `copying` by a mover that died: the source is still authoritative.
    let from = match pin {
        Some((p, _)) if p.state == MoveState::Copying => p.from.clone(),
        _ => map
            .route(sid)
            .map(|r| r.cluster.to_owned())
            .ok_or_else(|| MoveError::UnknownCluster(format!("(none for {sid})")))?,
    };
    if from == to {
        // A move that switched but died before deleting the source's copy: delete it now.
        if let Some((p, _)) = pin.filter(|(p, _)| p.state == MoveState::Moved && p.to == to) {
            if let Some(source) = map.clusters.get(&p.from) {
                let store = open_store(open, &p.from, source)?;
                if store.session(sid).is_ok() {
                    std::thread::sleep(grace);
                    store
                        .delete_session(sid)
                        .map_err(|source| MoveError::Store {
                            cluster: p.from.clone(),
                            source,
                        })?;
                    return Err(MoveError::Finished {
                        sid: sid.to_owned(),
                        from: p.from.clone(),
                    });
                }
            }
        }
        return Err(MoveError::AlreadyThere {
            sid: sid.to_owned(),
            cluster: from,
        });
    }
    let source = map
        .clusters
        .get(&from)
        .ok_or_else(|| MoveError::UnknownCluster(from.clone()))?;

    // 1. Freeze: the writer key (absent, so no other mover) and the pin, in one transaction.
    let writer = keys.writer(sid);
    let pin_key = keys.moves(sid);
    let lease = etcd.grant(WRITER_TTL)?;
    let pin_guard = match pin {
        Some((_, rev)) => Compare::ModRevision(pin_key.clone(), *rev),
        None => Compare::Absent(pin_key.clone()),
    };
    let copying = pin_value(&from, to, MoveState::Copying);
    let frozen_at = etcd.txn(
        &[Compare::Absent(writer.clone()), pin_guard],
        &[
            Op::Put {
                key: writer.clone(),
                value: format!("mover {}", std::process::id()).into_bytes(),
                lease: Some(lease),
            },
            Op::Put {
                key: pin_key.clone(),
                value: copying,
                lease: None,
            },
        ],
    )?;
    let Some(frozen_at) = frozen_at else {
        let _ = etcd.revoke(lease);
        return Err(MoveError::Busy(sid.to_owned()));
    };
    let result = copy_and_switch(
        etcd, open, sid, &from, source, to, target, lease, &pin_key, frozen_at, &writer, grace,
    );
    if result.is_err() {
        // The source stays authoritative: drop the writer key; the `copying` pin stays for
        // the next attempt, which takes it over (nodes keep refusing writes until then).
        let _ = etcd.revoke(lease);
    }
    let mut report = result?;
    // 4. Every node routes to the target within the grace period; then the source goes.
    std::thread::sleep(grace);
    let source_store = open_store(open, &from, source)?;
    match source_store.delete_session(sid) {
        Ok(()) | Err(GroveError::SessionNotFound(_)) => {}
        Err(source) => {
            return Err(MoveError::Store {
                cluster: from,
                source,
            })
        }
    }
    report.from = from;
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
fn copy_and_switch(
    etcd: &Etcd,
    open: &Opener,
    sid: &str,
    from: &str,
    source: &Cluster,
    to: &str,
    target: &Cluster,
    lease: i64,
    pin_key: &str,
    frozen_at: i64,
    writer: &str,
    grace: Duration,
) -> Result<MoveReport, MoveError> {
    // Every node sees the pin and finishes the writes it had in flight.
    std::thread::sleep(grace);
    renew(etcd, lease, sid)?;
    // 2. Copy: export from the source, import under the same id into the target.
    let src_store = open_store(open, from, source)?;
    let dst_store = open_store(open, to, target)?;
    let in_store = |cluster: &str| {
        let cluster = cluster.to_owned();
        move |source| MoveError::Store { cluster, source }
    };
    let src = src_store.session(sid).map_err(in_store(from))?;
    // A partial copy of an earlier attempt is deleted first.
    match dst_store.delete_session(sid) {
        Ok(()) | Err(GroveError::SessionNotFound(_)) => {}
        Err(e) => return Err(in_store(to)(e)),
    }
    let mut jsonl = Vec::new();
    src.export(grove::Flavor::Harness, &mut jsonl)
        .map_err(in_store(from))?;
    let stamps = src.stamps().map_err(in_store(from))?;
    let options = ImportOptions {
        parent_session_id: src.record().parent_session_id.clone(),
        stamps: Some(stamps),
        ..ImportOptions::default()
    };
    let report = dst_store
        .import_reader(&jsonl[..], options)
        .map_err(in_store(to))?;
    // The retention pin travels with the session (the export does not carry it).
    if src_store.is_pinned(sid).map_err(in_store(from))? {
        dst_store.set_pinned(sid, true).map_err(in_store(to))?;
    }
    let dst = dst_store.session(sid).map_err(in_store(to))?;
    let pins = (src_store.is_pinned(sid), dst_store.is_pinned(sid));
    let same_pin = matches!(pins, (Ok(a), Ok(b)) if a == b);
    if let Err(what) = compare(&src, &dst, &jsonl).and_then(|()| match same_pin {
        true => Ok(()),
        false => Err("the retention pin differs".to_owned()),
    }) {
        let _ = dst_store.delete_session(sid);
        return Err(MoveError::CopyDiffers {
            sid: sid.to_owned(),
            to: to.to_owned(),
            what,
        });
    }
    renew(etcd, lease, sid)?;
    // 3. Switch, if the pin is still the one written at the freeze; the writer key goes too.
    let switched = etcd.txn(
        &[Compare::ModRevision(pin_key.to_owned(), frozen_at)],
        &[
            Op::Put {
                key: pin_key.to_owned(),
                value: pin_value(from, to, MoveState::Moved),
                lease: None,
            },
            Op::Delete(writer.to_owned()),
        ],
    )?;
    let Some(switched_at) = switched else {
        let _ = dst_store.delete_session(sid);
        return Err(MoveError::Busy(sid.to_owned()));
    };
    let _ = etcd.revoke(lease);
    Ok(MoveReport {
        sid: sid.to_owned(),
        from: from.to_owned(),
        to: to.to_owned(),
        records: report.entries + report.leaf_records,
        bytes: u64::try_from(jsonl.len()).unwrap_or(u64::MAX),
        switched_at,
    })
}

/// The copy equals the source: the same export bytes, leaf, entry count, labels, name,
/// operations and seal, and it verifies.
fn compare(src: &Session, dst: &Session, src_jsonl: &[u8]) -> Result<(), String> {
    let mut dst_jsonl = Vec::new();
    let e = |e: GroveError| e.to_string();
    dst.export(grove::Flavor::Harness, &mut dst_jsonl)
        .map_err(e)?;
    if dst_jsonl != src_jsonl {
        return Err("its pi JSONL export is not the same bytes".to_owned());
    }
    if src.leaf().map_err(e)? != dst.leaf().map_err(e)? {
        return Err("the leaf differs".to_owned());
    }
    if src.head().map_err(e)?.entries != dst.head().map_err(e)?.entries {
        return Err("the entry count differs".to_owned());
    }
    if src.labels().map_err(e)? != dst.labels().map_err(e)? {
        return Err("the labels differ".to_owned());
    }
    if src.name().map_err(e)? != dst.name().map_err(e)? {
        return Err("the name differs".to_owned());
    }
    if src.operations().map_err(e)? != dst.operations().map_err(e)? {
        return Err("the operations differ".to_owned());
    }
    if src.seal().map_err(e)? != dst.seal().map_err(e)? {
        return Err("the seal differs".to_owned());
    }
    let report = dst.verify().map_err(e)?;
    if !report.is_ok() {
        return Err(format!("it does not verify: {:?}", report.problems));
    }
    Ok(())
}

fn renew(etcd: &Etcd, lease: i64, sid: &str) -> Result<(), MoveError> {
    match etcd.keep_alive(lease)? {
        true => Ok(()),
        false => Err(MoveError::LeaseLost(sid.to_owned())),
    }
}

fn open_store(open: &Opener, name: &str, cluster: &Cluster) -> Result<Store, MoveError> {
    open(name, cluster).map_err(|source| MoveError::Store {
        cluster: name.to_owned(),
        source,
    })
}

fn pin_value(from: &str, to: &str, state: MoveState) -> Vec<u8> {
    serde_json::to_vec(&Move {
        from: from.to_owned(),
        to: to.to_owned(),
        state,
    })
    .unwrap_or_default()
}

impl MoveError {
    /// The exit code of `grove shard`: 3 when a store or etcd failed, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            MoveError::Etcd(_) | MoveError::Store { .. } | MoveError::CopyDiffers { .. } => {
                crate::exit::EXIT_STORAGE
            }
            _ => crate::exit::EXIT_USER,
        }
    }

    /// What the user may do about it.
    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            MoveError::Etcd(_) => "check that the etcd members given with --etcd are up",
            MoveError::Map(_) => "write the map with `grove shard init`",
            MoveError::Busy(_) | MoveError::LeaseLost(_) => {
                "wait for the other move to end (its writer key expires with its lease), then run the move again"
            }
            MoveError::UnknownCluster(_) => "the clusters are listed under PREFIX/clusters/ in etcd",
            _ => return None,
        })
    }
}
