//! Redaction (`Session::redact`, `Store::gc`, `Store::rewrite`): a secret written through
//! every write path is in the store's files before, and in none of them after redact, gc and
//! the rewrite, while every other entry, the seals, the audit files and `verify` stay right;
//! a verifier tells a redaction from tampering.

use std::collections::BTreeMap;
use std::path::Path;

use grove::codec::pack::{LogPack, LogPackWriter, LogValue, BATCH_MARK};
use grove::codec::record;
use grove::{
    Backend, CreateSession, Flavor, ForkOptions, GroveError, ImportOptions, NewEntry, OpKind,
    SealCheck, SearchOptions, Session, Store, StoreConfig,
};

use super::{assistant, sid_of, user};

/// One token to the search index's tokenizer (letters and digits), so its words hold it too.
const SECRET: &str = "zq7f3a9c2e1b0d4e5fsecret";

use grove_tests::files_holding;

/// Every entry of every session whose line holds `needle`: (session, entry id).
fn holding(store: &Store, needle: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for summary in store.sessions().unwrap() {
        let s = store.session(&summary.id).unwrap();
        for e in s.log() {
            let e = e.unwrap();
            if e.line.contains(needle) && !e.is_leaf_record() {
                out.push((summary.id.clone(), e.id().to_owned()));
            }
        }
    }
    out
}

/// Every session's lines by entry id.
fn lines(store: &Store) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for summary in store.sessions().unwrap() {
        let s = store.session(&summary.id).unwrap();
        for e in s.log() {
            let e = e.unwrap();
            out.insert((summary.id.clone(), e.id().to_owned()), e.line.clone());
        }
    }
    out
}

/// Everything a reader of `s` can see, as one text.
fn everything_read(s: &Session) -> String {
    let mut out = Vec::new();
    s.export(Flavor::Harness, &mut out).unwrap();
    let ctx = s.build_context().unwrap();
    let mut text = String::from_utf8(out).unwrap();
    for m in ctx.messages.iter() {
        text.push_str(m);
    }
    for (target, label) in s.labels().unwrap() {
        text.push_str(&target);
        text.push_str(&label.label_json);
    }
    text
}

/// Writes the secret into a store through every write path: an append, a payload (a long
/// value stored once), a label, a branch summary, a compaction, an import and a fork.
fn write_secret_everywhere(store: &Store, scratch: &Path) -> String {
    store.set_payload_threshold(Some(64));
    let s = store.create_session(CreateSession::default()).unwrap();
    let first = s.append(user("hello")).unwrap();
    s.append(assistant("hi, how can I help?")).unwrap();
    let pasted = s
        .append(user(&format!("my key is {SECRET}, keep it")))
        .unwrap();
    s.append(assistant(&format!(
        "Stored it. {} The key {SECRET} is now in your config.",
        "A long answer, long enough to be stored as a payload. ".repeat(4)
    )))
    .unwrap();
    s.set_label(&pasted, Some(&format!("key {SECRET}")))
        .unwrap();
    s.append(NewEntry::BranchSummary {
        from_id: first.clone(),
        summary: format!("The user shared the key {SECRET}."),
        details: None,
        usage: None,
        from_hook: None,
    })
    .unwrap();
    s.append(NewEntry::Compaction {
        summary: format!("Earlier: a key {SECRET} was configured."),
        first_kept_entry_id: first,
        tokens_before: 1000,
        retained_tail: None,
        details: None,
        usage: None,
        from_hook: None,
    })
    .unwrap();
    s.append(user("and now something else")).unwrap();
    // A session without the secret, whose lines must not change.
    let other = store.create_session(CreateSession::default()).unwrap();
    other.append(user("unrelated")).unwrap();
    other.append(assistant("indeed")).unwrap();
    // An import: the exported session under another id, from a file outside the store.
    let mut file = Vec::new();
    s.export(Flavor::Harness, &mut file).unwrap();
    let text = String::from_utf8(file)
        .unwrap()
        .replace(s.id(), "imported-copy");
    let path = scratch.join("import.jsonl");
    std::fs::write(&path, text).unwrap();
    store.import_file(&path, ImportOptions::default()).unwrap();
    // A fork.
    store.fork(&s, ForkOptions::default()).unwrap();
    s.id().to_owned()
}

