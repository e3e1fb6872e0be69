//! Every read checks the lines it hands out (docs/design.md, "Verification"): a line whose
//! bytes changed after it was stored is refused with `Corrupt`, naming its session and entry
//! and never showing the changed text, by the context, branch and path, entries, children,
//! the tree, labels, both export flavors and fork — wherever the line lies (an import pack, a
//! single row, a batch) and on every backend. A materialized copy that fails its checksum is
//! read from the log instead. The other sessions of the store read as before, and `verify`
//! still reports the damage. Rows of store layout 9 are checked against the CRC-32 of the
//! line in their node record; rows of older layouts, which have none, against the content
//! hash; `verify` checks both.
//!
//! Regression: before these checks, a changed byte inside a stored line was served by
//! `context` and `export` with success; only `verify` noticed (issue 16).

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use grove::keys;
use grove::kv::{Kv, KvError, MemoryKv, Scan, WriteBatch};
use grove::{
    Backend, CreateSession, Durability, Flavor, ForkOptions, GroveError, ImportOptions, Session,
    Store, StoreConfig,
};
use grove_codec::record::{self, ViewRowsRecord};
use grove_tests::rows;

use super::{assistant, sid_of, user};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    Sled,
    Redb,
}

const KINDS: [Kind; 3] = [Kind::Memory, Kind::Sled, Kind::Redb];

/// A memory backend that outlives the stores opened on it.
#[derive(Clone, Default)]
struct Shared(Arc<MemoryKv>);

impl Kv for Shared {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        self.0.get(key)
    }
    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.0.scan(start, end)
    }
    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.0.scan_rev(start, end)
    }
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.0.apply(batch)
    }
    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }
    fn name(&self) -> &'static str {
        "shared memory"
    }
}

/// A place to open the same store again and again: a directory, or shared memory.
struct Place {
    kind: Kind,
    dir: tempfile::TempDir,
    memory: Shared,
}

impl Place {
    fn new(kind: Kind) -> Place {
        Place {
            kind,
            dir: tempfile::tempdir().unwrap(),
            memory: Shared::default(),
        }
    }

    /// Opens the store (each commit applied and flushed as it is made), waiting for its lock:
    /// a child process that another test thread is starting may hold a copy of the lock of the
    /// store this test has just closed until its exec.
    fn open(&self) -> Store {
        let dir = self.dir.path().to_owned();
        let backend = match self.kind {
            Kind::Memory => {
                return Store::from_kv(Box::new(self.memory.clone()), Durability::Sync).unwrap()
            }
            Kind::Sled => Backend::Sled(dir.clone()),
            Kind::Redb => Backend::Redb(dir.clone()),
        };
        Store::open_with(
            StoreConfig::new(&dir)
                .backend(backend)
                .durability(Durability::Sync)
                .lock_wait(std::time::Duration::from_secs(30)),
        )
        .unwrap()
    }
}

/// Where the damaged line was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    /// An import's log pack (`0x19`).
    Pack,
    /// A single row under its own log key (`0x10`).
    Row,
    /// A batch under a log key (`0x10`, first byte `0xFF`).
    Batch,
}

