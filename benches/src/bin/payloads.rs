//! Bytes on disk of an image-heavy session with and without the payload store: the session
//! alone, imported twice (under two ids), and forked ten times, on sled.
//!
//! The generated session has `--turns` turns (default 100): a user message with a fresh
//! base64 "screenshot" of 96 KiB, which the next turn sends again (harnesses re-send the
//! last screenshot), an assistant reply and a 16 KiB tool result.
//!
//! `cargo run --release -p grove-benches --bin payloads [-- --turns N]` prints a Markdown
//! table (docs/benchmarks.md, "Payloads").

use std::io::Cursor;

use grove::{ForkOptions, ImportOptions, Store, StoreConfig};
use grove_benches::compare::measure::{dir_size, fmt_bytes, wait_for_release};

type Res<T> = grove_benches::Result<T>;

/// Deterministic base64-alphabet bytes.
fn blob(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(ALPHABET[(x >> 58) as usize])
        })
        .collect()
}

/// The session file (pi JSONL) with session id `id`.
fn session(id: &str, turns: usize) -> Vec<u8> {
    let mut out = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n"
    );
    let mut parent = "null".to_owned();
    let mut n = 0;
    let mut push = |out: &mut String, message: String| {
        n += 1;
        let eid = format!("{n:08x}");
        out.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{eid}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{message}}}\n"
        ));
        parent = format!("\"{eid}\"");
    };
    for t in 0..turns {
        // This turn's screenshot, and the previous one sent again.
        let mut content = format!(
            "[{{\"type\":\"text\",\"text\":\"step {t}\"}},{{\"type\":\"image\",\"data\":\"{}\",\"mimeType\":\"image/png\"}}",
            blob(t as u64, 96 * 1024)
        );
        if t > 0 {
            content.push_str(&format!(
                ",{{\"type\":\"image\",\"data\":\"{}\",\"mimeType\":\"image/png\"}}",
                blob(t as u64 - 1, 96 * 1024)
            ));
        }
        content.push(']');
        push(
            &mut out,
            format!("{{\"role\":\"user\",\"content\":{content},\"timestamp\":1}}"),
        );
        push(&mut out, format!("{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"I see step {t}.\"}}],\"api\":\"a\",\"provider\":\"p\",\"model\":\"m\",\"usage\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":0,\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}},\"stopReason\":\"stop\",\"timestamp\":2}}"));
        push(
            &mut out,
            format!(
                "{{\"role\":\"toolResult\",\"toolCallId\":\"c{t}\",\"toolName\":\"read\",\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}],\"isError\":false,\"timestamp\":3}}",
                blob(1_000_000 + t as u64, 16 * 1024)
            ),
        );
    }
    out.into_bytes()
}

/// Bytes on disk of a store built by `build`, closed.
fn measure(threshold: Option<usize>, build: impl Fn(&Store) -> Res<()>) -> Res<(u64, u64)> {
    let dir = tempfile::tempdir()?;
    let payloads = {
        let store = Store::open_with(StoreConfig::new(dir.path()).payload_threshold(threshold))?;
        build(&store)?;
        store.flush()?;
        store.payload_stats()?.bytes
    };
    wait_for_release(dir.path())?;
    Ok((dir_size(dir.path())?, payloads))
}

fn import(store: &Store, file: &[u8]) -> Res<String> {
    Ok(store
        .import_reader(Cursor::new(file.to_vec()), ImportOptions::default())?
        .session)
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let turns = match args.iter().position(|a| a == "--turns") {
        Some(i) => args.get(i + 1).ok_or("--turns needs a value")?.parse()?,
        None => 100,
    };
    let one = session("img-1", turns);
    let two = session("img-2", turns);
    println!(
        "Session file: {} ({} turns, {} entries).\n",
        fmt_bytes(one.len() as u64),
        turns,
        turns * 3
    );
    println!("| store | without payloads | with payloads (4 KiB threshold) | of which payloads | ratio |");
    println!("|---|---|---|---|---|");
    type Build<'a> = Box<dyn Fn(&Store) -> Res<()> + 'a>;
    let cases: Vec<(&str, Build)> = vec![
        (
            "the session alone",
            Box::new(|s: &Store| import(s, &one).map(|_| ())),
        ),
        (
            "imported twice (two ids)",
            Box::new(|s: &Store| {
                import(s, &one)?;
                import(s, &two).map(|_| ())
            }),
        ),
        (
            "imported, then forked ten times",
            Box::new(|s: &Store| {
                let id = import(s, &one)?;
                let source = s.session(&id)?;
                for _ in 0..10 {
                    s.fork(&source, ForkOptions::default())?;
                }
                Ok(())
            }),
        ),
    ];
    for (name, build) in cases {
        let (without, _) = measure(None, &build)?;
        let (with, payloads) = measure(Some(grove::DEFAULT_PAYLOAD_THRESHOLD), &build)?;
        println!(
            "| {name} | {} | {} | {} | {:.2}x |",
            fmt_bytes(without),
            fmt_bytes(with),
            fmt_bytes(payloads),
            without as f64 / with as f64
        );
    }
    Ok(())
}
