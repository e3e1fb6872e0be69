//! `grove export`: a session as pi v3 JSONL, to stdout or to a file (`output_file.rs`).

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use grove::{ExportReport, Flavor, Session};

use super::Env;
use crate::error::{CmdResult, CommandError};
use crate::output_file::write_output;

/// Export a session as pi session JSONL.
///
/// `harness` writes every record in log order, leaf lines included: importing the output
/// again gives the same session, byte for byte. `cli` writes no leaf lines and puts the
/// active leaf last, as pi's SessionManager expects, or fails when that would change what
/// pi shows.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// The output flavor.
    #[arg(long, value_enum, default_value_t = FlavorArg::Harness)]
    flavor: FlavorArg,
    /// Write to FILE instead of stdout. A regular file is replaced through a temporary file
    /// in the same directory, synced and renamed into place, so it is never left partly
    /// written, and keeps its permissions; a symbolic link is followed (it stays a link); a
    /// file with several hard links is rewritten in place once the export is complete; a
    /// device or FIFO is written directly.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

/// `--flavor` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum FlavorArg {
    Harness,
    Cli,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    let flavor = match args.flavor {
        FlavorArg::Harness => Flavor::Harness,
        FlavorArg::Cli => Flavor::Cli,
    };
    let report = match &args.output {
        None => session.export(flavor, &mut *env.out)?,
        Some(path) => export_to_file(&session, flavor, path)?,
    };
    if let Some(id) = &report.relocated {
        eprintln!("note: entry {id} (the active leaf) was moved to the end");
    }
    if let Some(path) = &args.output {
        eprintln!("exported {} lines to {}", report.lines, path.display());
    }
    Ok(())
}

/// Writes the export to `path` (see `output_file` for how each kind of target is written).
fn export_to_file(session: &Session, flavor: Flavor, path: &Path) -> CmdResult<ExportReport> {
    write_output(path, |out| {
        session.export(flavor, out).map_err(|e| match e {
            grove::GroveError::Io { source, .. } => CommandError::File {
                path: path.to_owned(),
                source,
            },
            other => CommandError::Grove(other),
        })
    })
}
