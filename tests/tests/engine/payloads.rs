//! The payload store: large string values are stored once, by their blake3, within a session
//! and across sessions; contexts, exports, verify and seals see the original bytes; a fork
//! copies no payload bytes; deleting a session removes no payload; `gc` removes the ones no
//! session references and reports each; a missing payload is reported, never made up.

use base64::Engine as _;
use grove::kv::WriteBatch;
use grove::{CreateSession, Flavor, ForkMode, ForkOptions, NewEntry, Session, Store, StoreConfig};

use super::user;

/// A user message carrying a base64 "image" of `kb` KiB made from `seed`.
fn image(seed: u8, kb: usize) -> NewEntry {
    // Base64 of bytes that do not compress, as an image's (xorshift, seeded).
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(seed);
    let data: String = (0..kb * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                    [(x >> 58) as usize],
            )
        })
        .collect();
    NewEntry::Message {
        message: format!(
            r#"{{"role":"user","content":[{{"type":"text","text":"look"}},{{"type":"image","data":"{data}","mimeType":"image/png"}}],"timestamp":1}}"#
        ),
    }
}

/// The store at `dir` as an older build left it: each payload of `stored` rewritten by `value`,
/// the marker `marker`. Opened again, it reads as before (`before`: session `b` exported),
/// verifies, and has the current marker.
fn left_by_an_older_build(
    dir: &std::path::Path,
    store: Store,
    stored: &[(Vec<u8>, Vec<u8>)],
    value: impl Fn(&[u8]) -> Vec<u8>,
    marker: &[u8],
    before: &[u8],
) -> Store {
    let mut batch = WriteBatch::new();
    for (key, stored) in stored {
        batch.put(key.clone(), value(stored));
    }
    let key = grove::keys::meta(grove::keys::META_FORMAT);
    batch.put(key.clone(), marker.to_vec());
    store.kv().apply(batch).unwrap();
    drop(store);
    let store = Store::open_with(StoreConfig::new(dir)).unwrap();
    assert!(export(&store.session("b").unwrap()) == before);
    assert!(store.verify().unwrap().is_ok());
    assert_eq!(
        store.kv().get(&key).unwrap(),
        Some(b"grove\x00\x0f".to_vec())
    );
    store
}

fn export(s: &Session) -> Vec<u8> {
    let mut out = Vec::new();
    s.export(Flavor::Harness, &mut out).unwrap();
    out
}

/// The same session written with and without payloads: byte-for-byte the same reads.
#[test]
fn reads_give_the_original_bytes_back() {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let stores: Vec<Store> = dirs
        .iter()
        .zip([Some(4096), None])
        .map(|(d, t)| Store::open_with(StoreConfig::new(d.path()).payload_threshold(t)).unwrap())
        .collect();
    let mut sessions = Vec::new();
    for store in &stores {
        let s = store
            .create_session(CreateSession {
                id: Some("img".into()),
                ..CreateSession::default()
            })
            .unwrap();
        let mut options = grove::AppendOptions::default();
        for (i, e) in [
            user("hi"),
            image(1, 64),
            user("again"),
            image(1, 64),
            image(2, 8),
        ]
        .into_iter()
        .enumerate()
        {
            options.id = Some(format!("e{i}"));
            options.timestamp = Some(format!("2026-01-01T00:00:0{i}.000Z"));
            s.append_with(e, options.clone()).unwrap();
        }
        sessions.push(s);
    }
    let stats = stores[0].payload_stats().unwrap();
    assert_eq!(stats.payloads, 2, "the same image twice is one payload");
    assert_eq!(
        stats.bytes,
        (64 + 8) * 1024 / 4 * 3 + 2,
        "base64 is stored as the bytes it decodes to, each behind its tag"
    );
    assert_eq!(stores[1].payload_stats().unwrap().payloads, 0);
    let (with, without) = (&sessions[0], &sessions[1]);
    // The same entries (the headers differ only in when each session was created).
    let body = |s: &Session| {
        let e = export(s);
        let at = e.iter().position(|&b| b == b'\n').unwrap();
        e[at..].to_vec()
    };
    assert!(body(with) == body(without), "the exports differ");
    assert_eq!(
        with.build_context().unwrap().to_json(),
        without.build_context().unwrap().to_json()
    );
    let lines: Vec<String> = with.log().map(|e| e.unwrap().line).collect();
    let plain: Vec<String> = without.log().map(|e| e.unwrap().line).collect();
    assert!(lines == plain, "the lines differ");
    for (a, b) in with
        .path_to_root(None)
        .unwrap()
        .iter()
        .zip(without.path_to_root(None).unwrap())
    {
        assert_eq!(
            a.node.content, b.node.content,
            "the chain covers the original bytes"
        );
    }
    assert!(stores[0].verify().unwrap().is_ok());
    // Replay and the audit file see the original lines too.
    let mut audit = Vec::new();
    with.export_audit(&mut audit, None).unwrap();
    let report = grove::verify_audit(&audit, None).unwrap();
    assert_eq!(report.seal, with.seal().unwrap().digest);
    // Reopened cold, the same.
    let export_before = export(with);
    drop(sessions);
    let dir0 = dirs[0].path().to_owned();
    drop(stores);
    let store = Store::open_with(StoreConfig::new(&dir0)).unwrap();
    assert!(export(&store.session("img").unwrap()) == export_before);
}

