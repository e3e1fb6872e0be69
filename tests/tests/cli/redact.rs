//! `grove redact` and the `grove gc` that follows it: the secret leaves every read at once,
//! and every file of the store after gc; the redaction is listed, logged, verified, and its
//! errors are clear.

use super::Grove;

const SECRET: &str = "zz9clitokensecret";

/// Whether any file under `dir` holds `needle`.
fn in_files(dir: &std::path::Path, needle: &str) -> bool {
    !grove_tests::files_holding(dir, needle.as_bytes()).is_empty()
}

#[test]
fn redact_removes_a_secret_from_reads_then_gc_from_the_files() {
    let g = Grove::new();
    g.ok(&["demo"]);
    let sid = g.json(&["ls", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before_seal = g.json(&["seal", &sid, "--json"])["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let message = format!(
        r#"{{"role":"user","content":[{{"type":"text","text":"my token is {SECRET}"}},{{"type":"text","text":"keep this"}}],"timestamp":1}}"#
    );
    let out = g.run_with_stdin(&["append", &sid, "--json"], &message);
    assert!(out.status.success());
    let entry: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entry = entry["id"].as_str().unwrap().to_owned();
    assert!(g.ok(&["export", &sid]).contains(SECRET));
    assert!(in_files(&g.store_dir(), SECRET));

    let r = g.json(&[
        "redact",
        &sid,
        &entry,
        "--path",
        "/message/content/0/text",
        "--reason",
        "pasted a token",
        "--json",
    ]);
    assert_eq!(r["entryId"], entry.as_str());
    assert_eq!(r["paths"][0], "/message/content/0/text");
    assert_eq!(r["reason"], "pasted a token");
    assert_eq!(r["actor"], "cli");
    assert_eq!(r["removed"].as_str().unwrap().len(), 64);
    // Every read: the export, the context, the search.
    let export = g.ok(&["export", &sid]);
    assert!(!export.contains(SECRET));
    assert!(export.contains("\"text\":\"[redacted]\""));
    assert!(export.contains("keep this"), "the rest of the line is kept");
    assert!(!g.ok(&["context", &sid, "--json"]).contains(SECRET));
    assert_eq!(g.json(&["search", SECRET, "--json"])["total"], 0);
    // Listed, logged, verified; the seal taken before still holds.
    let list = g.json(&["redact", &sid, "--list", "--json"]);
    assert_eq!(list["redactions"].as_array().unwrap().len(), 1);
    let text = g.ok(&["redact", &sid, "--list"]);
    assert!(
        text.contains("pasted a token") && text.contains("1 redaction(s)"),
        "{text}"
    );
    let log = g.ok(&["log", &sid, "--json"]);
    let newest: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(newest["kind"], "redact", "{log}");
    assert_eq!(newest["actor"], "cli", "{log}");
    let verified = g.json(&["verify", "--json"]);
    assert_eq!(verified["redacted"], 1);
    assert_eq!(verified["problems"].as_array().unwrap().len(), 0);
    g.ok(&["verify", &sid, "--seal", &before_seal]);

    // The bytes may still be in the files; gc rewrites them.
    let gc = g.json(&["gc", "--json"]);
    assert_eq!(gc["rewriteDue"], true);
    assert!(gc["rewritten"]["keys"].as_u64().unwrap() > 0, "{gc}");
    assert!(!in_files(&g.store_dir(), SECRET));
    let again = g.json(&["gc", "--json"]);
    assert_eq!(again["rewriteDue"], false);
    assert!(again["rewritten"].is_null());
    g.ok(&["verify"]);
    g.ok(&["verify", &sid, "--seal", &before_seal]);
    // The audit file verifies and says which record was redacted.
    let audit = g.store_dir().with_file_name("audit.jsonl");
    g.ok(&["export", &sid, "--audit", "-o", audit.to_str().unwrap()]);
    let checked = g.json(&["verify", "--file", audit.to_str().unwrap(), "--json"]);
    assert_eq!(checked["redacted"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_redactions_are_refused_with_clear_errors() {
    let g = Grove::new();
    g.ok(&["demo"]);
    let sid = g.json(&["ls", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // clap: the reason is required.
    let (code, err) = g.fail(&["redact", &sid, "@"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--reason"), "{err}");
    let (code, err) = g.fail(&["redact", &sid, "@", "--path", "/id", "--reason", "r"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("'/id' cannot be redacted"), "{err}");
    let (code, err) = g.fail(&["redact", &sid, "@", "--path", "message", "--reason", "r"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not a JSON pointer"), "{err}");
    let (code, err) = g.fail(&["redact", &sid, "nosuchentry", "--reason", "r"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("nosuchentry"), "{err}");
    let (_, err) = g.fail(&["redact", &sid, "@", "--reason", "   "]);
    assert!(err.contains("needs a reason"), "{err}");
    assert_eq!(
        g.json(&["redact", &sid, "--list", "--json"])["redactions"],
        serde_json::json!([])
    );
}
