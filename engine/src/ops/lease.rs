//! The busy rule (spec §7.2): a session is held either by an agent turn ([`crate::TurnGuard`]) or
//! by a navigation (an operation lease). While it is held, navigation and leaf moves without
//! the lease are refused with `Busy`; reads and appends are never blocked.
//!
//! A lease is a [`LeaseRecord`]: who holds the session, the token that proves it, and when it
//! expires (a turn taken for a time; a lease whose holder stopped renewing it is free again).
//! A store one process holds keeps them in memory ([`Leases`]). A store whose backend other
//! processes share keeps each session's in its row `lease(sid)`, changed only with a
//! conditional batch on the value read ([`crate::core::shared::Inner::commit_fenced`]), so that every process sees
//! one holder (docs/scale-out.md, "Turn leases in the database"). Expiry is wall-clock time as
//! the writing process reads it.
//!
//! This room owns the lease records; it calls the store's fenced commit and the session's
//! leaf move.

use std::collections::HashMap;
use std::time::Duration;

use grove_codec::record::{self, LeaseRecord};
use parking_lot::Mutex;

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::{fenced_out, FENCE_TRIES};
use crate::core::util;
use crate::kv::WriteBatch;
use crate::log::handle::Handle;

/// How long a turn taken with `crate::ops::lease::begin_turn` lasts in a store processes share, unless
/// renewed ([`crate::TurnGuard::renew`]); in a store one process holds it lasts until it ends.
pub const DEFAULT_TURN_TTL: Duration = Duration::from_secs(60);

/// How long a navigation's lease lasts in a store processes share: long enough for a
/// summarizer's call; a process that died mid-navigation frees the session after it.
const OPERATION_TTL: Duration = Duration::from_secs(600);

/// Who holds a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    Turn,
    Operation,
}

impl Holder {
    fn tag(self) -> u8 {
        match self {
            Holder::Turn => 0,
            Holder::Operation => 1,
        }
    }

    fn of(record: &LeaseRecord) -> Holder {
        if record.holder == 0 {
            Holder::Turn
        } else {
            Holder::Operation
        }
    }

    fn busy(self) -> GroveError {
        GroveError::Busy(match self {
            Holder::Turn => {
                "an agent turn is in progress on this session; navigation requires an idle session"
                    .into()
            }
            Holder::Operation => "a navigation is in progress on this session".into(),
        })
    }
}

/// The leases of a store one process holds, by session number.
#[derive(Default)]
pub(crate) struct Leases {
    held: Mutex<HashMap<u64, LeaseRecord>>,
}

/// What a lease update decided: write the new lease (`None`: remove it), or leave it.
enum Change<T> {
    Write(Option<LeaseRecord>, T),
    Keep(T),
}

/// The lease if it has not expired at `now` (milliseconds).
fn live(record: Option<LeaseRecord>, now: u64) -> Option<LeaseRecord> {
    record.filter(|r| r.expires_ms > now)
}

/// A new lease of `holder` for `ttl` (`None`: until it ends).
fn new_lease(holder: Holder, ttl: Option<Duration>, now: u64) -> LeaseRecord {
    let ttl_ms = ttl.map_or(0, |t| {
        u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1)
    });
    LeaseRecord {
        holder: holder.tag(),
        token: uuid::Uuid::now_v7().simple().to_string(),
        expires_ms: expiry(now, ttl_ms),
        ttl_ms,
    }
}

/// When a lease of `ttl_ms` taken or renewed at `now` expires (0: never).
fn expiry(now: u64, ttl_ms: u64) -> u64 {
    if ttl_ms == 0 {
        u64::MAX
    } else {
        now.saturating_add(ttl_ms)
    }
}

