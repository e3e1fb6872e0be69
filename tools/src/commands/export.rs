//! `grove export`: a session as pi v3 JSONL, to stdout or atomically to a file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use grove::{ExportReport, Flavor, Session};

use super::Env;
use crate::error::{CmdResult, CommandError};

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
    /// Write to FILE instead of stdout: through a temporary file in the same directory,
    /// synced and renamed into place, so FILE is never left partly written.
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
    let (_store, session) = env.open_session(&args.session)?;
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

/// Writes the export to a temporary file next to `path`, syncs it and renames it over
/// `path`, then syncs the directory. On any failure the temporary file is removed.
fn export_to_file(session: &Session, flavor: Flavor, path: &Path) -> CmdResult<ExportReport> {
    let file_err = |source| CommandError::File {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".grove-export-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(file_err)?;
    let mut writer = BufWriter::new(tmp.as_file());
    let report = session.export(flavor, &mut writer).map_err(|e| match e {
        grove::GroveError::Io { source, .. } => file_err(source),
        other => CommandError::Grove(other),
    })?;
    writer.flush().map_err(file_err)?;
    drop(writer);
    tmp.as_file().sync_all().map_err(file_err)?;
    tmp.persist(path).map_err(|e| file_err(e.error))?;
    sync_dir(&dir).map_err(file_err)?;
    Ok(report)
}

/// Makes a rename in `dir` durable (a no-op where directories cannot be opened).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    if cfg!(unix) {
        File::open(dir)?.sync_all()
    } else {
        Ok(())
    }
}