/// Replaces `from` by `to` (of the same length) in the one log value of session `id` that
/// holds it, as a bad sector or a stray write would; says what kind of value it was.
fn damage_log(store: &Store, id: &str, from: &str, to: &str) -> Stored {
    assert_eq!(from.len(), to.len());
    let sid = sid_of(store, id);
    let mut hits = Vec::new();
    for table in [keys::T_LOG, keys::T_LOG_PACK] {
        let start = keys::session_prefix(table, sid);
        for pair in store.kv().scan(&start, &keys::prefix_end(&start)) {
            let (key, value) = pair.unwrap();
            if let Some(at) = find(&value, from.as_bytes()) {
                hits.push((table, key, value, at));
            }
        }
    }
    assert_eq!(hits.len(), 1, "{from:?} must be in exactly one log value");
    let (table, key, mut value, at) = hits.pop().unwrap();
    value[at..at + to.len()].copy_from_slice(to.as_bytes());
    let stored = match (table, value.first()) {
        (keys::T_LOG_PACK, _) => Stored::Pack,
        (_, Some(&0xFF)) => Stored::Batch,
        _ => Stored::Row,
    };
    let mut batch = WriteBatch::new();
    batch.put(key, value);
    store.kv().apply(batch).unwrap();
    store.flush().unwrap();
    stored
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `result` is `Corrupt`, naming session `session` and entry `entry`, and not the text
/// `damaged`.
#[track_caller]
fn assert_refused<T: Debug>(what: &str, result: grove::Result<T>, session: &str, entry: &str) {
    match result {
        Err(GroveError::Corrupt(m)) => {
            assert!(
                m.contains(&format!("session {session}")) && m.contains(&format!("entry {entry}")),
                "{what}: the error names the session and the entry: {m}"
            );
            assert!(
                !m.contains(DAMAGED),
                "{what}: the error shows the data: {m}"
            );
        }
        other => panic!("{what}: expected Corrupt naming {session}/{entry}, got {other:?}"),
    }
}

/// The text the tests write into a damaged line.
const DAMAGED: &str = "assistant Z";

fn export(s: &Session, flavor: Flavor) -> (grove::Result<grove::ExportReport>, Vec<u8>) {
    let mut out = Vec::new();
    let result = s.export(flavor, &mut out);
    (result, out)
}

/// What a sound session answers, to compare before and after another session's damage.
#[derive(Debug, PartialEq)]
struct Answers {
    context: grove::Context,
    branch: Vec<String>,
    export: Vec<u8>,
    tree: grove::Tree,
}

fn answers(store: &Store, id: &str) -> Answers {
    let s = store.session(id).unwrap();
    let (result, export) = export(&s, Flavor::Harness);
    result.unwrap();
    Answers {
        context: s.build_context().unwrap(),
        branch: s
            .branch(None)
            .unwrap()
            .into_iter()
            .map(|e| e.line)
            .collect(),
        export,
        tree: s.tree().unwrap(),
    }
}

/// Every read of session `id`, whose line of entry `entry` (on its active path, a child of
/// `parent`) is damaged, refuses it.
fn assert_every_read_refuses(store: &Store, id: &str, entry: &str, parent: &str) {
    let s = store.session(id).unwrap();
    let refused = |what: &str, r: grove::Result<()>| assert_refused(what, r, id, entry);
    refused("build_context", s.build_context().map(drop));
    refused("branch", s.branch(None).map(drop));
    refused("path_to_root", s.path_to_root(None).map(drop));
    refused("entry", s.entry(entry).map(drop));
    refused(
        "entries",
        s.entries().collect::<grove::Result<Vec<_>>>().map(drop),
    );
    refused("log", s.log().collect::<grove::Result<Vec<_>>>().map(drop));
    refused("children", s.children(Some(parent)).map(drop));
    refused("tree", s.tree().map(drop));
    for flavor in [Flavor::Harness, Flavor::Cli] {
        let (result, out) = export(&s, flavor);
        refused("export", result.map(drop));
        assert!(
            find(&out, DAMAGED.as_bytes()).is_none(),
            "export wrote the damaged line"
        );
    }
    let before = store.sessions().unwrap().len();
    refused("fork", store.fork(&s, ForkOptions::default()).map(drop));
    assert_eq!(store.sessions().unwrap().len(), before, "a fork was made");
    // Verification still reports it, entry by entry.
    let report = store.verify().unwrap();
    assert!(
        report.problems.iter().any(|p| p.session == id
            && p.entry.as_deref() == Some(entry)
            && p.what.contains("content hash")),
        "{:?}",
        report.problems
    );
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pi-oracle")
        .join(name)
}

#[test]
fn a_damaged_line_in_an_import_pack_is_refused_by_every_read() {
    for kind in KINDS {
        let place = Place::new(kind);
        let (sound, sound_answers) = {
            let store = place.open();
            let import = |name: &str| {
                store
                    .import_file(&fixture(name), ImportOptions::default())
                    .unwrap()
                    .session
            };
            assert_eq!(import("edge-seed-harness.jsonl"), "seed-harness");
            let sound = import("r000-harness.jsonl");
            let before = answers(&store, &sound);
            // "assistant B" (entry a36c3dcf, record 6) becomes "assistant Z".
            assert_eq!(
                damage_log(&store, "seed-harness", "assistant B", DAMAGED),
                Stored::Pack,
                "{kind:?}"
            );
            (sound, before)
        };
        let store = place.open();
        assert_every_read_refuses(&store, "seed-harness", "a36c3dcf", "67e60f1b");
        // The entries before it read as before.
        let s = store.session("seed-harness").unwrap();
        assert!(s.entry("67e60f1b").unwrap().line.contains("plan B"));
        assert_eq!(answers(&store, &sound), sound_answers, "{kind:?}");
    }
}

/// A session whose leaf, "assistant B", is the last of `seed`'s appends; returns its id and
/// the ids of the entries `seed` appended.
fn seeded(store: &Store) -> (String, Vec<String>) {
    let s = store.create_session(CreateSession::default()).unwrap();
    let ids = super::seed(&s);
    (s.id().to_owned(), ids)
}

#[test]
fn a_damaged_single_row_is_refused_by_every_read() {
    for kind in KINDS {
        let place = Place::new(kind);
        let (id, ids, sound, sound_answers) = {
            let store = place.open();
            let (id, ids) = seeded(&store);
            let (sound, _) = seeded(&store);
            let before = answers(&store, &sound);
            assert_eq!(
                damage_log(&store, &id, "assistant B", DAMAGED),
                Stored::Row,
                "{kind:?}"
            );
            (id, ids, sound, before)
        };
        let store = place.open();
        assert_every_read_refuses(&store, &id, &ids[5], &ids[4]);
        assert_eq!(answers(&store, &sound), sound_answers, "{kind:?}");
    }
}

#[test]
fn a_damaged_line_in_a_batch_is_refused_by_every_read() {
    for kind in KINDS {
        let place = Place::new(kind);
        let (id, ids, sound, sound_answers) = {
            let store = place.open();
            let s = store.create_session(CreateSession::default()).unwrap();
            let ids = s
                .append_many(&[user("question"), assistant("assistant B"), user("more")])
                .unwrap();
            let (sound, _) = seeded(&store);
            let before = answers(&store, &sound);
            assert_eq!(
                damage_log(&store, s.id(), "assistant B", DAMAGED),
                Stored::Batch,
                "{kind:?}"
            );
            (s.id().to_owned(), ids, sound, before)
        };
        let store = place.open();
        assert_every_read_refuses(&store, &id, &ids[1], &ids[0]);
        assert_eq!(answers(&store, &sound), sound_answers, "{kind:?}");
    }
}

#[test]
fn a_damaged_label_entry_is_refused_by_labels_and_the_tree() {
    for kind in KINDS {
        let place = Place::new(kind);
        let (id, ids, label_id) = {
            let store = place.open();
            let (id, ids) = seeded(&store);
            let s = store.session(&id).unwrap();
            let label_id = s.set_label(&ids[1], Some("assistant B's label")).unwrap();
            s.append(user("after the label")).unwrap();
            // Both "assistant B" texts: the message's and the label's. Damage the label's.
            damage_log(&store, &id, "assistant B's", "assistant Z's");
            (id, ids, label_id)
        };
        let store = place.open();
        let s = store.session(&id).unwrap();
        assert_refused("labels", s.labels(), &id, &label_id);
        assert_refused("label", s.label(&ids[1]), &id, &label_id);
        assert_refused("tree", s.tree(), &id, &label_id);
        // The label entry is on the active path: the context reads its line too.
        assert_refused("build_context", s.build_context(), &id, &label_id);
    }
}

/// A session whose active path runs through two earlier ranges of the log and a last one:
/// the persisted view materializes the rows of the first two. Returns its id, the id of the
/// entry "trunk 2" (in the first range) and of its parent.
fn branching(store: &Store) -> (String, String, String) {
    let s = store.create_session(CreateSession::default()).unwrap();
    let trunk: Vec<String> = (0..6)
        .map(|i| s.append(user(&format!("trunk {i}"))).unwrap())
        .collect();
    for i in 0..20 {
        s.append(user(&format!("abandoned {i}"))).unwrap();
    }
    s.move_to(Some(&trunk[3])).unwrap();
    let side: Vec<String> = (0..3)
        .map(|i| s.append(user(&format!("side {i}"))).unwrap())
        .collect();
    for i in 0..20 {
        s.append(user(&format!("abandoned side {i}"))).unwrap();
    }
    s.move_to(Some(&side[2])).unwrap();
    for i in 0..3 {
        s.append(user(&format!("last range {i}"))).unwrap();
    }
    (s.id().to_owned(), trunk[2].clone(), trunk[1].clone())
}

/// The materialized rows of session `sid`, by seq.
fn copies(store: &Store, sid: u64) -> Vec<u64> {
    let (start, end) = keys::view_rows_range(sid);
    store
        .kv()
        .scan(&start, &end)
        .map(Result::unwrap)
        .filter_map(|(_, v)| record::decode::<ViewRowsRecord>(&v).ok())
        .flat_map(|chunk| chunk.rows.into_iter().map(|(seq, _)| seq))
        .collect()
}

#[test]
fn a_damaged_materialized_copy_is_read_from_the_log_instead() {
    for kind in KINDS {
        let place = Place::new(kind);
        let (id, expected) = {
            let store = place.open();
            let (id, trunk2, _) = branching(&store);
            let s = store.session(&id).unwrap();
            // The first build at the leaf makes the view; a flush persists it with its copies.
            let expected = s.build_context().unwrap();
            store.flush().unwrap();
            let sid = sid_of(&store, &id);
            let seq = s.entry(&trunk2).unwrap().seq;
            assert!(copies(&store, sid).contains(&seq), "{kind:?}");
            // A changed byte in the copy of "trunk 2", inside its chunk.
            let (start, end) = keys::view_rows_range(sid);
            let (key, mut value) = store
                .kv()
                .scan(&start, &end)
                .map(Result::unwrap)
                .find(|(_, v)| find(v, b"trunk 2").is_some())
                .unwrap();
            let at = find(&value, b"trunk 2").unwrap();
            value[at + 6] = b'Z';
            let mut batch = WriteBatch::new();
            batch.put(key, value);
            store.kv().apply(batch).unwrap();
            store.flush().unwrap();
            (id, expected)
        };
        // A cold resume serves the log's line, not the copy's.
        let store = place.open();
        let s = store.session(&id).unwrap();
        let ctx = s.build_context().unwrap();
        assert_eq!(ctx, expected, "{kind:?}");
        assert!(!ctx.messages.iter().any(|m| m.contains("trunk Z")));
        // The resume built the view again; a flush writes its copies again.
        store.flush().unwrap();
        drop(s);
        drop(store);
        let store = place.open();
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "{kind:?}: {:?}", report.problems);
        let s = store.session(&id).unwrap();
        assert_eq!(s.build_context().unwrap(), expected, "{kind:?}");
    }
}

