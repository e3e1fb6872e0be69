//! What a session's writer remembers between its transactions ([`Tip`]), kept under the
//! session's writer lock ([`crate::log::shared::Logs::session_lock`]).
//!
//! May call: nothing of grove's but records.

use grove_codec::record::{HeadRecord, NodeRecord};

/// Writer locks (with their [`Tip`]s) kept for sessions nobody is writing.
pub(crate) const SESSION_LOCKS_KEPT: usize = 4096;

/// What a session's writer remembers between its transactions, under the writer lock: the
/// head as last committed and the node records it read or wrote most recently, so that an
/// append reads back neither the head, nor its parent, nor (mostly) the parent's jump target.
/// Empty until the first transaction; emptied by anything else that writes the head.
#[derive(Debug, Default)]
pub(crate) struct Tip {
    /// The head as last committed.
    pub(crate) head: Option<HeadRecord>,
    /// Recently read or written node records, most recent last.
    pub(crate) nodes: std::collections::VecDeque<(u64, NodeRecord)>,
}

/// Node records a [`Tip`] keeps besides its spine. An append reads its parent's jump target,
/// which is on the jump chain of the leaf (the spine: the leaf, its jump target, that one's,
/// ... — about 2 log2 n records), and the child's chain is a part of the parent's with the
/// child in front. So the tip keeps the spine of its newest record whatever its age, and 16
/// more recent records: after a few appends past a move, an append reads no node from the
/// backend (one round trip to a database server, the commit).
pub(crate) const TIP_NODES: usize = 16;

impl Tip {
    /// The cached node at `seq`.
    pub(crate) fn node(&self, seq: u64) -> Option<&NodeRecord> {
        self.nodes
            .iter()
            .rev()
            .find(|(s, _)| *s == seq)
            .map(|(_, n)| n)
    }

    /// Remembers `node` at `seq`, forgetting the oldest beyond [`TIP_NODES`] that are not on
    /// the spine of the newest.
    pub(crate) fn remember(&mut self, seq: u64, node: NodeRecord) {
        if let Some(i) = self.nodes.iter().position(|(s, _)| *s == seq) {
            self.nodes.remove(i);
        }
        self.nodes.push_back((seq, node));
        if self.nodes.len() <= TIP_NODES {
            return;
        }
        let spine = self.spine();
        let mut excess = self.nodes.len().saturating_sub(TIP_NODES + spine.len());
        self.nodes.retain(|(s, _)| {
            if excess > 0 && !spine.contains(s) {
                excess -= 1;
                false
            } else {
                true
            }
        });
    }

    /// The seqs of the newest record's jump chain, as far as the tip holds it.
    fn spine(&self) -> Vec<u64> {
        let mut spine = Vec::new();
        let mut at = self.nodes.back().map(|(s, _)| *s);
        while let Some(seq) = at {
            let Some(node) = self.node(seq) else { break };
            spine.push(seq);
            at = node.jump.map(|j| j.seq);
        }
        spine
    }
}
