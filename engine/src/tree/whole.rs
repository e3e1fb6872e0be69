//! The tree view (spec §6.3): one node per entry id, roots in log order, children sorted by
//! timestamp (stable; unparseable timestamps last). Built iteratively, so depth is no limit.

use std::collections::{HashMap, HashSet};

use grove_codec::record::Parent;
use grove_codec::{time, EntryKind};

use crate::core::error::Result;
use crate::log::handle::Handle;
use crate::tree::paths;

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// Entry id.
    pub id: String,
    /// Parent entry id, when the parent is a node of the tree.
    pub parent: Option<String>,
    /// Entry kind.
    pub kind: EntryKind,
    /// The `type` string as written.
    pub type_name: String,
    /// Indexes (into [`Tree::nodes`]) of the children, in display order.
    pub children: Vec<usize>,
    /// Current label.
    pub label: Option<String>,
    /// Timestamp of the entry that set the label.
    pub label_timestamp: Option<String>,
    /// Whether the entry is on the full path to the active leaf.
    pub on_active_path: bool,
    /// Whether the entry is the active leaf.
    pub is_leaf: bool,
    /// Label, session_info, custom and settings entries (hidden by default in UIs).
    pub bookkeeping: bool,
    /// The entry's position in the session log: [`crate::Session::entry_at`] reads its line. (The
    /// tree holds no lines, so a tree of a million entries stays small.)
    pub seq: u64,
}

/// A session's tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    /// Every node, in log order.
    pub nodes: Vec<TreeNode>,
    /// Indexes of the roots, in log order.
    pub roots: Vec<usize>,
}

impl Tree {
    /// Nodes in depth-first pre-order with their depth, without recursion.
    pub fn preorder(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack: Vec<(usize, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((i, depth)) = stack.pop() {
            out.push((i, depth));
            for &c in self.nodes[i].children.iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        out
    }
}

/// Builds the tree of the session.
pub(crate) fn tree(s: &Handle) -> Result<Tree> {
    let labels = s.labels()?;
    let head = s.head()?;
    tree_upto(s, head.next_seq, head.leaf, &labels)
}

/// The tree of records `0 .. end` with `leaf` as the leaf and `labels` as the labels
/// (the current ones, or those of a point in time).
pub(crate) fn tree_upto(
    s: &Handle,
    end: u64,
    leaf: Option<u64>,
    labels: &std::collections::BTreeMap<String, crate::log::labels::Label>,
) -> Result<Tree> {
    let active: HashSet<u64> = match leaf {
        Some(l) => paths::path_to_root_seq(s, l)?
            .iter()
            .map(|e| e.seq)
            .collect(),
        None => HashSet::new(),
    };
    let mut tree = Tree::default();
    let mut index_of: HashMap<u64, usize> = HashMap::new();
    let mut parent_seq: Vec<Option<u64>> = Vec::new();
    let mut stamps: Vec<Option<i64>> = Vec::new();
    for entry in s.log_range(0, end).entries(s.id()) {
        let entry = entry?;
        if entry.is_leaf_record() || entry.node.shadowed {
            continue;
        }
        let env = entry.envelope()?;
        let label = labels.get(entry.id());
        index_of.insert(entry.seq, tree.nodes.len());
        parent_seq.push(match entry.node.parent {
            Parent::Seq(p) => Some(p),
            _ => None,
        });
        stamps.push(time::parse_ms(&env.timestamp));
        tree.nodes.push(TreeNode {
            id: entry.id().to_owned(),
            parent: None,
            kind: entry.kind(),
            type_name: env.type_name,
            children: Vec::new(),
            label: label.map(|l| l.label.clone()),
            label_timestamp: label.map(|l| l.timestamp.clone()),
            on_active_path: active.contains(&entry.seq),
            is_leaf: leaf == Some(entry.seq),
            bookkeeping: entry.kind().is_bookkeeping()
                && !(entry.kind() == EntryKind::Custom
                    && grove_codec::foreign::is_message_line(&entry.line)),
            seq: entry.seq,
        });
    }
    for (i, parent) in parent_seq.iter().enumerate() {
        match parent.and_then(|p| index_of.get(&p).copied()) {
            Some(p) => {
                tree.nodes[i].parent = Some(tree.nodes[p].id.clone());
                tree.nodes[p].children.push(i);
            }
            None => tree.roots.push(i),
        }
    }
    for node in &mut tree.nodes {
        // Stable: equal timestamps keep log order; unparseable ones go last.
        node.children
            .sort_by_key(|&c| stamps[c].map_or((1, 0), |ms| (0, ms)));
    }
    Ok(tree)
}
