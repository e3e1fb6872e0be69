//! The redb backend beside sled: one scenario run against every backend and durability, the
//! `Kv` contract checked against the in-memory reference, and a store directory of one backend
//! refused by the other.

use std::path::{Path, PathBuf};

use grove::kv::{Kv, MemoryKv, RedbKv, SledKv, WriteBatch};
use grove::{Backend, CreateSession, Durability, Flavor, GroveError, Store, StoreConfig};

use super::{seed, texts, user};

const FIXTURES: [&str; 2] = ["edge-seed-harness.jsonl", "r000-harness.jsonl"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pi-oracle")
        .join(name)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sled,
    Redb,
}

fn config(kind: Kind, dir: &Path, durability: Durability) -> StoreConfig {
    let backend = match kind {
        Kind::Sled => Backend::Sled(dir.to_owned()),
        Kind::Redb => Backend::Redb(dir.to_owned()),
    };
    StoreConfig::new(dir)
        .backend(backend)
        .durability(durability)
}

/// What a session answers: its log lines, leaf, context, tree, and harness export.
#[derive(Debug, PartialEq)]
struct Snapshot {
    log: Vec<String>,
    leaf: Option<String>,
    context: grove::Context,
    tree: grove::Tree,
    export: Vec<u8>,
}

fn snapshot(store: &Store, id: &str) -> Snapshot {
    let s = store.session(id).unwrap();
    let mut export = Vec::new();
    s.export(Flavor::Harness, &mut export).unwrap();
    Snapshot {
        log: s.log().map(|e| e.unwrap().line).collect(),
        leaf: s.leaf().unwrap(),
        context: s.build_context().unwrap(),
        tree: s.tree().unwrap(),
        export,
    }
}

/// Builds the scenario in a fresh store, checks it, reopens the store after dropping it and
/// checks that everything answers the same. Returns the snapshots of the imported sessions.
fn scenario(kind: Kind, durability: Durability) -> Vec<Snapshot> {
    let tag = format!("{kind:?}/{durability:?}");
    let dir = tempfile::tempdir().unwrap();
    let open = || Store::open_with(config(kind, dir.path(), durability)).unwrap();
    let mut ids = Vec::new();
    let (created, ids_seed, before) = {
        let store = open();
        assert_eq!(
            store.backend_name(),
            if kind == Kind::Sled { "sled" } else { "redb" }
        );
        let s = store
            .create_session(CreateSession {
                id: Some("made-here".into()),
                cwd: "/project".into(),
                ..Default::default()
            })
            .unwrap();
        let seeded = seed(&s);
        s.set_label(&seeded[1], Some("fork point")).unwrap();
        // A move with no later append must persist too.
        s.move_to(Some(&seeded[3])).unwrap();
        assert_eq!(
            texts(&s),
            ["user 1", "assistant 1", "plan A", "assistant A"],
            "{tag}"
        );
        for f in FIXTURES {
            let file = fixture(f);
            let report = store.import_file(&file, Default::default()).unwrap();
            let snap = snapshot(&store, &report.session);
            assert_eq!(snap.export, std::fs::read(&file).unwrap(), "{tag}: {f}");
            assert_eq!(snap.leaf, report.leaf, "{tag}: {f}");
            ids.push(report.session);
        }
        let mut before: Vec<Snapshot> = ids.iter().map(|id| snapshot(&store, id)).collect();
        before.push(snapshot(&store, "made-here"));
        let listed = store.sessions().unwrap();
        assert_eq!(listed.len(), 3, "{tag}");
        (s.id().to_owned(), seeded, before)
    };
    // Reopen after the store was dropped.
    let store = open();
    let mut after: Vec<Snapshot> = ids.iter().map(|id| snapshot(&store, id)).collect();
    after.push(snapshot(&store, &created));
    assert_eq!(after, before, "{tag}: after reopen");
    for (f, snap) in FIXTURES.iter().zip(&after) {
        assert_eq!(
            snap.export,
            std::fs::read(fixture(f)).unwrap(),
            "{tag}: {f}"
        );
    }
    let s = store.session(&created).unwrap();
    assert_eq!(s.leaf().unwrap().as_deref(), Some(ids_seed[3].as_str()));
    assert_eq!(s.label(&ids_seed[1]).unwrap().unwrap().label, "fork point");
    assert_eq!(s.children(Some(&ids_seed[1])).unwrap().len(), 2);
    assert_eq!(s.record().cwd, "/project");
    // Appending after reopen continues the sequence without clobbering.
    let n = s.log().count();
    s.append(user("more")).unwrap();
    assert_eq!(s.log().count(), n + 1);
    // Deleting a session removes it from the catalogue, and stays deleted.
    store.delete_session(&ids[0]).unwrap();
    drop(s);
    drop(store);
    let store = open();
    assert_eq!(store.sessions().unwrap().len(), 2, "{tag}");
    assert!(matches!(
        store.session(&ids[0]),
        Err(GroveError::SessionNotFound(_))
    ));
    after.truncate(FIXTURES.len());
    after
}

