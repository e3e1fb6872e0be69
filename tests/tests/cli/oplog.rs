//! `grove log`, `grove undo`, `--at-op`/`--at-time`, `grove seal` and `grove verify --seal`,
//! run as processes: what they print is what the library reads from the same store.

use serde_json::Value;

use super::{fixture, Grove};

fn append(g: &Grove, session: &str, text: &str) -> String {
    let msg =
        format!(r#"{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":7}}"#);
    let out = g.run_with_stdin(&["append", session], &msg);
    super::assert_success(&["append"], &out);
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn log(g: &Grove, session: &str) -> Vec<Value> {
    g.ok(&["log", session, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn log_undo_and_points_in_time() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let s = "seed-harness";
    let imported_leaf = g.ok(&["branch", s, "--json"]);
    let context_0 = g.ok(&["context", s, "--json"]);
    let tree_0 = g.ok(&["tree", s, "--json"]);
    let a = append(&g, s, "first");
    let context_1 = g.ok(&["context", s, "--json"]);
    g.ok(&["label", s, &a, "mark"]);
    let tree_2 = g.ok(&["tree", s, "--json"]);
    append(&g, s, "second");

    let ops = log(&g, s);
    let kinds: Vec<&str> = ops.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["append", "label", "append", "import"],
        "newest first"
    );
    let numbers: Vec<u64> = ops.iter().map(|o| o["op"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [3, 2, 1, 0]);
    assert!(ops.iter().all(|o| o["actor"] == "cli"), "{ops:?}");
    assert_eq!(ops[3]["leafBefore"], Value::Null);
    assert_eq!(ops[2]["leafAfter"], a.as_str());
    assert_eq!(ops[2]["records"], 1);
    // Like `jj op log`, the limit picks the newest; --reverse then orders them oldest first.
    let newest_two = g.ok(&["log", s, "--reverse", "-n", "2"]);
    assert!(newest_two.starts_with("op 2 "), "{newest_two}");
    let oldest = g.ok(&["log", s, "--reverse"]);
    assert!(
        oldest.starts_with("op 0 ") && oldest.contains("import"),
        "{oldest}"
    );
    assert_eq!(g.ok(&["log", s, "-n", "1", "--json"]).lines().count(), 1);

    // Points in time answer as the session stood then.
    assert_eq!(g.ok(&["context", s, "--json", "--at-op", "0"]), context_0);
    assert_eq!(
        g.ok(&["branch", s, "--json", "--at-op", "0"]),
        imported_leaf
    );
    assert_eq!(g.ok(&["context", s, "--json", "--at-op", "1"]), context_1);
    assert_eq!(g.ok(&["tree", s, "--json", "--at-op", "0"]), tree_0);
    assert_eq!(g.ok(&["tree", s, "--json", "--at-op", "2"]), tree_2);
    let time = ops[1]["time"].as_str().unwrap();
    let at_time = g.ok(&["context", s, "--json", "--at-time", time]);
    // Several operations may share a millisecond: the last one committed then answers.
    assert!(
        at_time == g.ok(&["context", s, "--json", "--at-op", "2"])
            || at_time == g.ok(&["context", s, "--json", "--at-op", "3"])
    );
    let (code, err) = g.fail(&["context", s, "--at-op", "9"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no operation 9"), "{err}");
    let (code, err) = g.fail(&["context", s, "--at-time", "1999-01-01T00:00:00Z"]);
    assert_eq!(code, 1, "{err}");
    let (code, err) = g.fail(&["branch", s, "--at-op", "1", "--from", "@"]);
    assert_eq!(code, 1, "{err}");
    let (code, _) = g.fail(&["context", s, "--at-op", "1", "--at-time", time]);
    assert_eq!(code, 2, "clap refuses both");

    // Undo puts the leaf back where it was before the last operation, as an operation.
    let undo: Value = serde_json::from_str(&g.ok(&["undo", s, "--json"])).unwrap();
    assert_eq!(undo["kind"], "undo");
    assert_eq!(undo["op"], 4);
    assert_eq!(undo["leafAfter"], ops[0]["leafBefore"]);
    let leaf: Vec<Value> = serde_json::from_str(&g.ok(&["branch", s, "--json"])).unwrap();
    assert_eq!(leaf.last().unwrap()["id"], ops[0]["leafBefore"]);
    // Back to before the import: the root position.
    g.ok(&["undo", s, "--to-op", "0"]);
    assert_eq!(g.ok(&["branch", s, "--json"]).trim(), "[]");
    assert_eq!(log(&g, s).len(), 6, "undo rewrites nothing");
    let (code, err) = g.fail(&["undo", s, "--to-op", "60"]);
    assert_eq!(code, 1, "{err}");
    let lib = g.open();
    let session = lib.session(s).unwrap();
    assert_eq!(session.operations().unwrap().len(), 6);
}

#[test]
fn a_seal_holds_while_the_session_grows_and_fails_once_history_is_rewritten() {
    let g = Grove::new();
    let path = fixture("edge-seed-harness.jsonl");
    g.ok(&["import", path.to_str().unwrap()]);
    let s = "seed-harness";
    let seal: Value = serde_json::from_str(&g.ok(&["seal", s, "--json"])).unwrap();
    let digest = seal["digest"].as_str().unwrap().to_owned();
    assert_eq!(g.ok(&["seal", s]).trim(), digest);
    assert_eq!(seal["operations"], 1);
    append(&g, s, "later");
    let out = g.ok(&["verify", s, "--seal", &digest]);
    assert!(out.contains("extends it"), "{out}");
    let v: Value =
        serde_json::from_str(&g.ok(&["verify", s, "--seal", &digest, "--json"])).unwrap();
    assert_eq!(v["seal"]["extends"], true);
    assert_eq!(v["seal"]["operations"], 1);

    // The same file with one byte of one line changed, imported again under the same id
    // into another store: every chain verifies, the seal does not.
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("plan", "plaN", 1);
    assert_ne!(edited, text);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("edited.jsonl");
    std::fs::write(&file, edited).unwrap();
    let h = Grove::new();
    h.ok(&["import", file.to_str().unwrap()]);
    h.ok(&["verify", s]);
    let (code, out) = h.fail(&["verify", s, "--seal", &digest]);
    assert_eq!(code, 3, "{out}");
    let v: Value =
        serde_json::from_slice(&h.run(&["verify", s, "--seal", &digest, "--json"]).stdout).unwrap();
    assert_eq!(v["seal"]["extends"], false);
    let (code, err) = g.fail(&["verify", s, "--seal", "xyz"]);
    assert_eq!(code, 1, "{err}");
    let (code, _) = g.fail(&["verify", "--seal", &digest]);
    assert_eq!(code, 2, "--seal needs a session");
}

#[test]
fn audit_files_are_signed_and_verified_without_a_store() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let s = "seed-harness";
    append(&g, s, "audited");
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("audit.key");
    let key = key.to_str().unwrap();
    let public = g.ok(&["keygen", key]).trim().to_owned();
    assert_eq!(public.len(), 64);
    let (code, _) = g.fail(&["keygen", key]);
    assert_eq!(code, 1, "an existing key file is never replaced");
    let file = dir.path().join("s.audit");
    let file = file.to_str().unwrap();
    g.ok(&["export", s, "--audit", "--sign", key, "-o", file]);
    let seal = g.ok(&["seal", s]).trim().to_owned();
    // No store is opened: a directory without one is fine.
    let elsewhere = Grove::new();
    let v: Value = serde_json::from_str(
        &elsewhere.ok(&["verify", "--file", file, "--pubkey", &public, "--json"]),
    )
    .unwrap();
    assert_eq!(v["seal"], seal.as_str());
    assert_eq!(v["signedBy"], public.as_str());
    assert_eq!(v["operations"], 2);
    assert!(
        !elsewhere.store_dir().exists(),
        "verify --file created no store"
    );
    // The public key may also come from a file.
    let pubfile = dir.path().join("audit.pub");
    std::fs::write(&pubfile, format!("{public}\n")).unwrap();
    elsewhere.ok(&[
        "verify",
        "--file",
        file,
        "--pubkey",
        pubfile.to_str().unwrap(),
    ]);
    // One changed byte in an entry: refused, naming the file and the line.
    let text = std::fs::read_to_string(file).unwrap();
    std::fs::write(file, text.replacen("audited", "audiTed", 1)).unwrap();
    let (code, err) = elsewhere.fail(&["verify", "--file", file]);
    assert_ne!(code, 0);
    assert!(err.contains("s.audit") && err.contains("line "), "{err}");
    let (code, _) = g.fail(&["export", s, "--audit", "--sign", "/nonexistent/key"]);
    assert_eq!(code, 1);
}

/// Applies a replayed record's context change to `ctx` (pi's context JSON).
fn apply_change(ctx: &mut Value, change: &Value) {
    let keep = change["keep"].as_u64().unwrap() as usize;
    let messages = ctx["messages"].as_array_mut().unwrap();
    assert!(keep <= messages.len(), "keep {keep} of {}", messages.len());
    messages.truncate(keep);
    messages.extend(change["append"].as_array().unwrap().iter().cloned());
    assert_eq!(
        change["messages"].as_u64().unwrap() as usize,
        messages.len()
    );
    for key in ["model", "thinkingLevel", "activeToolNames"] {
        if let Some(v) = change.get(key) {
            ctx[key] = v.clone();
        }
    }
}

#[test]
fn replay_carries_the_context_to_what_grove_context_builds() {
    // Every fixture, at every record, is the library's test (engine::replay); here the
    // command on sessions with branches, summaries, labels and nested compactions.
    let g = Grove::new();
    let mut replayed = 0;
    let names = [
        "edge-branch-summary-root",
        "edge-compaction-fk-variants",
        "edge-labels",
        "edge-nested-compaction-deeper",
        "edge-lone-surrogate",
    ];
    for name in names {
        let f = fixture(&format!("{name}.jsonl"));
        let imported = g.run(&["import", f.to_str().unwrap(), "--json"]);
        super::assert_success(&["import", name], &imported);
        let report: Value = serde_json::from_slice(&imported.stdout).unwrap();
        let s = report["session"].as_str().unwrap().to_owned();
        // pi's lines may hold lone surrogates, which grove hands out as they were written.
        let lines: Vec<Value> = g
            .ok(&["replay", &s])
            .lines()
            .map(|l| grove_tests::json::parse(l).unwrap())
            .collect();
        assert_eq!(lines[0]["type"], "start", "{}", name);
        let mut ctx = lines[0]["context"].clone();
        let mut records = 0;
        for line in &lines[1..] {
            match line["type"].as_str().unwrap() {
                "operation" => assert_eq!(line["kind"], "import"),
                "record" => {
                    apply_change(&mut ctx, &line["context"]);
                    records += 1;
                }
                other => panic!("{other}"),
            }
        }
        let want = grove_tests::json::parse(&g.ok(&["context", &s, "--json"])).unwrap();
        assert_eq!(ctx, want, "{}", name);
        let log = log(&g, &s);
        assert_eq!(
            records,
            log.first().map_or(0, |op| op["records"].as_u64().unwrap())
        );
        replayed += 1;
    }
    assert_eq!(replayed, names.len());
}

#[test]
fn replay_ranges_and_follow_without_a_server() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let s = "seed-harness";
    append(&g, s, "first");
    append(&g, s, "second");
    let tail: Vec<Value> = g
        .ok(&["replay", s, "--from-op", "2"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(tail.len(), 3, "{tail:?}");
    assert_eq!(tail[0]["op"], 2);
    assert_eq!(
        tail[2]["context"]["append"][0]["content"][0]["text"],
        "second"
    );
    let until: Vec<Value> = g
        .ok(&["replay", s, "--until-op", "0"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(until[1..].iter().all(|l| l["op"] == 0), "{until:?}");
    let (code, err) = g.fail(&["replay", s, "--from-op", "7"]);
    assert_eq!(code, 1);
    assert!(err.contains("no operation 7"), "{err}");
    let (code, err) = g.fail(&["replay", s, "--follow"]);
    assert_eq!(code, 1);
    assert!(err.contains("--url"), "{err}");
    let (code, err) = g.fail(&["replay", s, "--url", "ftp://x", "--follow"]);
    assert_eq!(code, 1);
    assert!(err.contains("not a server address"), "{err}");
    let (code, err) = g.fail(&["replay", s, "--url", "unix:/nonexistent/grove.sock"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("connecting to unix:/nonexistent/grove.sock"),
        "{err}"
    );
}
