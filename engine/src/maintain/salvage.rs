//! Salvage: copying every session that can still be trusted out of a damaged store into a new
//! one, and saying which could not be.
//!
//! [`salvage`] finds the sessions of the source store twice over: in the catalogue (the
//! session id index, `0x03`) and by scanning the session records (`0x01`) and every session's
//! head and log (`0x02`, `0x10`, `0x19`) directly, so that a damaged catalogue neither hides a
//! session whose records are intact nor lets a listed session that cannot be read go
//! unreported. Sessions with a pending marker (`0x04`) and no catalogue row are imports or
//! deletions a crash interrupted; the store discards them and so does salvage.
//!
//! Each session found is copied on its own, and trusted only as far as its log bears out:
//! 1. Its head must read, and its log must export whole in the harness flavor
//!    ([`Flavor::Harness`]: every record in log order, leaf lines included).
//! 2. The export is imported into the destination under the same session id, with the
//!    session's lineage (`parent_session_id`) and source path. The import derives every node
//!    from the lines with the same fold as append, and replays the leaf lines and entries as
//!    the head was folded from them, so the leaf comes back as it was. The one exception is a
//!    session imported with pi-CLI's leaf rule ([`LeafRule::LastLine`]) whose log still ends
//!    on the leaf line it was imported with: its copy is imported with that rule again. No
//!    leaf record is ever added to a copy.
//! 3. The copy must equal the source: the same session record, its harness export byte for
//!    byte, every log record (node record and line) equal to the source's — so every source
//!    line matches its content hash and every source node is the fold of its parent — the log
//!    as long as the head says, the same leaf, entry count and name position, and the copy
//!    must verify.
//! 4. [`crate::maintain::verify::verify`] runs on the source too. When it finds nothing, the copy's labels and
//!    name must also equal the source's. When it finds problems (or cannot finish), they can
//!    only be in what the copy rebuilt from the log — the indexes, views, packs' filters —
//!    and the session is recovered with them noted ([`Recovered::index_damage`]).
//!
//! A session that fails any step is not copied — nothing of it stays in the destination —
//! and is reported with the reason. An error or a panic while working on one session never
//! stops the others: each session's work runs under [`std::panic::catch_unwind`]. The
//! destination must hold no session when salvage starts; afterwards it holds exactly the
//! sessions reported as recovered.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use grove_codec::reader::Strictness;
use grove_codec::record::{self, SessionRecord};

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::util;
use crate::exchange::export;
use crate::exchange::export::Flavor;
use crate::exchange::import::{ImportOptions, LeafRule};
use crate::kv::{Kv, Pair};
use crate::log::handle::Handle;
use crate::log::shared::Logs;
use crate::maintain::verify;
use std::sync::Arc;

/// A session copied into the destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The session id (the same in both stores).
    pub session: String,
    /// Tree entries copied (leaf records excluded).
    pub entries: u64,
    /// Log records copied (entries and leaf records).
    pub records: u64,
    /// Whether the source's catalogue listed it; `false` when only its records were found.
    pub listed: bool,
    /// What verification of the source session found, when it found something: its log and
    /// head were sound, the problems were in indexes (or in reading them), which the copy
    /// rebuilt from the log.
    pub index_damage: Option<String>,
}

/// A session that was found but not copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// The session id, or `sid N` when its session record is unreadable or gone.
    pub session: String,
    /// Why it was not copied.
    pub reason: String,
}

/// What a salvage did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SalvageReport {
    /// The sessions copied, in the order they were copied.
    pub recovered: Vec<Recovered>,
    /// The sessions found but not copied.
    pub lost: Vec<Lost>,
    /// Damage outside any one session: acknowledged writes the source's backend lost
    /// ([`crate::Store::lost_writes`]), a table of the source that could not be scanned to its end.
    /// Sessions may be missing from both lists, or recovered in an older state, because of it.
    pub damage: Vec<String>,
}

impl SalvageReport {
    /// Whether every session found was copied and nothing hid any.
    pub fn is_complete(&self) -> bool {
        self.lost.is_empty() && self.damage.is_empty()
    }
}