/// The secret's bytes are in the store's files after it is written, and in none after each
/// entry holding it is redacted, the store collected and its files rewritten; nothing else
/// changed, and seals, audit files and verify stay right. On both embedded backends.
#[test]
fn a_secret_written_through_every_path_is_gone_from_the_files_after_redact_gc_and_rewrite() {
    for backend in ["sled", "redb"] {
        let scratch = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let config = || match backend {
            "redb" => StoreConfig::new(&path).backend(Backend::Redb(path.clone())),
            _ => StoreConfig::new(&path),
        };
        let (seals, before, targeted) = {
            let store = Store::open_with(config()).unwrap();
            let main = write_secret_everywhere(&store, scratch.path());
            // The search index holds it too.
            let found = store.search(SECRET, &SearchOptions::default()).unwrap();
            assert!(found.total >= 8, "{backend}: {} hits", found.total);
            store.flush().unwrap();
            assert!(
                !files_holding(&path, SECRET.as_bytes()).is_empty(),
                "{backend}: the secret is in the store's files"
            );
            let seals: BTreeMap<String, String> = store
                .sessions()
                .unwrap()
                .into_iter()
                .map(|x| {
                    let seal = store.session(&x.id).unwrap().seal().unwrap().digest;
                    (x.id, seal)
                })
                .collect();
            let before = lines(&store);
            let targets = holding(&store, SECRET);
            // The append, payload, label, summary and compaction, in the session, its import
            // and its fork.
            assert_eq!(targets.len(), 15, "{backend}: {targets:?}");
            for (session, entry) in &targets {
                let s = store.session(session).unwrap();
                let r = s.redact(entry, None, "a leaked API key").unwrap();
                assert_eq!(r.entry_id, *entry);
                assert_eq!(r.reason, "a leaked API key");
                assert_eq!(r.actor.as_deref(), Some("library"));
            }
            assert!(holding(&store, SECRET).is_empty());
            // Every read shows the marker, not the secret.
            for summary in store.sessions().unwrap() {
                let s = store.session(&summary.id).unwrap();
                let read = everything_read(&s);
                assert!(!read.contains(SECRET), "{backend}: {}", summary.id);
            }
            assert!(everything_read(&store.session(&main).unwrap()).contains("[redacted]"));
            let found = store.search(SECRET, &SearchOptions::default()).unwrap();
            assert_eq!(found.total, 0, "{backend}: the index no longer finds it");
            let report = store.verify().unwrap();
            assert!(report.is_ok(), "{backend}: {:?}", report.problems);
            assert_eq!(report.redacted, 15);
            let gc = store.gc().unwrap();
            assert!(gc.rewrite_due);
            assert!(gc.search_compacted);
            assert!(
                !gc.removed.is_empty(),
                "the payload holding the secret goes"
            );
            let targeted: std::collections::BTreeSet<String> =
                targets.into_iter().map(|(s, _)| s).collect();
            (seals, before, targeted)
        };
        let rewritten = Store::rewrite(&config()).unwrap();
        assert!(rewritten.keys > 0);
        let left = files_holding(dir.path(), SECRET.as_bytes());
        assert!(
            left.is_empty(),
            "{backend}: the secret is still in {left:?}"
        );
        let siblings: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(siblings.len(), 1, "{backend}: only the store is left");

        let store = Store::open_with(config()).unwrap();
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "{backend}: {:?}", report.problems);
        assert_eq!(report.redacted, 15);
        assert!(!store.gc().unwrap().rewrite_due);
        // Layout 15 (a build of layout 13 would take a redacted line for damage).
        let marker = store.kv().get(&grove::keys::meta(b"format")).unwrap();
        assert_eq!(marker.as_deref(), Some(&b"grove\x00\x0f"[..]));
        // Every entry not redacted is byte for byte as before.
        let after = lines(&store);
        for (key, line) in &before {
            if !line.contains(SECRET) {
                assert_eq!(after.get(key), Some(line), "{backend}: {key:?}");
            }
        }
        // The seals taken before still hold; the audit files verify.
        for (id, seal) in &seals {
            let s = store.session(id).unwrap();
            assert!(
                matches!(s.check_seal(seal).unwrap(), SealCheck::Extends { .. }),
                "{backend}: {id}"
            );
            let mut audit = Vec::new();
            s.export_audit(&mut audit, None).unwrap();
            let checked = grove::verify_audit(&audit, None).unwrap();
            assert_eq!(
                checked.redacted.len(),
                if targeted.contains(id) { 5 } else { 0 },
                "{id}"
            );
            assert!(!String::from_utf8(audit).unwrap().contains(SECRET));
        }
        assert_eq!(
            store
                .search(SECRET, &SearchOptions::default())
                .unwrap()
                .total,
            0
        );
    }
}

