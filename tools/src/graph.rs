//! The graph drawing of a session tree (`grove tree`, `grove demo`), in the manner of
//! `jj log`, but root first.
//!
//! Layout: the active path runs down the first column. At a branch point the children off
//! the active path are drawn first, each one column to the right under a fork line (`├─╮`),
//! then the child on the active path (or, off the active path, the last child) continues in
//! the branch point's column. So every column left of a node is still open (its
//! continuation is drawn later) and a node in column k is prefixed by k lanes (`│ `).
//! Several roots are drawn the same way, as forks of the root position (`╭─╮`).
//!
//! Bookkeeping entries (labels, session info, settings changes, custom entries) are hidden
//! unless asked for; a hidden entry's children hang from its nearest shown ancestor. The
//! drawing is built and written without recursion, one line at a time, so depth is no
//! limit (memory is linear in the number of entries).

use std::io::Write;

use grove::{Session, Tree};

use crate::error::CmdResult;
use crate::escape::escape_controls;
use crate::output::{clip, describe_line, ShortIds};

/// The characters of one drawing style.
struct Glyphs {
    /// The active leaf.
    leaf: &'static str,
    /// An entry on the path from the root to the leaf.
    active: &'static str,
    /// Any other entry.
    other: &'static str,
    /// An open column.
    lane: &'static str,
    /// A branch leaving the column to its left.
    fork: &'static str,
    /// The first of several roots.
    root_fork: &'static str,
}

const UNICODE: Glyphs = Glyphs {
    leaf: "@",
    active: "◆",
    other: "○",
    lane: "│ ",
    fork: "├─╮",
    root_fork: "╭─╮",
};

const ASCII: Glyphs = Glyphs {
    leaf: "@",
    active: "o",
    other: ".",
    lane: "| ",
    fork: "|\\",
    root_fork: "|\\",
};

const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// How the graph is drawn.
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphOptions {
    /// ASCII characters only.
    pub ascii: bool,
    /// Show bookkeeping entries too.
    pub all: bool,
    /// Bold the entries of the active path (ANSI escapes; for terminals only).
    pub bold: bool,
    /// Escape the control characters of the entries' text (ids, kinds, previews, labels).
    pub escape: bool,
}

impl GraphOptions {
    /// Options for stdout: bold when stdout is a terminal and `NO_COLOR` is not set; `escape`
    /// as the command was told (`--escape`).
    pub fn for_stdout(ascii: bool, all: bool, escape: bool) -> GraphOptions {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        GraphOptions {
            ascii,
            all,
            bold: std::io::stdout().is_terminal() && !no_color,
            escape,
        }
    }
}

/// The tree as drawn: which nodes are shown and the children of each shown node.
struct Shown<'a> {
    tree: &'a Tree,
    /// Shown children per node, when some node is hidden (else the tree's own lists).
    children: Option<Vec<Vec<usize>>>,
    /// The shown roots.
    roots: Vec<usize>,
    /// The node drawn as the leaf: the leaf, or its nearest shown ancestor.
    leaf: Option<usize>,
}

impl<'a> Shown<'a> {
    fn new(tree: &'a Tree, all: bool) -> Shown<'a> {
        let shown = |i: usize| all || !tree.nodes[i].bookkeeping;
        let leaf = tree.nodes.iter().position(|n| n.is_leaf);
        if (0..tree.nodes.len()).all(shown) {
            return Shown {
                tree,
                children: None,
                roots: tree.roots.clone(),
                leaf,
            };
        }
        let mut parent: Vec<Option<usize>> = vec![None; tree.nodes.len()];
        for (i, node) in tree.nodes.iter().enumerate() {
            for &c in &node.children {
                parent[c] = Some(i);
            }
        }
        // Pre-order visits a parent before its children, so its nearest shown ancestor is
        // known when the children ask for it.
        let mut nearest: Vec<Option<usize>> = vec![None; tree.nodes.len()];
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); tree.nodes.len()];
        let mut roots = Vec::new();
        for (i, _) in tree.preorder() {
            let up = parent[i].and_then(|p| if shown(p) { Some(p) } else { nearest[p] });
            nearest[i] = up;
            if shown(i) {
                match up {
                    Some(p) => children[p].push(i),
                    None => roots.push(i),
                }
            }
        }
        let leaf = match leaf {
            Some(l) if !shown(l) => nearest[l],
            other => other,
        };
        Shown {
            tree,
            children: Some(children),
            roots,
            leaf,
        }
    }

    fn children(&self, node: usize) -> &[usize] {
        match &self.children {
            Some(c) => &c[node],
            None => &self.tree.nodes[node].children,
        }
    }
}