/// Reads the session's lease (live or not), decides, and writes what `decide` says,
/// atomically with the read: under the store's lease table lock in memory, or with a
/// conditional batch on the value read in a shared store (tried again when another
/// process changed the row meanwhile).
fn update_lease<T>(
    s: &Handle,
    leases: &Leases,
    mut decide: impl FnMut(Option<LeaseRecord>, u64) -> Result<Change<T>>,
) -> Result<T> {
    if !s.inner.shared {
        let mut held = leases.held.lock();
        let now = util::now_ms();
        return Ok(match decide(held.get(&s.sid).cloned(), now)? {
            Change::Keep(value) => value,
            Change::Write(Some(record), value) => {
                held.insert(s.sid, record);
                value
            }
            Change::Write(None, value) => {
                held.remove(&s.sid);
                value
            }
        });
    }
    let key = keys::lease(s.sid);
    for tries in 0..FENCE_TRIES {
        util::backoff(tries);
        let stored = s.inner.kv.get(&key)?;
        let record =
            match &stored {
                None => None,
                Some(bytes) => Some(record::decode::<LeaseRecord>(bytes).map_err(|e| {
                    GroveError::Corrupt(format!("lease of session {}: {e}", s.id()))
                })?),
            };
        let (new, value) = match decide(record, util::now_ms())? {
            Change::Keep(value) => return Ok(value),
            Change::Write(new, value) => (new, value),
        };
        let mut batch = WriteBatch::new();
        match &new {
            Some(record) => batch.put(key.clone(), record::encode(record)),
            None => batch.delete(key.clone()),
        }
        if s.inner.commit_fenced(
            &[(&key, stored.as_deref())],
            batch,
            false,
            s.inner.durability,
        )? {
            return Ok(value);
        }
    }
    Err(fenced_out(&format!("the lease of session {}", s.id())))
}

/// Takes the session for `holder` (`ttl`: `None`, until released); `Busy` while another
/// lease is live. Returns the new lease's token.
fn take_lease(
    s: &Handle,
    leases: &Leases,
    holder: Holder,
    ttl: Option<Duration>,
) -> Result<String> {
    update_lease(s, leases, |current, now| match live(current, now) {
        Some(held) => Err(Holder::of(&held).busy()),
        None => {
            let lease = new_lease(holder, ttl, now);
            let token = lease.token.clone();
            Ok(Change::Write(Some(lease), token))
        }
    })
}

/// Starts an agent turn: until the guard is dropped, `navigate` and `move_to` on this
/// session fail with `Busy`, from every handle of the store — and, in a store whose backend
/// processes share, from every process; there the turn expires after
/// [`DEFAULT_TURN_TTL`] unless renewed ([`crate::TurnGuard::renew`]).
pub(crate) fn begin_turn(s: &Handle, leases: &Leases) -> Result<String> {
    let ttl = s.inner.shared.then_some(DEFAULT_TURN_TTL);
    begin_turn_with(s, leases, ttl)
}

/// [`crate::ops::lease::begin_turn`] for `ttl`: the turn ends when its guard is dropped, or when
/// `ttl` passes without a renewal ([`crate::ops::lease::renew_turn`]), whichever comes first.
pub(crate) fn begin_turn_for(s: &Handle, leases: &Leases, ttl: Duration) -> Result<String> {
    if ttl.is_zero() {
        return Err(GroveError::InvalidArgument(
            "a turn's time must be more than zero".into(),
        ));
    }
    begin_turn_with(s, leases, Some(ttl))
}

fn begin_turn_with(s: &Handle, leases: &Leases, ttl: Option<Duration>) -> Result<String> {
    take_lease(s, leases, Holder::Turn, ttl)
}

/// Extends the turn lease `lease` by its time, from now; `false` when it is not the
/// session's live turn (it ended or expired).
pub(crate) fn renew_turn(s: &Handle, leases: &Leases, lease: &str) -> Result<bool> {
    update_lease(s, leases, |current, now| match live(current, now) {
        Some(mut held) if held.token == lease && Holder::of(&held) == Holder::Turn => {
            held.expires_ms = expiry(now, held.ttl_ms);
            Ok(Change::Write(Some(held), true))
        }
        _ => Ok(Change::Keep(false)),
    })
}

/// Ends the turn lease `lease`; `false` when it is not the session's live turn.
pub(crate) fn end_turn(s: &Handle, leases: &Leases, lease: &str) -> Result<bool> {
    release_lease(s, leases, lease, Holder::Turn)
}

/// Removes the lease `token` of `holder`; whether it was live. An expired one is removed
/// too (the row is the holder's to clear).
fn release_lease(s: &Handle, leases: &Leases, token: &str, holder: Holder) -> Result<bool> {
    update_lease(s, leases, |current, now| match current {
        Some(held) if held.token == token && Holder::of(&held) == holder => {
            Ok(Change::Write(None, held.expires_ms > now))
        }
        _ => Ok(Change::Keep(false)),
    })
}