/// What the scans found under one session number.
#[derive(Debug, Default)]
struct Found {
    /// Catalogue ids that name this sid.
    listed: Vec<String>,
    /// The session record: absent, undecodable (the reason) or decoded.
    record: Option<std::result::Result<SessionRecord, String>>,
    /// A pending marker (an unpublished import, or a deletion in progress).
    pending: bool,
    /// Head or log rows exist.
    rows: bool,
}

/// Copies every session of `src` whose records read and verify into `dest`, which must hold
/// no session, and reports the sessions it could not copy. Fails only when `dest` is not
/// empty or cannot be read; every problem of the source is a [`Lost`] session or a
/// [`SalvageReport::damage`] line of the report.
pub(crate) fn salvage(src: &Arc<Logs>, dest: &Arc<Logs>, actor: &str) -> Result<SalvageReport> {
    if let Some(id) = first_session(dest)? {
        return Err(GroveError::InvalidArgument(format!(
            "the destination store is not empty: it holds session {id}; salvage into a new store"
        )));
    }
    let mut report = SalvageReport::default();
    // A store whose backend lost acknowledged writes holds an older state than it promised:
    // what it holds is copied, and the loss is reported.
    if let Some(lost) = src.inner.lost.as_ref() {
        report.damage.push(lost.to_string());
    }
    let found = find_sessions(src.inner.kv.as_ref(), &mut report.damage);
    // Sessions whose catalogue row and record agree go first, so that of two records claiming
    // one id, the listed one is copied.
    let agrees = |f: &Found| matches!(&f.record, Some(Ok(rec)) if f.listed.contains(&rec.id));
    let order: Vec<(u64, &Found)> = found
        .iter()
        .filter(|(_, f)| agrees(f))
        .chain(found.iter().filter(|(_, f)| !agrees(f)))
        .map(|(sid, f)| (*sid, f))
        .collect();
    let mut copied: HashSet<String> = HashSet::new();
    for (sid, f) in order {
        let unlisted = f.listed.is_empty();
        let rec = match &f.record {
            None if unlisted && (f.pending || !f.rows) => continue,
            None if unlisted => {
                report.lost.push(Lost {
                    session: format!("sid {sid}"),
                    reason: "head or log rows without a session record (the session's id and \
                             header are lost)"
                        .into(),
                });
                continue;
            }
            None => {
                for id in &f.listed {
                    report.lost.push(Lost {
                        session: id.clone(),
                        reason: format!(
                            "listed in the catalogue as sid {sid}, which has no session record"
                        ),
                    });
                }
                continue;
            }
            Some(Err(_)) if unlisted && f.pending => continue,
            Some(Err(e)) => {
                let names = if unlisted {
                    vec![format!("sid {sid}")]
                } else {
                    f.listed.clone()
                };
                for session in names {
                    report.lost.push(Lost {
                        session,
                        reason: format!("session record (sid {sid}): {e}"),
                    });
                }
                continue;
            }
            Some(Ok(rec)) => rec,
        };
        for id in f.listed.iter().filter(|id| **id != rec.id) {
            report.lost.push(Lost {
                session: id.clone(),
                reason: format!(
                    "its catalogue row names sid {sid}, whose session record is session {}",
                    rec.id
                ),
            });
        }
        let listed = f.listed.contains(&rec.id);
        if !listed && f.pending {
            // A deletion in progress: its catalogue row is gone already.
            continue;
        }
        if copied.contains(&rec.id) {
            report.lost.push(Lost {
                session: rec.id.clone(),
                reason: format!(
                    "a second session record with this id, at sid {sid}, was left out (the \
                     listed one was copied)"
                ),
            });
            continue;
        }
        match copy_guarded(actor, src, dest, sid, rec) {
            Ok((entries, records, index_damage)) => {
                copied.insert(rec.id.clone());
                report.recovered.push(Recovered {
                    session: rec.id.clone(),
                    entries,
                    records,
                    listed,
                    index_damage,
                });
            }
            Err(reason) => report.lost.push(Lost {
                session: rec.id.clone(),
                reason,
            }),
        }
    }
    Ok(report)
}

