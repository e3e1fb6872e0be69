//! The one fold that derives a node's indexed fields from its parent's: used by append,
//! import and verification alike, so the three can never disagree.

use grove_codec::digest::{self, Digest, ROOT_PARENT};
use grove_codec::record::{Jump, NodeRecord, Parent};
use grove_codec::{EntryKind, Role};

/// Derives the node record of entry `seq` from its resolved parent.
/// `parent_node` is the parent's record when `parent` names one that the walk follows.
pub fn derive_node(
    seq: u64,
    id: &str,
    kind: EntryKind,
    parent: Parent,
    parent_node: Option<&NodeRecord>,
    parent_jump: Option<&NodeRecord>,
    content: Digest,
) -> NodeRecord {
    // A cycle's earliest member counts as a root for every derived field.
    let inherited = match parent {
        Parent::Seq(_) => parent_node,
        _ => None,
    };
    let own = |hit: bool, from_parent: Option<u64>| if hit { Some(seq) } else { from_parent };
    let parent_digest = inherited.map_or(ROOT_PARENT, |p| p.digest);
    NodeRecord {
        id: id.into(),
        kind: kind.tag(),
        parent,
        depth: inherited.map_or(0, |p| p.depth + 1),
        run_start: match (parent, inherited) {
            (Parent::Seq(p), Some(pn)) if p + 1 == seq => pn.run_start,
            _ => seq,
        },
        jump: match (parent, inherited) {
            (Parent::Seq(p), Some(pn)) => Some(jump_target(p, pn, parent_jump)),
            _ => None,
        },
        checkpoint: own(
            kind == EntryKind::Compaction,
            inherited.and_then(|p| p.checkpoint),
        ),
        model_at: own(
            matches!(
                kind,
                EntryKind::ModelChange | EntryKind::Message(Role::Assistant)
            ),
            inherited.and_then(|p| p.model_at),
        ),
        thinking_at: own(
            kind == EntryKind::ThinkingLevelChange,
            inherited.and_then(|p| p.thinking_at),
        ),
        tools_at: own(
            kind == EntryKind::ActiveToolsChange,
            inherited.and_then(|p| p.tools_at),
        ),
        leaf_target: None,
        shadowed: false,
        content,
        digest: digest::chain(&parent_digest, &content),
        message: None,
    }
}

/// Sets a message entry's [`grove_codec::record::MessageSpan`] from its line; other kinds
/// have none. Append, import and verification all call it after [`derive_node`].
pub fn set_message_span(node: &mut NodeRecord, line: &str) {
    node.message = match EntryKind::from_tag(node.kind) {
        Some(EntryKind::Message(_)) => grove_codec::fields::message_span(line),
        _ => None,
    };
}

/// The jump pointer of a child of `parent` (Myers' skew-binary scheme): when the parent's
/// jump spans as far as its jump's jump, the child jumps twice as far (to the jump's jump);
/// otherwise it jumps to its parent. `parent_jump` is the record `pn.jump` points at.
fn jump_target(parent: u64, pn: &NodeRecord, parent_jump: Option<&NodeRecord>) -> Jump {
    let to_parent = Jump {
        seq: parent,
        depth: pn.depth,
    };
    match (pn.jump, parent_jump.and_then(|jn| jn.jump)) {
        (Some(j), Some(jj)) if pn.depth - j.depth == j.depth - jj.depth => jj,
        _ => to_parent,
    }
}

/// The node record of a leaf record.
pub fn leaf_node(
    id: &str,
    previous: Option<u64>,
    target: grove_codec::record::LeafTarget,
    content: Digest,
) -> NodeRecord {
    NodeRecord {
        id: id.into(),
        kind: EntryKind::Leaf.tag(),
        parent: previous.map_or(Parent::Root, Parent::Seq),
        depth: 0,
        checkpoint: None,
        model_at: None,
        thinking_at: None,
        tools_at: None,
        run_start: 0,
        jump: None,
        leaf_target: Some(target),
        shadowed: false,
        content,
        digest: content,
        message: None,
    }
}
