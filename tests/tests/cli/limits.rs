//! Input limits: `import` and `append` stop at `--max-line-bytes` with an error naming the
//! input and the line, instead of reading an endless input into memory. (Issue 16 §5: `grove
//! import /dev/zero` and `grove append S < /dev/zero` grew to 6.2 GB in 9 s.)
#![cfg(unix)]

use std::fs::File;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{fixture, grove_bin, Grove};

/// Runs grove with `stdin`, killing it when it runs longer than `limit` (a grove that reads
/// an endless input must not eat the machine's memory).
fn run_bounded(g: &Grove, args: &[&str], stdin: Stdio, limit: Duration) -> (Output, Duration) {
    let start = Instant::now();
    let mut child = Command::new(grove_bin())
        .arg("--store")
        .arg(g.store_dir())
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} still running after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), start.elapsed())
}

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn import_of_an_endless_file_stops_at_the_limit() {
    let g = Grove::new();
    let (out, took) = run_bounded(
        &g,
        &["import", "/dev/zero", "--max-line-bytes", "1048576"],
        Stdio::null(),
        LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(
            "error: LineTooLong: line too long in /dev/zero: line 1 (byte 0) is longer than \
             the limit of 1048576 bytes\nhint: "
        ) && err.contains("--max-line-bytes"),
        "{err}"
    );
    assert!(took < LIMIT, "{took:?}");
    assert_eq!(g.json(&["ls", "--json"]), serde_json::json!([]));
}

#[test]
fn import_names_the_long_line_of_a_file() {
    let g = Grove::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.jsonl");
    let mut text = std::fs::read_to_string(fixture("edge-seed-harness.jsonl")).unwrap();
    let first_len = text.lines().next().unwrap().len();
    text.push_str(&format!("{{\"pad\":\"{}\"}}\n", "x".repeat(5000)));
    std::fs::write(&file, &text).unwrap();
    let lines = text.lines().count();
    let offset = text.len() - text.lines().last().unwrap().len() - 1;

    let (code, err) = g.fail(&[
        "import",
        file.to_str().unwrap(),
        "--lenient",
        "--max-line-bytes",
        "4096",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "long.jsonl: line {lines} (byte {offset}) is longer than the limit of 4096 bytes"
        )),
        "{err}"
    );
    // The limit counts a line's bytes: the header line itself can be refused too.
    let (_, err) = g.fail(&[
        "import",
        file.to_str().unwrap(),
        "--max-line-bytes",
        &(first_len - 1).to_string(),
    ]);
    assert!(err.contains("line 1 (byte 0)"), "{err}");
    // With the default limit it imports.
    g.ok(&["import", file.to_str().unwrap(), "--lenient"]);

    let (code, _) = g.fail(&["import", file.to_str().unwrap(), "--max-line-bytes", "0"]);
    assert_eq!(code, 2, "a zero limit is a usage error");
}

#[test]
fn append_of_an_endless_stdin_stops_at_the_limit() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let before = g.json(&["path", "seed-harness", "--json"]);
    let (out, took) = run_bounded(
        &g,
        &["append", "seed-harness", "--max-line-bytes", "1048576"],
        Stdio::from(File::open("/dev/zero").unwrap()),
        LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(
            "error: InputTooLong: <stdin>: the input is longer than the limit of 1048576 \
             bytes\nhint: "
        ) && err.contains("--max-line-bytes"),
        "{err}"
    );
    assert!(took < LIMIT, "{took:?}");
    assert_eq!(g.json(&["path", "seed-harness", "--json"]), before);

    // An input of exactly the limit is read (and here appended).
    let message = r#"{"role":"user","content":"hi","timestamp":1}"#;
    let out = g.run_with_stdin(
        &[
            "append",
            "seed-harness",
            "--max-line-bytes",
            &message.len().to_string(),
        ],
        message,
    );
    super::assert_success(&["append"], &out);
    let out = g.run_with_stdin(
        &[
            "append",
            "seed-harness",
            "--max-line-bytes",
            &(message.len() - 1).to_string(),
        ],
        message,
    );
    assert_eq!(out.status.code(), Some(1));
}
