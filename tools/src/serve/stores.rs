//! The stores a server serves: one store, or (`grove serve --etcd`) one per shard cluster,
//! each session's requests sent to its cluster's store by the shard map
//! (docs/scale-out.md, "Many databases: sharding by session"; the map is `crate::shard`).
//!
//! This room owns the choice of a store for a request: by the session id of its path, by the
//! id a new session gets (generated here when the client gives none, so that it can be routed
//! before it is made), and the fan-out of the routes that read every session. A write to a
//! session a move is copying is refused with `busy`.

#[cfg(feature = "postgres")]
use std::sync::Arc;

#[cfg(feature = "postgres")]
use axum::http::StatusCode;
use grove::{SessionSummary, Store};

#[cfg(feature = "postgres")]
use super::api::ApiError;
use super::api::ApiResult;
#[cfg(feature = "postgres")]
use crate::shard::router::Shards;

/// The stores of a server.
#[derive(Clone)]
pub enum Stores {
    /// One store holds every session.
    One(Store),
    /// Sessions are sharded over clusters, routed by the shard map (feature `postgres`).
    #[cfg(feature = "postgres")]
    Sharded(Arc<Shards>),
}

/// The tries at generating a session id that routes to a given cluster (a fork's new
/// session must be on its source's cluster); with two clusters, 64 tries all miss with
/// probability 2^-64.
#[cfg(feature = "postgres")]
const ROUTED_ID_TRIES: usize = 64;

impl Stores {
    /// Whether sessions are sharded.
    pub fn is_sharded(&self) -> bool {
        #[cfg(feature = "postgres")]
        return matches!(self, Stores::Sharded(_));
        #[cfg(not(feature = "postgres"))]
        false
    }

    /// The store of session `sid`, for a request that writes (`write`) or only reads.
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    pub fn for_session(&self, sid: &str, write: bool) -> ApiResult<Store> {
        match self {
            Stores::One(store) => Ok(store.clone()),
            #[cfg(feature = "postgres")]
            Stores::Sharded(shards) => {
                let routed = shards.route(sid).map_err(unrouted)?;
                if routed.frozen && write {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        "busy",
                        format!(
                            "session {sid} is being moved from cluster '{}'; writes wait for the \
                             move to end",
                            routed.cluster
                        ),
                    ));
                }
                Ok(routed.store)
            }
        }
    }

    /// The store a new session of id `id` goes to, and its id: the one given, or (sharded) a
    /// new one generated here so that it can be routed.
    pub fn for_new_session(&self, id: Option<String>) -> ApiResult<(Store, Option<String>)> {
        match self {
            Stores::One(store) => Ok((store.clone(), id)),
            #[cfg(feature = "postgres")]
            Stores::Sharded(_) => {
                let id = id.unwrap_or_else(new_session_id);
                Ok((self.for_session(&id, true)?, Some(id)))
            }
        }
    }

    /// The id of a session forked from `source`: sharded, it must route to the source's
    /// cluster (the fork is made there). A given id that routes elsewhere is refused.
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    pub fn fork_id(&self, source: &str, id: Option<String>) -> ApiResult<Option<String>> {
        match self {
            Stores::One(_) => Ok(id),
            #[cfg(feature = "postgres")]
            Stores::Sharded(shards) => routed_fork_id(shards, source, id),
        }
    }

    /// Every store.
    pub fn all(&self) -> Vec<Store> {
        match self {
            Stores::One(store) => vec![store.clone()],
            #[cfg(feature = "postgres")]
            Stores::Sharded(shards) => shards.stores().into_iter().map(|(_, s)| s).collect(),
        }
    }

    /// Every session, ordered by id (sharded: every cluster's, each session listed by the
    /// cluster serving it).
    #[cfg(feature = "postgres")]
    pub fn sessions(&self) -> grove::Result<Vec<SessionSummary>> {
        match self {
            Stores::One(store) => {
                let mut all = store.sessions()?;
                all.sort_by(|a, b| a.id.cmp(&b.id));
                Ok(all)
            }
            #[cfg(feature = "postgres")]
            Stores::Sharded(shards) => shards.sessions(),
        }
    }
}

impl Stores {
    /// At most `limit` sessions in id order (`descending`: from the last), after the session
    /// `after` (before it, descending). One store reads the page only; sharded, every
    /// cluster's catalogue is read and merged.
    pub fn sessions_page(
        &self,
        after: Option<&str>,
        limit: usize,
        descending: bool,
        filter: &grove::SessionFilter,
    ) -> grove::Result<Vec<SessionSummary>> {
        match self {
            Stores::One(store) => store.sessions_page_where(after, limit, descending, filter),
            #[cfg(feature = "postgres")]
            Stores::Sharded(_) if !filter.is_empty() => {
                self.filtered_page(after, limit, descending, filter)
            }
            #[cfg(feature = "postgres")]
            Stores::Sharded(_) => self.merged_page(after, limit, descending),
        }
    }

    /// A filtered page of a sharded server: each cluster's filtered page from the cursor,
    /// merged in order (a session a move is copying, listed by both clusters, once).
    #[cfg(feature = "postgres")]
    fn filtered_page(
        &self,
        after: Option<&str>,
        limit: usize,
        descending: bool,
        filter: &grove::SessionFilter,
    ) -> grove::Result<Vec<SessionSummary>> {
        let mut all = Vec::new();
        for store in self.all() {
            all.extend(store.sessions_page_where(after, limit, descending, filter)?);
        }
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all.dedup_by(|a, b| a.id == b.id);
        if descending {
            all.reverse();
        }
        all.truncate(limit);
        Ok(all)
    }

    /// [`Stores::sessions_page`] of every cluster's catalogue, merged.
    #[cfg(feature = "postgres")]
    fn merged_page(
        &self,
        after: Option<&str>,
        limit: usize,
        descending: bool,
    ) -> grove::Result<Vec<SessionSummary>> {
        let mut all = self.sessions()?;
        if descending {
            all.reverse();
        }
        let start = match after {
            None => 0,
            Some(after) if descending => all.partition_point(|s| s.id.as_str() >= after),
            Some(after) => all.partition_point(|s| s.id.as_str() <= after),
        };
        Ok(all.into_iter().skip(start).take(limit).collect())
    }
}

/// A session id as the engine makes them (a UUID v7), made here so that it can be routed
/// before the session is.
#[cfg(feature = "postgres")]
fn new_session_id() -> String {
    uuid::Uuid::now_v7().hyphenated().to_string()
}

#[cfg(feature = "postgres")]
fn unrouted(e: crate::shard::router::ShardError) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage", e.to_string())
}

/// [`Stores::fork_id`] of a sharded server.
#[cfg(feature = "postgres")]
fn routed_fork_id(shards: &Shards, source: &str, id: Option<String>) -> ApiResult<Option<String>> {
    let map = shards.map();
    let cluster = |sid: &str| map.route(sid).map(|r| r.cluster.to_owned());
    let home = cluster(source);
    match id {
        Some(id) if cluster(&id) == home => Ok(Some(id)),
        Some(id) => Err(ApiError::invalid_argument(format!(
            "session {id} would be on another cluster than {source}, which a fork is made \
             on; leave out \"id\" to get one that is"
        ))),
        None => (0..ROUTED_ID_TRIES)
            .map(|_| new_session_id())
            .find(|id| cluster(id) == home)
            .map(Some)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "storage",
                    "no session id routing to the source's cluster was found",
                )
            }),
    }
}
