//! Everything survives closing and reopening a sled store.

use grove::{CreateSession, Store};

use super::{seed, texts};

#[test]
fn sessions_leaf_moves_and_indexes_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (sid, ids, before_log, before_tree) = {
        let store = Store::open(dir.path()).unwrap();
        let s = store
            .create_session(CreateSession {
                cwd: "/project".into(),
                ..Default::default()
            })
            .unwrap();
        let ids = seed(&s);
        s.set_label(&ids[1], Some("fork point")).unwrap();
        // A move with no later append must persist too (pi-CLI loses it).
        s.move_to(Some(&ids[3])).unwrap();
        let log: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
        let tree = s.tree().unwrap();
        (s.id().to_owned(), ids, log, tree)
    };
    let store = Store::open(dir.path()).unwrap();
    let s = store.session(&sid).unwrap();
    assert_eq!(s.leaf().unwrap().as_deref(), Some(ids[3].as_str()));
    assert_eq!(
        texts(&s),
        ["user 1", "assistant 1", "plan A", "assistant A"]
    );
    let log: Vec<String> = s.log().map(|e| e.unwrap().line).collect();
    assert_eq!(log, before_log);
    assert_eq!(s.tree().unwrap(), before_tree);
    assert_eq!(s.label(&ids[1]).unwrap().unwrap().label, "fork point");
    assert_eq!(s.children(Some(&ids[1])).unwrap().len(), 2);
    assert_eq!(store.sessions().unwrap().len(), 1);
    assert_eq!(s.record().cwd, "/project");
    // Appending after reopen continues the sequence without clobbering.
    s.append(super::user("more")).unwrap();
    assert_eq!(s.log().count(), before_log.len() + 1);
}

#[test]
fn imported_fixture_answers_the_same_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pi-oracle/edge-nested-compaction-harness.jsonl");
    let (id, leaf, ctx, branch) = {
        let store = Store::open(dir.path()).unwrap();
        let report = store.import_file(&file, Default::default()).unwrap();
        let s = store.session(&report.session).unwrap();
        let branch: Vec<String> = s
            .branch(None)
            .unwrap()
            .iter()
            .map(|e| e.id().to_owned())
            .collect();
        (
            report.session,
            s.leaf().unwrap(),
            s.build_context().unwrap(),
            branch,
        )
    };
    let store = Store::open(dir.path()).unwrap();
    let s = store.session(&id).unwrap();
    assert_eq!(s.leaf().unwrap(), leaf);
    assert_eq!(s.build_context().unwrap(), ctx);
    let again: Vec<String> = s
        .branch(None)
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(again, branch);
    let mut out = Vec::new();
    s.export(grove::Flavor::Harness, &mut out).unwrap();
    assert_eq!(out, std::fs::read(&file).unwrap());
}

/// Regression (found by the model-based test): sled releases its file lock from a background
/// thread after the last handle is dropped, so an immediate reopen in the same process failed
/// with "could not acquire lock".
#[test]
fn reopening_immediately_after_drop_in_the_same_process_works() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let store = Store::open(dir.path()).unwrap();
        let s = match store.sessions().unwrap().first() {
            Some(row) => store.session(&row.id).unwrap(),
            None => store.create_session(CreateSession::default()).unwrap(),
        };
        s.append(super::user(&format!("round {round}"))).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let id = store.sessions().unwrap()[0].id.clone();
    assert_eq!(store.session(&id).unwrap().entries().count(), 20);
}

#[test]
fn a_store_of_another_layout_is_refused_with_its_layout_named() {
    use grove::kv::{Kv, MemoryKv, WriteBatch};
    for (marker, expected) in [
        (
            &b"grove\x00\x01"[..],
            "store layout 1; this build reads layout 15",
        ),
        (
            &b"grove\x00\x10"[..],
            "store layout 16; this build reads layout 15",
        ),
        (&b"other"[..], "not a grove store of a known format"),
    ] {
        let kv = MemoryKv::default();
        let mut b = WriteBatch::new();
        b.put(grove::keys::meta(grove::keys::META_FORMAT), marker.to_vec());
        kv.apply(b).unwrap();
        let Err(err) = grove::Store::from_kv(Box::new(kv), grove::Durability::None) else {
            panic!("a store with marker {marker:?} was opened");
        };
        assert!(
            matches!(&err, grove::GroveError::Corrupt(m) if m.contains(expected)),
            "{err:?}"
        );
    }
}

