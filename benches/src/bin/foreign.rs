//! Import rate of another tool's transcript next to pi's JSONL of the same conversation: a
//! generated realistic pi session (`grove gen --payload realistic`) is written once as pi JSONL
//! and once as a Claude Code transcript (each message a `user` or `assistant` line linked by
//! `uuid`/`parentUuid`, tool results as `tool_result` blocks, a compaction as a
//! `compact_boundary`), then each is imported into a fresh sled store (`Store::import_file`,
//! `Store::import_foreign_file`), and the transcript exported back (`Flavor::Foreign`, checked
//! byte for byte).
//!
//! `cargo run --release -p grove-benches --bin foreign [-- --entries N]` (default 20,000) prints a
//! Markdown table (docs/benchmarks.md, "Foreign transcripts").

use std::io::Write;
use std::time::Instant;

use grove::codec::foreign::Format;
use grove::codec::gen::{generate, GenSpec, Payload};
use grove::{Flavor, ImportOptions, Store};
use serde_json::{json, Value};

type Res<T> = grove_benches::Result<T>;

/// The Claude Code transcript of a pi session file: one line per pi entry.
fn claude_transcript(pi: &[u8]) -> Res<Vec<u8>> {
    let mut out = Vec::with_capacity(pi.len() + pi.len() / 4);
    let session = "0f0f0f0f-1111-4222-8333-444444444444";
    for line in pi.split(|&b| b == b'\n').skip(1).filter(|l| !l.is_empty()) {
        let entry: Value = serde_json::from_slice(line)?;
        let uuid = |id: &Value| {
            id.as_str()
                .map(|s| format!("{s:0>8}-aaaa-4bbb-8ccc-000000000000"))
        };
        let (kind, body) = match entry["type"].as_str() {
            Some("message") => {
                let message = &entry["message"];
                match message["role"].as_str() {
                    Some("assistant") => (
                        "assistant",
                        json!({"message": {"role": "assistant", "content": message["content"]}}),
                    ),
                    Some("toolResult") => (
                        "user",
                        json!({"message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": message["toolCallId"], "content": message["content"]}]}}),
                    ),
                    _ => (
                        "user",
                        json!({"message": {"role": "user", "content": message["content"]}}),
                    ),
                }
            }
            Some("compaction") => (
                "system",
                json!({"subtype": "compact_boundary", "content": entry["summary"]}),
            ),
            other => ("system", json!({"subtype": other, "content": ""})),
        };
        let mut line = json!({
            "parentUuid": uuid(&entry["parentId"]),
            "isSidechain": false,
            "userType": "external",
            "cwd": "/work",
            "sessionId": session,
            "version": "2.1.337",
            "type": kind,
            "uuid": uuid(&entry["id"]),
            "timestamp": entry["timestamp"],
        });
        if let (Some(line), Some(body)) = (line.as_object_mut(), body.as_object()) {
            line.extend(body.clone());
        }
        serde_json::to_writer(&mut out, &line)?;
        out.push(b'\n');
    }
    Ok(out)
}

fn rate(bytes: usize, seconds: f64) -> String {
    format!("{:.1} MB/s", bytes as f64 / 1e6 / seconds)
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let entries = match args.iter().position(|a| a == "--entries") {
        Some(i) => args.get(i + 1).ok_or("--entries needs a value")?.parse()?,
        None => 20_000,
    };
    let mut spec = GenSpec::linear(entries, 7);
    spec.payload = Payload::Realistic;
    spec.compaction_every = Some(100);
    let pi = generate(&spec).jsonl;
    let claude = claude_transcript(&pi)?;
    let dir = tempfile::tempdir()?;
    let pi_file = dir.path().join("pi.jsonl");
    let claude_file = dir
        .path()
        .join("0f0f0f0f-1111-4222-8333-444444444444.jsonl");
    std::fs::File::create(&pi_file)?.write_all(&pi)?;
    std::fs::File::create(&claude_file)?.write_all(&claude)?;

    println!("| file | size | lines | import | rate |");
    println!("|---|---|---|---|---|");
    let store_dir = tempfile::tempdir()?;
    let store = Store::open(store_dir.path())?;
    let t = Instant::now();
    store.import_file(&pi_file, ImportOptions::default())?;
    let pi_time = t.elapsed().as_secs_f64();
    println!(
        "| pi JSONL (`grove import`) | {:.1} MB | {} | {:.2} s | {} |",
        pi.len() as f64 / 1e6,
        entries + 1,
        pi_time,
        rate(pi.len(), pi_time)
    );
    drop(store);
    let store_dir = tempfile::tempdir()?;
    let store = Store::open(store_dir.path())?;
    let t = Instant::now();
    let report =
        store.import_foreign_file(&claude_file, Format::ClaudeCode, ImportOptions::default())?;
    let claude_time = t.elapsed().as_secs_f64();
    println!(
        "| Claude Code transcript (`grove import --format claude-code`) | {:.1} MB | {} | {:.2} s | {} |",
        claude.len() as f64 / 1e6,
        entries,
        claude_time,
        rate(claude.len(), claude_time)
    );
    let session = store.session(&report.session)?;
    let mut back = Vec::with_capacity(claude.len());
    let t = Instant::now();
    session.export(Flavor::Foreign(Format::ClaudeCode), &mut back)?;
    let export_time = t.elapsed().as_secs_f64();
    if back != claude {
        return Err("the transcript did not come back byte for byte".into());
    }
    println!(
        "| the transcript exported back (`grove export --format claude-code`, byte for byte) | {:.1} MB | {} | {:.2} s | {} |",
        claude.len() as f64 / 1e6,
        entries,
        export_time,
        rate(claude.len(), export_time)
    );
    println!(
        "\nThe transcript imports at {:.2}x pi JSONL's rate (its bytes per second over pi's).",
        (claude.len() as f64 / claude_time) / (pi.len() as f64 / pi_time)
    );
    Ok(())
}
