//! grove-crash-child: the process the crash harness kills.
//!
//! It opens the store with sync durability and works on it from several threads until it
//! is killed (or its time budget runs out), printing an intent line before and an ack line
//! after every operation (protocol in `grove_tests::crash::protocol`), flushed each time.
//!
//! ```text
//! grove-crash-child --store DIR --mode append|move|fork|import|buffered --cycle N --seed S
//!                   [--threads T] [--import-file FILE] [--max-seconds S] [--backend sled|redb]
//! ```
#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use grove::codec::{EntryKind, Role};
use grove::{
    AppendOptions, CreateSession, ForkMode, ForkOptions, ForkPosition, ImportOptions, NewEntry,
    Session, Store,
};
use grove_tests::crash::protocol::{
    assistant_message, emit, header_line, random_text, user_message, Event, LogHash, Rng,
};

struct Args {
    store: PathBuf,
    mode: String,
    cycle: u64,
    seed: u64,
    threads: Option<usize>,
    import_file: Option<PathBuf>,
    max_seconds: u64,
    backend: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        store: PathBuf::new(),
        mode: String::new(),
        cycle: 0,
        seed: 0,
        threads: None,
        import_file: None,
        max_seconds: 30,
        backend: "sled".to_owned(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--store" => args.store = PathBuf::from(value),
            "--mode" => args.mode = value,
            "--cycle" => args.cycle = num(&value)?,
            "--seed" => args.seed = num(&value)?,
            "--threads" => args.threads = Some(num(&value)? as usize),
            "--import-file" => args.import_file = Some(PathBuf::from(value)),
            "--max-seconds" => args.max_seconds = num(&value)?,
            "--backend" => args.backend = value,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.store.as_os_str().is_empty() || args.mode.is_empty() {
        return Err("--store and --mode are required".into());
    }
    Ok(args)
}

/// Reports the failure and ends the process at once (other threads stop with it).
fn fail(text: String) -> ! {
    let _ = emit(&Event::Error { text });
    std::process::exit(2)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => fail(e),
    };
    if let Err(e) = run(&args) {
        fail(e);
    }
}

struct Ctx {
    store: Store,
    cycle: u64,
    seed: u64,
    deadline: Instant,
    import_file: Option<PathBuf>,
    appends: Option<AppendPlan>,
}

impl Ctx {
    fn running(&self) -> bool {
        Instant::now() < self.deadline
    }

    /// The harness's sessions of `prefix`, oldest first (ids carry the zero-padded cycle).
    fn sessions_with(&self, prefix: &str) -> Result<Vec<(String, u64)>, String> {
        let mut out: Vec<(String, u64)> = self
            .store
            .sessions()
            .map_err(|e| format!("sessions: {e}"))?
            .into_iter()
            .filter(|s| s.id.starts_with(prefix))
            .map(|s| (s.id, s.entries))
            .collect();
        out.sort();
        Ok(out)
    }

    fn open(&self, id: &str) -> Result<Session, String> {
        self.store
            .session(id)
            .map_err(|e| format!("session {id}: {e}"))
    }

    fn create(&self, id: &str) -> Result<Session, String> {
        emit(&Event::CreateIntent {
            session: id.to_owned(),
        })?;
        let s = self
            .store
            .create_session(CreateSession {
                id: Some(id.to_owned()),
                cwd: "/crash".into(),
                ..CreateSession::default()
            })
            .map_err(|e| format!("create {id}: {e}"))?;
        emit(&Event::CreateAck {
            session: id.to_owned(),
        })?;
        Ok(s)
    }

    fn delete(&self, id: &str) -> Result<(), String> {
        emit(&Event::DeleteIntent {
            session: id.to_owned(),
        })?;
        self.store
            .delete_session(id)
            .map_err(|e| format!("delete {id}: {e}"))?;
        emit(&Event::DeleteAck {
            session: id.to_owned(),
        })
    }
}

fn message(rng: &mut Rng) -> Result<NewEntry, String> {
    let len = rng.range(8, 400) as usize;
    let text = random_text(rng, len);
    let message = if rng.chance(50) {
        user_message(&text)?
    } else {
        assistant_message(&text)?
    };
    Ok(NewEntry::Message { message })
}

fn head_len(s: &Session) -> Result<u64, String> {
    s.head()
        .map(|h| h.next_seq)
        .map_err(|e| format!("head of {}: {e}", s.id()))
}