#[test]
fn a_damaged_log_line_with_a_sound_copy_is_served_from_the_copy_and_refused_elsewhere() {
    for kind in KINDS {
        let place = Place::new(kind);
        let (id, trunk2, trunk1, expected) = {
            let store = place.open();
            let (id, trunk2, trunk1) = branching(&store);
            let expected = store.session(&id).unwrap().build_context().unwrap();
            // The view and its copies, which a read makes and a flush writes.
            store.flush().unwrap();
            damage_log(&store, &id, "trunk 2", "trunk Z");
            (id, trunk2, trunk1, expected)
        };
        let store = place.open();
        let s = store.session(&id).unwrap();
        // The cold resume reads the sound copy: what it hands out is the stored line.
        assert_eq!(s.build_context().unwrap(), expected, "{kind:?}");
        // What reads the log refuses the line.
        assert_refused("branch", s.branch(None), &id, &trunk2);
        assert_refused("entry", s.entry(&trunk2), &id, &trunk2);
        assert_refused("children", s.children(Some(&trunk1)), &id, &trunk2);
        let (result, out) = export(&s, Flavor::Harness);
        assert_refused("export", result, &id, &trunk2);
        assert!(find(&out, b"trunk Z").is_none());
        assert_refused("fork", store.fork(&s, ForkOptions::default()), &id, &trunk2);
        // A context built from the log refuses it too.
        assert_refused(
            "build_context_from_scratch",
            s.build_context_from_scratch(None, grove::ContextOptions::grove()),
            &id,
            &trunk2,
        );
    }
}

