//! What to generate ([`GenSpec`]), what comes out line by line ([`Record`]) and what a
//! generation reports besides the lines ([`GeneratedSession`]).

use super::payload::Payload;
use crate::jsstr::quote;
use crate::writer::{leaf_line, NewEntry};

/// The working directory written in generated headers.
pub const CWD: &str = "/home/dev/project";

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenSpec {
    /// Tree entries (leaf lines not counted).
    pub entries: usize,
    /// Branch points: leaf moves to a random earlier entry, spread evenly over the session.
    pub branch_points: usize,
    /// The PRNG seed.
    pub seed: u64,
    /// Message sizes.
    pub payload: Payload,
    /// A compaction every this many entries, keeping a few entries before it.
    pub compaction_every: Option<usize>,
    /// Aim the last branch so that the active path has about this many entries.
    pub active_path: Option<usize>,
}

impl GenSpec {
    /// A linear session (no branch points).
    pub fn linear(entries: usize, seed: u64) -> GenSpec {
        GenSpec::bushy(entries, 0, seed)
    }

    /// A session with `branch_points` leaf moves.
    pub fn bushy(entries: usize, branch_points: usize, seed: u64) -> GenSpec {
        GenSpec {
            entries,
            branch_points,
            seed,
            payload: Payload::Small,
            compaction_every: None,
            active_path: None,
        }
    }

    /// Sets the payload.
    pub fn payload(mut self, payload: Payload) -> GenSpec {
        self.payload = payload;
        self
    }

    /// A compaction every `k` entries.
    pub fn compaction_every(mut self, k: usize) -> GenSpec {
        self.compaction_every = Some(k);
        self
    }

    /// Aim for an active path of about `len` entries.
    pub fn active_path(mut self, len: usize) -> GenSpec {
        self.active_path = Some(len);
        self
    }
}

/// One generated line after the header.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A tree entry.
    Entry {
        /// Entry id (8 lowercase hex digits).
        id: String,
        /// Parent id (`None` for a root).
        parent_id: Option<String>,
        /// ISO timestamp.
        timestamp: String,
        /// The entry's own fields.
        entry: NewEntry,
    },
    /// A `leaf` line: the leaf moves to `target`.
    Leaf {
        /// The leaf record's id.
        id: String,
        /// The leaf before the move (the line's `parentId`).
        previous_leaf: Option<String>,
        /// ISO timestamp.
        timestamp: String,
        /// The new leaf (`None`: the root position).
        target: Option<String>,
    },
}

impl Record {
    /// The record's id.
    pub fn id(&self) -> &str {
        match self {
            Record::Entry { id, .. } | Record::Leaf { id, .. } => id,
        }
    }

    /// The JSONL line (without LF), exactly as `NewEntry::to_line` / `leaf_line` write it.
    pub fn line(&self) -> String {
        match self {
            Record::Entry {
                id,
                parent_id,
                timestamp,
                entry,
            } => {
                let parent = parent_id.as_deref().map_or("null".to_owned(), quote);
                let common = format!(
                    "\"id\":{},\"parentId\":{parent},\"timestamp\":{}",
                    quote(id),
                    quote(timestamp)
                );
                match entry {
                    NewEntry::Message { message } => {
                        format!("{{\"type\":\"message\",{common},\"message\":{message}}}")
                    }
                    NewEntry::Compaction {
                        summary,
                        first_kept_entry_id,
                        tokens_before,
                        details,
                        ..
                    } => format!(
                        "{{\"type\":\"compaction\",{common},\"summary\":{},\"firstKeptEntryId\":{},\
                         \"tokensBefore\":{tokens_before},\"details\":{}}}",
                        quote(summary),
                        quote(first_kept_entry_id),
                        details.as_deref().unwrap_or("null")
                    ),
                    // The generator makes no other kinds.
                    other => other
                        .to_line(id, parent_id.as_deref(), timestamp)
                        .unwrap_or_default(),
                }
            }
            Record::Leaf {
                id,
                previous_leaf,
                timestamp,
                target,
            } => leaf_line(id, previous_leaf.as_deref(), timestamp, target.as_deref()),
        }
    }
}

/// What a generation produced besides the lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GeneratedSession {
    /// The session id (from the header).
    pub session_id: String,
    /// The header line.
    pub header: String,
    /// The whole file (header, records, LF after each line); empty from [`generate_to`].
    pub jsonl: Vec<u8>,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// The active leaf at the end.
    pub leaf_id: Option<String>,
    /// Every entry id in log order.
    pub ids: Vec<String>,
    /// The leaf before each branch point and the final leaf: tips of the tree.
    pub tips: Vec<String>,
    /// Entries on the active path (root to leaf).
    pub active_path_len: usize,
    /// Leaf lines written.
    pub leaf_records: usize,
}