/// The id of some session of `store`'s catalogue, if it has any.
fn first_session(store: &Arc<Logs>) -> Result<Option<String>> {
    let start = [keys::T_SESSION_ID];
    let end = [keys::T_SESSION_ID + 1];
    match store.inner.kv.as_ref().scan(&start, &end).next() {
        None => Ok(None),
        Some(pair) => {
            let (key, _) = pair?;
            Ok(Some(
                keys::string_suffix(&key, 1).unwrap_or_else(|| util::hex(&key)),
            ))
        }
    }
}

/// Every session number the catalogue, the session records, the pending markers, the heads
/// and the logs mention, with what each says of it. A scan that fails or panics ends early
/// and adds a line to `damage`.
fn find_sessions(kv: &dyn Kv, damage: &mut Vec<String>) -> BTreeMap<u64, Found> {
    let mut found: BTreeMap<u64, Found> = BTreeMap::new();
    for (key, value) in scan_table(kv, keys::T_SESSION_ID, "catalogue", damage) {
        let Some(id) = keys::string_suffix(&key, 1) else {
            damage.push(format!(
                "catalogue key {} is not a session id",
                util::hex(&key)
            ));
            continue;
        };
        match keys::u64_value(&value) {
            Some(sid) => found.entry(sid).or_default().listed.push(id),
            None => damage.push(format!(
                "the catalogue row of session {id} does not name a session number"
            )),
        }
    }
    for (key, value) in scan_table(kv, keys::T_SESSION, "session records", damage) {
        match key_sid(&key) {
            Some(sid) => {
                found.entry(sid).or_default().record =
                    Some(record::decode::<SessionRecord>(&value).map_err(|e| e.to_string()));
            }
            None => damage.push(format!("session record key {}", util::hex(&key))),
        }
    }
    for (key, _) in scan_table(kv, keys::T_PENDING, "pending markers", damage) {
        match key_sid(&key) {
            Some(sid) => found.entry(sid).or_default().pending = true,
            None => damage.push(format!("pending marker key {}", util::hex(&key))),
        }
    }
    for (tag, name) in [
        (keys::T_HEAD, "heads"),
        (keys::T_LOG, "log rows"),
        (keys::T_LOG_PACK, "log packs"),
    ] {
        for sid in sids_in_table(kv, tag, name, damage) {
            found.entry(sid).or_default().rows = true;
        }
    }
    found
}

/// The session number of a `[tag][sid]` key.
fn key_sid(key: &[u8]) -> Option<u64> {
    (key.len() == 9).then(|| keys::last_u64(key)).flatten()
}

/// Every pair of table `tag`, up to the first error or panic (reported in `damage`).
fn scan_table(kv: &dyn Kv, tag: u8, name: &str, damage: &mut Vec<String>) -> Vec<Pair> {
    let (start, end) = ([tag], [tag + 1]);
    let mut pairs = Vec::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        for pair in kv.scan(&start, &end) {
            match pair {
                Ok(p) => pairs.push(p),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }));
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => damage.push(format!("scanning the {name}: {e}")),
        Err(panic) => damage.push(format!("scanning the {name}: {}", panic_message(&panic))),
    }
    pairs
}

/// The session numbers with keys in table `tag` (`[tag][sid]…`): one seek per session, past
/// its keys. Stops at the first error or panic (reported in `damage`).
fn sids_in_table(kv: &dyn Kv, tag: u8, name: &str, damage: &mut Vec<String>) -> BTreeSet<u64> {
    let mut sids = BTreeSet::new();
    let end = vec![tag + 1];
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut start = vec![tag];
        while start < end {
            let key = match kv.scan(&start, &end).next() {
                None => return Ok(()),
                Some(Err(e)) => return Err(e.to_string()),
                Some(Ok((key, _))) => key,
            };
            let Some(sid) = key.get(1..9).and_then(keys::last_u64) else {
                // A key too short to hold a session number: go on after it.
                start = key;
                start.push(0);
                continue;
            };
            sids.insert(sid);
            start = keys::prefix_end(&keys::session_prefix(tag, sid));
        }
        Ok(())
    }));
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => damage.push(format!("scanning the {name}: {e}")),
        Err(panic) => damage.push(format!("scanning the {name}: {}", panic_message(&panic))),
    }
    sids
}

