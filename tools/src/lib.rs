//! grove-tools: the `grove` command-line tool of the grove session store, as a library that
//! its binary (`main.rs`) runs, and the server's routes served in the caller's process
//! ([`embed`], for the native Node and Python packages; [`js_text`], whole answers as the text
//! node takes in cheapest).
//!
//! [`main`] parses the command line, finds the store, runs one subcommand and maps its error
//! to an exit code (see `error.rs`). docs/cli.md describes every subcommand.
#![forbid(unsafe_code)]

mod commands;
mod env;
mod error;
mod escape;
#[cfg(feature = "postgres")]
mod etcd_args;
mod exit;
mod follow;
mod graph;
mod listing;
mod output;
mod output_file;
mod page;
mod remote;
mod retain;
#[cfg(feature = "search")]
mod search;
mod serve;
pub use serve::embed;
pub use serve::js_text;
#[cfg(feature = "postgres")]
mod shard;
mod storage_hint;
mod summarizer_args;
mod when;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::commands::Command;
use crate::env::{BackendArg, DurabilityArg, Env};
use crate::error::{CmdResult, CommandError, Report};
use crate::escape::{EscapeArg, Escaping};

/// grove: a store for branching AI-agent sessions, with pi session JSONL import and export.
///
/// Sessions and entries are named by their id or any unique prefix of it. Entry arguments
/// also accept `@` (the active leaf), `@-` (its parent) and `root` (the root position).
#[derive(Debug, Parser)]
#[command(name = "grove", version, propagate_version = true)]
struct Cli {
    /// The store directory. Default: the platform data directory's grove/store (for
    /// example ~/.local/share/grove/store).
    #[arg(long, global = true, value_name = "DIR", env = "GROVE_STORE")]
    store: Option<PathBuf>,

    /// The key-value backend of the store. A store directory holds one backend's database;
    /// opening it with the other backend is an error.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = BackendArg::Sled,
        env = "GROVE_BACKEND"
    )]
    backend: BackendArg,

    /// The PostgreSQL database of `--backend postgres`: a URL as libpq takes it
    /// (`postgres://USER@HOST:PORT/DB`). Each grove process keeps a few connections.
    #[cfg(feature = "postgres")]
    #[arg(long, global = true, value_name = "URL", env = "GROVE_PG")]
    pg: Option<String>,

    /// The table holding the store in that database (made when missing): a plain lowercase
    /// SQL identifier, so several stores can share one database.
    #[cfg(feature = "postgres")]
    #[arg(
        long,
        global = true,
        value_name = "NAME",
        default_value = grove::kv::DEFAULT_TABLE,
        env = "GROVE_PG_TABLE"
    )]
    pg_table: String,

    /// How durable each write is when it returns: `sync` flushes it to disk; `none` leaves it
    /// to the backend and to the close at the end of the command (a crash may lose it).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = DurabilityArg::Sync,
        env = "GROVE_DURABILITY"
    )]
    durability: DurabilityArg,

    /// Create the store with zstd page compression (sled only): about half the bytes on disk,
    /// several times slower appends and imports — for archives and audit stores. Applies when
    /// the store is created; an existing store keeps its own setting.
    #[arg(long, global = true, env = "GROVE_COMPRESS")]
    compress: bool,

    /// How long to wait, in seconds, for another process that holds the store (each store
    /// belongs to one process at a time) before failing; 0, the default, fails at once and
    /// names the process.
    #[arg(
        long,
        global = true,
        value_name = "SECONDS",
        default_value_t = 0.0,
        env = "GROVE_LOCK_WAIT"
    )]
    lock_wait: f64,

    /// Free space, in bytes, that writes leave on the store's disk: a write that would eat
    /// into it fails with DiskFull before anything is written. Default 4 MiB.
    #[arg(long, global = true, value_name = "BYTES", env = "GROVE_DISK_RESERVE")]
    disk_reserve: Option<u64>,

    /// The backend's page cache, in bytes. Default 256 MiB for a command that writes (and
    /// `grove serve`), 16 MiB for one that only reads.
    #[arg(long, global = true, value_name = "BYTES", env = "GROVE_CACHE")]
    cache: Option<u64>,

    /// String values of at least this many bytes (base64 images, large tool outputs) are
    /// stored once, by their blake3, however many entries and sessions hold them; 0 stores
    /// every line whole. Default 4096. Applies to what is written from then on.
    #[arg(
        long,
        global = true,
        value_name = "BYTES",
        env = "GROVE_PAYLOAD_THRESHOLD"
    )]
    payload_threshold: Option<usize>,

    /// Open for writing a store that lost acknowledged writes (grove refuses it otherwise and
    /// says what was lost), taking what it holds now as its state. Copy what it holds first
    /// (`grove salvage`).
    #[arg(long, global = true)]
    accept_lost_writes: bool,

    /// Escape control characters of stored text (message text, names, labels, ids) in human
    /// output, so that text holding terminal escape sequences prints as `\u{1b}[31m` instead
    /// of acting on the terminal: `auto` when stdout is a terminal, `always`, or `never`.
    /// JSON and JSONL output is never changed.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = EscapeArg::Auto,
        env = "GROVE_ESCAPE"
    )]
    escape: EscapeArg,

    #[command(subcommand)]
    command: Command,
}

