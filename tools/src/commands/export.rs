//! `grove export`: a session as pi v3 JSONL, an audit file or an HTML page (`page/`), to
//! stdout or to a file (`output_file.rs`).

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use grove::codec::foreign::Format;
use grove::{ExportReport, Flavor, Session};

use crate::env::Env;
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
    /// The output flavor (of pi's JSONL).
    #[arg(long, value_enum, default_value_t = FlavorArg::Harness)]
    flavor: FlavorArg,
    /// The output format: pi's JSONL (in `--flavor`), or, for a session imported from another
    /// tool's transcript, that file back, byte for byte (`claude-code`, `codex`, and pi's newer
    /// `pi-lanes` and `pi-commits`).
    #[arg(long, value_enum, default_value_t = FormatArg::Pi)]
    format: FormatArg,
    /// Write to FILE instead of stdout. A regular file is replaced through a temporary file
    /// in the same directory, synced and renamed into place, so it is never left partly
    /// written, and keeps its permissions; a symbolic link is followed (it stays a link); a
    /// file with several hard links is rewritten in place once the export is complete; a
    /// device or FIFO is written directly.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write an audit file instead: the session's records, its operation log, every digest
    /// and its seal, in one self-contained file that `grove verify --file` checks without a
    /// store (docs/format.md, "Audit file").
    #[arg(long, conflicts_with_all = ["flavor", "format"])]
    audit: bool,
    /// Sign the audit file with the ed25519 key in KEYFILE (64 hex digits; `grove keygen`
    /// makes one).
    #[arg(long, value_name = "KEYFILE", requires = "audit")]
    sign: Option<PathBuf>,
    /// Write one self-contained HTML page instead: the session's tree (the active path
    /// marked, labels, branch summaries and compactions), each entry's content and the
    /// context at any entry, with no network access (docs/cli.md).
    #[arg(long, conflicts_with_all = ["flavor", "format", "audit"])]
    html: bool,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    Pi,
    ClaudeCode,
    Codex,
    PiLanes,
    PiCommits,
}

/// `--flavor` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum FlavorArg {
    Harness,
    Cli,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    if args.audit {
        return export_audit(&session, &args, env);
    }
    if args.html {
        return export_html(&session, &args, env);
    }
    let flavor = match (args.format, args.flavor) {
        (FormatArg::ClaudeCode, _) => Flavor::Foreign(Format::ClaudeCode),
        (FormatArg::Codex, _) => Flavor::Foreign(Format::Codex),
        (FormatArg::PiLanes, _) => Flavor::Foreign(Format::PiLanes),
        (FormatArg::PiCommits, _) => Flavor::Foreign(Format::PiCommits),
        (FormatArg::Pi, FlavorArg::Harness) => Flavor::Harness,
        (FormatArg::Pi, FlavorArg::Cli) => Flavor::Cli,
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

/// `--html`: the page, to stdout or to `-o FILE`.
fn export_html(session: &Session, args: &Args, env: &mut Env<'_>) -> CmdResult {
    let report = match &args.output {
        None => crate::page::write_session_page(session, &mut *env.out)?,
        Some(path) => write_output(path, |out| {
            crate::page::write_session_page(session, out).map_err(|e| match e {
                CommandError::Stdout(source) => CommandError::File {
                    path: path.to_owned(),
                    source,
                },
                other => other,
            })
        })?,
    };
    if let Some(path) = &args.output {
        eprintln!(
            "exported {} entries as HTML to {}",
            report.entries,
            path.display()
        );
    }
    Ok(())
}

/// `--audit`: the audit file, to stdout or to `-o FILE`.
fn export_audit(session: &Session, args: &Args, env: &mut Env<'_>) -> CmdResult {
    let key = match &args.sign {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| CommandError::File {
                path: path.clone(),
                source,
            })?;
            Some(grove::AuditKey::parse(&text).map_err(|e| {
                CommandError::invalid(
                    format!("{}: {e}", path.display()),
                    "`grove keygen KEYFILE` writes a key file",
                )
            })?)
        }
    };
    let seal = match &args.output {
        None => session.export_audit(&mut *env.out, key.as_ref())?,
        Some(path) => write_output(path, |out| {
            session
                .export_audit(out, key.as_ref())
                .map_err(|e| match e {
                    grove::GroveError::Io { source, .. } => CommandError::File {
                        path: path.to_owned(),
                        source,
                    },
                    other => CommandError::Grove(other),
                })
        })?,
    };
    if let Some(path) = &args.output {
        eprintln!("audit file {} written, seal {seal}", path.display());
    }
    Ok(())
}
