//! The subcommands, one file each; each file's `Args` doc comments are its help text.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Subcommand, ValueEnum};
use grove::{Backend, Durability, GroveError, Session, Store, StoreConfig};

use crate::error::{CmdResult, CommandError};

pub mod append;
pub mod branch;
pub mod context;
pub mod demo;
pub mod export;
pub mod fork;
pub mod gc;
pub mod gen;
pub mod goto;
pub mod import;
pub mod keygen;
pub mod label;
pub mod log;
pub mod ls;
pub mod name;
pub mod navigate;
pub mod path;
pub mod replay;
pub mod salvage;
pub mod seal;
pub mod shard;
pub mod show;
pub mod summarizer_args;
pub mod summary_preview;
pub mod tree;
pub mod undo;
pub mod verify;

/// The backend page cache of a command that only reads the store.
pub const READ_CACHE_BYTES: u64 = 16 << 20;

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    Import(import::Args),
    Export(export::Args),
    Ls(ls::Args),
    Tree(tree::Args),
    Branch(branch::Args),
    Path(path::Args),
    Context(context::Args),
    Show(show::Args),
    Log(log::Args),
    Replay(replay::Args),
    Undo(undo::Args),
    Seal(seal::Args),
    Keygen(keygen::Args),
    SummaryPreview(summary_preview::Args),
    Append(append::Args),
    Goto(goto::Args),
    Navigate(navigate::Args),
    Label(label::Args),
    Name(name::Args),
    Fork(fork::Args),
    Gc(gc::Args),
    Verify(verify::Args),
    Salvage(salvage::Args),
    Serve(crate::serve::Args),
    Shard(shard::Args),
    Gen(gen::Args),
    Demo(demo::Args),
}

/// The key-value backend of a store (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// sled, the default.
    Sled,
    /// redb (the database file `grove.redb` in the store directory).
    Redb,
    /// A table in a PostgreSQL database (`--pg URL`, `--pg-table NAME`); `--store` is not
    /// used.
    Postgres,
}

/// The durability of every write (`--durability`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    /// Not flushed per write: written out by the backend in the background and when the store
    /// is closed at the end of the command; a crash may lose the latest writes, never part of
    /// one.
    None,
    /// Group commit: each write returns after a flush that covers it, shared with the writes
    /// of other threads waiting at the same time (as durable as `sync`).
    Group,
    /// Flushed before each write returns (the default).
    Sync,
}

impl DurabilityArg {
    /// The engine's durability level. (The engine's `Durability` is `#[non_exhaustive]`, so a
    /// new level cannot break this match: add a variant here when one should be offered.)
    pub fn durability(self) -> Durability {
        match self {
            DurabilityArg::None => Durability::None,
            DurabilityArg::Group => Durability::Group,
            DurabilityArg::Sync => Durability::Sync,
        }
    }
}

/// Opens a store ([`Env::store_opener`]).
pub type StoreOpener = Box<dyn Fn() -> CmdResult<Store> + Send + Sync>;

/// `store`, opened to read, unless it lost acknowledged writes and `accept` is false
/// (`--accept-lost-writes`): then `LostWrites`. With `accept`, a warning says what was lost.
fn lost_writes_checked(store: Store, accept: bool) -> CmdResult<Store> {
    if let Some(lost) = store.lost_writes() {
        if !accept {
            return Err(GroveError::LostWrites(lost.clone()).into());
        }
        eprintln!("warning: {lost}");
    }
    Ok(store)
}

/// What every command gets: where the store is, how to open it, and stdout.
pub struct Env<'a> {
    /// The store directory.
    pub store_dir: PathBuf,
    /// The backend the store is opened with.
    pub backend: BackendArg,
    /// `--pg`: the PostgreSQL database of the postgres backend.
    pub pg: Option<String>,
    /// `--pg-table`: the table holding the store in that database.
    pub pg_table: String,
    /// The durability of every write.
    pub durability: DurabilityArg,
    /// Whether a new sled store compresses its pages.
    pub compress: bool,
    /// How long an open waits for another process holding the store.
    pub lock_wait: std::time::Duration,
    /// Free space writes leave on the disk (`None`: the engine's default).
    pub disk_reserve: Option<u64>,
    /// `--cache`: the backend's page cache in bytes (default by command kind).
    pub cache: Option<u64>,
    /// `--payload-threshold` (`None`: the engine's default; 0: no payloads).
    pub payload_threshold: Option<usize>,
    /// Open a store that lost acknowledged writes for writing anyway.
    pub accept_lost_writes: bool,
    /// Whether control characters of stored text are escaped in human output (`--escape`).
    /// `out` already escapes the human output of every command but `tree` and `demo`, whose
    /// graph escapes its own text.
    pub escape: bool,
    /// Standard output (locked).
    pub out: &'a mut dyn Write,
}

