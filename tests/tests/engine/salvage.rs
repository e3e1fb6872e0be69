//! Salvage (`grove::salvage`): every session whose log and head read and check out is copied
//! into a new store exactly — same id, the harness export byte for byte, the same leaf,
//! branch, context, labels, name and session record — and every damaged one is reported by id
//! with a reason, on sled and on redb; damage confined to indexes is rebuilt from the log; a
//! damaged catalogue hides no intact session, and a failure or a panic in one session stops
//! none of the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use grove::codec::record;
use grove::kv::{Kv, KvError, MemoryKv, Scan, WriteBatch};
use grove::salvage::{salvage, SalvageReport};
use grove::{
    CreateSession, Durability, Flavor, ForkOptions, ImportOptions, LeafRule, Session, Store,
    StoreConfig, Strictness,
};

use super::{seed, sid_of, user};

/// The fixtures of the multi-session store: branches, labels, compactions, leaf lines.
const FIXTURES: [&str; 5] = [
    "edge-labels",
    "r000-harness",
    "edge-nested-compaction-harness",
    "r003-mixed",
    "r007-harness-large",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pi-oracle")
        .join(format!("{name}.jsonl"))
}

fn config(dir: &Path, redb: bool) -> StoreConfig {
    super::sync_config(dir, redb)
}

fn open(dir: &Path, redb: bool) -> Store {
    Store::open_with(config(dir, redb)).unwrap()
}

/// Everything a copy must keep of a session.
#[derive(Debug, PartialEq)]
struct Snapshot {
    record: grove::codec::record::SessionRecord,
    export: Vec<u8>,
    leaf: Option<String>,
    branch: Vec<String>,
    context: String,
    labels: BTreeMap<String, grove::Label>,
    name: Option<String>,
    leaf_history: Vec<(String, Option<String>)>,
}

fn snapshot(s: &Session) -> Snapshot {
    let mut export = Vec::new();
    s.export(Flavor::Harness, &mut export).unwrap();
    Snapshot {
        record: s.record().clone(),
        export,
        leaf: s.leaf().unwrap(),
        branch: s
            .path_to_root(None)
            .unwrap()
            .iter()
            .map(|e| e.id().to_owned())
            .collect(),
        context: s.build_context().unwrap().to_json(),
        labels: s.labels().unwrap(),
        name: s.name().unwrap(),
        leaf_history: s.leaf_history().unwrap(),
    }
}

/// Builds the multi-session store in `dir`: the fixtures imported, one of them appended to
/// after its import with its leaf moved back; one imported with pi-CLI's leaf rule, ending on
/// a leaf line (its leaf is that line's parent, not its target); a session built by appends (branches, a label,
/// a name, the leaf moved to an earlier entry); a fork of it. Returns every session's
/// snapshot, by id.
fn build(dir: &Path, redb: bool) -> BTreeMap<String, Snapshot> {
    let store = open(dir, redb);
    let mut imported = Vec::new();
    for f in FIXTURES {
        let report = store
            .import_file(&fixture(f), ImportOptions::default())
            .unwrap();
        imported.push(report.session);
    }
    let last_line = ImportOptions {
        leaf_rule: LeafRule::LastLine,
        ..Default::default()
    };
    store
        .import_file(&fixture("edge-leaf-last"), last_line)
        .unwrap();
    let grown = store.session(&imported[3]).unwrap();
    let first = grown.entries().next().unwrap().unwrap().id().to_owned();
    grown.append(user("after the import")).unwrap();
    grown.move_to(Some(&first)).unwrap();
    grown.append(user("a branch at the first entry")).unwrap();
    let s = store
        .create_session(CreateSession {
            id: Some("appended".into()),
            cwd: "/w".into(),
            ..Default::default()
        })
        .unwrap();
    let ids = seed(&s);
    s.set_label(&ids[1], Some("base")).unwrap();
    s.set_name("salvage test").unwrap();
    s.move_to(Some(&ids[3])).unwrap();
    store
        .fork(
            &s,
            ForkOptions {
                entry: Some(ids[4].clone()),
                id: Some("forked".into()),
                ..Default::default()
            },
        )
        .unwrap();
    let snapshots = store
        .sessions()
        .unwrap()
        .iter()
        .map(|summary| {
            let session = store.session(&summary.id).unwrap();
            (summary.id.clone(), snapshot(&session))
        })
        .collect();
    assert!(store.verify().unwrap().is_ok());
    snapshots
}

/// Salvages the store in `src` into a new store in `dest` (same backend).
fn run_salvage(src: &Path, dest: &Path, redb: bool) -> SalvageReport {
    let source = open(src, redb);
    let target = open(dest, redb);
    salvage(&source, &target).unwrap()
}

