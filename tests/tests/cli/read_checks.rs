//! Read commands refuse a damaged line (docs/design.md, "Read checks"): `context`, `branch`
//! and `export` (to stdout or `-o FILE`) exit with the storage code and an error naming the
//! session and the entry, print none of the damaged text and leave FILE as it was; the
//! store's other sessions read as before.
//!
//! Rows of store layout 9 are checked against the CRC-32 of their line, rows of a layout-8
//! store (which have none) against the content hash; `verify` reports either mismatch.
//!
//! Regression (issue 16): a byte changed inside a stored line on redb was printed by
//! `context` and written by `export -o` with exit 0.

use std::path::Path;

use grove_codec::record;
use grove_tests::rows;

use super::{fixture, Grove};

const DAMAGED: &str = "assistant Z";

/// Waits for the store's lock, which the test has just released (`Grove::open`).
const WAIT: [&str; 2] = ["--lock-wait", "30"];

/// Imports the seed fixture (its entry a36c3dcf says "assistant B") and a second session;
/// returns the second one's id.
fn import(g: &Grove, backend: &[&str]) -> String {
    let seed = fixture("edge-seed-harness.jsonl");
    g.ok(&[backend, &["import", seed.to_str().unwrap()]].concat());
    let other = fixture("r000-harness.jsonl");
    let report = g.json(&[backend, &["import", "--json", other.to_str().unwrap()]].concat());
    report["session"].as_str().unwrap().to_owned()
}