/// Rewrites a store as a layout-2 or layout-3 build left it: the ids of appended records in id
/// rows (`[0x12][sid] ++ id` → seq), no id runs, the older marker.
fn as_older_layout(store: &Store, marker: &[u8]) {
    use grove::keys;
    use grove::kv::WriteBatch;
    let kv = store.kv();
    let mut b = WriteBatch::new();
    for tag in [keys::T_ID_RUN, keys::T_ID_RUN_PACK] {
        for pair in kv.scan(&[tag], &[tag + 1]) {
            b.delete(pair.unwrap().0);
        }
    }
    for pair in kv.scan(&[keys::T_LOG], &[keys::T_LOG + 1]) {
        let (k, _) = pair.unwrap();
        let sid = u64::from_be_bytes(k[1..9].try_into().unwrap());
        let seq = u64::from_be_bytes(k[9..17].try_into().unwrap());
        let id = store.sessions().unwrap().into_iter().find_map(|info| {
            let s = store.session(&info.id).unwrap();
            let sid_of = u64::from_be_bytes(
                kv.get(&keys::session_id(&info.id)).unwrap().unwrap()[..]
                    .try_into()
                    .unwrap(),
            );
            (sid_of == sid).then(|| s.log().nth(seq as usize).unwrap().unwrap().id().to_owned())
        });
        b.put(
            keys::entry_id(sid, &id.unwrap()),
            seq.to_be_bytes().to_vec(),
        );
    }
    b.put(keys::meta(keys::META_FORMAT), marker.to_vec());
    kv.apply(b).unwrap();
    store.flush().unwrap();
}