/// Every recovered session of `dest` equals its snapshot; returns the recovered ids.
fn check_copies(dest: &Path, redb: bool, before: &BTreeMap<String, Snapshot>) -> Vec<String> {
    let store = open(dest, redb);
    let mut ids = Vec::new();
    for summary in store.sessions().unwrap() {
        let copy = snapshot(&store.session(&summary.id).unwrap());
        assert_eq!(
            Some(&copy),
            before.get(&summary.id),
            "copy of {}",
            summary.id
        );
        ids.push(summary.id);
    }
    assert!(store.verify().unwrap().is_ok());
    ids
}

/// Reopens the store in `dir` and damages it with `damage`.
fn damage(dir: &Path, redb: bool, damage: impl FnOnce(&Store)) {
    let store = open(dir, redb);
    damage(&store);
    store.flush().unwrap();
}

/// The key and value of the `n`-th log key (`0x10`) of session `id`.
fn log_key(store: &Store, id: &str, n: usize) -> (Vec<u8>, Vec<u8>) {
    let prefix = grove::keys::session_prefix(grove::keys::T_LOG, sid_of(store, id));
    store
        .kv()
        .scan(&prefix, &grove::keys::prefix_end(&prefix))
        .nth(n)
        .unwrap()
        .unwrap()
}

fn put(store: &Store, key: Vec<u8>, value: Vec<u8>) {
    let mut batch = WriteBatch::new();
    batch.put(key, value);
    store.kv().apply(batch).unwrap();
}

fn delete(store: &Store, key: Vec<u8>) {
    let mut batch = WriteBatch::new();
    batch.delete(key);
    store.kv().apply(batch).unwrap();
}

/// Damages the store with `harm`, salvages it, and checks that exactly `lost` is reported
/// lost (its reason containing `why`) and every other session is copied exactly.
fn salvage_after(redb: bool, lost: &str, why: &str, harm: impl FnOnce(&Store)) -> SalvageReport {
    let dir = tempfile::tempdir().unwrap();
    let (src, dest) = (dir.path().join("src"), dir.path().join("dest"));
    let before = build(&src, redb);
    damage(&src, redb, harm);
    let report = run_salvage(&src, &dest, redb);
    assert_eq!(report.lost.len(), 1, "{report:#?}");
    assert_eq!(report.lost[0].session, lost);
    assert!(
        report.lost[0].reason.contains(why),
        "reason {:?} should mention {why:?}",
        report.lost[0].reason
    );
    assert!(report.damage.is_empty(), "{:?}", report.damage);
    assert!(!report.is_complete());
    let copied = check_copies(&dest, redb, &before);
    let expected: Vec<String> = before.keys().filter(|id| *id != lost).cloned().collect();
    assert_eq!(copied, expected);
    let mut recovered: Vec<String> = report.recovered.iter().map(|r| r.session.clone()).collect();
    recovered.sort();
    assert_eq!(recovered, expected);
    report
}

fn undamaged_store_salvages_completely(redb: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (src, dest) = (dir.path().join("src"), dir.path().join("dest"));
    let before = build(&src, redb);
    let report = run_salvage(&src, &dest, redb);
    assert!(report.is_complete(), "{report:#?}");
    assert_eq!(report.recovered.len(), before.len());
    assert!(report.recovered.iter().all(|r| r.listed));
    let appended = report
        .recovered
        .iter()
        .find(|r| r.session == "appended")
        .unwrap();
    // seed (6) + label + name; one leaf record from seed, one from the final move.
    assert_eq!((appended.entries, appended.records), (8, 10));
    let copied = check_copies(&dest, redb, &before);
    assert_eq!(copied, before.keys().cloned().collect::<Vec<_>>());
    // The copy keeps the lineage of the fork and the source path of the imports.
    let store = open(&dest, redb);
    let forked = store.session("forked").unwrap();
    assert_eq!(
        forked.record().parent_session_id.as_deref(),
        Some("appended")
    );
    assert!(store
        .session("labels")
        .unwrap()
        .record()
        .source_path
        .as_deref()
        .is_some_and(|p| p.ends_with("edge-labels.jsonl")));
}

#[test]
fn an_undamaged_sled_store_salvages_completely() {
    undamaged_store_salvages_completely(false);
}

#[test]
fn an_undamaged_redb_store_salvages_completely() {
    undamaged_store_salvages_completely(true);
}

/// A byte of a stored line changed: its content hash no longer matches.
fn changed_line_byte(redb: bool) {
    salvage_after(redb, "appended", "content hash", |store| {
        let (key, mut value) = log_key(store, "appended", 2);
        let (_, line) = record::split_log(&value).unwrap();
        assert!(line.len() > 20);
        let at = value.len() - 5;
        value[at] ^= 0x01;
        put(store, key, value);
    });
}