#[test]
fn forks_and_imports_share_payloads_and_gc_removes_only_unreferenced_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let a = store.create_session(CreateSession::default()).unwrap();
    a.append(image(3, 32)).unwrap();
    a.append(user("between")).unwrap();
    a.append(image(4, 32)).unwrap();
    let one = store.payload_stats().unwrap();
    assert_eq!(one.payloads, 2);
    // Forks in every mode, and the export imported again: no new payload bytes.
    for mode in [ForkMode::Path, ForkMode::Rechained, ForkMode::Copy] {
        let f = store
            .fork(
                &a,
                ForkOptions {
                    mode,
                    ..ForkOptions::default()
                },
            )
            .unwrap();
        assert_eq!(
            f.build_context().unwrap().to_json(),
            a.build_context().unwrap().to_json()
        );
    }
    // The export imported again under another session id (its header's).
    let text = String::from_utf8(export(&a)).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let file = format!("{}\n{rest}", header.replacen(a.id(), "copy", 1)).into_bytes();
    let imported = store
        .import_reader(
            std::io::Cursor::new(file.clone()),
            grove::ImportOptions::default(),
        )
        .unwrap();
    let copy = store.session(&imported.session).unwrap();
    assert!(
        export(&copy) == file,
        "an import gives its file back byte for byte"
    );
    assert_eq!(store.payload_stats().unwrap(), one, "nothing stored twice");
    // A payload only `a` holds, then `a` deleted: the shared ones stay, the other goes, and
    // only gc removes it, reporting it.
    a.append(image(5, 16)).unwrap();
    assert_eq!(store.payload_stats().unwrap().payloads, 3);
    let id = a.id().to_owned();
    drop(a);
    store.delete_session(&id).unwrap();
    assert_eq!(
        store.payload_stats().unwrap().payloads,
        3,
        "delete removes no payload"
    );
    let report = store.gc().unwrap();
    assert_eq!(report.payloads, 3);
    assert_eq!(report.referenced, 2);
    assert_eq!(report.removed.len(), 1);
    assert_eq!(
        report.removed_bytes(),
        16 * 1024 / 4 * 3 + 1,
        "the bytes it held: its base64 decoded"
    );
    assert_eq!(store.payload_stats().unwrap(), one);
    assert!(export(&copy) == file);
    assert!(store.verify().unwrap().is_ok());
    // A second collection finds nothing to remove.
    assert!(store.gc().unwrap().removed.is_empty());
}

