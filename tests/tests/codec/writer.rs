//! `grove_codec::writer`: canonical lines for entries grove creates (spec §2.4 key order,
//! omitted-when-undefined, compact JSON, `JSON.stringify` escaping) and leaf lines (§3.6).

use grove_codec::writer::{compact, leaf_line, NewEntry};
use grove_codec::{EntryKind, Envelope, Role};

const TS: &str = "2030-01-21T00:00:00.000Z";

fn line(e: &NewEntry) -> String {
    e.to_line("e1", Some("p0"), TS).unwrap()
}

/// The common prefix every created line starts with.
fn common(ty: &str) -> String {
    format!(r#"{{"type":"{ty}","id":"e1","parentId":"p0","timestamp":"{TS}""#)
}

#[test]
fn message_entry() {
    let e = NewEntry::Message {
        message: r#"{ "role" : "user", "content" : "a b\n", "timestamp" : 1 }"#.to_owned(),
    };
    let out = line(&e);
    assert_eq!(
        out,
        format!(
            r#"{},"message":{{"role":"user","content":"a b\n","timestamp":1}}}}"#,
            common("message")
        )
    );
    let env = Envelope::parse(&out).unwrap();
    assert_eq!(env.kind, EntryKind::Message(Role::User));
    for bad in ["[]", "\"x\"", "{", "null"] {
        let e = NewEntry::Message {
            message: bad.to_owned(),
        };
        assert!(e.to_line("e1", None, TS).is_err(), "{bad}");
    }
}

#[test]
fn root_entries_have_null_parent() {
    let e = NewEntry::SessionInfo { name: None };
    assert_eq!(
        e.to_line("e1", None, TS).unwrap(),
        format!(r#"{{"type":"session_info","id":"e1","parentId":null,"timestamp":"{TS}"}}"#)
    );
}

#[test]
fn model_thinking_and_tools_changes() {
    let model = NewEntry::ModelChange {
        provider: "anthropic".to_owned(),
        model_id: "claude-\"x\"".to_owned(),
    };
    assert_eq!(
        line(&model),
        format!(
            r#"{},"provider":"anthropic","modelId":"claude-\"x\""}}"#,
            common("model_change")
        )
    );
    let thinking = NewEntry::ThinkingLevelChange {
        thinking_level: "ultra\u{1}".to_owned(),
    };
    assert_eq!(
        line(&thinking),
        format!(
            r#"{},"thinkingLevel":"ultra\u0001"}}"#,
            common("thinking_level_change")
        )
    );
    let tools = NewEntry::ActiveToolsChange {
        active_tool_names: vec!["read".to_owned(), "bash".to_owned()],
    };
    assert_eq!(
        line(&tools),
        format!(
            r#"{},"activeToolNames":["read","bash"]}}"#,
            common("active_tools_change")
        )
    );
    let none = NewEntry::ActiveToolsChange {
        active_tool_names: Vec::new(),
    };
    assert_eq!(
        line(&none),
        format!(
            r#"{},"activeToolNames":[]}}"#,
            common("active_tools_change")
        )
    );
}

#[test]
fn compaction_key_order_and_optionals() {
    let full = NewEntry::Compaction {
        summary: "sum".to_owned(),
        first_kept_entry_id: "k1".to_owned(),
        tokens_before: 12_345,
        retained_tail: Some(r#"[ {"role":"user"} ]"#.to_owned()),
        details: Some(r#"{"readFiles": ["a"], "modifiedFiles": []}"#.to_owned()),
        usage: Some(r#"{"input": 1}"#.to_owned()),
        from_hook: Some(true),
    };
    assert_eq!(
        line(&full),
        format!(
            r#"{},"summary":"sum","firstKeptEntryId":"k1","tokensBefore":12345,"retainedTail":[{{"role":"user"}}],"details":{{"readFiles":["a"],"modifiedFiles":[]}},"usage":{{"input":1}},"fromHook":true}}"#,
            common("compaction")
        )
    );
    let minimal = NewEntry::Compaction {
        summary: String::new(),
        first_kept_entry_id: "k1".to_owned(),
        tokens_before: 0,
        retained_tail: None,
        details: None,
        usage: None,
        from_hook: None,
    };
    assert_eq!(
        line(&minimal),
        format!(
            r#"{},"summary":"","firstKeptEntryId":"k1","tokensBefore":0}}"#,
            common("compaction")
        )
    );
    let bad = NewEntry::Compaction {
        summary: String::new(),
        first_kept_entry_id: "k1".to_owned(),
        tokens_before: 0,
        retained_tail: Some("[".to_owned()),
        details: None,
        usage: None,
        from_hook: None,
    };
    assert!(bad.to_line("e1", None, TS).is_err());
}

#[test]
fn branch_summary_key_order_and_optionals() {
    let full = NewEntry::BranchSummary {
        from_id: "root".to_owned(),
        summary: "s".to_owned(),
        details: Some("null".to_owned()),
        usage: Some("{}".to_owned()),
        from_hook: Some(false),
    };
    assert_eq!(
        line(&full),
        format!(
            r#"{},"fromId":"root","summary":"s","details":null,"usage":{{}},"fromHook":false}}"#,
            common("branch_summary")
        )
    );
    let minimal = NewEntry::BranchSummary {
        from_id: "t".to_owned(),
        summary: "s".to_owned(),
        details: None,
        usage: None,
        from_hook: None,
    };
    assert_eq!(
        line(&minimal),
        format!(
            r#"{},"fromId":"t","summary":"s"}}"#,
            common("branch_summary")
        )
    );
}

#[test]
fn custom_and_custom_message() {
    let with_data = NewEntry::Custom {
        custom_type: "ext".to_owned(),
        data: Some(r#"{ "n" : [1, 2.5, "x y"] }"#.to_owned()),
    };
    assert_eq!(
        line(&with_data),
        format!(
            r#"{},"customType":"ext","data":{{"n":[1,2.5,"x y"]}}}}"#,
            common("custom")
        )
    );
    let no_data = NewEntry::Custom {
        custom_type: "ext".to_owned(),
        data: None,
    };
    assert_eq!(
        line(&no_data),
        format!(r#"{},"customType":"ext"}}"#, common("custom"))
    );

    let msg = NewEntry::CustomMessage {
        custom_type: "ext".to_owned(),
        content: "\"hello\"".to_owned(),
        display: true,
        details: Some("[1]".to_owned()),
    };
    assert_eq!(
        line(&msg),
        format!(
            r#"{},"customType":"ext","content":"hello","display":true,"details":[1]}}"#,
            common("custom_message")
        )
    );
    let blocks = NewEntry::CustomMessage {
        custom_type: "ext".to_owned(),
        content: r#"[{"type":"text","text":"t"}]"#.to_owned(),
        display: false,
        details: None,
    };
    assert_eq!(
        line(&blocks),
        format!(
            r#"{},"customType":"ext","content":[{{"type":"text","text":"t"}}],"display":false}}"#,
            common("custom_message")
        )
    );
    let bad = NewEntry::CustomMessage {
        custom_type: "ext".to_owned(),
        content: "not json".to_owned(),
        display: false,
        details: None,
    };
    assert!(bad.to_line("e1", None, TS).is_err());
}

#[test]
fn label_and_session_info() {
    let set = NewEntry::Label {
        target_id: "t1".to_owned(),
        label: Some("  mark  ".to_owned()),
    };
    let out = line(&set);
    assert_eq!(
        out,
        format!(
            r#"{},"targetId":"t1","label":"  mark  "}}"#,
            common("label")
        )
    );
    let env = Envelope::parse(&out).unwrap();
    assert_eq!(env.kind, EntryKind::Label);
    assert_eq!(env.target_id.as_deref(), Some("t1"));
    let clear = NewEntry::Label {
        target_id: "t1".to_owned(),
        label: None,
    };
    assert_eq!(
        line(&clear),
        format!(r#"{},"targetId":"t1"}}"#, common("label"))
    );

    let named = NewEntry::SessionInfo {
        name: Some("line1\nline2\u{2028}".to_owned()),
    };
    assert_eq!(
        line(&named),
        format!(
            "{},\"name\":\"line1\\nline2\u{2028}\"}}",
            common("session_info")
        )
    );
    let unnamed = NewEntry::SessionInfo { name: None };
    assert_eq!(line(&unnamed), format!("{}}}", common("session_info")));
}

#[test]
fn raw_entries_keep_their_keys_in_order_and_get_grove_common_fields() {
    let raw = NewEntry::Raw {
        object: r#"{"z":1,"id":"theirs","type":"future_thing","parentId":"x","a":{"b":[true]},"timestamp":"old","m":"\u00e9"}"#.to_owned(),
    };
    assert_eq!(raw.type_name().unwrap(), "future_thing");
    let out = line(&raw);
    assert_eq!(
        out,
        format!(
            r#"{},"z":1,"a":{{"b":[true]}},"m":"\u00e9"}}"#,
            common("future_thing")
        )
    );
    let env = Envelope::parse(&out).unwrap();
    assert_eq!(env.kind, EntryKind::Unknown);
    assert_eq!(env.id, "e1");
    assert_eq!(env.parent_id.as_deref(), Some("p0"));
    assert_eq!(env.timestamp, TS);
}

#[test]
fn raw_entries_are_written_as_compact_json() {
    // Spec §2.9: entries grove creates are compact JSON, like every other variant here.
    let raw = NewEntry::Raw {
        object: "{ \"type\" : \"custom\" , \"customType\" : \"x\" , \"data\" : [ 1 , { \"k\" : \"a b\" } ] }"
            .to_owned(),
    };
    assert_eq!(
        line(&raw),
        format!(
            r#"{},"customType":"x","data":[1,{{"k":"a b"}}]}}"#,
            common("custom")
        )
    );
}

#[test]
fn raw_entries_need_an_object_with_a_string_type() {
    for bad in [
        r#"{"a":1}"#,
        r#"{"type":1}"#,
        r#"{"type":null}"#,
        "[]",
        r#"["custom"]"#,
        "{",
        "",
    ] {
        let e = NewEntry::Raw {
            object: bad.to_owned(),
        };
        assert!(e.to_line("e1", None, TS).is_err(), "{bad:?}");
    }
}

#[test]
fn type_names() {
    let cases: Vec<(NewEntry, &str)> = vec![
        (
            NewEntry::Message {
                message: "{}".into(),
            },
            "message",
        ),
        (
            NewEntry::ModelChange {
                provider: String::new(),
                model_id: String::new(),
            },
            "model_change",
        ),
        (
            NewEntry::ThinkingLevelChange {
                thinking_level: String::new(),
            },
            "thinking_level_change",
        ),
        (
            NewEntry::ActiveToolsChange {
                active_tool_names: vec![],
            },
            "active_tools_change",
        ),
        (
            NewEntry::Custom {
                custom_type: String::new(),
                data: None,
            },
            "custom",
        ),
        (
            NewEntry::Label {
                target_id: String::new(),
                label: None,
            },
            "label",
        ),
        (NewEntry::SessionInfo { name: None }, "session_info"),
        (
            NewEntry::Raw {
                object: r#"{"type":"\u0078"}"#.into(),
            },
            "x",
        ),
    ];
    for (e, want) in cases {
        assert_eq!(e.type_name().unwrap(), want);
        let out = e.to_line("i", None, TS).unwrap();
        assert!(
            out.starts_with(&format!(
                r#"{{"type":"{want}","id":"i","parentId":null,"timestamp":""#
            )),
            "{out}"
        );
        // Every created line passes the reader's strict validation.
        let env = Envelope::parse(&out).unwrap();
        assert_eq!(env.type_name, want);
    }
}

#[test]
fn common_fields_are_escaped_like_json_stringify() {
    let e = NewEntry::SessionInfo { name: None };
    let out = e.to_line("i\"d", Some("p\\\u{0}"), "t\u{2028}").unwrap();
    assert_eq!(
        out,
        "{\"type\":\"session_info\",\"id\":\"i\\\"d\",\"parentId\":\"p\\\\\\u0000\",\"timestamp\":\"t\u{2028}\"}"
    );
    let env = Envelope::parse(&out).unwrap();
    assert_eq!(env.id, "i\"d");
    assert_eq!(env.parent_id.as_deref(), Some("p\\\u{0}"));
}

#[test]
fn leaf_line_format() {
    assert_eq!(
        leaf_line("l1", None, TS, None),
        format!(
            r#"{{"type":"leaf","id":"l1","parentId":null,"timestamp":"{TS}","targetId":null}}"#
        )
    );
    let moved = leaf_line("l2", Some("l1"), TS, Some("e\"7"));
    assert_eq!(
        moved,
        format!(
            r#"{{"type":"leaf","id":"l2","parentId":"l1","timestamp":"{TS}","targetId":"e\"7"}}"#
        )
    );
    let env = Envelope::parse(&moved).unwrap();
    assert_eq!(env.kind, EntryKind::Leaf);
    assert_eq!(env.target_id.as_deref(), Some("e\"7"));
    assert_eq!(env.parent_id.as_deref(), Some("l1"));
}

#[test]
fn compact_removes_only_insignificant_whitespace() {
    assert_eq!(compact(" { \"a\" : [ 1 , 2 ] }\n"), r#"{"a":[1,2]}"#);
    assert_eq!(
        compact(r#"{ "s" : "x \" y" , "t" : "\\" , "u" : " " }"#),
        r#"{"s":"x \" y","t":"\\","u":" "}"#
    );
    assert_eq!(compact("\"\u{2028} \t\""), "\"\u{2028} \t\"");
    assert_eq!(compact("\t[\r\n]"), "[]");
    // An escape at the very end, an unterminated string: no panic, nothing after the quote cut.
    assert_eq!(compact(" \"a \\"), "\"a \\");
    assert_eq!(compact("[ \"a b"), "[\"a b");
    assert_eq!(compact("\"\\\\\" , 1"), "\"\\\\\",1");
}

/// The plain byte-by-byte state machine `compact` must agree with.
fn compact_oracle(text: &str) -> String {
    let mut out = String::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if matches!(c, ' ' | '\n' | '\r' | '\t') {
            continue;
        }
        out.push(c);
    }
    out
}

proptest::proptest! {
    #[test]
    fn compact_agrees_with_the_state_machine(
        text in "[ \\t\\r\\n\"\\\\a{}\\[\\],:é\u{2028}]{0,40}"
    ) {
        proptest::prop_assert_eq!(compact(&text), compact_oracle(&text));
    }
}

/// `render` = `to_line`, then `Envelope::parse` and `view::message_span` of the line; and
/// `render_line` (what the write path takes instead of parsing back) = the line, kind, label
/// target and message span of `render`.
fn assert_render_agrees(e: &NewEntry, id: &str, parent: Option<&str>, ts: &str) {
    let rendered = e.render(id, parent, ts);
    match (&rendered, e.render_line(id, parent, ts)) {
        (Ok(r), Ok(l)) => {
            assert_eq!(l.line, r.line, "{e:?}");
            assert_eq!(l.kind, r.envelope.kind, "{}", r.line);
            assert_eq!(l.target_id, r.envelope.target_id, "{}", r.line);
            assert_eq!(l.message, r.message, "{}", r.line);
        }
        (Err(a), Err(b)) => assert_eq!(a, &b, "{e:?}"),
        (r, l) => panic!("render {r:?}, render_line {l:?}"),
    }
    let line = e.to_line(id, parent, ts);
    match (rendered, line) {
        (Ok(r), Ok(line)) => {
            assert_eq!(r.line, line, "{e:?}");
            match Envelope::parse(&line) {
                Ok(env) => {
                    let span = match env.kind {
                        EntryKind::Message(_) => grove_codec::fields::message_span(&line),
                        _ => None,
                    };
                    assert_eq!(r.envelope, env, "{line}");
                    assert_eq!(r.message, span, "{line}");
                }
                Err(why) => panic!("render accepted {line}, parse says {why}"),
            }
        }
        (Err(_), Err(_)) => {}
        (Err(why), Ok(line)) => {
            assert!(
                Envelope::parse(&line).is_err(),
                "render refused {line}: {why}"
            )
        }
        (Ok(r), Err(why)) => panic!("render wrote {} but to_line failed: {why}", r.line),
    }
}

#[test]
fn render_agrees_with_parsing_the_line_back() {
    let messages = [
        r#"{"role":"user","content":"hi"}"#,
        r#"{ "role" : "assistant", "content" : [ {"type":"text","text":"a\"b"} ], "provider":"p" }"#,
        r#"{"role":"toolResult","content":null}"#,
        r#"{"role":"bashExecution"}"#,
        r#"{"role":"branchSummary","content":"x"}"#,
        r#"{"role":"custom","content":"x","role":"user"}"#,
        r#"{"role":7,"content":"x"}"#,
        r#"{"content":"no role"}"#,
        r#"{"role":"\u0075ser","content":"escaped role"}"#,
        r#"{"role":"user","content":"x","content":null}"#,
        "{\"role\":\"user\",\n\t\"content\":\"tab\\tnew\\nline\"}",
        r#"{"role":"user","content":"😀 \u2028"}"#,
        "[1]",
        "[null,null]",
        "\"text\"",
        "{",
        "",
        "  {\"role\":\"user\",\"content\":\"padded\"} \n",
        r#"{"role":"user","content":[1,]}"#,
        r#"{"role":"user","x":tru}"#,
        r#"{"role":"user","x":"\q"}"#,
        r#"{"role":"user"} trailing"#,
    ];
    let mut entries: Vec<NewEntry> = messages
        .iter()
        .map(|m| NewEntry::Message {
            message: (*m).to_owned(),
        })
        .collect();
    entries.extend([
        NewEntry::ModelChange {
            provider: "an\"thropic".into(),
            model_id: "m\u{1}".into(),
        },
        NewEntry::ThinkingLevelChange {
            thinking_level: "high".into(),
        },
        NewEntry::ActiveToolsChange {
            active_tool_names: vec!["read".into(), "b\\ash".into()],
        },
        NewEntry::Compaction {
            summary: "s\n".into(),
            first_kept_entry_id: "k".into(),
            tokens_before: 12,
            retained_tail: Some("[ 1 , 2 ]".into()),
            details: Some("{}".into()),
            usage: None,
            from_hook: Some(true),
        },
        NewEntry::BranchSummary {
            from_id: "root".into(),
            summary: "b".into(),
            details: None,
            usage: Some("{\"input\": 1}".into()),
            from_hook: Some(false),
        },
        NewEntry::Custom {
            custom_type: "ext".into(),
            data: Some("{\"a\": [1, {\"b\": null}]}".into()),
        },
        NewEntry::CustomMessage {
            custom_type: "ext".into(),
            content: "\"text\"".into(),
            display: true,
            details: None,
        },
        NewEntry::Label {
            target_id: "t\u{7f}1".into(),
            label: Some("L".into()),
        },
        NewEntry::Label {
            target_id: "t1".into(),
            label: None,
        },
        NewEntry::SessionInfo {
            name: Some("n".into()),
        },
        NewEntry::SessionInfo { name: None },
        NewEntry::Raw {
            object: r#"{"type":"message","message":{"role":"user","content":"raw"},"x":1}"#.into(),
        },
        NewEntry::Raw {
            object: r#"{"type":"leaf","targetId":null}"#.into(),
        },
        NewEntry::Raw {
            object: r#"{"type":"session","version":3}"#.into(),
        },
        NewEntry::Raw {
            object: r#"{"type":"label","targetId":"a"}"#.into(),
        },
        NewEntry::Raw {
            object: r#"{"type":"future_kind","payload":[1]}"#.into(),
        },
    ]);
    for e in &entries {
        for (id, parent, ts) in [
            ("e1", Some("p0"), TS),
            ("e\"2", None, TS),
            ("e3", Some(""), TS),
            ("", Some("p"), TS),
            ("e4", Some("p"), ""),
        ] {
            assert_render_agrees(e, id, parent, ts);
        }
    }
}
