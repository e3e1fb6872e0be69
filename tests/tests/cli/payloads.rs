//! `grove gc` and `--payload-threshold` as processes: large string values are stored once and
//! read back byte for byte; the collection keeps what sessions reference and says so.

use serde_json::Value;

use super::Grove;

/// A pi session file whose two messages carry the same 20 KiB string.
fn session_file(g: &Grove, id: &str) -> std::path::PathBuf {
    let big = "Q".repeat(20 * 1024);
    let msg = |eid: &str, parent: &str| {
        format!(
            r#"{{"type":"message","id":"{eid}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"{big}","timestamp":1}}}}"#
        )
    };
    let text = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n{}\n{}\n",
        msg("a1", "null"),
        msg("a2", "\"a1\"")
    );
    let path = g.store_dir().with_file_name(format!("{id}.jsonl"));
    std::fs::write(&path, text).unwrap();
    path
}

fn gc(g: &Grove, extra: &[&str]) -> Value {
    let mut args = extra.to_vec();
    args.extend(["gc", "--json"]);
    serde_json::from_str(&g.ok(&args)).unwrap()
}

#[test]
fn payloads_are_stored_once_and_gc_keeps_what_sessions_reference() {
    let g = Grove::new();
    let one = session_file(&g, "one");
    let two = session_file(&g, "two");
    g.ok(&["import", one.to_str().unwrap()]);
    g.ok(&["import", two.to_str().unwrap()]);
    let report = gc(&g, &[]);
    assert_eq!(report["payloads"], 1, "{report}");
    assert_eq!(report["referenced"], 1);
    assert_eq!(report["removed"], serde_json::json!([]));
    // Exports give the files back byte for byte.
    for (id, file) in [("one", &one), ("two", &two)] {
        let out = g.ok(&["export", id]);
        assert!(out.as_bytes() == std::fs::read(file).unwrap(), "{id}");
    }
    assert!(g.ok(&["verify"]).contains(" 0 problem(s)"), "verify");
    // With the threshold off, a new session stores its lines whole: still one payload.
    let three = session_file(&g, "three");
    g.ok(&[
        "--payload-threshold",
        "0",
        "import",
        three.to_str().unwrap(),
    ]);
    assert_eq!(gc(&g, &[])["payloads"], 1);
    let text = g.ok(&["gc"]);
    assert!(text.contains("1 payload(s) of 1 kept"), "{text}");
}