/// Rewrites the log row of record `seq` of session `sid` with `line` (CRC and all), as
/// someone with the files could: the value holding it keeps its key.
fn tamper(store: &Store, sid: u64, seq: u64, line: &str) {
    let kv = store.kv();
    let prefix = grove::keys::session_prefix(grove::keys::T_LOG, sid);
    let mut end = prefix.clone();
    end.extend_from_slice(&(seq + 1).to_be_bytes());
    let mut found = None;
    for pair in kv.scan(&prefix, &end) {
        let (k, v) = pair.unwrap();
        found = Some((k.to_vec(), v.to_vec()));
    }
    let (key, value) = found.expect("a log value");
    let first = u64::from_be_bytes(key[9..17].try_into().unwrap());
    let rows: Vec<Vec<u8>> = match LogValue::parse(&value).unwrap() {
        LogValue::Row(r) => vec![r.to_vec()],
        LogValue::Batch(p) => (0..p.len()).map(|i| p.row(i).unwrap().to_vec()).collect(),
    };
    let mut pack = LogPackWriter::new();
    for (i, row) in rows.iter().enumerate() {
        if first + i as u64 == seq {
            let parts = record::decode_log(row).unwrap();
            pack.push(&record::encode_log_stamped(
                &parts.node,
                line.as_bytes(),
                parts.op.as_ref(),
            ))
            .unwrap();
        } else {
            pack.push(row).unwrap();
        }
    }
    let new = if rows.len() == 1 && value[0] != BATCH_MARK {
        pack.take_row().unwrap()
    } else {
        pack.take_batch()
    };
    let mut batch = grove::kv::WriteBatch::new();
    batch.put(key, new);
    kv.apply(batch).unwrap();
    let _ = LogPack::parse;
}

