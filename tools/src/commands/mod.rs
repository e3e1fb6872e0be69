//! The subcommands, one file each; each file's `Args` doc comments are its help text. This
//! file declares them and hands each parsed [`Command`] to its file ([`run`]); `grove serve`
//! is the server's own room (`crate::serve`). What several subcommands share sits in sibling
//! files that import nothing of this one: the start of a walk (`at.rs`) and the printing of
//! entries (`print.rs`); the store they open comes from `crate::env`.

use clap::Subcommand;

use crate::env::Env;
use crate::error::CmdResult;

pub mod append;
pub mod at;
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
pub mod print;
pub mod redact;
pub mod replay;
pub mod retain;
pub mod salvage;
pub mod seal;
#[cfg(feature = "search")]
pub mod search;
#[cfg(feature = "postgres")]
pub mod shard;
pub mod show;
pub mod summary_preview;
pub mod tree;
pub mod undo;
pub mod verify;

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
    Redact(redact::Args),
    Retain(retain::Args),
    Gc(gc::Args),
    Verify(verify::Args),
    #[cfg(feature = "search")]
    Search(search::Args),
    Salvage(salvage::Args),
    Serve(crate::serve::Args),
    #[cfg(feature = "postgres")]
    Shard(shard::Args),
    Gen(gen::Args),
    Demo(demo::Args),
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
        Command::Redact(a) => redact::run(a, env),
        Command::Retain(a) => retain::run(a, env),
        Command::Gc(a) => gc::run(a, env),
        Command::Verify(a) => verify::run(a, env),
        #[cfg(feature = "search")]
        Command::Search(a) => search::run(a, env),
        Command::Salvage(a) => salvage::run(a, env),
        Command::Serve(a) => crate::serve::run(env, &a),
        #[cfg(feature = "postgres")]
        Command::Shard(a) => shard::run(a, env),
        Command::Gen(a) => gen::run(a, env),
        Command::Demo(a) => demo::run(a, env),
    }
}