impl Env<'_> {
    /// Opens the store to write (creating it when missing) with the chosen backend and
    /// durability.
    /// Its operations are stamped with the actor `cli`.
    pub fn open_store(&self) -> CmdResult<Store> {
        Ok(Store::open_with(self.config(false)?)?.with_actor("cli"))
    }

    /// Opens the existing store only to read it: a missing store is an error, nothing is
    /// written, and a store on a read-only mount opens. A store that lost acknowledged writes
    /// is refused with `LostWrites` (what it serves is not what was acknowledged) unless
    /// `--accept-lost-writes` was given, then read with a warning.
    pub fn read_store(&self) -> CmdResult<Store> {
        lost_writes_checked(self.inspect_store()?, self.accept_lost_writes)
    }

    /// What opens the store again later, without this `Env` (`grove serve`, whose store was
    /// opened to read on a full disk, reopens it for writing once there is room): for writing
    /// as [`Env::open_store`], or (`read_only`) to read as [`Env::read_store`].
    pub fn store_opener(&self, read_only: bool) -> CmdResult<StoreOpener> {
        let config = self.config(read_only)?;
        let accept_lost_writes = self.accept_lost_writes;
        Ok(Box::new(move || {
            let store = Store::open_with(config.clone())?;
            match read_only {
                true => lost_writes_checked(store, accept_lost_writes),
                false => Ok(store.with_actor("cli")),
            }
        }))
    }

    /// Opens the existing store only to read it, as it is: a store that lost acknowledged
    /// writes opens too (`Store::lost_writes` says what), for `verify` and `salvage`.
    pub fn inspect_store(&self) -> CmdResult<Store> {
        Ok(Store::open_with(self.config(true)?)?)
    }

    /// Opens the store to read and the session named by `spec`.
    pub fn read_session(&self, spec: &str) -> CmdResult<(Store, Session)> {
        let store = self.read_store()?;
        let session = store.find_session(spec)?;
        Ok((store, session))
    }

    /// The store's configuration; a command that only reads opens it with a small page cache
    /// ([`READ_CACHE_BYTES`]): it reads what it prints once, so a cache the size of the
    /// output would only add to its memory.
    fn config(&self, read_only: bool) -> CmdResult<StoreConfig> {
        let dir = self.store_dir.clone();
        let backend = match self.backend {
            BackendArg::Sled => Backend::Sled(dir),
            BackendArg::Redb => Backend::Redb(dir),
            BackendArg::Postgres => Backend::Postgres {
                url: self.pg.clone().ok_or_else(|| {
                    CommandError::invalid(
                        "--backend postgres needs the database's URL",
                        "give --pg postgres://USER@HOST:PORT/DB (or set GROVE_PG)",
                    )
                })?,
                table: self.pg_table.clone(),
            },
        };
        let mut config = StoreConfig::new(&self.store_dir)
            .backend(backend)
            .durability(self.durability.durability())
            .compress(self.compress)
            .read_only(read_only)
            .cache_bytes(self.cache.unwrap_or(if read_only {
                READ_CACHE_BYTES
            } else {
                grove::store::DEFAULT_CACHE_BYTES
            }))
            .lock_wait(self.lock_wait)
            .accept_lost_writes(self.accept_lost_writes);
        if let Some(bytes) = self.disk_reserve {
            config = config.disk_reserve(bytes);
        }
        if let Some(bytes) = self.payload_threshold {
            config = config.payload_threshold((bytes > 0).then_some(bytes));
        }
        Ok(config)
    }

    /// Opens the store of a shard cluster (`grove serve --etcd`, `grove shard move`): its
    /// PostgreSQL table, with the global options' durability, cache and limits, and no write
    /// buffer, so that every commit reaches the database when it is made (other nodes read the
    /// same table). Operations are stamped with `actor`.
    pub fn cluster_opener(&self, actor: &str) -> Box<crate::shard::router::Opener> {
        let mut base = StoreConfig::new(&self.store_dir)
            .durability(self.durability.durability())
            .cache_bytes(self.cache.unwrap_or(grove::store::DEFAULT_CACHE_BYTES))
            .lock_wait(self.lock_wait)
            .write_buffer(false);
        if let Some(bytes) = self.payload_threshold {
            base = base.payload_threshold((bytes > 0).then_some(bytes));
        }
        let actor = actor.to_owned();
        Box::new(move |_name, cluster| {
            let config = base.clone().backend(Backend::Postgres {
                url: cluster.url.clone(),
                table: cluster.table.clone(),
            });
            Ok(Store::open_with(config)?.with_actor(&actor))
        })
    }

    /// Opens the store and the session named by `spec` (an id or a unique id prefix).
    pub fn open_session(&self, spec: &str) -> CmdResult<(Store, Session)> {
        let store = self.open_store()?;
        let session = store.find_session(spec)?;
        Ok((store, session))
    }
}

