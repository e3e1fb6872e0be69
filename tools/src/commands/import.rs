//! `grove import`: session files into the store, one new session per file: pi's JSONL, or
//! another tool's transcript (Claude Code's, Codex's rollouts) kept line for line.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use grove::codec::foreign::Format;
use grove::codec::reader::{Diagnostic, DEFAULT_MAX_LINE_BYTES};
use grove::{detect_file, Detected, GroveError, ImportOptions, ImportReport, LeafRule, Strictness};

use crate::env::Env;
use crate::error::{CmdResult, CommandError};

/// Import session files; each file becomes a new session.
///
/// pi's session JSONL, or another tool's transcript: Claude Code's
/// (`~/.claude/projects/PROJECT/SESSION.jsonl`, subagents' under `SESSION/subagents/`), Codex's
/// rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) and pi's newer harness files (0.84's
/// lanes, 0.85–0.99's commit log), whose every line is kept byte for byte (`grove export
/// --format` gives the file back) and linked into a tree by the tool's own links. A directory is read for its `.jsonl` files, in name order, at any depth.
///
/// Files are imported in order, each atomically; the first file that fails stops the command
/// (the files before it stay imported). Diagnostics (skipped lines, a torn final line, blank
/// lines, legacy migration, duplicate ids) go to stderr with the file and line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The files (or directories of them) to import.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The files' format: `auto` tells it from each file's first line.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    format: FormatArg,
    /// Skip malformed lines (reported on stderr) instead of failing the import.
    #[arg(long)]
    lenient: bool,
    /// Which rule sets the imported session's leaf: `auto` replays leaf lines (else the last
    /// entry), `last-line` is pi-CLI's view (the last line's entry).
    #[arg(long, value_enum, default_value_t = LeafRuleArg::Auto)]
    leaf_rule: LeafRuleArg,
    /// The longest line accepted, in bytes (default 268435456, 256 MiB): a longer line stops
    /// the import with LineTooLong, naming the file and the line, having read at most this
    /// much of it into memory.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_line_bytes: u64,
    /// Print one JSON object per file: {"session": ID, "entries": N}.
    #[arg(long)]
    json: bool,
    /// Follow the files (and the directories' `.jsonl` files, new ones too) as another tool
    /// writes them: import each one's complete lines, then append the lines it gains, every
    /// `--interval` seconds, until interrupted. Idempotent: the sessions are the cursor, so a
    /// watch started again goes on where the last stopped. Claude Code and Codex transcripts only.
    #[arg(long)]
    watch: bool,
    /// Seconds between two looks at the files, with `--watch`.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 1.0,
        requires = "watch"
    )]
    interval: f64,
    /// Stop after this many looks, with `--watch` (1: catch up once, as a cron job would).
    #[arg(long, value_name = "N", requires = "watch")]
    rounds: Option<u64>,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    Auto,
    Pi,
    ClaudeCode,
    Codex,
    /// pi 0.84's lane-based JSONL.
    PiLanes,
    /// pi 0.85–0.99's commit log.
    PiCommits,
}

/// `--leaf-rule` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum LeafRuleArg {
    Auto,
    LastLine,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    if args.watch {
        return watch(args, env);
    }
    let store = env.open_store()?;
    let options = ImportOptions {
        strictness: if args.lenient {
            Strictness::Lenient
        } else {
            Strictness::Strict
        },
        leaf_rule: match args.leaf_rule {
            LeafRuleArg::Auto => LeafRule::Auto,
            LeafRuleArg::LastLine => LeafRule::LastLine,
        },
        source_path: None,
        max_line_bytes: usize::try_from(args.max_line_bytes).unwrap_or(usize::MAX),
        ..ImportOptions::default()
    };
    for file in &files(&args.files)? {
        let format = match args.format {
            FormatArg::Auto => detect_file(file).map_err(|e| in_file(e, file))?,
            FormatArg::Pi => Detected::Pi,
            FormatArg::ClaudeCode => Detected::Foreign(Format::ClaudeCode),
            FormatArg::Codex => Detected::Foreign(Format::Codex),
            FormatArg::PiLanes => Detected::Foreign(Format::PiLanes),
            FormatArg::PiCommits => Detected::Foreign(Format::PiCommits),
        };
        let report = match format {
            Detected::Pi => store.import_file(file, options.clone()),
            Detected::Foreign(format) => store.import_foreign_file(file, format, options.clone()),
        }
        .map_err(|e| in_file(e, file))?;
        report_diagnostics(file, &report)?;
        if args.json {
            let session = serde_json::Value::String(report.session.clone());
            writeln!(
                env.out,
                r#"{{"session":{session},"entries":{}}}"#,
                report.entries
            )?;
        } else {
            writeln!(
                env.out,
                "{}: session {} ({} entries, leaf {})",
                file.display(),
                report.session,
                report.entries,
                report.leaf.as_deref().unwrap_or("root")
            )?;
        }
    }
    Ok(())
}

