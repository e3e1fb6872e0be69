//! Stored text with terminal escape sequences is printed escaped in human output when asked
//! (`GROVE_ESCAPE` / `--escape`; on a terminal by default), and JSON output is never changed.
//! (Issue 16 §5: `tree`, `context`, `path` and `name` printed message text raw, escape
//! sequences included; only `ls` escaped it.)

use std::process::{Command, Stdio};

use super::{fixture, grove_bin, Grove};

/// Runs `grove ARGS…` with `GROVE_ESCAPE=escape` (none when `None`); returns stdout, which
/// must be a success's.
fn run(g: &Grove, escape: Option<&str>, args: &[&str]) -> Vec<u8> {
    let mut cmd = Command::new(grove_bin());
    cmd.arg("--store")
        .arg(g.store_dir())
        .args(args)
        .env_remove("GROVE_ESCAPE")
        .stdin(Stdio::null());
    if let Some(value) = escape {
        cmd.env("GROVE_ESCAPE", value);
    }
    let out = cmd.output().unwrap();
    super::assert_success(args, &out);
    out.stdout
}

/// A session whose leaf is a message holding escape sequences, a bell and a raw C1 CSI
/// (which JSON allows unescaped), labelled with an OSC title sequence.
fn hostile() -> Grove {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let message = concat!(
        r#"{"role":"user","content":"red\u001b[31m alert\u0007 csi"#,
        "\u{9b}",
        r#"2J","timestamp":1}"#
    );
    let out = g.run_with_stdin(&["append", "seed-harness"], message);
    super::assert_success(&["append"], &out);
    // The label entry becomes the leaf; back to the message.
    g.ok(&["label", "seed-harness", "@", "lab\u{1b}]0;title\u{7}el"]);
    g.ok(&["goto", "seed-harness", "@-"]);
    g
}

/// The raw control characters of the session's text.
const RAW: [&[u8]; 3] = [b"\x1b", b"\x07", "\u{9b}".as_bytes()];

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Human output holding the message's text, escaped: no raw control character, the escapes
/// in their place.
fn assert_escaped(args: &[&str], out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    for raw in RAW {
        assert!(!contains(out, raw), "{args:?}: raw {raw:?} in {text}");
    }
    assert!(
        text.contains(r"red\u{1b}[31m alert\u{7} csi\u{9b}2J"),
        "{args:?}: {text}"
    );
}

#[test]
fn human_output_of_stored_text_is_escaped_when_asked() {
    let g = hostile();
    let commands: [&[&str]; 6] = [
        &["tree", "seed-harness"],
        &["tree", "seed-harness", "--ascii"],
        &["path", "seed-harness"],
        &["branch", "seed-harness"],
        &["context", "seed-harness"],
        &["goto", "seed-harness", "@"],
    ];
    for args in commands {
        assert_escaped(args, &run(&g, Some("always"), args));
        // Unless asked (and off a terminal), the text is printed as stored.
        for escape in [None, Some("never"), Some("auto")] {
            let out = run(&g, escape, args);
            assert!(
                contains(&out, b"red\x1b[31m alert\x07"),
                "{args:?} {escape:?}"
            );
        }
    }
    // The label, in the tree.
    let tree = run(&g, Some("always"), &["tree", "seed-harness"]);
    let text = String::from_utf8_lossy(&tree);
    assert!(text.contains(r"[lab\u{1b}]0;title\u{7}el]"), "{text}");
    // The flag does what the variable does.
    let flagged = run(&g, None, &["--escape", "always", "tree", "seed-harness"]);
    assert_eq!(flagged, tree);

    // `label` and `name` print the text they set.
    let out = run(
        &g,
        Some("always"),
        &["label", "seed-harness", "@", "x\u{1b}[5my"],
    );
    let text = String::from_utf8(out).unwrap();
    assert!(text.ends_with("[x\\u{1b}[5my]\n"), "{text}");
    let out = run(
        &g,
        Some("always"),
        &["name", "seed-harness", "evil\u{1b}[2Jname\u{7}"],
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "name: evil\\u{1b}[2Jname\\u{7}\n"
    );
}

