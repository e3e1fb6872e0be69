//! `grove export --html` (docs/cli.md): one self-contained page that holds every entry of the
//! session as JSON no entry content can break out of. (What the page shows, and that its
//! context equals `grove context`, is tested in a real browser:
//! tools/clients/typescript/test/view.test.ts.)

use std::fs;

use serde_json::Value;

use super::Grove;

/// A message whose content tries to end the data element and run a script of its own.
const BREAKOUT: &str = "</script><script>alert(1)</script><!--<script> and \u{2028}\u{2029}";

/// A session with a side branch, a branch summary, labels and a compaction, built as a user
/// would, and the ids of its entries by role.
struct Story {
    grove: Grove,
    side: String,
    summary: String,
    compaction: String,
    breakout: String,
    leaf: String,
}

fn append(g: &Grove, json: &Value) -> String {
    let out = g.run_with_stdin(&["append", "story", "--json"], &json.to_string());
    super::assert_success(&["append", "story"], &out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

fn user(text: &str) -> Value {
    serde_json::json!({"role": "user", "content": text, "timestamp": 1_767_225_600_000u64})
}

fn assistant(text: &str) -> Value {
    serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "provider": "anthropic", "model": "claude", "timestamp": 1_767_225_600_001u64})
}

fn story() -> Story {
    let g = Grove::new();
    let header = g.store_dir().with_file_name("story.jsonl");
    fs::write(
        &header,
        r#"{"type":"session","version":3,"id":"story","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp/story"}"#,
    )
    .unwrap();
    g.ok(&["import", header.to_str().unwrap()]);
    let first = append(&g, &user("hello"));
    let answer = append(&g, &assistant("hi"));
    append(&g, &user("try one way"));
    let side = append(&g, &assistant("one way"));
    let nav = g.json(&[
        "navigate",
        "story",
        &answer,
        "--summary",
        "tried one way",
        "--json",
    ]);
    let summary = nav["summaryEntryId"].as_str().unwrap().to_owned();
    g.ok(&["label", "story", &first, "start"]);
    let kept = append(&g, &user("try another way"));
    append(&g, &assistant("another way"));
    let compaction = append(
        &g,
        &serde_json::json!({"type": "compaction", "summary": "compacted so far",
            "firstKeptEntryId": kept, "tokensBefore": 1234}),
    );
    let breakout = append(&g, &user(BREAKOUT));
    let leaf = append(&g, &assistant("done"));
    Story {
        grove: g,
        side,
        summary,
        compaction,
        breakout,
        leaf,
    }
}

/// The page's embedded JSON and the page with it cut out.
fn split_page(page: &str) -> (Value, String) {
    let open = r#"<script type="application/json" id="grove-data">"#;
    let start = page.find(open).expect("the data element") + open.len();
    let end = start + page[start..].find("</script>").expect("its end");
    let data = serde_json::from_str(&page[start..end]).expect("the data is JSON");
    (data, format!("{}{}", &page[..start], &page[end..]))
}

#[test]
fn the_page_holds_every_entry_and_fetches_nothing() {
    let s = story();
    let g = &s.grove;
    let file = g.store_dir().with_file_name("story.html");
    let args = ["export", "story", "--html", "-o", file.to_str().unwrap()];
    let out = g.run(&args);
    super::assert_success(&args, &out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("as HTML to"));
    let page = fs::read_to_string(&file).unwrap();
    assert!(page.starts_with("<!doctype html>"));

    // Self-contained: nothing but the data and the page's own parts, and a policy that lets
    // the browser load or fetch nothing.
    let (data, rest) = split_page(&page);
    for outside in [
        "http://", "https://", "src=", "href=", "url(", "@import", "//cdn",
    ] {
        assert!(!rest.contains(outside), "the page names {outside}");
    }
    assert!(rest.contains(
        r#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-"#
    ));
    assert!(!rest.contains("connect-src"));

    // Every tree entry, as stored, in the order of the log (the harness export minus the
    // leaf records); the tree's nodes name the same ids.
    let stored: Vec<String> = g
        .ok(&["export", "story"])
        .lines()
        .skip(1)
        .filter(|l| !l.contains(r#""type":"leaf""#))
        .map(str::to_owned)
        .collect();
    let lines: Vec<String> = data["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(lines, stored);
    let nodes = data["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), stored.len());
    for (node, line) in nodes.iter().zip(&lines) {
        let entry: Value = serde_json::from_str(line).unwrap();
        assert_eq!(node["id"], entry["id"]);
        assert_eq!(node["type"], entry["type"]);
    }
    assert_eq!(data["mode"], "export");
    assert_eq!(data["session"]["id"], "story");
    assert_eq!(data["leaf"], s.leaf.as_str());
    let node = |id: &str| nodes.iter().find(|n| n["id"] == id).unwrap();
    assert_eq!(node(&s.leaf)["onActivePath"], true);
    assert_eq!(node(&s.compaction)["onActivePath"], true);
    assert_eq!(node(&s.summary)["type"], "branch_summary");
    assert_eq!(node(&s.side)["onActivePath"], false);
    assert!(nodes.iter().any(|n| n["label"] == "start"));
    let tree = g.json(&["tree", "story", "--json"]);
    assert_eq!(
        data["roots"].as_array().unwrap().len(),
        tree.as_array().unwrap().len()
    );

    // The breakout content is in the data, escaped: it neither ends the element nor opens a
    // comment, and the page has exactly its two script elements.
    let line = lines.iter().find(|l| l.contains(&s.breakout)).unwrap();
    let entry: Value = serde_json::from_str(line).unwrap();
    assert_eq!(entry["message"]["content"], BREAKOUT);
    assert!(!page.contains("<script>alert(1)"));
    assert!(!page.contains("<!--"));
    assert!(!page.contains('\u{2028}') && !page.contains('\u{2029}'));
    assert_eq!(page.matches("</script>").count(), 2);
    assert_eq!(page.matches("<script").count(), 2);
}

#[test]
fn the_page_goes_to_stdout_without_a_file_byte_for_byte() {
    let s = story();
    let g = &s.grove;
    let page = g.ok(&["export", "story", "--html"]);
    let file = g.store_dir().with_file_name("again.html");
    g.ok(&["export", "story", "--html", "-o", file.to_str().unwrap()]);
    assert_eq!(page, fs::read_to_string(&file).unwrap());
    let (data, _) = split_page(&page);
    assert_eq!(data["lines"].as_array().unwrap().len(), 11);
}

#[test]
fn html_excludes_the_other_formats() {
    let s = story();
    for other in [&["--flavor", "cli"][..], &["--audit"][..]] {
        let mut args = vec!["export", "story", "--html"];
        args.extend_from_slice(other);
        let (code, _) = s.grove.fail(&args);
        assert_eq!(code, 2, "{args:?}");
    }
}
