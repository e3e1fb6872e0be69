//! `grove tree`: the session's tree, drawn as a graph (see `graph.rs`) or as nested JSON
//! (both built without recursion, so depth is no limit).

use std::io::{BufWriter, Write};

use grove::Tree;
use serde_json::Value;

use crate::env::Env;
use crate::error::CmdResult;
use crate::graph::{self, GraphOptions};

/// Show the tree of a session as a graph, root first.
///
/// One line per entry: a glyph, the short id, the role (messages) or type, a one-line
/// preview and the label in brackets. `@` is the active leaf, `◆` (ASCII `o`) an entry on
/// the path to it, `○` (ASCII `.`) any other entry; on a terminal the active path is also
/// bold. The active path runs down the first column; at a branch point (`├─╮`) the other
/// branches are drawn first, one column to the right, then the active path continues.
///
/// Bookkeeping entries (label, session_info, model, thinking-level and tools changes,
/// custom) are hidden unless --all; their children hang from the nearest shown ancestor.
///
/// With --json: an array of the roots, each {"id", "label"?, "children": [...]}, children in
/// display order (by timestamp), every entry included.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Show bookkeeping entries too.
    #[arg(long)]
    all: bool,
    /// Draw with ASCII characters only.
    #[arg(long)]
    ascii: bool,
    /// Print nested JSON instead of the drawing.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    at: super::at::AtArgs,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    let tree = match args.at.point(&session)? {
        // The entries, labels and active path as they were then.
        Some(point) => session.tree_as_of(&point)?,
        None => session.tree()?,
    };
    let mut out = BufWriter::new(&mut *env.out);
    if args.json {
        write_tree_json(&tree, &mut out)?;
    } else {
        let options = GraphOptions::for_stdout(args.ascii, args.all, env.escape);
        graph::render(&session, &tree, options, &mut out)?;
    }
    out.flush()?;
    Ok(())
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