/// One append with a chosen id; the ack carries the stored line, read back.
fn append(s: &Session, id: String, rng: &mut Rng) -> Result<(), String> {
    let entry = message(rng)?;
    emit(&Event::AppendIntent {
        session: s.id().to_owned(),
        id: id.clone(),
    })?;
    let got = s
        .append_with(
            entry,
            AppendOptions {
                id: Some(id.clone()),
                ..AppendOptions::default()
            },
        )
        .map_err(|e| format!("append {}/{id}: {e}", s.id()))?;
    if got != id {
        return Err(format!("append returned id {got}, asked for {id}"));
    }
    let line = s
        .entry(&id)
        .map_err(|e| format!("read back {}/{id}: {e}", s.id()))?
        .line;
    let len = head_len(s)?;
    emit(&Event::AppendAck {
        session: s.id().to_owned(),
        id,
        len,
        line,
    })
}

fn move_leaf(s: &Session, target: Option<String>) -> Result<(), String> {
    emit(&Event::MoveIntent {
        session: s.id().to_owned(),
        target: target.clone(),
    })?;
    s.move_to(target.as_deref())
        .map_err(|e| format!("move {} to {target:?}: {e}", s.id()))?;
    let len = head_len(s)?;
    emit(&Event::MoveAck {
        session: s.id().to_owned(),
        target,
        len,
    })
}

/// The served context at `leaf` (`None`: the active leaf; only for single-writer sessions)
/// must equal the one built from scratch (views are written without flush, so a kill
/// leaves them in any state).
fn check_context(s: &Session, leaf: Option<&str>) -> Result<(), String> {
    let served = match leaf {
        None => s.build_context(),
        Some(_) => s.build_context_with(leaf, grove::ContextOptions::grove()),
    }
    .map_err(|e| format!("context of {}: {e}", s.id()))?;
    let scratch = s
        .build_context_from_scratch(leaf, grove::ContextOptions::grove())
        .map_err(|e| format!("context of {}: {e}", s.id()))?;
    if served != scratch {
        return Err(format!(
            "context of {} differs from the one built from scratch",
            s.id()
        ));
    }
    Ok(())
}

/// A thread's work loop: the context and the thread number.
type Worker = fn(&Ctx, usize) -> Result<(), String>;

fn run(args: &Args) -> Result<(), String> {
    if args.mode == "buffered" {
        return buffered_appends(args);
    }
    emit(&Event::Starting)?;
    let started = Instant::now();
    let store = grove_tests::crash::open_backend(&args.store, &args.backend)
        .map_err(|e| format!("open {}: {e}", args.store.display()))?;
    emit(&Event::Opened {
        ms: started.elapsed().as_millis() as u64,
    })?;
    let mut ctx = Ctx {
        store,
        cycle: args.cycle,
        seed: args.seed,
        deadline: Instant::now() + Duration::from_secs(args.max_seconds),
        import_file: args.import_file.clone(),
        appends: None,
    };
    let (threads, work): (usize, Worker) = match args.mode.as_str() {
        "append" => {
            ctx.appends = Some(plan_appends(&ctx)?);
            (4, append_worker)
        }
        "move" => (3, move_worker),
        "fork" => (2, fork_worker),
        "import" => (2, import_worker),
        m => return Err(format!("unknown mode {m}")),
    };
    let threads = args.threads.unwrap_or(threads).max(1);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let ctx = &ctx;
            scope.spawn(move || {
                if let Err(e) = work(ctx, t) {
                    fail(e);
                }
            });
        }
    });
    emit(&Event::End)
}