fn default_store() -> CmdResult<PathBuf> {
    let data = dirs::data_dir().ok_or(CommandError::NoDataDir)?;
    Ok(data.join("grove").join("store"))
}

/// Runs the command; `json` says whether it was given `--json`.
fn run(cli: Cli, json: bool) -> CmdResult {
    let store_dir = match cli.store {
        Some(dir) => dir,
        None => default_store()?,
    };
    let stdout = std::io::stdout();
    let escape = cli.escape.enabled(stdout.is_terminal());
    let mut lock = stdout.lock();
    // Human output is escaped as a whole; JSON and the JSONL of `export` and `gen` never are,
    // and the graph of `tree` and `demo` escapes its text itself (it writes its own bold
    // codes).
    let graph_or_jsonl = matches!(
        cli.command,
        Command::Export(_) | Command::Gen(_) | Command::Tree(_) | Command::Demo(_)
    );
    let mut escaping;
    let out: &mut dyn Write = if escape && !json && !graph_or_jsonl {
        escaping = Escaping::new(&mut lock);
        &mut escaping
    } else {
        &mut lock
    };
    let mut env = Env {
        store_dir,
        backend: cli.backend,
        #[cfg(feature = "postgres")]
        pg: cli.pg,
        #[cfg(feature = "postgres")]
        pg_table: cli.pg_table,
        durability: cli.durability,
        compress: cli.compress,
        lock_wait: std::time::Duration::try_from_secs_f64(cli.lock_wait).map_err(|_| {
            CommandError::invalid(
                format!("--lock-wait {} is not a number of seconds", cli.lock_wait),
                "give a duration in seconds, such as 0, 2 or 0.5",
            )
        })?,
        disk_reserve: cli.disk_reserve,
        cache: cli.cache,
        payload_threshold: cli.payload_threshold,
        accept_lost_writes: cli.accept_lost_writes,
        escape,
        out,
    };
    commands::run(cli.command, &mut env)?;
    env.out.flush()?;
    Ok(())
}

/// The `grove` command: parses the process's arguments, runs the subcommand, and returns its
/// exit code.
pub fn main() -> ExitCode {
    // A backend that panics on a damaged page returns an error the command reports.
    grove::kv::quiet_backend_panics();
    let matches = Cli::command().get_matches();
    let cli =
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut Cli::command()).exit());
    // Every subcommand's `--json` flag has the id "json".
    let json = matches
        .subcommand()
        .and_then(|(_, sub)| sub.try_get_one::<bool>("json").ok().flatten().copied())
        .unwrap_or(false);
    // An error can quote stored or given text (an id, a name, a line): escaped as stdout's
    // human output is, but by whether stderr is a terminal.
    let escape_errors = cli.escape.enabled(std::io::stderr().is_terminal());
    match run(cli, json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            let report = Report(&e).to_string();
            if escape_errors {
                eprintln!("{}", escape::escape_controls(&report));
            } else {
                eprintln!("{report}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own check of every command's arguments (names a `conflicts_with` or `requires`
    /// points at, groups, defaults): run in each build of the features, since an option a
    /// feature leaves out must not be named by one that stays.
    #[test]
    fn arguments_are_consistent() {
        super::Cli::command().debug_assert();
    }
}
