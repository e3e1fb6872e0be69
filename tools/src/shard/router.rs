//! The serving side of the shard map: the map as last read from etcd and one open store per
//! cluster, refreshed by a background thread (`grove serve --etcd`).
//!
//! A refresh reads every key under the prefix in one range request; when the revision is the
//! one held, nothing changes. Otherwise the new map is parsed and checked whole, the stores of
//! clusters new to it are opened (outside the lock), and map and stores are swapped in at
//! once, so a route is always answered from one revision of the map. A refresh that fails
//! (etcd unreachable, a map that does not parse) keeps the map held: nodes go on routing with
//! what they know (docs/scale-out.md, "What each failure does").

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use grove::{GroveError, SessionSummary, Store};
use parking_lot::RwLock;

use super::etcd::{Etcd, EtcdError};
use super::map::{slot, Cluster, Keys, MapError, ShardMap};

/// What routing can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// etcd could not be read or written.
    #[error(transparent)]
    Etcd(#[from] EtcdError),
    /// The stored map is not whole.
    #[error(transparent)]
    Map(#[from] MapError),
    /// A cluster's store could not be opened.
    #[error("opening the store of cluster '{cluster}': {source}")]
    Store {
        /// The cluster.
        cluster: String,
        /// The engine's error.
        #[source]
        source: GroveError,
    },
    /// No cluster holds the session's slot.
    #[error("no cluster holds slot {slot} of session {sid}")]
    Unrouted {
        /// The session id.
        sid: String,
        /// Its slot.
        slot: u32,
    },
}

/// Opens the store of a cluster.
pub type Opener = dyn Fn(&str, &Cluster) -> Result<Store, GroveError> + Send + Sync;

/// Where one request for a session goes.
#[derive(Clone)]
pub struct Routed {
    /// The cluster's name.
    pub cluster: String,
    /// Its store.
    pub store: Store,
    /// A move is copying the session: writes are refused until it is done.
    pub frozen: bool,
}

struct Current {
    map: Arc<ShardMap>,
    stores: BTreeMap<String, (Cluster, Store)>,
}

/// The map and the stores of a serving node.
pub struct Shards {
    etcd: Etcd,
    keys: Keys,
    open: Box<Opener>,
    current: RwLock<Current>,
}

impl Shards {
    /// Reads the map (which must be there and whole) and opens every cluster's store.
    pub fn open(etcd: Etcd, keys: Keys, open: Box<Opener>) -> Result<Arc<Shards>, ShardError> {
        let (revision, kvs) = etcd.range_prefix(keys.prefix())?;
        let map = ShardMap::parse(&keys, revision, &kvs)?;
        let stores = open_stores(&*open, &map, &BTreeMap::new())?;
        Ok(Arc::new(Shards {
            etcd,
            keys,
            open,
            current: RwLock::new(Current {
                map: Arc::new(map),
                stores,
            }),
        }))
    }

    /// Reads the map again; true when it changed.
    pub fn refresh(&self) -> Result<bool, ShardError> {
        let (revision, kvs) = self.etcd.range_prefix(self.keys.prefix())?;
        let (held, stores) = {
            let current = self.current.read();
            (current.map.revision, current.stores.clone())
        };
        if revision == held {
            return Ok(false);
        }
        let map = ShardMap::parse(&self.keys, revision, &kvs)?;
        let stores = open_stores(&*self.open, &map, &stores)?;
        let mut current = self.current.write();
        // A slower refresh that read an older revision does not undo a newer one.
        if current.map.revision < revision {
            *current = Current {
                map: Arc::new(map),
                stores,
            };
        }
        Ok(true)
    }

    /// The map held now.
    pub fn map(&self) -> Arc<ShardMap> {
        self.current.read().map.clone()
    }

    /// Where session `sid`'s requests go.
    pub fn route(&self, sid: &str) -> Result<Routed, ShardError> {
        let current = self.current.read();
        let route = current.map.route(sid).ok_or_else(|| ShardError::Unrouted {
            sid: sid.to_owned(),
            slot: slot(sid),
        })?;
        let (_, store) = current
            .stores
            .get(route.cluster)
            .ok_or_else(|| ShardError::Unrouted {
                sid: sid.to_owned(),
                slot: slot(sid),
            })?;
        Ok(Routed {
            cluster: route.cluster.to_owned(),
            store: store.clone(),
            frozen: route.frozen,
        })
    }

    /// Every cluster's store, by name.
    pub fn stores(&self) -> Vec<(String, Store)> {
        self.current
            .read()
            .stores
            .iter()
            .map(|(name, (_, store))| (name.clone(), store.clone()))
            .collect()
    }

    /// Every session of every cluster, ordered by id, each listed once: by the cluster its
    /// route names (a copy left on the source of a move, or made on its target before the
    /// switch, is not listed).
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, GroveError> {
        let map = self.map();
        let mut all = Vec::new();
        for (name, store) in self.stores() {
            for summary in store.sessions()? {
                if map.route(&summary.id).is_some_and(|r| r.cluster == name) {
                    all.push(summary);
                }
            }
        }
        all.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(all)
    }

    /// Refreshes the map every `every` on a thread of its own until the returned handle is
    /// dropped. A failed refresh is reported on stderr (once until it changes) and the map
    /// held is kept.
    pub fn refresh_every(self: &Arc<Shards>, every: Duration) -> Refresher {
        let stop = Arc::new(AtomicBool::new(false));
        let shards = self.clone();
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("grove-shard-map".to_owned())
            .spawn(move || {
                let mut last_error = String::new();
                while !stopping.load(Ordering::Relaxed) {
                    std::thread::sleep(every);
                    match shards.refresh() {
                        Ok(_) => last_error.clear(),
                        Err(e) => {
                            let text = e.to_string();
                            if text != last_error {
                                eprintln!("grove serve: keeping the shard map held: {text}");
                                last_error = text;
                            }
                        }
                    }
                }
            })
            .ok();
        Refresher { stop, thread }
    }
}

/// The refreshing thread; dropping it stops the thread.
pub struct Refresher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The store of every cluster of `map`: the one held when its location is unchanged, else
/// opened.
fn open_stores(
    open: &Opener,
    map: &ShardMap,
    held: &BTreeMap<String, (Cluster, Store)>,
) -> Result<BTreeMap<String, (Cluster, Store)>, ShardError> {
    let mut out = BTreeMap::new();
    for (name, cluster) in &map.clusters {
        let store = match held.get(name) {
            Some((c, store)) if c == cluster => store.clone(),
            _ => open(name, cluster).map_err(|source| ShardError::Store {
                cluster: name.clone(),
                source,
            })?,
        };
        out.insert(name.clone(), (cluster.clone(), store));
    }
    Ok(out)
}