/// Mode `buffered`: appends "entry N" to the session `buffered` with `Durability::None` (the
/// write buffer) until killed — a single append, or at every N divisible by 10 one
/// `append_many` of entries N, N+1, N+2 — with no protocol lines. What may survive a kill is a
/// prefix of the entries, never part of an `append_many`
/// (`tests/tests/crash/mod.rs`, `buffered_appends_survive_a_kill_as_a_prefix`).
fn buffered_appends(args: &Args) -> Result<(), String> {
    let store =
        grove_tests::crash::open_backend_with(&args.store, &args.backend, grove::Durability::None)?;
    let session = match store.session(BUFFERED_SESSION) {
        Ok(s) => s,
        Err(grove::GroveError::SessionNotFound(_)) => store
            .create_session(CreateSession {
                id: Some(BUFFERED_SESSION.into()),
                cwd: "/buffered".into(),
                ..Default::default()
            })
            .map_err(|e| e.to_string())?,
        Err(e) => return Err(e.to_string()),
    };
    let entry = |n: u64| -> Result<NewEntry, String> {
        Ok(NewEntry::Message {
            message: user_message(&format!("entry {n}"))?,
        })
    };
    let mut n = session.entries().count() as u64;
    let deadline = Instant::now() + Duration::from_secs(args.max_seconds);
    while Instant::now() < deadline {
        if n.is_multiple_of(10) {
            let group = [entry(n)?, entry(n + 1)?, entry(n + 2)?];
            session.append_many(&group).map_err(|e| e.to_string())?;
            n += 3;
        } else {
            session.append(entry(n)?).map_err(|e| e.to_string())?;
            n += 1;
        }
    }
    Ok(())
}

/// The session mode `buffered` appends to.
const BUFFERED_SESSION: &str = "buffered";

const AP_LIVE: usize = 3;
const AP_RETIRE_AT: u64 = 3000;
const AP_KEEP_RETIRED: usize = 2;

/// The plan of an append cycle, made once before the threads start: the sessions to append
/// to (creating new ones up to `AP_LIVE`) and the retired ones to delete.
struct AppendPlan {
    live: Vec<Session>,
    doomed: Vec<String>,
}

fn plan_appends(ctx: &Ctx) -> Result<AppendPlan, String> {
    let all = ctx.sessions_with("ap-")?;
    let mut live: Vec<Session> = all
        .iter()
        .filter(|(_, n)| *n < AP_RETIRE_AT)
        .map(|(id, _)| ctx.open(id))
        .collect::<Result<_, _>>()?;
    let mut k = 0;
    while live.len() < AP_LIVE {
        live.push(ctx.create(&format!("ap-c{:06}-n{k}", ctx.cycle))?);
        k += 1;
    }
    let retired: Vec<String> = all
        .into_iter()
        .filter(|(_, n)| *n >= AP_RETIRE_AT)
        .map(|(id, _)| id)
        .collect();
    let doomed = retired[..retired.len().saturating_sub(AP_KEEP_RETIRED)].to_vec();
    Ok(AppendPlan { live, doomed })
}

/// Appends to the live `ap-` sessions, several threads on the same sessions; thread 0 also
/// deletes retired sessions beyond `AP_KEEP_RETIRED`, at a random moment.
fn append_worker(ctx: &Ctx, t: usize) -> Result<(), String> {
    let mut rng = Rng::new(ctx.seed ^ ((t as u64 + 1) << 32));
    let plan = ctx.appends.as_ref().ok_or("no append plan")?;
    let delete_at = rng.below(20);
    let mut n: u64 = 0;
    while ctx.running() {
        if t == 0 && n == delete_at {
            for id in &plan.doomed {
                ctx.delete(id)?;
            }
        }
        let Some(s) = rng.pick(&plan.live) else {
            return Err("no live ap- session".into());
        };
        let id = format!("c{:06}t{t}n{n}", ctx.cycle);
        append(s, id.clone(), &mut rng)?;
        n += 1;
        if rng.chance(4) {
            check_context(s, Some(&id))?;
        }
    }
    Ok(())
}

const MV_MAX_LOG: u64 = 2500;

