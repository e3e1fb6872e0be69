//! Errors: exit codes, error names and hints on stderr.

use super::{fixture, Grove};

#[test]
fn unknown_and_ambiguous_names() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    g.ok(&["import", fixture("edge-seed-sm.jsonl").to_str().unwrap()]);

    let (code, err) = g.fail(&["tree", "nosuch"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: SessionNotFound") && err.contains("hint: run `grove ls`"),
        "{err}"
    );

    let (code, err) = g.fail(&["branch", "seed", "--json"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: AmbiguousPrefix") && err.contains("seed-harness"),
        "{err}"
    );

    let (code, err) = g.fail(&["goto", "seed-harness", "zzzz"]);
    assert_eq!(code, 1);
    assert!(err.contains("error: EntryNotFound"), "{err}");

    let (code, err) = g.fail(&["export", "seed-sm", "-o", "/nonexistent-dir/x.jsonl"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: Io") && err.contains("/nonexistent-dir/x.jsonl"),
        "{err}"
    );
}

#[test]
fn malformed_import_names_the_file_and_line() {
    let g = Grove::new();
    let file = fixture("edge-malformed-middle.jsonl");
    let (code, err) = g.fail(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("error: InvalidEntry"), "{err}");
    assert!(
        err.contains("edge-malformed-middle.jsonl") && err.contains("line 4"),
        "{err}"
    );
    assert!(err.contains("--lenient"), "{err}");
    assert_eq!(
        g.json(&["ls", "--json"]),
        serde_json::json!([]),
        "nothing imported"
    );

    let out = g.run(&["import", "--lenient", file.to_str().unwrap()]);
    super::assert_success(&["import", "--lenient"], &out);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("edge-malformed-middle.jsonl:4: skipped"),
        "{err}"
    );

    // The same file again: the error names it.
    let (code, err) = g.fail(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: SessionExists") && err.contains("edge-malformed-middle.jsonl"),
        "{err}"
    );

    let (code, err) = g.fail(&["import", "/nonexistent.jsonl"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: Io") && err.contains("/nonexistent.jsonl"),
        "{err}"
    );
}

#[test]
fn torn_tail_is_reported_with_the_line() {
    let g = Grove::new();
    let file = fixture("edge-torn-last-line.jsonl");
    let out = g.run(&["import", file.to_str().unwrap()]);
    super::assert_success(&["import"], &out);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("edge-torn-last-line.jsonl:") && err.contains("torn final line"),
        "{err}"
    );
}

#[test]
fn usage_and_storage_exit_codes() {
    let g = Grove::new();
    let (code, _) = g.fail(&["tree"]);
    assert_eq!(code, 2, "a missing argument is a usage error");
    let (code, _) = g.fail(&["context", "x", "--preset", "nope"]);
    assert_eq!(code, 2);

    // A store path that is a regular file cannot be opened to write: a storage error; a read
    // finds no store there: a user error.
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, b"x").unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(super::grove_bin())
            .arg("--store")
            .arg(&not_a_dir)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[
        "import",
        super::fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    let out = run(&["ls"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no grove store at"));
}

#[test]
fn grove_store_env_is_the_default_store() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let out = std::process::Command::new(super::grove_bin())
        .args(["ls", "--json"])
        .env("GROVE_STORE", g.store_dir())
        .output()
        .unwrap();
    super::assert_success(&["ls"], &out);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["id"], "seed-harness");
}