/// Moves the leaf on behalf of the holder of turn `lease` (spec §7.1: the holder may);
/// `InvalidState` when it is not the session's live turn. In a shared store the move's
/// commit checks the lease row it read, in the same statement.
pub(crate) fn move_in_turn(
    s: &Handle,
    leases: &Leases,
    lease: &str,
    target: Option<&str>,
) -> Result<()> {
    if !s.inner.shared {
        held_lease(s, leases, lease, Holder::Turn, 0)?;
    }
    let held = |_| held_lease(s, leases, lease, Holder::Turn, 0);
    s.move_to_with(
        target,
        None,
        crate::log::append::NO_LABEL,
        None,
        grove_codec::op::OpKind::Move,
        &held,
    )
    .map(|_| ())
}

/// The lease row a move by the holder of lease `token` requires (its value as read now),
/// or the error when `token` is not the session's live lease of `holder`: a turn's holder
/// is told it ended (`InvalidState`), a navigation that outlived its lease is `Busy`.
pub(crate) fn held_lease(
    s: &Handle,
    leases: &Leases,
    token: &str,
    holder: Holder,
    _tries: usize,
) -> Result<Option<Vec<u8>>> {
    let held = update_lease(s, leases, |current, now| {
        Ok(Change::Keep(match live(current, now) {
            Some(lease) if lease.token == token && Holder::of(&lease) == holder => {
                Some(record::encode(&lease))
            }
            _ => None,
        }))
    })?;
    match (held, holder) {
        (Some(value), _) => Ok(Some(value)),
        (None, Holder::Turn) => Err(GroveError::InvalidState(format!(
            "no turn lease {token} on session {} (it ended or expired)",
            s.id()
        ))),
        (None, Holder::Operation) => Err(GroveError::Busy(format!(
            "the navigation's lease on session {} expired",
            s.id()
        ))),
    }
}

/// The lease row a move by someone without a lease requires: none. The first try assumes
/// it (its commit checks it, no read before); a later one reads the row, answers `Busy`
/// while a lease is live, and removes an expired one.
pub(crate) fn idle_lease(s: &Handle, leases: &Leases, tries: usize) -> Result<Option<Vec<u8>>> {
    if tries > 0 {
        update_lease(s, leases, |current, now| match current {
            Some(held) if held.expires_ms > now => Err(Holder::of(&held).busy()),
            Some(_) => Ok(Change::Write(None, ())),
            None => Ok(Change::Keep(())),
        })?;
    }
    Ok(None)
}

/// Who holds the session now, if anyone.
fn holder(s: &Handle, leases: &Leases) -> Result<Option<Holder>> {
    update_lease(s, leases, |current, now| {
        Ok(Change::Keep(live(current, now).map(|h| Holder::of(&h))))
    })
}

/// Whether a turn or a navigation holds the session (a lease that cannot be read counts
/// as held).
pub(crate) fn is_busy(s: &Handle, leases: &Leases) -> bool {
    !matches!(holder(s, leases), Ok(None))
}

/// Refuses a move while the session is held, in a store one process holds; in a shared
/// store the move's commit checks the lease row ([`crate::ops::lease::idle_lease`]).
pub(crate) fn check_idle(s: &Handle, leases: &Leases) -> Result<()> {
    if s.inner.shared {
        return Ok(());
    }
    match holder(s, leases)? {
        Some(holder) => Err(holder.busy()),
        None => Ok(()),
    }
}

pub(crate) fn lease_operation<'a>(s: &'a Handle, leases: &'a Leases) -> Result<OperationLease<'a>> {
    let ttl = s.inner.shared.then_some(OPERATION_TTL);
    let token = take_lease(s, leases, Holder::Operation, ttl)?;
    Ok(OperationLease {
        session: s,
        leases,
        token,
    })
}

/// Held by a navigation for its whole duration, summarizer call included.
pub(crate) struct OperationLease<'a> {
    session: &'a Handle,
    leases: &'a Leases,
    pub(crate) token: String,
}

impl Drop for OperationLease<'_> {
    fn drop(&mut self) {
        // As for a turn: an end that cannot be written expires.
        let _ = release_lease(self.session, self.leases, &self.token, Holder::Operation);
    }
}