/// A redaction is an operation of its own, listed with who, when, why and the digest of what
/// was removed; verify, the seal check and the audit checker accept the lines redactions
/// explain and refuse a line changed otherwise.
#[test]
fn a_redaction_is_an_operation_and_verifiers_tell_it_from_tampering() {
    let store = Store::temporary().unwrap().with_actor("auditor");
    // Layout 15 (which redaction records are part of) from the store's first open.
    let layout = || store.kv().get(&grove::keys::meta(b"format")).unwrap();
    assert_eq!(layout().as_deref(), Some(&b"grove\x00\x0f"[..]));
    let s = store.create_session(CreateSession::default()).unwrap();
    s.append(user("first")).unwrap();
    let secret = s
        .append(NewEntry::Message {
            message: format!(
                r#"{{"role":"user","content":[{{"type":"text","text":"token {SECRET}"}},{{"type":"text","text":"and more"}}],"timestamp":1}}"#
            ),
        })
        .unwrap();
    let other = s.append(assistant("a reply")).unwrap();
    s.append(user("later")).unwrap();
    let seal = s.seal().unwrap().digest;
    let line = s.entry(&secret).unwrap().line;
    let r = s
        .redact(&secret, Some("/message/content/0/text"), "pasted a token")
        .unwrap();
    let removed = serde_json::to_string(&format!("token {SECRET}")).unwrap();
    assert_eq!(
        r.removed,
        blake3::hash(removed.as_bytes()).to_hex().to_string()
    );
    assert_eq!(r.before, blake3::hash(line.as_bytes()).to_hex().to_string());
    assert_eq!(r.paths, ["/message/content/0/text"]);
    assert_eq!(r.actor.as_deref(), Some("auditor"));
    let now = s.entry(&secret).unwrap().line;
    assert_eq!(now, line.replace(&format!("token {SECRET}"), "[redacted]"));
    assert_eq!(r.after, blake3::hash(now.as_bytes()).to_hex().to_string());
    // The operation log.
    let ops = s.operations().unwrap();
    let last = ops.last().unwrap();
    assert_eq!(last.kind, OpKind::Redact);
    assert_eq!(last.actor.as_deref(), Some("auditor"));
    assert_eq!(
        last.leaf_before, last.leaf_after,
        "the leaf stays where it was"
    );
    assert_eq!(s.redactions().unwrap(), vec![r.clone()]);
    // A second redaction of the same entry chains on the first.
    let r2 = s.redact(&secret, None, "and the rest").unwrap();
    assert_eq!(r2.before, r.after);
    assert_eq!(s.redactions().unwrap().len(), 2);
    // Checks: verify, the old seal, the proof, the audit file.
    let report = s.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.redacted, 1);
    assert!(matches!(
        s.check_seal(&seal).unwrap(),
        SealCheck::Extends { operations: 4, .. }
    ));
    let proof = s.proof(&secret).unwrap();
    assert!(proof.redacted.is_some());
    let mut audit = Vec::new();
    s.export_audit(&mut audit, None).unwrap();
    let checked = grove::verify_audit(&audit, None).unwrap();
    assert_eq!(checked.redacted.len(), 1);
    let text = String::from_utf8(audit).unwrap();
    // The redacted line changed again in the file, its digest made to match: no redaction
    // explains it.
    let altered: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains("\"redacted\":") {
                let changed = l.replace("[redacted]", "[changed!]");
                let line_start = changed.find("\"line\":").unwrap() + 7;
                let new_line = &changed[line_start..changed.len() - 1];
                let digest = blake3::hash(new_line.as_bytes()).to_hex().to_string();
                let at = changed.find("\"redacted\":\"").unwrap() + 12;
                format!("{}{}{}", &changed[..at], digest, &changed[at + 64..])
            } else {
                l.to_owned()
            }
        })
        .collect();
    let err = grove::verify_audit(format!("{}\n", altered.join("\n")).as_bytes(), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no redaction in the file explains it"),
        "{err}"
    );
    // Tampering in the store: a line changed with its CRC is reported, the redacted one is
    // not.
    let sid = sid_of(&store, s.id());
    store.flush().unwrap();
    let other_entry = s.entry(&other).unwrap();
    tamper(
        &store,
        sid,
        other_entry.seq,
        &other_entry.line.replace("a reply", "a lie!!"),
    );
    let s = store.session(s.id()).unwrap();
    let report = s.verify().unwrap();
    assert_eq!(report.redacted, 1);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].entry.as_deref(), Some(other.as_str()));
    assert!(matches!(s.check_seal(&seal).unwrap(), SealCheck::Diverged));
}

