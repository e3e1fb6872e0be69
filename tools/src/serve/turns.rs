//! Turn leases across clients: a client that starts an agent turn on a session holds the
//! engine's `TurnGuard` through the server until it ends the turn, or until the lease
//! expires because the client stopped renewing it (a client that died). While a turn is
//! held, `navigate` and leaf moves without the lease are refused as `busy`. This room owns
//! the lease table; it calls the engine's `Session::begin_turn` only.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use grove::TurnGuard;
use parking_lot::Mutex;

/// The longest lease a client may ask for.
pub const MAX_TTL: Duration = Duration::from_secs(3600);
/// The lease of a client that does not say.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

struct Lease {
    sid: String,
    guard: TurnGuard,
    expires: Instant,
    ttl: Duration,
}

/// The leases held through this server.
#[derive(Clone, Default)]
pub struct Turns {
    map: Arc<Mutex<HashMap<String, Lease>>>,
}

impl Turns {
    /// Holds `guard` (a turn on session `sid`) under a new lease id for `ttl`.
    pub fn hold(&self, sid: &str, guard: TurnGuard, ttl: Duration) -> String {
        let id = uuid::Uuid::now_v7().simple().to_string();
        self.map.lock().insert(
            id.clone(),
            Lease {
                sid: sid.to_owned(),
                guard,
                expires: Instant::now() + ttl,
                ttl,
            },
        );
        id
    }

    /// Extends lease `id` of session `sid` by its ttl; `false` when there is no such lease.
    pub fn renew(&self, sid: &str, id: &str) -> bool {
        self.sweep();
        match self.map.lock().get_mut(id) {
            Some(l) if l.sid == sid => {
                l.expires = Instant::now() + l.ttl;
                true
            }
            _ => false,
        }
    }

    /// Ends lease `id` of session `sid`; `false` when there is no such lease.
    pub fn end(&self, sid: &str, id: &str) -> bool {
        let mut map = self.map.lock();
        match map.get(id) {
            Some(l) if l.sid == sid => {
                map.remove(id);
                true
            }
            _ => false,
        }
    }

    /// Runs `f` with the guard of lease `id` of session `sid`, if it is held.
    pub fn with<T>(&self, sid: &str, id: &str, f: impl FnOnce(&TurnGuard) -> T) -> Option<T> {
        self.sweep();
        let map = self.map.lock();
        map.get(id).filter(|l| l.sid == sid).map(|l| f(&l.guard))
    }

    /// Drops the leases whose time is up (their guards release the sessions).
    pub fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<Lease> = {
            let mut map = self.map.lock();
            let ids: Vec<String> = map
                .iter()
                .filter(|(_, l)| l.expires <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter().filter_map(|id| map.remove(&id)).collect()
        };
        drop(expired);
    }
}