#[test]
fn same_scenario_passes_on_sled_and_redb_at_every_durability() {
    let mut results = Vec::new();
    for kind in [Kind::Sled, Kind::Redb] {
        for durability in [Durability::None, Durability::Group, Durability::Sync] {
            results.push(((kind, durability), scenario(kind, durability)));
        }
    }
    // Imported sessions answer identically whatever the backend.
    let (first, reference) = &results[0];
    for (which, snaps) in &results[1..] {
        assert!(snaps == reference, "{which:?} differs from {first:?}");
    }
}

#[test]
fn redb_store_file_is_in_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(config(Kind::Redb, dir.path(), Durability::Sync)).unwrap();
    drop(store);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // The database, the store's lock file and its durable-commit record.
    assert_eq!(names, ["grove.commit", "grove.lock", grove::kv::REDB_FILE]);
}

#[test]
fn redb_directory_opened_as_sled_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open_with(config(Kind::Redb, dir.path(), Durability::Sync)).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        seed(&s);
    }
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    for result in [
        Store::open(dir.path()),
        Store::open_with(config(Kind::Sled, dir.path(), Durability::None)),
    ] {
        let err = result
            .err()
            .expect("a redb directory must not open as sled");
        assert!(
            matches!(err, GroveError::InvalidArgument(_)),
            "unexpected error {err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("redb") && msg.contains("sled"),
            "message should name both backends: {msg}"
        );
    }
    assert_eq!(listing(), before, "sled must not have created files");
    // The redb store is intact.
    let store = Store::open_with(config(Kind::Redb, dir.path(), Durability::Sync)).unwrap();
    assert_eq!(store.sessions().unwrap()[0].entries, 6);
}

#[test]
fn sled_directory_opened_as_redb_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.create_session(CreateSession::default()).unwrap();
    }
    let err = Store::open_with(config(Kind::Redb, dir.path(), Durability::Sync))
        .err()
        .expect("a sled directory must not open as redb");
    assert!(matches!(err, GroveError::InvalidArgument(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("sled") && msg.contains("redb"), "{msg}");
    assert!(!dir.path().join(grove::kv::REDB_FILE).exists());
    assert_eq!(
        Store::open(dir.path()).unwrap().sessions().unwrap().len(),
        1
    );
}

#[test]
fn redb_nondurable_writes_survive_flush_and_clean_close() {
    for flush in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (id, ids) = {
            let store = Store::open_with(config(Kind::Redb, dir.path(), Durability::None)).unwrap();
            let s = store.create_session(CreateSession::default()).unwrap();
            let ids = seed(&s);
            if flush {
                store.flush().unwrap();
            }
            (s.id().to_owned(), ids)
        };
        let store = Store::open_with(config(Kind::Redb, dir.path(), Durability::Sync)).unwrap();
        let s = store.session(&id).unwrap();
        assert_eq!(s.leaf().unwrap().as_deref(), ids.last().map(String::as_str));
        assert_eq!(s.log().count(), ids.len() + 1, "flush: {flush}");
    }
}

// The `Kv` contract, checked operation by operation against the in-memory reference.