/// [`copy_session`] under `catch_unwind`; after a failure or a panic nothing of the session
/// stays in `dest`.
fn copy_guarded(
    actor: &str,
    src: &Arc<Logs>,
    dest: &Arc<Logs>,
    sid: u64,
    rec: &SessionRecord,
) -> std::result::Result<Copied, String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        copy_session(actor, src, dest, sid, rec)
    }));
    let reason = match outcome {
        Ok(Ok(counts)) => return Ok(counts),
        Ok(Err(reason)) => reason,
        Err(panic) => panic_message(&panic),
    };
    match discard_copy(dest, &rec.id) {
        Ok(()) => Err(reason),
        Err(e) => Err(format!(
            "{reason}; removing its partial copy from the destination failed too: {e}"
        )),
    }
}

/// Removes session `id` from `dest` if a failed copy left it there.
fn discard_copy(dest: &Arc<Logs>, id: &str) -> std::result::Result<(), String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| match dest.delete_session(id) {
        Ok(()) | Err(GroveError::SessionNotFound(_)) => Ok(()),
        Err(e) => Err(e.to_string()),
    }));
    outcome.unwrap_or_else(|panic| Err(panic_message(&panic)))
}

/// What one session's copy gives: (entries, records, what verification of the source said
/// when it was not clean).
type Copied = (u64, u64, Option<String>);

/// Copies session `sid` of `src` into `dest` through a harness export and checks the copy
/// record by record against the source. Returns what [`Copied`] says, or the reason the
/// session was not copied.
fn copy_session(
    actor: &str,
    src: &Arc<Logs>,
    dest: &Arc<Logs>,
    sid: u64,
    rec: &SessionRecord,
) -> std::result::Result<Copied, String> {
    let session =
        Handle::open(src.clone(), sid, rec.clone()).map_err(|e| format!("opening it: {e}"))?;
    let read = |what: &str, e: GroveError| format!("reading its {what}: {e}");
    // The indexes are rebuilt by the import, so only the log and the head must be sound; the
    // labels and the name, kept in indexes, are compared when verification found nothing.
    let note = match verify::verify(&session) {
        Ok(report) if report.is_ok() => None,
        Ok(report) => Some(problems(&report.problems)),
        Err(e) => Some(format!("verification stopped: {e}")),
    };
    let with_note = |reason: String| match &note {
        Some(n) => format!("{reason}; {n}"),
        None => reason,
    };
    let head = session.head().map_err(|e| with_note(read("head", e)))?;
    let derived = match note {
        Some(_) => None,
        None => Some((
            session.labels().map_err(|e| read("labels", e))?,
            session.name().map_err(|e| read("name", e))?,
        )),
    };
    let spool_err = |e: std::io::Error| format!("spooling its export: {e}");
    let mut spool = Digesting::new(tempfile::tempfile().map_err(spool_err)?);
    export::export(&session, Flavor::Harness, &mut spool)
        .map_err(|e| with_note(format!("exporting it: {e}")))?;
    let (file, digest) = spool.finish().map_err(spool_err)?;
    // The import replays the leaf lines as the head was folded from them; a session imported
    // with pi-CLI's leaf rule that still ends on its last leaf line resumes elsewhere, and is
    // copied with that rule again (the default rule refuses such a log when that leaf line
    // names no entry).
    let copy = match import_copy(actor, dest, &file, rec, LeafRule::Auto) {
        Ok(copy) if copy_head(&copy)?.leaf == head.leaf => copy,
        _ => {
            discard_copy(dest, &rec.id)?;
            import_copy(actor, dest, &file, rec, LeafRule::LastLine)?
        }
    };
    let differs = |what: &str| {
        Err(with_note(format!(
            "the copy differs from the source: {what}"
        )))
    };
    if copy.record() != rec {
        return differs("session record");
    }
    let mut again = Digesting::new(std::io::sink());
    export::export(&copy, Flavor::Harness, &mut again)
        .map_err(|e| format!("exporting the copy: {e}"))?;
    if again.finish().map_err(spool_err)?.1 != digest {
        return differs("export");
    }
    // Record by record: the copy's nodes are derived from the lines by the fold, so equal
    // nodes mean every source line matches its content hash and every source node is the
    // fold of its parent.
    let mut theirs = copy.log();
    let mut count = 0u64;
    for (seq, mine) in session.log().enumerate() {
        let mine = mine.map_err(|e| with_note(read("log", e)))?;
        let copied = theirs.next().and_then(std::result::Result::ok);
        if mine.seq != seq as u64 || copied.as_ref() != Some(&mine) {
            return differs(&format!("log record {seq}"));
        }
        count += 1;
    }
    if theirs.next().is_some() || count != head.next_seq {
        return differs(&format!(
            "the log holds {count} records, the head says {}",
            head.next_seq
        ));
    }
    let copied = copy_head(&copy)?;
    if (copied.next_seq, copied.leaf, copied.entries, copied.name_at)
        != (head.next_seq, head.leaf, head.entries, head.name_at)
    {
        return differs("head (leaf, entry count or name)");
    }
    if let Some((labels, name)) = derived {
        let copy_read = |what: &str, e: GroveError| format!("reading the copy's {what}: {e}");
        if copy.labels().map_err(|e| copy_read("labels", e))? != labels {
            return differs("labels");
        }
        if copy.name().map_err(|e| copy_read("name", e))? != name {
            return differs("name");
        }
    }
    let checked = verify::verify(&copy).map_err(|e| format!("verifying the copy: {e}"))?;
    if !checked.is_ok() {
        return Err(format!(
            "the copy does not verify: {}",
            problems(&checked.problems)
        ));
    }
    Ok((head.entries, head.next_seq, note))
}

