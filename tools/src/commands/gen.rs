//! `grove gen`: generate a seeded synthetic session (pi v3 JSONL), for benchmarks and tests.

use std::path::PathBuf;

use grove_codec::gen::{generate_to, GenSpec, Payload};

use crate::env::Env;
use crate::error::{CmdResult, CommandError};

/// Generate a synthetic pi session: linear, or bushy with branch points; small or realistic
/// payloads (messages 200 B–20 KB, tool results up to 100 KB, occasional base64 images);
/// optional periodic compactions. The same seed gives the same bytes.
///
/// Writes pi JSONL to stdout or `-o FILE`; with `--import` it goes straight into the store.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of entries.
    #[arg(long, default_value_t = 1000)]
    entries: usize,
    /// Number of branch points (0: a linear session).
    #[arg(long, default_value_t = 0)]
    branches: usize,
    /// `small` or `realistic`.
    #[arg(long, default_value = "small")]
    payload: String,
    /// Write a compaction every K entries.
    #[arg(long, value_name = "K")]
    compaction_every: Option<usize>,
    /// Aim the last branch so that the active path has about this many entries.
    #[arg(long, value_name = "LEN")]
    active_path: Option<usize>,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the JSONL here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Import the session into the store (prints {"session", "entries"} with --json).
    #[arg(long)]
    import: bool,
    /// With --import: print {"session": ID, "entries": N}.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let payload: Payload = args
        .payload
        .parse()
        .map_err(|message| CommandError::InvalidInput {
            message,
            hint: Some("use --payload small or --payload realistic".into()),
        })?;
    let mut spec = if args.branches == 0 {
        GenSpec::linear(args.entries, args.seed)
    } else {
        GenSpec::bushy(args.entries, args.branches, args.seed)
    }
    .payload(payload);
    if let Some(k) = args.compaction_every {
        spec = spec.compaction_every(k);
    }
    if let Some(len) = args.active_path {
        spec = spec.active_path(len);
    }
    if args.import {
        let mut bytes = Vec::new();
        generate_to(&spec, &mut bytes)?;
        let store = env.open_store()?;
        let report = store.import_reader(std::io::Cursor::new(bytes), Default::default())?;
        if args.json {
            writeln!(
                env.out,
                "{}",
                serde_json::json!({ "session": report.session, "entries": report.entries })
            )?;
        } else {
            writeln!(
                env.out,
                "imported {} ({} entries)",
                report.session, report.entries
            )?;
        }
        return Ok(());
    }
    match &args.output {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|source| CommandError::File {
                path: path.clone(),
                source,
            })?;
            let mut w = std::io::BufWriter::new(file);
            generate_to(&spec, &mut w).map_err(|source| CommandError::File {
                path: path.clone(),
                source,
            })?;
        }
        None => {
            generate_to(&spec, env.out)?;
        }
    }
    Ok(())
}
