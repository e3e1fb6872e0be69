use super::*;

fn refused(line: &str) -> String {
    check_entry(line).unwrap_err()
}

#[test]
fn entries_of_the_right_shape_and_unknown_types_pass() {
    for line in [
        r#"{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}"#,
        r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}]}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"toolCall","id":"c1","name":"ls","arguments":{}}]}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":null}}"#,
        r#"{"type":"message","message":{"role":"toolResult","toolCallId":"c1","toolName":"ls","content":[],"isError":false}}"#,
        r#"{"type":"message","message":{"role":"someNewRole","content":5}}"#,
        r#"{"type":"message","message":{"role":"user","content":[{"type":"audio","whatever":1}]}}"#,
        r#"{"type":"compaction","summary":"s","firstKeptEntryId":"a","tokensBefore":10}"#,
        r#"{"type":"branch_summary","fromId":"root","summary":"s","fromHook":false}"#,
        r#"{"type":"label","targetId":"a"}"#,
        r#"{"type":"session_info"}"#,
        r#"{"type":"custom_message","customType":"x","content":"c","display":true}"#,
        r#"{"type":"active_tools_change","activeToolNames":["read"]}"#,
        r#"{"type":"no_such_type","role":5,"message":[1]}"#,
    ] {
        assert_eq!(check_entry(line), Ok(()), "{line}");
    }
}

#[test]
fn a_known_type_with_a_wrong_field_is_refused_by_the_field() {
    let cases = [
        (
            r#"{"type":"message","message":{"role":5}}"#,
            "message.role must be a string, got 5",
        ),
        (
            r#"{"type":"message","message":{"role":[1]}}"#,
            "message.role must be a string, got [1]",
        ),
        (
            r#"{"type":"message","message":{"content":"x"}}"#,
            "message.role is missing",
        ),
        (
            r#"{"type":"message","message":"hi"}"#,
            "message must be an object",
        ),
        (
            r#"{"type":"message","message":{"role":"user","content":7}}"#,
            "message.content must be",
        ),
        (
            r#"{"type":"message","message":{"role":"assistant","content":"x"}}"#,
            "message.content must be an array",
        ),
        (
            r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":3}]}}"#,
            "message.content[0].text must be a string",
        ),
        (
            r#"{"type":"message","message":{"role":"user","content":[5]}}"#,
            "message.content[0] must be an object",
        ),
        (
            r#"{"type":"message","message":{"role":"user","content":"x","timestamp":"now"}}"#,
            "message.timestamp must be a number",
        ),
        (
            r#"{"type":"compaction","summary":"s","tokensBefore":"many"}"#,
            "tokensBefore must be a number",
        ),
        (
            r#"{"type":"compaction","tokensBefore":1}"#,
            "summary is missing",
        ),
        (
            r#"{"type":"branch_summary","summary":"s"}"#,
            "fromId is missing",
        ),
        (
            r#"{"type":"label","targetId":"a","label":1}"#,
            "label must be a string",
        ),
        (
            r#"{"type":"model_change","provider":"p","modelId":null}"#,
            "modelId must be a string, got null",
        ),
        (
            r#"{"type":"thinking_level_change","thinkingLevel":2}"#,
            "thinkingLevel must be a string",
        ),
        (
            r#"{"type":"active_tools_change","activeToolNames":["a",1]}"#,
            "activeToolNames must be an array of strings",
        ),
        (r#"{"type":"custom","data":1}"#, "customType is missing"),
        (
            r#"{"type":"custom_message","customType":"x","content":"c","display":"yes"}"#,
            "display must be a boolean",
        ),
        (
            r#"{"type":"session_info","name":["n"]}"#,
            "name must be a string",
        ),
    ];
    for (line, reason) in cases {
        let got = refused(line);
        assert!(got.starts_with(reason), "{line}: {got}");
    }
}

/// No entry of the pi fixtures (pi wrote them, or they stand for what pi writes) is refused.
#[test]
fn every_fixture_entry_pi_wrote_passes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut checked = 0;
    for sub in [dir.clone(), dir.join("pi-oracle")] {
        for file in std::fs::read_dir(&sub).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for (n, line) in text.lines().enumerate().skip(1) {
                if crate::Envelope::parse(line).is_err() {
                    continue;
                }
                checked += 1;
                assert_eq!(check_entry(line), Ok(()), "{}:{}", path.display(), n + 1);
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}
