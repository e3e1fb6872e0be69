//! The start of a walk (`--from`, `--at-op`, `--at-time`), shared by the subcommands that
//! read a path, a branch, a context or a tree. It calls the engine's public API
//! (`grove::Session`) and `error`.

use grove::Session;

use crate::error::{CmdResult, CommandError};

/// Resolves an optional `--from` entry spec (`None`: the active leaf). `Ok(None)` means the
/// root position (the spec was `root`, or the leaf is the root position).
pub fn resolve_from(session: &Session, from: Option<&str>) -> CmdResult<Option<String>> {
    resolve_from_at(session, from, &AtArgs::default())
}

/// `--at-op N` / `--at-time TIME`: answer as the session stood after an operation.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AtArgs {
    /// Answer as the session stood right after operation N (`grove log` lists them).
    #[arg(long, value_name = "N", conflicts_with = "at_time")]
    pub at_op: Option<u64>,
    /// Answer as the session stood at TIME (RFC 3339, e.g. 2026-12-03T10:00:00Z): after the
    /// last operation committed then.
    #[arg(long, value_name = "TIME")]
    pub at_time: Option<String>,
}

impl AtArgs {
    /// The point in time asked for, if any.
    pub fn point(&self, session: &Session) -> CmdResult<Option<grove::PointInTime>> {
        Ok(match (self.at_op, &self.at_time) {
            (Some(n), _) => Some(session.at_op(n)?),
            (None, Some(t)) => Some(session.at_time(t)?),
            (None, None) => None,
        })
    }
}

/// The entry a walk starts from: `--from`, else the leaf at `--at-op`/`--at-time`, else the
/// active leaf (`None`: the root position). A context or a branch depends only on the path
/// from its leaf, which later records never change, so the leaf then is all a point in time
/// needs.
pub fn resolve_from_at(
    session: &Session,
    from: Option<&str>,
    at: &AtArgs,
) -> CmdResult<Option<String>> {
    if let Some(point) = at.point(session)? {
        if from.is_some() {
            return Err(CommandError::invalid(
                "--from cannot be combined with --at-op or --at-time",
                "a point in time answers at the leaf the session had then",
            ));
        }
        return Ok(point.leaf);
    }
    match from {
        None => Ok(session.leaf()?),
        Some(spec) => Ok(session.resolve_entry(spec)?),
    }
}