#[test]
fn a_missing_payload_is_reported_not_made_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let s = store.create_session(CreateSession::default()).unwrap();
    s.append(user("before")).unwrap();
    let id = s.append(image(6, 8)).unwrap();
    // Remove the payload behind grove's back.
    let keys: Vec<Vec<u8>> = store
        .kv()
        .scan(&[0x20], &[0x21])
        .map(|p| p.unwrap().0.to_vec())
        .collect();
    assert_eq!(keys.len(), 1);
    let mut batch = grove::kv::WriteBatch::new();
    batch.delete(keys[0].clone());
    store.kv().apply(batch).unwrap();
    let err = s.build_context().unwrap_err().to_string();
    assert!(err.contains(&id) && err.contains("missing"), "{err}");
    let report = store.verify().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.to_string().contains("missing")),
        "{:?}",
        report.problems
    );
}

/// A payload of base64 text is stored as the bytes it decodes to and any other as written; a
/// layout-11 store, whose payloads are all stored as written, reads the same, and a writer's
/// open only rewrites its marker.
#[test]
fn base64_payloads_are_stored_decoded_and_a_layout_11_store_reads_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(StoreConfig::new(dir.path())).unwrap();
    let s = store
        .create_session(CreateSession {
            id: Some("b".into()),
            ..CreateSession::default()
        })
        .unwrap();
    s.append(image(7, 8)).unwrap();
    let text = "word ".repeat(2000);
    s.append(user(&text)).unwrap();
    // Padded base64 (2 bytes over a multiple of 3), as Python's and node's encoders write it.
    let blob: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
    let padded = base64::engine::general_purpose::STANDARD.encode(&blob);
    assert!(padded.ends_with('='));
    s.append(user(&padded)).unwrap();
    let before = export(&s);
    let payloads = |store: &Store| -> Vec<(Vec<u8>, Vec<u8>)> {
        store
            .kv()
            .scan(&[0x20], &[0x21])
            .map(|p| {
                let (k, v) = p.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect()
    };
    let stored = payloads(&store);
    assert_eq!(stored.len(), 3);
    // Each payload's form (behind the zstd tag when compressed): base64 decoded behind its
    // tag, text as written; the text and the repeating blob compressed, the image not.
    let form = |v: &[u8]| match v[0] {
        0x02 => zstd::block::decompress(&v[1..], 1 << 20).unwrap(),
        _ => v.to_vec(),
    };
    let mut forms: Vec<(u8, u8, usize)> = stored
        .iter()
        .map(|(_, v)| (v[0], form(v)[0], form(v).len()))
        .collect();
    forms.sort_unstable();
    assert_eq!(
        forms,
        [
            (0x01, 0x01, 1 + 6 * 1024),
            (0x02, 0x01, 1 + 5000),
            (0x02, b'"', text.len() + 2)
        ],
        "base64 decoded behind its tag, text as written, compressed when that saves"
    );
    // As a layout-12 build left it: no payload compressed.
    drop(s);
    let store = left_by_an_older_build(dir.path(), store, &stored, form, b"grove\x00\x0c", &before);
    assert!(payloads(&store).iter().all(|(_, v)| v[0] != 0x02));
    // As a layout-11 build left it: every payload as written.
    let as_written = |v: &[u8]| grove_codec::payload::line_form(v.to_vec()).unwrap();
    let store = left_by_an_older_build(
        dir.path(),
        store,
        &stored,
        as_written,
        b"grove\x00\x0b",
        &before,
    );
    let as_written = payloads(&store);
    assert!(as_written.iter().all(|(_, v)| v[0] == b'"'));
    // The same image again is the payload stored as written, not a second copy.
    let t = store.create_session(CreateSession::default()).unwrap();
    t.append(image(7, 8)).unwrap();
    assert!(payloads(&store) == as_written);
    assert!(store.verify().unwrap().is_ok());
}