/// A deterministic pseudo-random sequence (xorshift), so failures reproduce.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(super) fn key(&mut self) -> Vec<u8> {
        // Short keys over a small alphabet, including the empty key and 0x00/0xff bytes, so
        // that prefixes and bytewise order are exercised.
        let len = (self.next() % 4) as usize;
        (0..len)
            .map(|_| [0x00, 0x01, b'a', b'b', 0x7f, 0x80, 0xff][(self.next() % 7) as usize])
            .collect()
    }
}

pub(super) fn all(kv: &dyn Kv, start: &[u8], end: &[u8], rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let scan = if rev {
        kv.scan_rev(start, end)
    } else {
        kv.scan(start, end)
    };
    scan.map(Result::unwrap).collect()
}

/// Random batches applied to `kv` and to the in-memory reference; gets and scans both ways
/// must agree after each.
pub(super) fn check_against_memory(kv: &dyn Kv) {
    let reference = MemoryKv::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        let mut batch = WriteBatch::new();
        for _ in 0..(rng.next() % 8) {
            let key = rng.key();
            // One operation in three is a delete.
            match rng.next() % 3 {
                0 => batch.delete(key),
                _ => batch.put(key, format!("v{round}").into_bytes()),
            }
        }
        reference.apply(batch.clone()).unwrap();
        kv.apply(batch).unwrap();
        if round % 50 == 0 {
            kv.flush().unwrap();
        }
        let key = rng.key();
        assert_eq!(kv.get(&key).unwrap(), reference.get(&key).unwrap());
        let (a, b) = (rng.key(), rng.key());
        for rev in [false, true] {
            assert_eq!(
                all(kv, &a, &b, rev),
                all(&reference, &a, &b, rev),
                "{} round {round}: [{a:?}, {b:?}) rev {rev}",
                kv.name()
            );
        }
    }
    for rev in [false, true] {
        assert_eq!(
            all(kv, &[], &[0xff, 0xff, 0xff, 0xff], rev),
            all(&reference, &[], &[0xff, 0xff, 0xff, 0xff], rev)
        );
    }
}

#[test]
fn kv_contract_matches_memory_on_sled_and_redb() {
    let sled = SledKv::temporary().unwrap();
    check_against_memory(&sled);
    for durability in [Durability::None, Durability::Sync] {
        let dir = tempfile::tempdir().unwrap();
        let redb = RedbKv::open(dir.path(), durability, grove::store::DEFAULT_CACHE_BYTES).unwrap();
        check_against_memory(&redb);
    }
}

#[test]
fn redb_scans_stream_large_ranges_and_tolerate_writes_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let kv = RedbKv::open(
        dir.path(),
        Durability::None,
        grove::store::DEFAULT_CACHE_BYTES,
    )
    .unwrap();
    let n: u32 = 20_000;
    let mut batch = WriteBatch::new();
    for i in 0..n {
        batch.put(i.to_be_bytes().to_vec(), vec![(i % 251) as u8; 16]);
    }
    kv.apply(batch).unwrap();
    let start = 10u32.to_be_bytes();
    let end = (n - 10).to_be_bytes();
    // A scan left open while batches are applied neither blocks them nor fails.
    let mut scan = kv.scan(&start, &end);
    let mut rev = kv.scan_rev(&start, &end);
    assert_eq!(scan.next().unwrap().unwrap().0, start.to_vec());
    assert_eq!(
        rev.next().unwrap().unwrap().0,
        (n - 11).to_be_bytes().to_vec()
    );
    let mut more = WriteBatch::new();
    more.delete(12u32.to_be_bytes().to_vec());
    more.put(n.to_be_bytes().to_vec(), b"x".to_vec());
    kv.apply(more).unwrap();
    kv.flush().unwrap();
    let forward = scan.count() + 1;
    let backward = rev.count() + 1;
    // A scan reads the snapshot it started on.
    assert_eq!(forward, (n - 20) as usize);
    assert_eq!(backward, (n - 20) as usize);
    // A new scan sees the write.
    assert_eq!(kv.scan(&start, &end).count(), (n - 21) as usize);
    assert_eq!(kv.get(&n.to_be_bytes()).unwrap(), Some(b"x".to_vec()));
    // Empty and inverted ranges.
    assert_eq!(kv.scan(&end, &start).count(), 0);
    assert_eq!(kv.scan_rev(&start, &start).count(), 0);
}