#[test]
fn a_changed_line_byte_loses_only_its_session_on_sled() {
    changed_line_byte(false);
}

#[test]
fn a_changed_line_byte_loses_only_its_session_on_redb() {
    changed_line_byte(true);
}

/// A log key deleted from the middle of the log.
fn deleted_log_key(redb: bool) {
    salvage_after(redb, "appended", "verification", |store| {
        let (key, _) = log_key(store, "appended", 3);
        delete(store, key);
    });
}

#[test]
fn a_deleted_log_key_loses_only_its_session_on_sled() {
    deleted_log_key(false);
}

#[test]
fn a_deleted_log_key_loses_only_its_session_on_redb() {
    deleted_log_key(true);
}

/// A node record whose bytes no longer match its checksum.
fn corrupt_node(redb: bool) {
    salvage_after(redb, "appended", "checksum", |store| {
        let (key, mut value) = log_key(store, "appended", 1);
        value[8] ^= 0x40;
        put(store, key, value);
    });
}

#[test]
fn a_corrupt_node_record_loses_only_its_session_on_sled() {
    corrupt_node(false);
}

#[test]
fn a_corrupt_node_record_loses_only_its_session_on_redb() {
    corrupt_node(true);
}

/// A byte changed inside a log pack of an imported session.
#[test]
fn a_damaged_log_pack_loses_only_its_session() {
    for redb in [false, true] {
        salvage_after(redb, "labels", "verification", |store| {
            let sid = sid_of(store, "labels");
            let prefix = grove::keys::session_prefix(grove::keys::T_LOG_PACK, sid);
            let (key, mut value) = store
                .kv()
                .scan(&prefix, &grove::keys::prefix_end(&prefix))
                .next()
                .unwrap()
                .unwrap();
            let at = value.len() / 2;
            value[at] ^= 0x08;
            put(store, key, value);
        });
    }
}

/// Damaged indexes lose nothing: the copy rebuilds them from the log, and the report notes
/// what verification of the source found.
#[test]
fn damaged_indexes_are_rebuilt_from_the_log() {
    for redb in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (src, dest) = (dir.path().join("src"), dir.path().join("dest"));
        let before = build(&src, redb);
        damage(&src, redb, |store| {
            let sid = sid_of(store, "appended");
            // The label index row and a children-index row of "appended".
            for tag in [grove::keys::T_LABEL, grove::keys::T_CHILD] {
                let prefix = grove::keys::session_prefix(tag, sid);
                let (key, _) = store
                    .kv()
                    .scan(&prefix, &grove::keys::prefix_end(&prefix))
                    .next()
                    .unwrap()
                    .unwrap();
                delete(store, key);
            }
        });
        assert!(!open(&src, redb).verify().unwrap().is_ok());
        let report = run_salvage(&src, &dest, redb);
        assert!(report.is_complete(), "{report:#?}");
        let appended = report
            .recovered
            .iter()
            .find(|r| r.session == "appended")
            .unwrap();
        let noted = appended.index_damage.as_deref().unwrap_or_default();
        assert!(noted.contains("label index"), "{noted}");
        assert!(report
            .recovered
            .iter()
            .all(|r| r.session == "appended" || r.index_damage.is_none()));
        assert_eq!(
            check_copies(&dest, redb, &before),
            before.keys().cloned().collect::<Vec<_>>()
        );
    }
}

/// A session whose catalogue row is gone is found by its records and copied; the report
/// says it was not listed.
#[test]
fn a_session_missing_from_the_catalogue_is_still_recovered() {
    for redb in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (src, dest) = (dir.path().join("src"), dir.path().join("dest"));
        let before = build(&src, redb);
        damage(&src, redb, |store| {
            delete(store, grove::keys::session_id("appended"))
        });
        // The store itself no longer lists it.
        assert!(open(&src, redb).session("appended").is_err());
        let report = run_salvage(&src, &dest, redb);
        assert!(report.is_complete(), "{report:#?}");
        let appended = report
            .recovered
            .iter()
            .find(|r| r.session == "appended")
            .unwrap();
        assert!(!appended.listed);
        assert_eq!(
            check_copies(&dest, redb, &before),
            before.keys().cloned().collect::<Vec<_>>()
        );
    }
}

/// A listed session whose session record does not decode is reported under its id.
#[test]
fn an_unreadable_session_record_is_reported_under_its_id() {
    for redb in [false, true] {
        salvage_after(redb, "forked", "session record", |store| {
            let key = grove::keys::session(sid_of(store, "forked"));
            let mut value = store.kv().get(&key).unwrap().unwrap();
            value[3] ^= 0x10;
            put(store, key, value);
        });
    }
}

