//! The point in time a read may ask for (`atOp=N` or `atTime=TIME`, docs/api.md,
//! "Operations"): how a query names it and how it resolves on a session. The reads of
//! context, branch, path and tree (`reads.rs`) call it. It calls the engine's public API and
//! `api` for its errors.

use grove::{PointInTime, Session};

use crate::serve::api::{ApiError, ApiResult};

/// A point in time a read asks for.
#[derive(Debug, Clone)]
pub enum At {
    /// After operation N.
    Op(u64),
    /// After the last operation committed at or before this RFC 3339 time.
    Time(String),
}

impl At {
    /// The point in time of a read's query (`atOp`, `atTime`; neither: now). `start` names
    /// the read's own start field (`leaf`, `from`) when the query gives it: a start names a
    /// position now, so it is refused with a point in time.
    pub fn from_query(
        at_op: Option<u64>,
        at_time: Option<String>,
        start: Option<&str>,
    ) -> ApiResult<Option<At>> {
        let at = match (at_op, at_time) {
            (None, None) => return Ok(None),
            (Some(op), None) => At::Op(op),
            (None, Some(time)) => At::Time(time),
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_argument(
                    "atOp and atTime name two points in time; give one",
                ))
            }
        };
        if let Some(field) = start {
            return Err(ApiError::invalid_argument(format!(
                "{field} cannot be given with atOp or atTime: the read starts at the leaf \
                 the session had then"
            )));
        }
        Ok(Some(at))
    }

    /// The session as it stood then (`not_found` for an operation it does not have, or a
    /// time before its first operation).
    pub fn resolve(&self, session: &Session) -> grove::Result<PointInTime> {
        match self {
            At::Op(op) => session.at_op(*op),
            At::Time(time) => session.at_time(time),
        }
    }
}