/// The head of a copy.
fn copy_head(copy: &Handle) -> std::result::Result<grove_codec::record::HeadRecord, String> {
    copy.head()
        .map_err(|e| format!("reading the copy's head: {e}"))
}

/// A writer that hashes what it passes on.
struct Digesting<W: std::io::Write> {
    inner: std::io::BufWriter<W>,
    hasher: blake3::Hasher,
}

impl<W: std::io::Write> Digesting<W> {
    fn new(inner: W) -> Digesting<W> {
        Digesting {
            inner: std::io::BufWriter::with_capacity(1 << 20, inner),
            hasher: blake3::Hasher::new(),
        }
    }

    /// The writer, flushed, and the hash of everything written.
    fn finish(self) -> std::io::Result<(W, blake3::Hash)> {
        let hash = self.hasher.finalize();
        let inner = self.inner.into_inner().map_err(|e| e.into_error())?;
        Ok((inner, hash))
    }
}

impl<W: std::io::Write> std::io::Write for Digesting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Imports a session's harness export (the file `export`, read from its start) into `dest`
/// under its own id, with its lineage and source path and the leaf rule `leaf_rule`; the
/// import must not change a line.
fn import_copy(
    actor: &str,
    dest: &Arc<Logs>,
    export: &std::fs::File,
    rec: &SessionRecord,
    leaf_rule: LeafRule,
) -> std::result::Result<Handle, String> {
    use std::io::Seek;
    let mut file = export;
    file.rewind()
        .map_err(|e| format!("reading its spooled export: {e}"))?;
    let options = ImportOptions {
        strictness: Strictness::Strict,
        leaf_rule,
        source_path: rec.source_path.as_ref().map(PathBuf::from),
        parent_session_id: rec.parent_session_id.clone(),
        ..ImportOptions::default()
    };
    let imported = crate::exchange::import::import_reader(
        dest,
        actor,
        std::io::BufReader::with_capacity(1 << 20, file),
        options,
    )
    .map_err(|e| format!("importing its export into the destination: {e}"))?;
    if !imported.diagnostics.is_empty() {
        return Err(format!(
            "importing its export changed lines: {:?}",
            imported.diagnostics
        ));
    }
    dest.session(&rec.id)
        .map_err(|e| format!("opening the copy: {e}"))
}

/// Up to three problems of a verification, and how many more there are.
fn problems(problems: &[crate::maintain::report::Problem]) -> String {
    let shown: Vec<String> = problems
        .iter()
        .take(3)
        .map(|p| match &p.entry {
            Some(e) => format!("entry {e}: {}", p.what),
            None => p.what.clone(),
        })
        .collect();
    let mut text = format!("verification: {}", shown.join("; "));
    if problems.len() > 3 {
        text.push_str(&format!(" (and {} more)", problems.len() - 3));
    }
    text
}

/// A panic's message, as "panicked: …".
fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned());
    format!("panicked: {text}")
}
