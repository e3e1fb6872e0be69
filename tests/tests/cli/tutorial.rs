//! docs/tutorial.md runs as written: every ```sh block, in order, in one bash with
//! `-euo pipefail`, `grove` on PATH and GROVE_STORE set to a fresh store.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::Grove;

/// The ```sh blocks of a Markdown text, in order.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match current.as_mut() {
            None if line.trim_end() == "```sh" => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_end() == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    assert!(current.is_none(), "an unclosed ```sh block");
    blocks
}

#[test]
fn the_tutorial_runs_as_written() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/tutorial.md");
    let blocks = sh_blocks(&std::fs::read_to_string(doc).unwrap());
    assert!(blocks.len() >= 10, "{} blocks", blocks.len());
    // One script; a marker line before each block's output.
    let mut script = String::new();
    for (i, block) in blocks.iter().enumerate() {
        script.push_str(&format!("echo '### block {i}'\n{block}"));
    }
    let g = Grove::new();
    let work = tempfile::tempdir().unwrap();
    let bin_dir = super::grove_bin().parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_owned()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(work.path())
        .env("PATH", path)
        .env("GROVE_STORE", g.store_dir())
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    super::assert_success(&["bash", "docs/tutorial.md"], &out);
    let stdout = String::from_utf8(out.stdout).unwrap();
    // The output of each block, by the command it ran.
    let outputs: Vec<(&str, &str)> = stdout
        .split("### block ")
        .skip(1)
        .map(|part| {
            let (index, text) = part.split_once('\n').unwrap_or((part, ""));
            let block = &blocks[index.parse::<usize>().unwrap()];
            (block.as_str(), text)
        })
        .collect();
    assert_eq!(outputs.len(), blocks.len());
    let last_run = |command: &str| {
        outputs
            .iter()
            .rev()
            .find(|(block, _)| block.contains(command))
            .map(|&(_, text)| text)
            .unwrap_or_else(|| panic!("no block runs {command}"))
    };

    // The navigation put plan A back in the editor and wrote the summary.
    let navigate = last_run("grove navigate");
    assert!(
        navigate.contains("editor text:\nTry plan A") && navigate.contains("branch_summary: "),
        "{navigate}"
    );
    // summary-preview listed the read file.
    assert!(last_run("grove summary-preview").contains("read files: tests/conftest.py"));
    // The tree after labelling: the label in brackets, `@` on plan B's answer.
    let tree = last_run("grove label");
    assert!(tree.contains("[plan A: blocked]"), "{tree}");
    let leaf = tree.lines().find(|l| l.starts_with("@ ")).unwrap();
    assert!(leaf.contains("in 90 seconds"), "{tree}");
    // The final context is plan B's, with plan A's summary instead of plan A.
    let context = last_run("grove context");
    assert!(
        context.contains("user: Then plan B") && context.contains("branchSummary: Plan A"),
        "{context}"
    );
    assert!(!context.contains("Try plan A"), "{context}");
    assert!(last_run("grove ls").contains("<- tutorial"));

    // The store as the tutorial left it: the fork and its parent.
    let sessions = g.json(&["ls", "--json"]);
    let fork = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "tutorial-retry")
        .unwrap_or_else(|| panic!("no fork: {sessions}"));
    assert_eq!(fork["parentSessionId"], json!("tutorial"));
    assert_eq!(fork["lineage"], json!(["tutorial"]));
    let main = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "tutorial");
    assert_eq!(main.unwrap()["name"], json!("Faster tests"));
}