#[test]
fn a_layout_4_store_opens_and_takes_batches_after() {
    use grove::keys;
    let dir = tempfile::tempdir().unwrap();
    let (id, ids) = {
        let store = Store::open(dir.path()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        let ids: Vec<String> = (0..300)
            .map(|i| s.append(super::user(&format!("old {i}"))).unwrap())
            .collect();
        let mut b = grove::kv::WriteBatch::new();
        b.put(keys::meta(keys::META_FORMAT), b"grove\x00\x04".to_vec());
        store.kv().apply(b).unwrap();
        store.flush().unwrap();
        (s.id().to_owned(), ids)
    };
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store
            .kv()
            .get(&keys::meta(keys::META_FORMAT))
            .unwrap()
            .as_deref(),
        Some(&b"grove\x00\x0f"[..])
    );
    let s = store.session(&id).unwrap();
    assert_eq!(s.entry(&ids[123]).unwrap().seq, 123);
    let more = s
        .append_many(&[super::user("new 1"), super::user("new 2")])
        .unwrap();
    assert_eq!(s.entry(&more[1]).unwrap().seq, 301);
    assert_eq!(s.entries().count(), 302);
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn layout_2_and_3_stores_open_with_their_id_rows_moved_into_id_runs() {
    use grove::keys;
    for marker in [&b"grove\x00\x02"[..], b"grove\x00\x03"] {
        let dir = tempfile::tempdir().unwrap();
        let (id, ids) = {
            let store = Store::open(dir.path()).unwrap();
            let s = store.create_session(CreateSession::default()).unwrap();
            let mut ids = Vec::new();
            for i in 0..600 {
                ids.push(s.append(super::user(&format!("old {i}"))).unwrap());
            }
            s.move_to(Some(&ids[10])).unwrap();
            let other = store.create_session(CreateSession::default()).unwrap();
            other.append(super::user("another session")).unwrap();
            as_older_layout(&store, marker);
            assert!(store
                .kv()
                .scan(&[keys::T_ENTRY_ID], &[keys::T_ENTRY_ID + 1])
                .next()
                .is_some());
            (s.id().to_owned(), ids)
        };
        let store = Store::open(dir.path()).unwrap();
        let kv = store.kv();
        assert_eq!(
            kv.get(&keys::meta(keys::META_FORMAT)).unwrap().as_deref(),
            Some(&b"grove\x00\x0f"[..])
        );
        assert!(kv
            .scan(&[keys::T_ENTRY_ID], &[keys::T_ENTRY_ID + 1])
            .next()
            .is_none());
        // One run per session with appended records.
        assert_eq!(kv.scan(&[keys::T_ID_RUN], &[keys::T_ID_RUN + 1]).count(), 2);
        assert!(
            store.verify().unwrap().is_ok(),
            "{:?}",
            store.verify().unwrap()
        );
        let s = store.session(&id).unwrap();
        for (i, entry_id) in ids.iter().enumerate() {
            assert_eq!(texts_of(&s.entry(entry_id).unwrap()), format!("old {i}"));
        }
        let again = s.append_with(
            super::user("again"),
            grove::AppendOptions {
                id: Some(ids[599].clone()),
                ..Default::default()
            },
        );
        assert!(matches!(again, Err(grove::GroveError::DuplicateId(_))));
        s.move_to(Some(&ids[599])).unwrap();
        s.append(super::user("after the upgrade")).unwrap();
        assert!(store.verify().unwrap().is_ok());
    }
}

fn texts_of(e: &grove::Entry) -> String {
    let v: serde_json::Value = serde_json::from_str(&e.line).unwrap();
    v["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Appends `n` entries of compressible text.
fn fill(store: &grove::Store, id: &str, n: usize) {
    let s = store
        .create_session(grove::CreateSession {
            id: Some(id.into()),
            ..grove::CreateSession::default()
        })
        .unwrap();
    for i in 0..n {
        s.append(super::user(&format!(
            "{i} {}",
            "the same words again ".repeat(50)
        )))
        .unwrap();
    }
    store.flush().unwrap();
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                dir_bytes(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}

#[test]
fn compression_is_chosen_at_creation_and_kept_by_the_store() {
    use grove::{Backend, Durability, StoreConfig};
    let tmp = tempfile::tempdir().unwrap();
    let (zipped, plain) = (tmp.path().join("zipped"), tmp.path().join("plain"));
    let open = |dir: &std::path::Path, compress: bool| {
        grove::Store::open_with(
            StoreConfig::new(dir)
                .durability(Durability::None)
                .compress(compress),
        )
        .unwrap()
    };
    {
        fill(&open(&zipped, true), "z", 400);
        fill(&open(&plain, false), "p", 400);
    }
    assert_eq!(grove::kv::stored_compression(&zipped).unwrap(), Some(true));
    assert_eq!(grove::kv::stored_compression(&plain).unwrap(), Some(false));
    assert!(
        dir_bytes(&zipped) * 2 < dir_bytes(&plain),
        "compressed {} vs plain {}",
        dir_bytes(&zipped),
        dir_bytes(&plain)
    );
    // Reopening with the other setting keeps the store's own, and everything reads back.
    for (dir, id, flag) in [(&zipped, "z", false), (&plain, "p", true)] {
        let store = open(dir, flag);
        let s = store.session(id).unwrap();
        assert_eq!(s.head().unwrap().entries, 400);
        s.append(super::user("after reopen")).unwrap();
        assert!(store.verify().unwrap().is_ok());
    }
    assert_eq!(grove::kv::stored_compression(&plain).unwrap(), Some(false));
    // Compression is a sled option.
    let redb = tmp.path().join("redb");
    let err = grove::Store::open_with(
        StoreConfig::new(&redb)
            .backend(Backend::Redb(redb.clone()))
            .compress(true),
    );
    assert!(matches!(err, Err(grove::GroveError::InvalidArgument(_))));
}

/// A filter of `ids` as store layouts up to 5 wrote it: the probes of each id taken from
/// `blake3(id)` (docs/format.md, "Packs", before layout 6).
fn blake3_filter(ids: &[String]) -> grove_codec::pack::IdFilter {
    let bytes = (ids.len() * 10).div_ceil(8).max(8);
    let mut bits = vec![0u8; bytes];
    let m = (bytes * 8) as u64;
    for id in ids {
        let h = blake3::hash(id.as_bytes());
        let h = h.as_bytes();
        let h1 = u64::from_le_bytes(h[0..8].try_into().unwrap());
        let h2 = u64::from_le_bytes(h[8..16].try_into().unwrap()) | 1;
        for i in 0..7u64 {
            let bit = (h1.wrapping_add(i.wrapping_mul(h2)) % m) as usize;
            bits[bit / 8] |= 1 << (bit % 8);
        }
    }
    let mut body = vec![7u8];
    body.extend_from_slice(&bits);
    body.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    grove_codec::pack::IdFilter::decode(&body).unwrap()
}

/// The ids of the id packs under `prefix`.
fn packed_ids(store: &Store, prefix: &[u8]) -> Vec<String> {
    let mut ids = Vec::new();
    for pair in store.kv().scan(prefix, &grove::keys::prefix_end(prefix)) {
        let (_, v) = pair.unwrap();
        let pack = grove_codec::pack::IdPack::parse(&v).unwrap();
        ids.extend(pack.iter().map(|(id, _)| id.to_owned()));
    }
    ids
}

#[test]
fn a_layout_5_store_opens_with_its_id_filters_rebuilt() {
    use grove::keys;
    use grove_codec::pack::{IdFilter, IdRunMeta};
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    // An appended session (several id runs, merged ones among them) and an imported one (id
    // packs and their filter), rewritten with the filters a layout-5 build wrote.
    let (appended, ids, runs) = {
        let store = Store::open(dir.path()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        let ids: Vec<String> = (0..1500)
            .map(|i| s.append(super::user(&format!("old {i}"))).unwrap())
            .collect();
        let mut text = Vec::new();
        writeln!(text, r#"{{"type":"session","version":3,"id":"imported-5","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}}"#).unwrap();
        let mut parent = "null".to_owned();
        for i in 0..700 {
            writeln!(text, r#"{{"type":"message","id":"i{i}","parentId":{parent},"timestamp":"2030-01-01T00:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"imported {i}"}}]}}}}"#).unwrap();
            parent = format!("\"i{i}\"");
        }
        store
            .import_reader(std::io::Cursor::new(text), grove::ImportOptions::default())
            .unwrap();
        let kv = store.kv();
        let mut b = grove::kv::WriteBatch::new();
        let mut runs = 0;
        for pair in kv.scan(&[keys::T_ID_RUN], &[keys::T_ID_RUN + 1]) {
            let (k, v) = pair.unwrap();
            let mut meta = IdRunMeta::decode(&v).unwrap();
            let mut prefix = vec![keys::T_ID_RUN_PACK];
            prefix.extend_from_slice(&k[1..17]);
            let run_ids = packed_ids(&store, &prefix);
            assert_eq!(run_ids.len() as u64, meta.count);
            let old = blake3_filter(&run_ids);
            assert_ne!(old, meta.filter, "the hashes do not differ");
            meta.filter = old;
            b.put(k, meta.encode());
            runs += 1;
        }
        assert!(runs >= 2, "{runs} id runs");
        let mut filters = 0;
        for pair in kv.scan(&[keys::T_ID_FILTER], &[keys::T_ID_FILTER + 1]) {
            let (k, _) = pair.unwrap();
            let mut prefix = vec![keys::T_ID_PACK];
            prefix.extend_from_slice(&k[1..9]);
            b.put(k, blake3_filter(&packed_ids(&store, &prefix)).encode());
            filters += 1;
        }
        assert_eq!(filters, 1);
        b.put(keys::meta(keys::META_FORMAT), b"grove\x00\x05".to_vec());
        kv.apply(b).unwrap();
        store.flush().unwrap();
        // What this build makes of such a store before the upgrade: filters it cannot read.
        assert!(!store.verify().unwrap().is_ok());
        (s.id().to_owned(), ids, runs)
    };
    let store = Store::open(dir.path()).unwrap();
    let kv = store.kv();
    assert_eq!(
        kv.get(&keys::meta(keys::META_FORMAT)).unwrap().as_deref(),
        Some(&b"grove\x00\x0f"[..])
    );
    assert_eq!(
        kv.scan(&[keys::T_ID_RUN], &[keys::T_ID_RUN + 1]).count(),
        runs
    );
    assert!(
        store.verify().unwrap().is_ok(),
        "{:?}",
        store.verify().unwrap()
    );
    let s = store.session(&appended).unwrap();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(s.entry(id).unwrap().seq, i as u64, "{id}");
    }
    let imported = store.session("imported-5").unwrap();
    for i in (0..700).step_by(7) {
        let id = format!("i{i}");
        assert_eq!(
            texts_of(&imported.entry(&id).unwrap()),
            format!("imported {i}")
        );
        // The duplicate check consults the rebuilt filter first.
        let again = imported.append_with(
            super::user("again"),
            grove::AppendOptions {
                id: Some(id),
                ..Default::default()
            },
        );
        assert!(
            matches!(again, Err(grove::GroveError::DuplicateId(_))),
            "{again:?}"
        );
    }
    let dup = s.append_with(
        super::user("again"),
        grove::AppendOptions {
            id: Some(ids[7].clone()),
            ..Default::default()
        },
    );
    assert!(
        matches!(dup, Err(grove::GroveError::DuplicateId(_))),
        "{dup:?}"
    );
    // Rebuilt filters are this build's filters.
    for pair in kv.scan(&[keys::T_ID_RUN], &[keys::T_ID_RUN + 1]) {
        let (k, v) = pair.unwrap();
        let mut prefix = vec![keys::T_ID_RUN_PACK];
        prefix.extend_from_slice(&k[1..17]);
        let run_ids = packed_ids(&store, &prefix);
        assert_eq!(
            IdRunMeta::decode(&v).unwrap().filter,
            IdFilter::build(run_ids.len(), run_ids.iter().map(String::as_str))
        );
    }
}