/// Every read command refuses session seed-harness; the other session reads as before.
fn assert_refused(g: &Grove, backend: &[&str], sound: &str, sound_export: &str) {
    let out_file = g.store_dir().with_file_name("export.jsonl");
    std::fs::write(&out_file, "an earlier export\n").unwrap();
    let out_arg = out_file.to_str().unwrap();
    let commands: [&[&str]; 5] = [
        &["context", "seed-harness"],
        &["context", "--json", "seed-harness"],
        &["branch", "seed-harness"],
        &["export", "seed-harness"],
        &["export", "seed-harness", "-o", out_arg],
    ];
    for command in commands {
        let args = [backend, command].concat();
        let out = g.run(&args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("Corrupt")
                && stderr.contains("session seed-harness")
                && stderr.contains("entry a36c3dcf"),
            "{args:?}: {stderr}"
        );
        assert!(
            !stdout.contains(DAMAGED) && !stderr.contains(DAMAGED),
            "{args:?} printed the damaged line: {stdout}{stderr}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap(),
        "an earlier export\n"
    );
    // The other session.
    let export = g.ok(&[backend, &["export", sound]].concat());
    assert_eq!(export, sound_export);
    g.ok(&[backend, &["context", sound]].concat());
}

/// Replaces `from` by `to` in the file, where it occurs once.
fn edit_file(path: &Path, from: &str, to: &str) {
    let bytes = std::fs::read(path).unwrap();
    let hits: Vec<usize> = bytes
        .windows(from.len())
        .enumerate()
        .filter(|(_, w)| *w == from.as_bytes())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits.len(), 1, "{from:?} in {}", path.display());
    let mut bytes = bytes;
    bytes[hits[0]..hits[0] + to.len()].copy_from_slice(to.as_bytes());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_line_changed_inside_the_redb_file_is_refused_by_context_branch_and_export() {
    let g = Grove::new();
    let backend = ["--backend", "redb"];
    let sound = import(&g, &backend);
    let sound_export = g.ok(&[&backend[..], &["export", &sound]].concat());
    // The reproduction: one byte of the database file, inside the line.
    edit_file(
        &g.store_dir().join(grove::kv::REDB_FILE),
        "\"text\":\"assistant B\"",
        "\"text\":\"assistant Z\"",
    );
    assert_refused(&g, &backend, &sound, &sound_export);
    // verify still lists it.
    let out = g.run(&["--backend", "redb", "verify"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("content hash"));
}

#[test]
fn a_line_damaged_in_a_sled_store_is_refused_by_context_branch_and_export() {
    let g = Grove::new();
    let sound = import(&g, &[]);
    let sound_export = g.ok(&["export", &sound]);
    damage_sled(&g);
    assert_refused(&g, &WAIT, &sound, &sound_export);
}

/// The internal number of session `id`.
fn sid_of(store: &grove::Store, id: &str) -> u64 {
    let sid = store
        .kv()
        .get(&grove::keys::session_id(id))
        .unwrap()
        .unwrap();
    u64::from_be_bytes(sid.as_slice().try_into().unwrap())
}

/// Changes "assistant B" to "assistant Z" in seed-harness's log pack of a sled store, through
/// the key-value layer (the redb test above edits the database file itself).
fn damage_sled(g: &Grove) {
    let store = g.open();
    let key = grove::keys::log_pack(sid_of(&store, "seed-harness"), 0);
    let mut pack = store.kv().get(&key).unwrap().unwrap();
    let at = pack.windows(11).position(|w| w == b"assistant B").unwrap();
    pack[at + 10] = b'Z';
    let mut batch = grove::kv::WriteBatch::new();
    batch.put(key, pack);
    store.kv().apply(batch).unwrap();
    store.flush().unwrap();
}

#[test]
fn a_line_whose_crc_does_not_match_is_refused_and_verify_reports_the_crc() {
    let g = Grove::new();
    let sound = import(&g, &[]);
    let sound_export = g.ok(&["export", &sound]);
    {
        // The line and its content hash as stored, the CRC its node record claims wrong.
        let store = g.open();
        let edited = rows::rewrite_rows(&store, sid_of(&store, "seed-harness"), |row| {
            let row = record::decode_log(row).unwrap();
            let crc = row.line_crc.unwrap();
            let hit = row.line.windows(11).any(|w| w == b"assistant B");
            hit.then(|| rows::row_claiming(&row.node, !crc, row.line))
        })
        .unwrap();
        assert_eq!(edited, 1);
    }
    assert_refused(&g, &WAIT, &sound, &sound_export);
    let out = g.run(&["verify"]);
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("a36c3dcf") && stdout.contains("does not match its CRC-32"),
        "{stdout}"
    );
    assert!(!stdout.contains("content hash"), "{stdout}");
}

#[test]
fn a_layout_8_store_reads_as_before_and_refuses_a_damaged_line() {
    let g = Grove::new();
    let sound = import(&g, &[]);
    let export = |g: &Grove, id: &str| g.ok(&[&WAIT[..], &["export", id]].concat());
    let exports = |g: &Grove| [export(g, "seed-harness"), export(g, &sound)];
    let before = exports(&g);
    {
        let store = g.open();
        for id in ["seed-harness", sound.as_str()] {
            let sid = sid_of(&store, id);
            assert!(rows::as_layout_8(&store, sid).unwrap() > 0);
        }
    }
    // Read commands open the store read-only: they read layout 8 as it is.
    assert_eq!(exports(&g), before);
    g.ok(&["verify"]);
    let marker = |config: grove::StoreConfig| {
        let store = grove::Store::open_with(config).unwrap();
        let key = grove::keys::meta(grove::keys::META_FORMAT);
        store.kv().get(&key).unwrap().unwrap()
    };
    let config = grove::StoreConfig::new(g.store_dir()).lock_wait(super::LOCK_WAIT);
    assert_eq!(
        marker(config.clone().read_only(true)),
        rows::LAYOUT_8_MARKER
    );
    // A writer upgrades it.
    assert_eq!(marker(config), b"grove\x00\x0f");
    damage_sled(&g);
    assert_refused(&g, &WAIT, &sound, &before[1]);
    let out = g.run(&["verify"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("does not match its content hash"));
}

/// Asserts that `out` is the storage exit with `Corrupt` naming seed-harness's entry a36c3dcf,
/// and that it printed no digest and no "extends".
fn assert_seal_refused(args: &[&str], out: &std::process::Output) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{args:?}: {stdout}{stderr}");
    assert!(
        stderr.contains("Corrupt")
            && stderr.contains("session seed-harness")
            && stderr.contains("entry a36c3dcf"),
        "{args:?}: {stderr}"
    );
    assert!(
        !stdout.contains("extends") && !stdout.contains(DAMAGED),
        "{args:?}: {stdout}"
    );
    assert!(
        !stdout
            .split(|c: char| !c.is_ascii_hexdigit())
            .any(|w| w.len() == 64),
        "{args:?} printed a digest: {stdout}"
    );
}

/// Regression (issue 28, point 3): after a byte of a stored line changed in the redb file,
/// `grove seal` printed a digest of the damaged bytes with exit 0, and `verify --seal` of the
/// seal taken before said the history was rewritten. Seals, their check and the audit file
/// read the lines through the read checks of context and export.
#[test]
fn seals_their_check_and_the_audit_file_refuse_a_line_damaged_in_the_redb_file() {
    let g = Grove::new();
    let backend = ["--backend", "redb"];
    let sound = import(&g, &backend);
    let seal = |id: &str| {
        g.ok(&[&backend[..], &["seal", id]].concat())
            .trim()
            .to_owned()
    };
    let before = seal("seed-harness");
    let sound_seal = seal(&sound);
    edit_file(
        &g.store_dir().join(grove::kv::REDB_FILE),
        "\"text\":\"assistant B\"",
        "\"text\":\"assistant Z\"",
    );
    let audit = g.store_dir().with_file_name("audit.jsonl");
    let audit_arg = audit.to_str().unwrap();
    let commands: [&[&str]; 6] = [
        &["seal", "seed-harness"],
        &["seal", "seed-harness", "--json"],
        &["verify", "seed-harness", "--seal", &before],
        &["verify", "seed-harness", "--seal", &before, "--json"],
        &["export", "seed-harness", "--audit"],
        &["export", "seed-harness", "--audit", "-o", audit_arg],
    ];
    for command in commands {
        let args = [&backend[..], command].concat();
        assert_seal_refused(&args, &g.run(&args));
    }
    assert!(
        !audit.exists(),
        "an audit file of damaged bytes was written"
    );
    // The other session's seal is as it was, and still extended.
    assert_eq!(seal(&sound), sound_seal);
    let check = g.json(
        &[
            &backend[..],
            &["verify", &sound, "--seal", &sound_seal, "--json"],
        ]
        .concat(),
    );
    assert_eq!(check["seal"]["extends"], true, "{check}");
}

/// Point 3 of issue 28 through the server: `GET .../seal` and `POST .../seal/check` answer
/// the storage error naming the session and the entry, never a digest or "extends": false.
#[test]
fn the_seal_routes_refuse_a_line_damaged_in_the_redb_file() {
    let g = Grove::new();
    let backend = ["--backend", "redb"];
    let sound = import(&g, &backend);
    let before = g.ok(&[&backend[..], &["seal", "seed-harness"]].concat());
    edit_file(
        &g.store_dir().join(grove::kv::REDB_FILE),
        "\"text\":\"assistant B\"",
        "\"text\":\"assistant Z\"",
    );
    let dir = g.store_dir().parent().unwrap().to_owned();
    let s = crate::serve::Server::start_with(&dir, &["--backend", "redb"], &[]);
    let body = serde_json::json!({ "digest": before.trim() }).to_string();
    for (method, path, body) in [
        ("GET", "/v1/sessions/seed-harness/seal", None),
        (
            "POST",
            "/v1/sessions/seed-harness/seal/check",
            Some(body.as_str()),
        ),
    ] {
        let (status, text) = s.call(method, path, body);
        assert_eq!(status, 500, "{method} {path}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["code"], "storage", "{text}");
        let message = v["message"].as_str().unwrap();
        assert!(
            message.contains("session seed-harness") && message.contains("entry a36c3dcf"),
            "{text}"
        );
        assert!(
            v.get("digest").is_none() && v.get("extends").is_none(),
            "{text}"
        );
    }
    let seal = s.ok(200, "GET", &format!("/v1/sessions/{sound}/seal"), None);
    assert_eq!(seal["digest"].as_str().map(str::len), Some(64));
}
