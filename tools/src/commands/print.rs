//! Printing the entries of a walk or a list, one line each (short id, type, preview) or as
//! the stored lines in one JSON array, for `grove path`, `grove branch` and
//! `grove summary-preview`. It calls the engine's public API (`grove::Session`), `output`
//! for short ids and previews, and `error`.

use std::io::Write;

use grove::{GroveError, Session};

use crate::error::CmdResult;

/// One line per entry: short id, type, preview.
pub fn print_entries(
    out: &mut dyn Write,
    session: &Session,
    entries: &[grove::Entry],
) -> CmdResult {
    let short = crate::output::ShortIds::of_session(session)?;
    for e in entries {
        let (kind, preview) = crate::output::describe_line(&e.line);
        writeln!(out, "{:<8} {:<14} {}", short.get(e.id()), kind, preview)?;
    }
    Ok(())
}

/// Which walk [`print_walk`] prints.
#[derive(Debug, Clone, Copy)]
pub enum Walk {
    /// `path_to_root`.
    Path,
    /// `branch` (harness `getBranch`).
    Branch,
}

/// Prints the entries of a walk ending at `from` (`None`: the root position, no entries) as
/// it reads them: one line per entry (short id, type, preview), or with `json` the stored
/// lines untouched as one JSON array.
pub fn print_walk(
    out: &mut dyn Write,
    session: &Session,
    json: bool,
    walk: Walk,
    from: Option<&str>,
) -> CmdResult {
    let io = |source| GroveError::Io {
        path: "<stdout>".into(),
        source,
    };
    let short = match json {
        true => None,
        false => Some(crate::output::ShortIds::of_session(session)?),
    };
    let mut first = true;
    let mut each = |e: grove::Entry| -> grove::Result<()> {
        match &short {
            None => {
                out.write_all(if first { b"[" } else { b"," }).map_err(io)?;
                out.write_all(e.line.as_bytes()).map_err(io)?;
            }
            Some(short) => {
                let (kind, preview) = crate::output::describe_line(&e.line);
                writeln!(out, "{:<8} {:<14} {}", short.get(e.id()), kind, preview).map_err(io)?;
            }
        }
        first = false;
        Ok(())
    };
    match (walk, from) {
        (_, None) => {}
        (Walk::Path, Some(id)) => session.for_each_on_path(Some(id), &mut each)?,
        (Walk::Branch, Some(id)) => session.for_each_on_branch(Some(id), &mut each)?,
    }
    if json {
        if first {
            write!(out, "[")?;
        }
        writeln!(out, "]")?;
    }
    Ok(())
}