/// What a redaction refuses: no reason, a path the tree reads, a path with no value, an
/// unknown entry or a leaf record, a value already redacted, a read-only store.
#[test]
fn bad_redactions_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        let a = s.append(user("a secret")).unwrap();
        let model = s
            .append(NewEntry::ModelChange {
                provider: "p".into(),
                model_id: "m".into(),
            })
            .unwrap();
        s.move_to(Some(&a)).unwrap();
        let leaf_record = s.log().last().unwrap().unwrap().id().to_owned();
        let seal = s.seal().unwrap().digest;
        let invalid = |e: GroveError| matches!(e, GroveError::InvalidArgument(_));
        assert!(invalid(s.redact(&a, None, "  ").unwrap_err()));
        for path in [
            "",
            "/id",
            "/parentId",
            "/type",
            "/message/role",
            "/message",
            "nope",
        ] {
            let e = s.redact(&a, Some(path), "r").unwrap_err();
            assert!(invalid(e), "{path}");
        }
        assert!(invalid(
            s.redact(&a, Some("/message/nothing"), "r").unwrap_err()
        ));
        assert!(invalid(s.redact(&model, None, "r").unwrap_err()));
        assert!(matches!(
            s.redact("no-such-entry", None, "r").unwrap_err(),
            GroveError::EntryNotFound(_)
        ));
        assert!(matches!(
            s.redact(&leaf_record, None, "r").unwrap_err(),
            GroveError::EntryNotFound(_)
        ));
        assert_eq!(s.seal().unwrap().digest, seal, "nothing was written");
        s.redact(&a, None, "r").unwrap();
        assert!(invalid(s.redact(&a, None, "again").unwrap_err()));
    }
    let store = Store::open_with(StoreConfig::new(dir.path()).read_only(true)).unwrap();
    let id = store.sessions().unwrap()[0].id.clone();
    let s = store.session(&id).unwrap();
    let first = s.entries().next().unwrap().unwrap().id().to_owned();
    assert!(s.redact(&first, None, "r").is_err());
}

/// A rewrite a crash interrupted between its two renames is finished by the next open.
#[test]
fn an_interrupted_rewrite_is_finished_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let id = {
        let store = Store::open(&path).unwrap();
        let s = store.create_session(CreateSession::default()).unwrap();
        s.append(user("kept")).unwrap();
        s.id().to_owned()
    };
    Store::rewrite(&StoreConfig::new(&path)).unwrap();
    // As a crash after the first rename leaves it: the old store aside, the marked copy.
    let copy = dir.path().join("store.rewrite");
    std::fs::rename(&path, &copy).unwrap();
    std::fs::write(copy.join("grove.rewritten"), "complete\n").unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.session(&id).unwrap().entries().count(), 1);
    assert!(!copy.exists());
    assert!(!path.join("grove.rewritten").exists());
}

/// `gc` compacts the search index whatever tantivy merges in the background meanwhile: many
/// small segments (one commit per search), a deletion, then gc, on stores of 3 to 23
/// sessions (a merge of segments tantivy was merging itself failed before).
#[test]
fn gc_compacts_the_search_index_while_tantivy_merges_in_the_background() {
    for n in 3..24 {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for i in 0..n {
            let s = store
                .create_session(CreateSession {
                    id: Some(format!("s{i}")),
                    ..CreateSession::default()
                })
                .unwrap();
            s.append(user(&format!("word{i} secret{i}"))).unwrap();
            store
                .search(&format!("word{i}"), &SearchOptions::default())
                .unwrap();
        }
        store.delete_session("s0").unwrap();
        store.search("word1", &SearchOptions::default()).unwrap();
        // A segment whose documents are all deleted is dropped at its commit: nothing may be
        // left to compact, but gc must not fail.
        store.gc().unwrap_or_else(|e| panic!("{n} sessions: {e}"));
        assert_eq!(
            store
                .search("secret0", &SearchOptions::default())
                .unwrap()
                .total,
            0
        );
        assert_eq!(
            store
                .search("secret1", &SearchOptions::default())
                .unwrap()
                .total,
            1
        );
        assert_eq!(store.search_verify().unwrap(), Vec::new());
    }
}