/// One thread per `mv-t<T>-…` session: appends, leaf moves (to random entries and to the
/// root position) and context builds.
fn move_worker(ctx: &Ctx, t: usize) -> Result<(), String> {
    let mut rng = Rng::new(ctx.seed ^ ((t as u64 + 11) << 32));
    let prefix = format!("mv-t{t}-");
    let mut mine = ctx.sessions_with(&prefix)?;
    let current = match mine.last() {
        Some((id, _)) if head_len(&ctx.open(id)?)? < MV_MAX_LOG => ctx.open(id)?,
        _ => {
            let id = format!("{prefix}c{:06}", ctx.cycle);
            let s = ctx.create(&id)?;
            mine.push((id, 0));
            s
        }
    };
    let old: Vec<String> = mine
        .iter()
        .map(|(id, _)| id.clone())
        .filter(|id| id != current.id())
        .collect();
    let doomed = &old[..old.len().saturating_sub(1)];
    let mut ids: Vec<String> = current
        .entries()
        .map(|e| e.map(|e| e.id().to_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("entries of {}: {e}", current.id()))?;
    let delete_at = rng.below(30);
    let mut n: u64 = 0;
    while ctx.running() {
        if n == delete_at {
            for id in doomed {
                ctx.delete(id)?;
            }
        }
        let r = rng.below(100);
        if r < 45 || ids.is_empty() {
            let id = format!("c{:06}n{n}", ctx.cycle);
            append(&current, id.clone(), &mut rng)?;
            ids.push(id);
        } else if r < 90 {
            let target = if rng.chance(5) {
                None
            } else {
                rng.pick(&ids).cloned()
            };
            move_leaf(&current, target)?;
        } else {
            check_context(&current, None)?;
        }
        n += 1;
    }
    Ok(())
}

const FS_MIN: u64 = 300;
const FS_MAX: u64 = 2500;
const FK_KEEP: usize = 4;

/// One thread per fork source `fs-t<T>-…`: grows it by atomic batches (sometimes after a
/// leaf move, so it branches), forks it in every mode, deletes its oldest forks.
fn fork_worker(ctx: &Ctx, t: usize) -> Result<(), String> {
    let mut rng = Rng::new(ctx.seed ^ ((t as u64 + 23) << 32));
    let source = match ctx.sessions_with(&format!("fs-t{t}-"))?.last() {
        Some((id, _)) => ctx.open(id)?,
        None => ctx.create(&format!("fs-t{t}-c{:06}", ctx.cycle))?,
    };
    let mut forks: Vec<String> = ctx
        .sessions_with(&format!("fk-t{t}-"))?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let mut n: u64 = 0;
    while ctx.running() {
        let entries = source
            .head()
            .map_err(|e| format!("head of {}: {e}", source.id()))?
            .entries;
        if entries < FS_MIN || (entries < FS_MAX && rng.chance(25)) {
            if entries > 0 && rng.chance(30) {
                let target = random_entry(&source, &mut rng)?;
                move_leaf(&source, target)?;
            }
            grow(&source, &mut rng)?;
        } else if forks.len() >= FK_KEEP {
            let oldest = forks.remove(0);
            ctx.delete(&oldest)?;
        } else {
            let id = format!("fk-t{t}-c{:06}-n{n:04}", ctx.cycle);
            fork(ctx, &source, &id, &mut rng)?;
            forks.push(id);
        }
        n += 1;
    }
    Ok(())
}

fn random_entry(s: &Session, rng: &mut Rng) -> Result<Option<String>, String> {
    let entries = s
        .head()
        .map_err(|e| format!("head of {}: {e}", s.id()))?
        .entries;
    if entries == 0 {
        return Ok(None);
    }
    let k = rng.below(entries) as usize;
    match s.entries().nth(k) {
        Some(Ok(e)) => Ok(Some(e.id().to_owned())),
        Some(Err(e)) => Err(format!("entries of {}: {e}", s.id())),
        None => Err(format!("{} has fewer than {entries} entries", s.id())),
    }
}

/// One atomic batch of appends: a turn's few entries (one log value, ordered writes) or
/// hundreds (one log value or several in an atomic batch).
fn grow(s: &Session, rng: &mut Rng) -> Result<(), String> {
    let n = if rng.chance(50) {
        rng.range(2, 8)
    } else {
        rng.range(50, 300)
    };
    let batch: Vec<NewEntry> = (0..n).map(|_| message(rng)).collect::<Result<_, _>>()?;
    emit(&Event::BatchIntent {
        session: s.id().to_owned(),
        n,
    })?;
    let ids = s
        .append_many(&batch)
        .map_err(|e| format!("append_many to {}: {e}", s.id()))?;
    let mut hash = LogHash::default();
    for id in &ids {
        let e = s
            .entry(id)
            .map_err(|e| format!("read back {}/{id}: {e}", s.id()))?;
        hash.push(&e.line);
    }
    let len = head_len(s)?;
    emit(&Event::BatchAck {
        session: s.id().to_owned(),
        len,
        hash: hash.hex(),
        ids,
    })
}

/// Forks `source` as `id` in a random mode, announcing the lines the fork must hold.
fn fork(ctx: &Ctx, source: &Session, id: &str, rng: &mut Rng) -> Result<(), String> {
    let err = |e: grove::GroveError| format!("fork of {}: {e}", source.id());
    let all = || -> Result<Vec<String>, String> {
        source
            .log()
            .map(|e| e.map(|e| e.line))
            .collect::<Result<_, _>>()
            .map_err(err)
    };
    let lines_of = |v: Vec<grove::Entry>| v.into_iter().map(|e| e.line).collect::<Vec<_>>();
    let mut options = ForkOptions {
        id: Some(id.to_owned()),
        ..ForkOptions::default()
    };
    let (lines, leaf) = match rng.below(5) {
        0 | 1 => {
            options.mode = if rng.chance(50) {
                ForkMode::Copy
            } else {
                ForkMode::Path
            };
            (all()?, source.leaf().map_err(err)?)
        }
        choice => {
            let Some(entry) = random_entry(source, rng)? else {
                return Ok(());
            };
            options.entry = Some(entry.clone());
            match choice {
                2 => {
                    options.position = ForkPosition::At;
                    (
                        lines_of(source.branch(Some(&entry)).map_err(err)?),
                        Some(entry),
                    )
                }
                3 => {
                    options.position = ForkPosition::At;
                    options.mode = ForkMode::Rechained;
                    (
                        lines_of(source.path_to_root(Some(&entry)).map_err(err)?),
                        Some(entry),
                    )
                }
                _ => {
                    let e = source.entry(&entry).map_err(err)?;
                    if e.kind() == EntryKind::Message(Role::User) {
                        options.position = ForkPosition::Before;
                        match e.parent_id() {
                            None => (Vec::new(), None),
                            Some(p) => (lines_of(source.branch(Some(&p)).map_err(err)?), Some(p)),
                        }
                    } else {
                        options.position = ForkPosition::At;
                        (
                            lines_of(source.branch(Some(&entry)).map_err(err)?),
                            Some(entry),
                        )
                    }
                }
            }
        }
    };
    let hash = LogHash::of(lines.iter().map(String::as_str));
    emit(&Event::ForkIntent {
        session: id.to_owned(),
        source: source.id().to_owned(),
        count: hash.count,
        hash: hash.hex(),
        leaf: leaf.clone(),
    })?;
    let forked = ctx.store.fork(source, options).map_err(err)?;
    // Not a crash check: the expectation itself must hold while nothing is killed.
    let got = LogHash::of(
        forked
            .log()
            .map(|e| e.map(|e| e.line))
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?
            .iter()
            .map(String::as_str),
    );
    let got_leaf = forked.leaf().map_err(err)?;
    if got != hash || got_leaf != leaf {
        return Err(format!(
            "fork {id} of {} holds {} records ending at leaf {got_leaf:?}, expected {} at {leaf:?}",
            source.id(),
            got.count,
            hash.count
        ));
    }
    emit(&Event::ForkAck {
        session: id.to_owned(),
    })
}

const IM_KEEP: usize = 3;

/// Imports the generated file again and again under new ids (streamed from the file with
/// its header swapped), deleting the thread's oldest imports beyond `IM_KEEP`.
fn import_worker(ctx: &Ctx, t: usize) -> Result<(), String> {
    let path = ctx
        .import_file
        .clone()
        .ok_or("import mode needs --import-file")?;
    let mut mine: Vec<String> = ctx
        .sessions_with(&format!("im-t{t}-"))?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let mut n: u64 = 0;
    while ctx.running() {
        if mine.len() >= IM_KEEP {
            let oldest = mine.remove(0);
            ctx.delete(&oldest)?;
            continue;
        }
        let id = format!("im-t{t}-c{:06}-n{n:04}", ctx.cycle);
        let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut rest = BufReader::with_capacity(1 << 20, file);
        let mut template_header = String::new();
        rest.read_line(&mut template_header)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let header = format!("{}\n", header_line(&id));
        let input = BufReader::new(std::io::Cursor::new(header.into_bytes()).chain(rest));
        emit(&Event::ImportIntent {
            session: id.clone(),
        })?;
        let report = ctx
            .store
            .import_reader(
                input,
                ImportOptions {
                    source_path: Some(path.clone()),
                    ..ImportOptions::default()
                },
            )
            .map_err(|e| format!("import {id}: {e}"))?;
        emit(&Event::ImportAck {
            session: id.clone(),
            entries: report.entries,
        })?;
        mine.push(id);
        n += 1;
    }
    Ok(())
}