#[test]
fn a_layout_8_store_reads_its_rows_without_a_crc_and_checks_them_against_the_content_hash() {
    for kind in KINDS {
        let place = Place::new(kind);
        let before = {
            let store = place.open();
            let fixture = fixture("edge-seed-harness.jsonl");
            store
                .import_file(&fixture, ImportOptions::default())
                .unwrap();
            // Rows of every kind: the import's packs, a single row and a batch.
            let s = store.session("seed-harness").unwrap();
            s.append(user("a single row")).unwrap();
            s.append_many(&[user("a batch"), assistant("of two")])
                .unwrap();
            let before = answers(&store, "seed-harness");
            let sid = sid_of(&store, "seed-harness");
            let records = s.log().count();
            assert_eq!(rows::as_layout_8(&store, sid).unwrap(), records, "{kind:?}");
            before
        };
        {
            // Opening rewrites the marker, and only the marker.
            let store = place.open();
            let marker = store.kv().get(&keys::meta(keys::META_FORMAT)).unwrap();
            assert_eq!(marker, Some(b"grove\x00\x0f".to_vec()), "{kind:?}");
            let sid = sid_of(&store, "seed-harness");
            let mut with_crc = 0;
            rows::rewrite_rows(&store, sid, |row| {
                with_crc += usize::from(record::decode_log(row).unwrap().line_crc.is_some());
                None
            })
            .unwrap();
            assert_eq!(with_crc, 0, "{kind:?}");
            assert_eq!(answers(&store, "seed-harness"), before, "{kind:?}");
            let report = store.verify().unwrap();
            assert!(report.is_ok(), "{kind:?}: {:?}", report.problems);
            // Without the materialized copies (a cache) a resume reads the log.
            let (start, end) = keys::view_rows_range(sid);
            let mut batch = WriteBatch::new();
            for pair in store.kv().scan(&start, &end) {
                batch.delete(pair.unwrap().0);
            }
            store.kv().apply(batch).unwrap();
            // "assistant B" (entry a36c3dcf, record 6, in the import's pack) changes.
            assert_eq!(
                damage_log(&store, "seed-harness", "assistant B", DAMAGED),
                Stored::Pack,
                "{kind:?}"
            );
        }
        let store = place.open();
        assert_every_read_refuses(&store, "seed-harness", "a36c3dcf", "67e60f1b");
    }
}