/// One node waiting to be drawn.
struct Item {
    node: usize,
    column: usize,
    /// The fork line drawn above the node, when it starts a branch.
    fork: Option<&'static str>,
}

/// Pushes `siblings` so that the branches off the active path pop first (in display order,
/// one column right, under a fork line) and the main child pops last, in `column`.
fn push_siblings(
    stack: &mut Vec<Item>,
    tree: &Tree,
    siblings: &[usize],
    column: usize,
    glyphs: &Glyphs,
    roots: bool,
) {
    let Some(last) = siblings.len().checked_sub(1) else {
        return;
    };
    let main = siblings
        .iter()
        .position(|&c| tree.nodes[c].on_active_path)
        .unwrap_or(last);
    stack.push(Item {
        node: siblings[main],
        column,
        fork: None,
    });
    let first_side = usize::from(main == 0);
    for (k, &node) in siblings.iter().enumerate().rev() {
        if k == main {
            continue;
        }
        let fork = if roots && k == first_side {
            glyphs.root_fork
        } else {
            glyphs.fork
        };
        stack.push(Item {
            node,
            column: column + 1,
            fork: Some(fork),
        });
    }
}

/// Draws the tree of `session`: one line per shown entry, `GLYPH SHORTID KIND: PREVIEW
/// [LABEL]` after the lanes; fork lines between.
pub fn render(
    session: &Session,
    tree: &Tree,
    options: GraphOptions,
    out: &mut dyn Write,
) -> CmdResult {
    if tree.nodes.is_empty() {
        writeln!(out, "(empty session)")?;
        return Ok(());
    }
    let glyphs = if options.ascii { &ASCII } else { &UNICODE };
    let short = ShortIds::of_tree(tree);
    let shown = Shown::new(tree, options.all);
    if shown.roots.is_empty() {
        writeln!(
            out,
            "(no entries shown: all {} are bookkeeping entries; --all shows them)",
            tree.nodes.len()
        )?;
    }
    let mut stack: Vec<Item> = Vec::new();
    push_siblings(&mut stack, tree, &shown.roots, 0, glyphs, true);
    let mut line = String::new();
    let mut text = String::new();
    while let Some(item) = stack.pop() {
        let node = &tree.nodes[item.node];
        if let Some(fork) = item.fork {
            line.clear();
            push_lanes(&mut line, glyphs, item.column.saturating_sub(1));
            line.push_str(fork);
            writeln!(out, "{line}")?;
        }
        line.clear();
        push_lanes(&mut line, glyphs, item.column);
        line.push_str(if shown.leaf == Some(item.node) {
            glyphs.leaf
        } else if node.on_active_path {
            glyphs.active
        } else {
            glyphs.other
        });
        line.push(' ');
        let bold = options.bold && node.on_active_path;
        if bold {
            line.push_str(BOLD);
        }
        let (kind, preview) = describe_line(&session.entry_at(node.seq)?.line);
        text.clear();
        text.push_str(short.get(&node.id));
        text.push(' ');
        text.push_str(&kind);
        if !preview.is_empty() {
            text.push_str(": ");
            text.push_str(&preview);
        }
        if let Some(label) = &node.label {
            text.push_str(" [");
            text.push_str(&clip(label));
            text.push(']');
        }
        if options.escape {
            line.push_str(&escape_controls(&text));
        } else {
            line.push_str(&text);
        }
        if bold {
            line.push_str(RESET);
        }
        writeln!(out, "{line}")?;
        push_siblings(
            &mut stack,
            tree,
            shown.children(item.node),
            item.column,
            glyphs,
            false,
        );
    }
    if session.leaf()?.is_none() {
        writeln!(out, "{} root (the leaf is the root position)", glyphs.leaf)?;
    }
    Ok(())
}

fn push_lanes(line: &mut String, glyphs: &Glyphs, columns: usize) {
    for _ in 0..columns {
        line.push_str(glyphs.lane);
    }
}
