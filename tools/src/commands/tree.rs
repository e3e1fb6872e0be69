//! `grove tree`: the session's tree, drawn or as nested JSON (both built without
//! recursion, so depth is no limit).

use std::io::Write;

use grove::{Session, Tree};
use serde_json::Value;

use super::Env;
use crate::error::CmdResult;
use crate::output::{describe_line, ShortIds};

/// Show the tree of a session.
///
/// One line per entry: short id, type or role, a preview, and the label in brackets. A chain
/// of single children stays in one column; branch points indent their children. `@` marks
/// the active leaf, `●` the entries on the path to it, `○` the others.
///
/// With --json: an array of the roots, each {"id", "label"?, "children": [...]}, children in
/// display order (by timestamp).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Print nested JSON instead of the drawing.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.open_session(&args.session)?;
    let tree = session.tree()?;
    if args.json {
        write_tree_json(&tree, env.out)
    } else {
        render(&session, &tree, env.out)
    }
}

/// A step of the JSON walk.
enum Step {
    /// Write the node's opening, then its children; `comma` when it is not the first sibling.
    Open { node: usize, comma: bool },
    /// Close the node's children array and object.
    Close,
}

/// Writes the nested JSON of the tree with an explicit stack. (A `serde_json::Value` of a
/// long conversation would be as deep as the conversation is long, and both its `Serialize`
/// and its `Drop` recurse: a 100,000-entry chain overflows the stack.)
pub fn write_tree_json(tree: &Tree, out: &mut dyn Write) -> CmdResult {
    let mut stack: Vec<Step> = Vec::new();
    push_open(&mut stack, &tree.roots);
    write!(out, "[")?;
    while let Some(step) = stack.pop() {
        match step {
            Step::Close => write!(out, "]}}")?,
            Step::Open { node, comma } => {
                let node = &tree.nodes[node];
                if comma {
                    write!(out, ",")?;
                }
                write!(out, "{{\"id\":{}", json_string(&node.id))?;
                if let Some(label) = &node.label {
                    write!(out, ",\"label\":{}", json_string(label))?;
                }
                write!(out, ",\"children\":[")?;
                stack.push(Step::Close);
                push_open(&mut stack, &node.children);
            }
        }
    }
    writeln!(out, "]")?;
    Ok(())
}

/// Pushes the siblings so that the first is popped first.
fn push_open(stack: &mut Vec<Step>, siblings: &[usize]) {
    for (k, &node) in siblings.iter().enumerate().rev() {
        stack.push(Step::Open { node, comma: k > 0 });
    }
}

fn json_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// One pending line of the drawing.
struct Item {
    node: usize,
    /// The columns drawn before the connector (one per enclosing branch point).
    prefix: String,
    /// `""` in a chain, `"├─"` or `"└─"` under a branch point.
    connector: &'static str,
}

/// Draws the tree: chains in one column, branch points with `├─`/`└─` connectors.
pub fn render(session: &Session, tree: &Tree, out: &mut dyn Write) -> CmdResult {
    if tree.nodes.is_empty() {
        writeln!(out, "(empty session)")?;
        return Ok(());
    }
    let short = ShortIds::of_session(session)?;
    let mut stack: Vec<Item> = Vec::new();
    push_siblings(&mut stack, &tree.roots, "");
    while let Some(item) = stack.pop() {
        let node = &tree.nodes[item.node];
        let marker = if node.is_leaf {
            "@"
        } else if node.on_active_path {
            "●"
        } else {
            "○"
        };
        let (kind, preview) = describe_line(&node.line);
        let label = node
            .label
            .as_ref()
            .map(|l| format!(" [{l}]"))
            .unwrap_or_default();
        writeln!(
            out,
            "{}{}{} {} {}: {}{}",
            item.prefix,
            item.connector,
            marker,
            short.get(&node.id),
            kind,
            preview,
            label
        )?;
        let inner = match item.connector {
            "├─" => format!("{}│ ", item.prefix),
            "└─" => format!("{}  ", item.prefix),
            _ => item.prefix,
        };
        push_siblings(&mut stack, &node.children, &inner);
    }
    if session.leaf()?.is_none() {
        writeln!(out, "@ root (the leaf is the root position)")?;
    }
    Ok(())
}

/// Pushes `children` so that the first is popped first; a single child continues the chain.
fn push_siblings(stack: &mut Vec<Item>, children: &[usize], prefix: &str) {
    let last = children.len().saturating_sub(1);
    for (k, &c) in children.iter().enumerate().rev() {
        let connector = match (children.len(), k == last) {
            (1, _) => "",
            (_, true) => "└─",
            (_, false) => "├─",
        };
        stack.push(Item {
            node: c,
            prefix: prefix.to_owned(),
            connector,
        });
    }
}
