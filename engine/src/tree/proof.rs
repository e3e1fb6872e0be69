//! What proves one entry (`grove show`, the server's `.../entries/{eid}/proof`): its stored
//! line, the blake3 of those bytes, and its chain digest together with the parent's chain
//! digest it was derived from (docs/format.md, "Chain digest"). Both digests are recomputed
//! here from the stored bytes and checked against the entry's node, so a proof handed out is
//! one the store's own bytes still support; a holder of the line and the parent's digest can
//! check the step without the store. This room reads a session through `Handle` and writes
//! nothing.

use grove_codec::digest::{self, Digest};
use grove_codec::record::Parent;

use crate::core::error::{GroveError, Result};
use crate::log::handle::{Entry, Handle};

/// One entry with the digests that bind it to its path.
#[derive(Debug, Clone)]
pub struct EntryProof {
    /// The entry as stored (its line is the exported bytes).
    pub entry: Entry,
    /// The parent's chain digest: 32 zero bytes for a root (and for an entry whose parent is
    /// missing, itself, or closes a cycle, which count as roots).
    pub parent_digest: Digest,
    /// For a redacted entry: blake3 of the line it holds now, which its recorded redactions
    /// lead to from its content digest (the line as written, which the proof's digests keep
    /// covering; docs/design.md, "Redaction").
    pub redacted: Option<Digest>,
}

impl EntryProof {
    /// blake3 of the line's bytes.
    pub fn content(&self) -> Digest {
        self.entry.node.content
    }

    /// The chain digest: `derive_key("grove 2026-11 entry chain v1", parent_digest ++
    /// content)`, which authenticates every line on the entry's path to the root.
    pub fn digest(&self) -> Digest {
        self.entry.node.digest
    }
}

/// The proof of tree entry `id` (`EntryNotFound` for an unknown id or a leaf record). A
/// line whose bytes no longer hash to the stored content digest, or a chain digest that
/// does not follow from the parent's, is `Corrupt`.
pub(crate) fn proof(s: &Handle, id: &str) -> Result<EntryProof> {
    let entry = s.entry(id)?;
    let parent_digest = match entry.node.parent {
        Parent::Seq(parent) => s.node(parent)?.digest,
        Parent::Root | Parent::Missing | Parent::SelfRef | Parent::Cycle(_) => digest::ROOT_PARENT,
    };
    let mut content = digest::content_hash(entry.line.as_bytes());
    let mut redacted = None;
    if content != entry.node.content
        && s.redactions()?
            .explains(entry.seq, &entry.node.content, &content, u64::MAX)
            .is_some()
    {
        redacted = Some(content);
        content = entry.node.content;
    }
    if content != entry.node.content {
        return Err(GroveError::Corrupt(format!(
            "entry {id} (record {}): its line hashes to {}, the store recorded {}",
            entry.seq,
            digest::hex(&content),
            digest::hex(&entry.node.content)
        )));
    }
    let chained = digest::chain(&parent_digest, &content);
    if chained != entry.node.digest {
        return Err(GroveError::Corrupt(format!(
            "entry {id} (record {}): its chain digest {} does not follow from its parent's ({})",
            entry.seq,
            digest::hex(&entry.node.digest),
            digest::hex(&chained)
        )));
    }
    Ok(EntryProof {
        entry,
        parent_digest,
        redacted,
    })
}