/// Runs one command.
pub fn run(command: Command, env: &mut Env<'_>) -> CmdResult {
    match command {
        Command::Import(a) => import::run(a, env),
        Command::Export(a) => export::run(a, env),
        Command::Ls(a) => ls::run(a, env),
        Command::Tree(a) => tree::run(a, env),
        Command::Branch(a) => branch::run(a, env),
        Command::Path(a) => path::run(a, env),
        Command::Context(a) => context::run(a, env),
        Command::Show(a) => show::run(a, env),
        Command::Log(a) => log::run(a, env),
        Command::Replay(a) => replay::run(a, env),
        Command::Undo(a) => undo::run(a, env),
        Command::Seal(a) => seal::run(a, env),
        Command::Keygen(a) => keygen::run(a, env),
        Command::SummaryPreview(a) => summary_preview::run(a, env),
        Command::Append(a) => append::run(a, env),
        Command::Goto(a) => goto::run(a, env),
        Command::Navigate(a) => navigate::run(a, env),
        Command::Label(a) => label::run(a, env),
        Command::Name(a) => name::run(a, env),
        Command::Fork(a) => fork::run(a, env),
        Command::Gc(a) => gc::run(a, env),
        Command::Verify(a) => verify::run(a, env),
        Command::Salvage(a) => salvage::run(a, env),
        Command::Serve(a) => crate::serve::run(env, &a),
        Command::Shard(a) => shard::run(a, env),
        Command::Gen(a) => gen::run(a, env),
        Command::Demo(a) => demo::run(a, env),
    }
}

/// Resolves an optional `--from` entry spec (`None`: the active leaf). `Ok(None)` means the
/// root position (the spec was `root`, or the leaf is the root position).
pub fn resolve_from(session: &Session, from: Option<&str>) -> CmdResult<Option<String>> {
    resolve_from_at(session, from, &AtArgs::default())
}

/// `--at-op N` / `--at-time TIME`: answer as the session stood after an operation.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AtArgs {
    /// Answer as the session stood right after operation N (`grove log` lists them).
    #[arg(long, value_name = "N", conflicts_with = "at_time")]
    pub at_op: Option<u64>,
    /// Answer as the session stood at TIME (RFC 3339, e.g. 2026-12-03T10:00:00Z): after the
    /// last operation committed then.
    #[arg(long, value_name = "TIME")]
    pub at_time: Option<String>,
}

impl AtArgs {
    /// The point in time asked for, if any.
    pub fn point(&self, session: &Session) -> CmdResult<Option<grove::PointInTime>> {
        Ok(match (self.at_op, &self.at_time) {
            (Some(n), _) => Some(session.at_op(n)?),
            (None, Some(t)) => Some(session.at_time(t)?),
            (None, None) => None,
        })
    }
}

/// The entry a walk starts from: `--from`, else the leaf at `--at-op`/`--at-time`, else the
/// active leaf (`None`: the root position). A context or a branch depends only on the path
/// from its leaf, which later records never change, so the leaf then is all a point in time
/// needs.
pub fn resolve_from_at(
    session: &Session,
    from: Option<&str>,
    at: &AtArgs,
) -> CmdResult<Option<String>> {
    if let Some(point) = at.point(session)? {
        if from.is_some() {
            return Err(CommandError::invalid(
                "--from cannot be combined with --at-op or --at-time",
                "a point in time answers at the leaf the session had then",
            ));
        }
        return Ok(point.leaf);
    }
    match from {
        None => Ok(session.leaf()?),
        Some(spec) => Ok(session.resolve_entry(spec)?),
    }
}

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

/// Names `path` (an input file of the user's) in an engine error that does not name it
/// already; an I/O error on it is a user error, not a storage error.
pub fn in_file(e: GroveError, path: &Path) -> CommandError {
    match e {
        GroveError::Io { path: p, source } if p == path => CommandError::File { path: p, source },
        e @ (GroveError::InvalidEntry { file: Some(_), .. }
        | GroveError::InvalidSession { file: Some(_), .. }
        | GroveError::LineTooLong { file: Some(_), .. }) => CommandError::Grove(e),
        other => CommandError::InFile {
            path: path.to_owned(),
            source: Box::new(CommandError::Grove(other)),
        },
    }
}
