//! The campaign's pristine store, built once per backend, and what the `grove` binary reads
//! from it: `ls --json`, and for every session its harness export and `context --json`.
//!
//! The store holds imported pi-oracle fixtures (log packs, leaf lines, labels, compactions; a
//! large one among them), a session built by appends with a branch, a label, a name and its
//! leaf moved back, an imported session grown by appends after its import, and a fork. It is
//! built through the library with sync durability and closed; then every read command runs
//! once (the first context build of a session persists its view) before the outputs are
//! recorded from a second run, so that reads of the pristine store write nothing more.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use grove::{
    AppendOptions, Backend, CreateSession, Durability, ForkOptions, ForkPosition, ImportOptions,
    NewEntry, Store, StoreConfig,
};

use super::run::{self, Run};
use crate::crash::protocol::{assistant_message, user_message};

/// The fixtures imported into the store.
pub const FIXTURES: [&str; 4] = [
    "edge-labels",
    "r000-harness",
    "r003-mixed",
    "r007-harness-large",
];

/// The pristine store and what each read of it prints.
#[derive(Debug, Clone)]
pub struct Pristine {
    /// The store directory (never damaged: cases work on copies).
    pub dir: PathBuf,
    /// The backend ("sled" or "redb").
    pub backend: String,
    /// The session ids, sorted.
    pub sessions: Vec<String>,
    /// stdout of `ls --json`.
    pub ls: Vec<u8>,
    /// The harness export of each session.
    pub exports: BTreeMap<String, Vec<u8>>,
    /// stdout of `context SESSION --json` for each session.
    pub contexts: BTreeMap<String, Vec<u8>>,
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/pi-oracle"))
        .join(format!("{name}.jsonl"))
}

/// Builds the store in `dir` with the library.
fn build_store(dir: &Path, backend: &str) -> Result<(), String> {
    let e = |what: &str| {
        let what = what.to_owned();
        move |err: grove::GroveError| format!("building the pristine store: {what}: {err}")
    };
    let b = match backend {
        "redb" => Backend::Redb(dir.to_owned()),
        _ => Backend::Sled(dir.to_owned()),
    };
    let store = Store::open_with(
        StoreConfig::new(dir)
            .backend(b)
            .durability(Durability::Sync),
    )
    .map_err(e("open"))?;
    let mut imported = Vec::new();
    for f in FIXTURES {
        let report = store
            .import_file(&fixture(f), ImportOptions::default())
            .map_err(e(f))?;
        imported.push(report.session);
    }
    let mut n = 0;
    let mut next = |session: &grove::Session, entry: NewEntry| {
        n += 1;
        session.append_with(
            entry,
            AppendOptions {
                id: Some(format!("c{n:07}")),
                timestamp: Some(format!("2031-01-01T00:00:{:02}.000Z", n % 60)),
                durability: None,
            },
        )
    };
    let msg = |text: &str, user: bool| -> Result<NewEntry, String> {
        let message = if user {
            user_message(text)?
        } else {
            assistant_message(text)?
        };
        Ok(NewEntry::Message { message })
    };
    // Appended: two branches from the second entry, a label, a name, the leaf moved back.
    let s = store
        .create_session(CreateSession {
            id: Some("appended".into()),
            cwd: "/campaign".into(),
            ..Default::default()
        })
        .map_err(e("create"))?;
    let u1 = next(&s, msg("user 1", true)?).map_err(e("append"))?;
    let a1 = next(&s, msg("assistant 1", false)?).map_err(e("append"))?;
    next(&s, msg("plan A", true)?).map_err(e("append"))?;
    let aa = next(&s, msg("assistant A", false)?).map_err(e("append"))?;
    s.move_to(Some(&a1)).map_err(e("move"))?;
    next(&s, msg("plan B", true)?).map_err(e("append"))?;
    next(&s, msg("assistant B", false)?).map_err(e("append"))?;
    s.set_label(&u1, Some("start")).map_err(e("label"))?;
    s.set_name("campaign").map_err(e("name"))?;
    s.move_to(Some(&aa)).map_err(e("move"))?;
    // An imported session grown by appends, with a branch at its first entry.
    let grown = store.session(&imported[2]).map_err(e("grown"))?;
    let first = grown
        .entries()
        .next()
        .ok_or("the grown fixture has no entry")?
        .map_err(e("grown"))?
        .id()
        .to_owned();
    for i in 0..20 {
        next(&grown, msg(&format!("grown {i}"), i % 2 == 0)?).map_err(e("append"))?;
    }
    grown.move_to(Some(&first)).map_err(e("move"))?;
    next(&grown, msg("a branch at the first entry", false)?).map_err(e("append"))?;
    store
        .fork(
            &s,
            ForkOptions {
                entry: Some(a1),
                position: ForkPosition::At,
                id: Some("forked".into()),
                ..Default::default()
            },
        )
        .map_err(e("fork"))?;
    let report = store.verify().map_err(e("verify"))?;
    if !report.is_ok() {
        return Err(format!(
            "the pristine store does not verify: {:?}",
            report.problems
        ));
    }
    store.flush().map_err(e("flush"))
}

/// The output of one read command: stdout, or the exported file.
fn read_ok(run: &Run, what: &str) -> Result<(), String> {
    if run.ok() && !run.panicked() {
        Ok(())
    } else {
        Err(format!(
            "{what} on the pristine store failed ({:?}): {}",
            run.code,
            run.stderr_head()
        ))
    }
}

/// Builds the pristine store in `dir` and records its reads with the binary `bin`.
pub fn build(bin: &Path, dir: &Path, backend: &str, limit: Duration) -> Result<Pristine, String> {
    build_store(dir, backend)?;
    let grove = |args: &[&str]| run::grove(bin, dir, backend, args, limit);
    let ls = grove(&["ls", "--json"]);
    read_ok(&ls, "ls")?;
    let listed: serde_json::Value =
        serde_json::from_slice(&ls.stdout).map_err(|e| format!("ls --json: {e}"))?;
    let mut sessions: Vec<String> = listed
        .as_array()
        .ok_or("ls --json is not an array")?
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .collect();
    sessions.sort();
    let export_file = dir.with_extension("export.jsonl");
    let mut pristine = Pristine {
        dir: dir.to_owned(),
        backend: backend.to_owned(),
        sessions,
        ls: Vec::new(),
        exports: BTreeMap::new(),
        contexts: BTreeMap::new(),
    };
    // Twice: the first pass persists the views; the second records what reads print.
    for _ in 0..2 {
        pristine.ls = grove(&["ls", "--json"]).stdout;
        for id in &pristine.sessions {
            let out = export_file.to_string_lossy().into_owned();
            let export = grove(&["export", id, "-o", &out]);
            read_ok(&export, &format!("export {id}"))?;
            let bytes = std::fs::read(&export_file).map_err(|e| format!("{out}: {e}"))?;
            pristine.exports.insert(id.clone(), bytes);
            let context = grove(&["context", id, "--json"]);
            read_ok(&context, &format!("context {id}"))?;
            pristine.contexts.insert(id.clone(), context.stdout);
        }
    }
    let _ = std::fs::remove_file(&export_file);
    let verify = grove(&["verify"]);
    read_ok(&verify, "verify")?;
    if pristine.sessions.len() != FIXTURES.len() + 2 {
        return Err(format!(
            "the pristine store lists {} sessions: {:?}",
            pristine.sessions.len(),
            pristine.sessions
        ));
    }
    Ok(pristine)
}
