//! The busy rule (spec §7.2): a session is held either by an agent turn ([`TurnGuard`]) or
//! by a navigation (an operation lease). While it is held, navigation and leaf moves from any
//! thread or handle of the same store are refused with `Busy`; reads are never blocked.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::error::{GroveError, Result};
use crate::session::Session;

/// Who holds a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    Turn,
    Operation,
}

/// The holders of every session of a store.
#[derive(Default)]
pub(crate) struct Leases {
    held: Mutex<HashMap<u64, Holder>>,
}

impl Leases {
    fn take(&self, sid: u64, holder: Holder) -> Result<()> {
        let mut held = self.held.lock();
        match held.get(&sid) {
            Some(Holder::Turn) => Err(GroveError::Busy(
                "an agent turn is in progress on this session; navigation requires an idle session"
                    .into(),
            )),
            Some(Holder::Operation) => Err(GroveError::Busy(
                "a navigation is in progress on this session".into(),
            )),
            None => {
                held.insert(sid, holder);
                Ok(())
            }
        }
    }

    fn release(&self, sid: u64) {
        self.held.lock().remove(&sid);
    }

    pub(crate) fn is_held(&self, sid: u64) -> bool {
        self.held.lock().contains_key(&sid)
    }
}

/// Held while an agent turn streams or runs tools; dropping it ends the turn.
#[must_use = "the turn ends when the guard is dropped"]
pub struct TurnGuard {
    session: Session,
}

impl TurnGuard {
    /// The session the turn runs on.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Moves the leaf on behalf of the turn holder (spec §7.1: the holder may).
    pub fn move_to(&self, target: Option<&str>) -> Result<()> {
        self.session
            .move_to_with(
                target,
                None,
                crate::session::NO_LABEL,
                None,
                grove_codec::op::OpKind::Move,
            )
            .map(|_| ())
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.session.inner.leases.release(self.session.sid);
    }
}

/// Held by a navigation for its whole duration, summarizer call included.
pub(crate) struct OperationLease<'a> {
    session: &'a Session,
}

impl Drop for OperationLease<'_> {
    fn drop(&mut self) {
        self.session.inner.leases.release(self.session.sid);
    }
}

impl Session {
    /// Starts an agent turn: until the guard is dropped, `navigate` and `move_to` on this
    /// session fail with `Busy`, from every handle of the store.
    pub fn begin_turn(&self) -> Result<TurnGuard> {
        self.inner.leases.take(self.sid, Holder::Turn)?;
        Ok(TurnGuard {
            session: self.clone(),
        })
    }

    /// Whether a turn or a navigation holds the session.
    pub fn is_busy(&self) -> bool {
        self.inner.leases.is_held(self.sid)
    }

    pub(crate) fn check_idle(&self) -> Result<()> {
        if self.is_busy() {
            Err(GroveError::Busy(
                "the session is held by a turn or a navigation".into(),
            ))
        } else {
            Ok(())
        }
    }

    pub(crate) fn lease_operation(&self) -> Result<OperationLease<'_>> {
        self.inner.leases.take(self.sid, Holder::Operation)?;
        Ok(OperationLease { session: self })
    }
}
