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

pub mod audit;
mod commits;
pub mod context;
mod dir;
pub mod durable;
pub mod error;
pub mod export;
mod fold;
pub mod fork;
pub mod ids;
pub mod import;
mod index_packs;
pub mod keys;
pub mod kv;
pub mod labels;
mod lease;
mod log;
pub mod navigate;
pub mod oplog;
mod paths;
mod payloads;
mod plan;
mod private;
pub mod proof;
pub mod replay;
pub mod salvage;
pub mod session;
pub mod space;
pub mod store;
pub mod summary;
pub mod tree;
mod util;
pub mod verify;
pub mod view;
mod walk;
mod write;

pub use audit::{verify_audit, AuditKey, AuditReport};
pub use commits::CommitListener;
pub use context::{
    Context, ContextOptions, NullContent, RetainedTail, SelectionPath, SettingsScope,
};
pub use durable::LostWrites;
pub use error::{GroveError, Result};
pub use export::{ExportReport, Flavor};
pub use fork::{ForkMode, ForkOptions, ForkPosition};
pub use grove_codec as codec;
pub use grove_codec::op::{OpKind, OpStamp};
pub use grove_codec::reader::Strictness;
pub use grove_codec::writer::NewEntry;
pub use import::{ImportOptions, ImportReport, LeafRule};
pub use labels::Label;
pub use lease::{TurnGuard, DEFAULT_TURN_TTL};
pub use navigate::{
    HookDecision, HookSummary, NavigateEvent, NavigateHook, NavigateOptions, NavigateOutcome,
    Navigator,
};
pub use oplog::{Operation, PointInTime, Seal, SealCheck};
pub use payloads::{GcReport, PayloadStats, DEFAULT_PAYLOAD_THRESHOLD};
pub use proof::EntryProof;
pub use replay::{
    ContextChange, OperationStart, Poll, Replay, ReplayEvent, ReplayOptions, ReplayRecord,
};
pub use session::{AppendOptions, AppendOutcome, Entry, ExactOptions, Session};
pub use store::{Backend, CreateSession, Durability, SessionSummary, Store, StoreConfig};
pub use tree::{Tree, TreeNode};
pub use verify::{Problem, VerifyReport};
