//! grove: an event-sourced, append-only store for branching agent sessions.
//!
//! A session is a tree of entries (pi's session model): every entry names its parent, and
//! a movable leaf marks where the conversation continues. grove keeps each session as an
//! append-only log of the entries' original JSON lines plus indexes (parent → children, id
//! → position, leaf history, compaction checkpoints, settings pointers), all in one sorted
//! key-value space behind the [`kv::Kv`] trait, with sled as the embedded default.
//!
//! Start with [`Store::open`], then [`Store::import_file`], [`Store::create_session`] or
//! [`Store::session`]; a [`Session`] appends, moves its leaf, walks paths and builds
//! contexts. docs/design.md explains the architecture and docs/format.md the bytes on disk.
#![forbid(unsafe_code)]

mod context;
mod core;
mod exchange;
pub mod kv;
mod log;
mod maintain;
mod open;
mod ops;
#[cfg(feature = "search")]
mod search;
pub mod session;
pub mod store;
mod tree;

pub use crate::core::keys;
pub use crate::exchange::export;
/// Salvage: copying what can be read of a damaged store into a new one
/// (`crate::maintain::salvage`).
pub mod salvage {
    pub use crate::maintain::salvage::*;
    pub use crate::store::salvage;
}
pub use crate::ops::summary;

pub use crate::context::build::{
    Context, ContextOptions, NullContent, RetainedTail, SelectionPath, SettingsScope,
};
pub use crate::context::plan::Walk;
pub use crate::core::commits::CommitListener;
pub use crate::core::error::{GroveError, LostWrites, Result};
pub use crate::core::payloads::{PayloadStats, DEFAULT_PAYLOAD_THRESHOLD};
pub use crate::exchange::audit::{verify_audit, AuditReport};
pub use crate::exchange::export::{ExportReport, Flavor};
pub use crate::exchange::foreign::{complete_lines_len, detect_file, session_id_of_file, Detected};
pub use crate::exchange::fork::{ForkMode, ForkOptions, ForkPosition};
pub use crate::exchange::import::{ImportOptions, ImportReport, LeafRule};
pub use crate::exchange::signing::AuditKey;
pub use crate::log::coalesce::LogCoalesce;
pub use crate::log::labels::Label;
pub use crate::maintain::gc::GcReport;
pub use crate::maintain::report::{Problem, VerifyReport};
pub use crate::maintain::retain::{
    ArchiveFormat, RetentionItem, RetentionPlan, RetentionPolicy, RetentionRule, RetentionRun,
    StoreOperation,
};
pub use crate::maintain::rewrite::RewriteReport;
pub use crate::ops::lease::DEFAULT_TURN_TTL;
pub use crate::ops::navigate::{
    HookDecision, HookSummary, NavigateEvent, NavigateHook, NavigateOptions, NavigateOutcome,
    Navigator,
};
pub use crate::ops::oplog::{Operation, PointInTime, Seal, SealCheck};
pub use crate::ops::redact::Redaction;
pub use crate::ops::replay::{
    ContextChange, OperationStart, Poll, Replay, ReplayEvent, ReplayOptions, ReplayRecord,
};
#[cfg(feature = "search")]
pub use crate::search::{IndexReport, SearchHit, SearchOptions, SearchResults};
pub use crate::tree::proof::EntryProof;
pub use crate::tree::whole::{Tree, TreeNode};
pub use grove_codec as codec;
pub use grove_codec::op::{OpKind, OpStamp};
pub use grove_codec::reader::Strictness;
pub use grove_codec::writer::NewEntry;
pub use session::{AppendOptions, AppendOutcome, Entry, ExactOptions, Session, TurnGuard};
pub use store::{
    Backend, CreateSession, Durability, SessionFilter, SessionSummary, Store, StoreConfig,
};
