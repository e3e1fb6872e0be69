//! `grove ls` paging: pages in both directions cover the listing once, in order, with each
//! session's lineage even when its parent is on another page.

use super::Grove;

#[test]
fn ls_pages_cover_the_listing_in_both_directions() {
    let g = Grove::new();
    g.ok(&["demo"]);
    let first = g.json(&["ls", "--json"]);
    let parent = first[0]["id"].as_str().unwrap().to_owned();
    for i in 0..4 {
        let id = format!("zz-fork-{i}");
        g.ok(&["fork", &parent, "--id", &id]);
    }
    let all: Vec<String> = g
        .json(&["ls", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(all.len(), 5);
    for order in ["asc", "desc"] {
        let mut seen = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let mut args = vec!["ls", "--json", "--limit", "2", "--order", order];
            if let Some(a) = &after {
                args.extend(["--after", a.as_str()]);
            }
            let page = g.json(&args);
            let page = page.as_array().unwrap();
            assert!(page.len() <= 2);
            if page.is_empty() {
                break;
            }
            for s in page {
                if s["id"].as_str().unwrap().starts_with("zz-fork-") {
                    assert_eq!(s["lineage"], serde_json::json!([parent]), "{s}");
                }
                seen.push(s["id"].as_str().unwrap().to_owned());
            }
            after = seen.last().cloned();
        }
        let mut want = all.clone();
        if order == "desc" {
            want.reverse();
        }
        assert_eq!(seen, want, "{order}");
    }
    let text = g.ok(&["ls", "--limit", "1", "--after", &parent]);
    assert!(text.starts_with("zz-fork-0 "), "{text}");
    let (code, err) = g.fail(&["ls", "--limit", "0"]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = g.fail(&["ls", "--order", "sideways"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn ls_filters_by_cwd_name_label_and_times() {
    let g = Grove::new();
    g.ok(&["demo"]);
    let parent = g.json(&["ls", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    g.ok(&["fork", &parent, "--id", "zz-a", "--cwd", "/work/a"]);
    g.ok(&["fork", &parent, "--id", "zz-b", "--cwd", "/work/b"]);
    g.ok(&["name", "zz-b", "Release Checklist"]);
    g.ok(&["label", "zz-a", "@", "important"]);
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["ls", "--json"];
        all.extend_from_slice(args);
        g.json(&all)
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&["--cwd", "/work/a"]), ["zz-a"]);
    assert_eq!(ids(&["--name", "checklist"]), ["zz-b"]);
    assert_eq!(ids(&["--label", "important"]), ["zz-a"]);
    assert_eq!(ids(&["--created-after", "1d"]).len(), 3);
    assert!(ids(&["--created-before", "2000-01-01"]).is_empty());
    assert_eq!(
        ids(&["--updated-after", "1h", "--cwd", "/work/b"]),
        ["zz-b"]
    );
    assert_eq!(
        ids(&["--cwd", "/work/a", "--name", "checklist"]),
        Vec::<String>::new()
    );
    let text = g.ok(&["ls", "--label", "important"]);
    assert!(text.starts_with("zz-a "), "{text}");
    let (code, err) = g.fail(&["ls", "--created-after", "yesterday"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("createdAfter"), "{err}");
}