/// `--watch`: follows the files, a round every `--interval` seconds. A file that fails (a
/// malformed line, a rewrite) is reported once and left; the others go on.
fn watch(args: Args, env: &mut Env<'_>) -> CmdResult {
    use std::collections::{HashMap, HashSet};

    use crate::follow::Follower;

    if args.lenient
        || matches!(
            args.format,
            FormatArg::Pi | FormatArg::PiLanes | FormatArg::PiCommits
        )
    {
        return Err(CommandError::invalid(
            "--watch follows Claude Code and Codex transcripts, every line kept",
            "leave out --lenient and the pi formats",
        ));
    }
    if !(args.interval.is_finite() && args.interval >= 0.0) {
        return Err(CommandError::invalid(
            "--interval takes a number of seconds",
            "for example --interval 0.5",
        ));
    }
    let store = env.open_store()?;
    let options = ImportOptions {
        max_line_bytes: usize::try_from(args.max_line_bytes).unwrap_or(usize::MAX),
        ..ImportOptions::default()
    };
    let mut followers: HashMap<PathBuf, Follower> = HashMap::new();
    let mut left: HashSet<PathBuf> = HashSet::new();
    let mut round = 0u64;
    loop {
        round += 1;
        for file in files(&args.files)? {
            if left.contains(&file) {
                continue;
            }
            let outcome = match followers.get_mut(&file) {
                Some(follower) => follower.catch_up(&store).map(|added| (added, None)),
                None => {
                    let format = match args.format {
                        FormatArg::ClaudeCode => Some(Format::ClaudeCode),
                        FormatArg::Codex => Some(Format::Codex),
                        _ => match detect_file(&file) {
                            Ok(Detected::Foreign(f @ (Format::ClaudeCode | Format::Codex))) => {
                                Some(f)
                            }
                            // pi's files are followed by pi (or imported once).
                            Ok(Detected::Foreign(_) | Detected::Pi) => None,
                            Err(e) => return Err(in_file(e, &file)),
                        },
                    };
                    let Some(format) = format else {
                        // Not another tool's transcript (yet: an empty file says nothing).
                        continue;
                    };
                    match Follower::start(&store, &file, format, &options) {
                        Ok(None) => continue,
                        Ok(Some((mut follower, imported))) => {
                            let added = follower.catch_up(&store);
                            let session = follower.session.clone();
                            followers.insert(file.clone(), follower);
                            added.map(|added| (imported + added, Some(session)))
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            match outcome {
                Ok((0, None)) => {}
                Ok((added, started)) => {
                    let session = followers
                        .get(&file)
                        .map(|f| f.session.clone())
                        .unwrap_or_default();
                    let total = followers.get(&file).map_or(0, |f| f.lines);
                    let verb = if started.is_some() {
                        "following"
                    } else {
                        "appended to"
                    };
                    if args.json {
                        let id = serde_json::Value::String(session);
                        writeln!(
                            env.out,
                            r#"{{"session":{id},"added":{added},"lines":{total}}}"#
                        )?;
                    } else {
                        writeln!(
                            env.out,
                            "{}: {verb} session {session} (+{added} lines, {total} in all)",
                            file.display()
                        )?;
                    }
                    env.out.flush()?;
                }
                Err(e) => {
                    eprintln!("{}: left: {e}", file.display());
                    followers.remove(&file);
                    left.insert(file);
                }
            }
        }
        if args.rounds.is_some_and(|n| round >= n) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_secs_f64(args.interval));
    }
}

/// The files to import: each file named, and each directory's `.jsonl` files at any depth, in
/// name order.
fn files(named: &[PathBuf]) -> Result<Vec<PathBuf>, CommandError> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CommandError> {
        let read = |source| CommandError::File {
            path: dir.to_owned(),
            source,
        };
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(read)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(read)?;
        found.sort();
        for path in found {
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for path in named {
        if path.is_dir() {
            walk(path, &mut out)?;
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

/// Writes what the import noticed to stderr, one line per problem.
fn report_diagnostics(file: &Path, report: &ImportReport) -> CmdResult {
    let name = file.display();
    let mut err = std::io::stderr().lock();
    let mut blank = Vec::new();
    let mut migrated = 0u64;
    for d in &report.diagnostics {
        match d {
            Diagnostic::BlankLine { line } => blank.push(line.to_string()),
            Diagnostic::Migrated { .. } => migrated += 1,
            Diagnostic::Skipped { error, .. } => writeln!(
                err,
                "{name}:{}: skipped malformed line (byte {}): {}",
                error.line, error.byte_offset, error.reason
            )?,
            Diagnostic::TornTail { error, .. } => writeln!(
                err,
                "{name}:{}: torn final line left out (byte {}): {}",
                error.line, error.byte_offset, error.reason
            )?,
            Diagnostic::MissingFinalNewline { line } => {
                writeln!(err, "{name}:{line}: final line has no newline (kept)")?
            }
        }
    }
    if !blank.is_empty() {
        writeln!(err, "{name}: blank lines ignored: {}", blank.join(", "))?;
    }
    if migrated > 0 {
        writeln!(
            err,
            "{name}: {migrated} lines migrated from a legacy version"
        )?;
    }
    for id in &report.duplicate_ids {
        writeln!(err, "{name}: duplicate id {id} (the last occurrence wins)")?;
    }
    for w in &report.warnings {
        writeln!(err, "{name}: warning: {w}")?;
    }
    Ok(())
}

/// Names `path` (an input file of the user's) in an engine error that does not name it
/// already; an I/O error on it is a user error, not a storage error.
fn in_file(e: GroveError, path: &Path) -> CommandError {
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