/// A session whose record and catalogue row are both gone is reported by its number: its
/// head and log are still there.
#[test]
fn a_lost_session_without_an_id_is_named_by_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dest) = (dir.path().join("src"), dir.path().join("dest"));
    build(&src, false);
    let mut sid = 0;
    damage(&src, false, |store| {
        sid = sid_of(store, "forked");
        delete(store, grove::keys::session(sid));
        delete(store, grove::keys::session_id("forked"));
    });
    let report = run_salvage(&src, &dest, false);
    assert_eq!(report.lost.len(), 1, "{report:#?}");
    assert_eq!(report.lost[0].session, format!("sid {sid}"));
    assert!(report.lost[0].reason.contains("without a session record"));
}

/// The destination must be new: one holding a session is refused, naming it.
#[test]
fn a_destination_with_sessions_is_refused() {
    let src = Store::in_memory().unwrap();
    let dest = Store::in_memory().unwrap();
    dest.create_session(CreateSession {
        id: Some("already-here".into()),
        cwd: "/w".into(),
        ..Default::default()
    })
    .unwrap();
    let err = salvage(&src, &dest).unwrap_err();
    assert!(matches!(err, grove::GroveError::InvalidArgument(_)));
    assert!(err.to_string().contains("already-here"), "{err}");
}

/// Every pi-oracle fixture that imports (strictly, or leniently when strict refuses it; with
/// either leaf rule) is copied exactly: export and import keep the leaf, labels and name.
#[test]
fn every_fixture_salvages_exactly() {
    for leaf_rule in [LeafRule::Auto, LeafRule::LastLine] {
        let src = Store::in_memory().unwrap();
        for f in std::fs::read_dir(fixture("x").parent().unwrap()).unwrap() {
            let path = f.unwrap().path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let options = |strictness| ImportOptions {
                strictness,
                leaf_rule,
                ..Default::default()
            };
            if src.import_file(&path, options(Strictness::Strict)).is_err() {
                let _ = src.import_file(&path, options(Strictness::Lenient));
            }
        }
        let before: BTreeMap<String, Snapshot> = src
            .sessions()
            .unwrap()
            .iter()
            .map(|s| (s.id.clone(), snapshot(&src.session(&s.id).unwrap())))
            .collect();
        assert!(before.len() > 140);
        let dest = Store::in_memory().unwrap();
        let report = salvage(&src, &dest).unwrap();
        assert!(report.is_complete(), "{leaf_rule:?}: {:#?}", report.lost);
        for (id, snap) in &before {
            assert_eq!(&snapshot(&dest.session(id).unwrap()), snap, "{id}");
        }
    }
}

/// A backend that panics when one key is read: the panic is reported as that session's
/// failure and every other session is copied.
struct PanicOn {
    inner: MemoryKv,
    key: parking_lot::Mutex<Option<Vec<u8>>>,
}

impl PanicOn {
    fn check(&self, key: &[u8]) {
        if self.key.lock().as_deref() == Some(key) {
            panic!("injected backend panic");
        }
    }
}

impl Kv for PanicOn {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        self.check(key);
        self.inner.get(key)
    }
    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.inner.scan(start, end)
    }
    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.inner.scan_rev(start, end)
    }
    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        self.inner.apply(batch)
    }
    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }
    fn name(&self) -> &'static str {
        "panic-on"
    }
}

#[test]
fn a_panic_in_one_session_stops_none_of_the_others() {
    let kv = std::sync::Arc::new(PanicOn {
        inner: MemoryKv::new(),
        key: parking_lot::Mutex::new(None),
    });
    let src = Store::from_kv(Box::new(ArcKv(kv.clone())), Durability::None).unwrap();
    for name in ["one", "two", "three"] {
        let s = src
            .create_session(CreateSession {
                id: Some(name.into()),
                cwd: "/w".into(),
                ..Default::default()
            })
            .unwrap();
        seed(&s);
    }
    // A fresh handle, so that nothing of "two" is cached.
    drop(src);
    let src = Store::from_kv(Box::new(ArcKv(kv.clone())), Durability::None).unwrap();
    *kv.key.lock() = Some(grove::keys::head(sid_of(&src, "two")));
    let dest = Store::in_memory().unwrap();
    let report = salvage(&src, &dest).unwrap();
    assert_eq!(report.lost.len(), 1, "{report:#?}");
    assert_eq!(report.lost[0].session, "two");
    assert!(report.lost[0].reason.contains("injected backend panic"));
    let copied: Vec<String> = dest.sessions().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(copied, ["one", "three"]);
}

/// A shared [`PanicOn`], so the test can arm it after the store is built.
struct ArcKv(std::sync::Arc<PanicOn>);

impl Kv for ArcKv {
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
        "panic-on"
    }
}