#[test]
fn json_and_jsonl_output_is_never_changed() {
    let g = hostile();
    let commands: [&[&str]; 6] = [
        &["path", "seed-harness", "--json"],
        &["branch", "seed-harness", "--json"],
        &["context", "seed-harness", "--json"],
        &["tree", "seed-harness", "--json"],
        &["ls", "--json"],
        &["export", "seed-harness"],
    ];
    for args in commands {
        let plain = run(&g, Some("never"), args);
        let escaped = run(&g, Some("always"), args);
        assert_eq!(escaped, plain, "{args:?}");
    }
    // `path --json` is the stored lines exactly: the raw CSI of the message stays raw.
    let path = run(&g, Some("always"), &["path", "seed-harness", "--json"]);
    assert!(contains(&path, "\u{9b}".as_bytes()));
    let entries: serde_json::Value = serde_json::from_slice(&path).unwrap();
    let last = entries.as_array().unwrap().last().unwrap();
    assert_eq!(
        last["message"]["content"],
        "red\u{1b}[31m alert\u{7} csi\u{9b}2J"
    );
}

/// Before: an error quoting given text (here an unknown session id holding an escape
/// sequence) printed it raw on stderr.
#[test]
fn errors_quoting_text_are_escaped_when_asked() {
    let g = hostile();
    let id = "no\u{1b}]0;pwned\u{7}such";
    let stderr = |escape: &str| {
        let out = Command::new(grove_bin())
            .arg("--store")
            .arg(g.store_dir())
            .args(["context", id])
            .env("GROVE_ESCAPE", escape)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let escaped = stderr("always");
    assert!(
        !escaped.contains('\u{1b}') && !escaped.contains('\u{7}'),
        "{escaped}"
    );
    assert!(escaped.contains(r"no\u{1b}]0;pwned\u{7}such"), "{escaped}");
    // As stored when asked (a log file that keeps the bytes).
    assert!(stderr("never").contains(id));
}

/// Issue 28 §10: bidirectional controls (U+202A–U+202E, U+2066–U+2069, the marks) in stored
/// text reorder what a terminal shows after them; `ls` printed a session's cwd with them raw,
/// and so did the other human outputs with a message's text.
#[test]
fn bidirectional_controls_are_escaped_like_controls() {
    let g = hostile();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bidi.jsonl");
    let header = serde_json::json!({
        "type": "session", "version": 3, "id": "bidi",
        "timestamp": "2025-03-01T00:00:00.000Z", "cwd": "/home/\u{202e}cod.exe\u{202c}/\u{2066}x\u{2069}",
    });
    std::fs::write(&file, format!("{header}\n")).unwrap();
    g.ok(&["import", file.to_str().unwrap()]);
    let message =
        r#"{"role":"user","content":"txt.\u202egnp\u2067 \u200e\u061c\u200f","timestamp":1}"#;
    let out = g.run_with_stdin(&["append", "seed-harness"], message);
    super::assert_success(&["append"], &out);
    let raw = [
        '\u{202e}', '\u{202c}', '\u{2066}', '\u{2069}', '\u{200f}', '\u{2067}', '\u{200e}',
        '\u{61c}',
    ];
    let expectations: [(&[&str], &str); 3] = [
        (&["ls"], r"/home/\u{202e}cod.exe\u{202c}/\u{2066}x\u{2069}"),
        (&["tree", "seed-harness"], r"txt.\u{202e}gnp\u{2067}"),
        (&["context", "seed-harness"], r"\u{200e}\u{61c}\u{200f}"),
    ];
    for (args, wanted) in expectations {
        let out = run(&g, Some("always"), args);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains(raw), "{args:?}: a raw control in {text}");
        assert!(text.contains(wanted), "{args:?}: {text}");
        // As stored when not asked.
        let plain = String::from_utf8(run(&g, Some("never"), args)).unwrap();
        assert!(plain.contains(raw), "{args:?}: {plain}");
    }
}
