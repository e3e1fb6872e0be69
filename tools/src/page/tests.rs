//! The page's fixed parts and the escaping of the embedded JSON.
#![allow(clippy::unwrap_used)]

use super::{policy, script_json, server_page, Connect, SCRIPT};

#[test]
fn script_json_escapes_what_could_end_the_element_and_means_the_same_json() {
    let value = serde_json::json!({
        "text": "</script><script>alert(1)</script> <!-- <SCRIPT> \u{2028}\u{2029} & >",
    });
    let text = value.to_string();
    let escaped = script_json(&text);
    assert!(!escaped.contains('<'), "{escaped}");
    assert!(!escaped.contains('\u{2028}') && !escaped.contains('\u{2029}'));
    assert!(escaped.contains("\\u003c/script>"));
    let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
    assert_eq!(back, value);
}

#[test]
fn script_json_leaves_plain_text_alone() {
    assert!(matches!(
        script_json(r#"{"a":"b"}"#),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn the_script_cannot_end_its_own_element() {
    assert!(!SCRIPT.to_ascii_lowercase().contains("</script"));
    assert!(!SCRIPT.contains("<!--"));
}

#[test]
fn the_policy_allows_the_script_by_its_hash_and_no_fetch_in_an_export() {
    let export = policy(Connect::None);
    assert!(export.starts_with("default-src 'none'; script-src 'sha256-"));
    assert!(!export.contains("connect-src"));
    assert!(policy(Connect::SameOrigin).contains("connect-src 'self'"));
}

#[test]
fn the_server_page_holds_no_data_and_says_so() {
    let page = server_page();
    assert!(page
        .contains(r#"<script type="application/json" id="grove-data">{"mode":"server"}</script>"#));
    assert!(page.contains(SCRIPT));
}
