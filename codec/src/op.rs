//! The operation stamp: what one change of a session was, who made it and when.
//!
//! An operation's records are written by one transaction, and the first of them carries the
//! stamp inside its log row (a version-3 node record, docs/format.md, "NodeRecord"), so that
//! an operation is committed by the same write as its records and the operation log is a
//! fold of the session log: no extra key per append, nothing for a crash to tear apart.
//! This module owns the stamp's encoding and the names of the kinds; the engine's `oplog`
//! reads operations back.

use bincode::{Decode, Encode};

/// The kind of an operation. The tag is stored; the name is what the CLI, the server and
/// the clients print and accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpKind {
    /// Records written before operations were stamped (store layouts up to 9): never
    /// stored, given to the unstamped records a session log starts with.
    Legacy,
    /// One appended entry.
    Append,
    /// Several entries appended as a chain in one transaction.
    AppendMany,
    /// A leaf move (a `leaf` record).
    Move,
    /// A navigation: a leaf move, with its branch summary when one was made.
    Navigate,
    /// A branch summary appended on its own (an exact `branch_summary` entry).
    Summary,
    /// A `label` entry.
    Label,
    /// A `session_info` entry (the session's name).
    Name,
    /// A session imported from pi JSONL.
    Import,
    /// A session made by forking another.
    Fork,
    /// A leaf move that puts the leaf back where it was before an earlier operation.
    Undo,
    /// A redaction: values of an entry replaced by a marker, recorded by a leaf record that
    /// leaves the leaf where it is.
    Redact,
}

impl OpKind {
    /// Every kind, in tag order.
    pub const ALL: [OpKind; 12] = [
        OpKind::Legacy,
        OpKind::Append,
        OpKind::AppendMany,
        OpKind::Move,
        OpKind::Navigate,
        OpKind::Summary,
        OpKind::Label,
        OpKind::Name,
        OpKind::Import,
        OpKind::Fork,
        OpKind::Undo,
        OpKind::Redact,
    ];

    /// The stored tag.
    pub fn tag(self) -> u8 {
        match self {
            OpKind::Legacy => 0,
            OpKind::Append => 1,
            OpKind::AppendMany => 2,
            OpKind::Move => 3,
            OpKind::Navigate => 4,
            OpKind::Summary => 5,
            OpKind::Label => 6,
            OpKind::Name => 7,
            OpKind::Import => 8,
            OpKind::Fork => 9,
            OpKind::Undo => 10,
            OpKind::Redact => 11,
        }
    }

    /// The kind of a stored tag.
    pub fn from_tag(tag: u8) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.tag() == tag)
    }

    /// The name printed and accepted (`append_many`, `undo`, ...).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Legacy => "legacy",
            OpKind::Append => "append",
            OpKind::AppendMany => "append_many",
            OpKind::Move => "move",
            OpKind::Navigate => "navigate",
            OpKind::Summary => "summary",
            OpKind::Label => "label",
            OpKind::Name => "name",
            OpKind::Import => "import",
            OpKind::Fork => "fork",
            OpKind::Undo => "undo",
            OpKind::Redact => "redact",
        }
    }
}

impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The stamp the first record of an operation carries.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct OpStamp {
    /// [`OpKind::tag`].
    pub kind: u8,
    /// When the operation was committed: milliseconds since the Unix epoch, wall clock.
    pub time_ms: u64,
    /// Who made it: `cli`, the server client's name, or what the library caller set.
    pub actor: String,
}

impl OpStamp {
    /// A stamp of `kind` by `actor` at `time_ms`.
    pub fn new(kind: OpKind, actor: &str, time_ms: u64) -> OpStamp {
        OpStamp {
            kind: kind.tag(),
            time_ms,
            actor: actor.to_owned(),
        }
    }

    /// The kind; `None` for a tag this build does not know.
    pub fn kind(&self) -> Option<OpKind> {
        OpKind::from_tag(self.kind)
    }

    /// The stamp's bincode body, as a version-3 node record stores it after the line CRC and
    /// as the seal hashes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.actor.len());
        // Encoding into a Vec cannot fail for this plain data type.
        if bincode::encode_into_std_write(self, &mut out, bincode::config::standard()).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_names_round_trip() {
        for (i, kind) in OpKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.tag() as usize, i);
            assert_eq!(OpKind::from_tag(kind.tag()), Some(kind));
        }
        assert_eq!(OpKind::from_tag(12), None);
        let names: std::collections::HashSet<_> = OpKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), OpKind::ALL.len());
    }
}