/// Regression: reads checked every line against its blake3 content hash, which doubled an
/// export and a context read from the log (docs/benchmarks.md, "Read checks").
#[test]
fn a_read_checks_the_crc_of_the_line_and_verify_checks_the_content_hash_too() {
    for kind in KINDS {
        let place = Place::new(kind);
        let (id, ids) = {
            let store = place.open();
            let (id, ids) = seeded(&store);
            let sid = sid_of(&store, &id);
            // "assistant 1": a node record whose content hash is wrong, the line and its CRC
            // right. "assistant B": a CRC that is wrong, the line and its content hash right.
            let edited = rows::rewrite_rows(&store, sid, |row| {
                let row = record::decode_log(row).unwrap();
                let crc = row.line_crc.unwrap();
                if find(row.line, b"assistant 1").is_some() {
                    let mut node = row.node;
                    node.content = [0; 32];
                    Some(record::encode_log(&node, row.line))
                } else if find(row.line, b"assistant B").is_some() {
                    Some(rows::row_claiming(&row.node, !crc, row.line))
                } else {
                    None
                }
            })
            .unwrap();
            assert_eq!(edited, 2);
            (id, ids)
        };
        let store = place.open();
        let s = store.session(&id).unwrap();
        // A read hashes no line: the CRC of "assistant 1" holds, so its line is served.
        assert!(s.entry(&ids[1]).unwrap().line.contains("assistant 1"));
        match s.entry(&ids[5]) {
            Err(GroveError::Corrupt(m)) => assert!(
                m.contains(&format!("session {id}"))
                    && m.contains(&format!("entry {}", ids[5]))
                    && m.contains("(record 6)")
                    && m.contains("does not match its CRC-32"),
                "{kind:?}: {m}"
            ),
            other => panic!("{kind:?}: expected Corrupt, got {other:?}"),
        }
        assert_refused("build_context", s.build_context(), &id, &ids[5]);
        let (result, _) = export(&s, Flavor::Harness);
        assert_refused("export", result, &id, &ids[5]);
        // verify checks both: the content hash of the one, the CRC of the other.
        let problems = store.verify().unwrap().problems;
        let reported = |entry: &str, what: &str| {
            problems
                .iter()
                .any(|p| p.entry.as_deref() == Some(entry) && p.what.contains(what))
        };
        assert!(
            reported(&ids[1], "does not match its content hash"),
            "{problems:?}"
        );
        assert!(
            reported(&ids[5], "does not match its CRC-32"),
            "{problems:?}"
        );
        assert!(!reported(&ids[5], "content hash"), "{problems:?}");
    }
}
