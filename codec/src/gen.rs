//! The seeded session generator (cargo feature `gen`): pi v3 JSONL sessions, linear or bushy,
//! with small or realistic payloads and optional periodic compactions. The same spec and seed
//! give the same bytes on every run (ChaCha8, a stable stream). The benchmarks
//! (grove-benches) and `grove gen` (grove-tools) both use it.
//!
//! This module owns what to generate ([`GenSpec`], `spec.rs`), the payload text
//! (`payload.rs`) and the generator itself ([`Generator`], [`generate`], [`generate_to`]). It
//! calls the codec's header, string quoting, time and entry writer, and rand; it opens no
//! file: [`generate`] produces the bytes in memory and [`generate_to`] writes them to any
//! `std::io::Write` its caller opened.
//!
//! A session is a sequence of [`Record`]s: tree entries (user → assistant → tool result →
//! … turns, as pi's agents write them) and, at each branch point, a `leaf` line that moves
//! the leaf back to a random earlier entry, after which the conversation continues there.

use std::collections::HashSet;
use std::io::{self, Write};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::header::Header;
use crate::jsstr::quote;
use crate::time::format_ms;
use crate::writer::NewEntry;
pub use payload::Payload;
use payload::Size;
pub use spec::{GenSpec, GeneratedSession, Record, CWD};

mod payload;
mod spec;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    AssistantTool,
    AssistantStop,
    ToolResult,
    Compaction,
}

const NO_PARENT: u32 = u32::MAX;
const TOOLS: [&str; 6] = ["read", "bash", "edit", "write", "grep", "ls"];

/// The record stream of one [`GenSpec`].
pub struct Generator {
    spec: GenSpec,
    rng: ChaCha8Rng,
    words: Vec<&'static str>,
    session_id: String,
    header: String,
    used: HashSet<u32>,
    ids: Vec<String>,
    parent: Vec<u32>,
    depth: Vec<u32>,
    kind: Vec<Kind>,
    leaf: Option<u32>,
    clock: i64,
    branch_at: Vec<usize>,
    next_branch: usize,
    tips: Vec<String>,
    leaf_records: usize,
}

impl Generator {
    /// A generator at the start of the session.
    pub fn new(spec: &GenSpec) -> Generator {
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let r: [u32; 4] = rng.random();
        let session_id = format!(
            "{:08x}-{:04x}-7{:03x}-{:04x}-{:04x}{:08x}",
            r[0],
            r[1] >> 16,
            r[1] & 0xfff,
            0x8000 | (r[2] >> 18),
            r[2] & 0xffff,
            r[3]
        );
        let clock = 1_767_225_600_000 + rng.random_range(0..86_400_000);
        let header = Header::create(&session_id, &format_ms(clock), CWD, None, None).raw;
        let n = spec.entries;
        let b = spec.branch_points.min(n.saturating_sub(1));
        let mut branch_at: Vec<usize> = (1..=b).map(|k| k * n / (b + 1)).collect();
        branch_at.retain(|&p| p > 0);
        branch_at.dedup();
        Generator {
            spec: spec.clone(),
            rng,
            words: payload::words(),
            session_id,
            header,
            used: HashSet::with_capacity(n + b),
            ids: Vec::with_capacity(n),
            parent: Vec::with_capacity(n),
            depth: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            leaf: None,
            clock,
            branch_at,
            next_branch: 0,
            tips: Vec::new(),
            leaf_records: 0,
        }
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The header line.
    pub fn header(&self) -> &str {
        &self.header
    }

    /// What was generated so far (call after the iterator ends).
    pub fn finish(mut self) -> GeneratedSession {
        if let Some(l) = self.leaf {
            self.tips.push(self.ids[l as usize].clone());
        }
        GeneratedSession {
            session_id: self.session_id,
            header: self.header,
            jsonl: Vec::new(),
            bytes: 0,
            leaf_id: self.leaf.map(|l| self.ids[l as usize].clone()),
            active_path_len: self.leaf.map_or(0, |l| self.depth[l as usize] as usize + 1),
            ids: self.ids,
            tips: self.tips,
            leaf_records: self.leaf_records,
        }
    }

    fn new_id(&mut self) -> String {
        loop {
            let v: u32 = self.rng.random();
            if self.used.insert(v) {
                return format!("{v:08x}");
            }
        }
    }

    fn tick(&mut self) -> i64 {
        self.clock += self.rng.random_range(300..20_000);
        self.clock
    }

    fn text(&mut self, size: Size) -> String {
        let n = payload::size(&mut self.rng, size);
        payload::text(&mut self.rng, &self.words, n)
    }

    fn branch(&mut self) -> Record {
        let i = self.ids.len();
        let last = self.next_branch == self.branch_at.len();
        let target = match self.spec.active_path {
            Some(len) if last => self.target_for_path(len, self.spec.entries - i),
            _ => Some(self.rng.random_range(0..(i - 1).max(1)) as u32),
        };
        let previous = self.leaf.map(|l| self.ids[l as usize].clone());
        if let Some(p) = &previous {
            self.tips.push(p.clone());
        }
        let id = self.new_id();
        let ms = self.tick();
        self.leaf = target;
        self.leaf_records += 1;
        Record::Leaf {
            id,
            previous_leaf: previous,
            timestamp: format_ms(ms),
            target: target.map(|t| self.ids[t as usize].clone()),
        }
    }

    /// An entry whose depth puts the end of the session at an active path of `len` entries
    /// (the deepest one not deeper than that, when none is exactly there).
    fn target_for_path(&mut self, len: usize, remaining: usize) -> Option<u32> {
        let want = len.checked_sub(remaining + 1)? as u32;
        let best = self.depth.iter().copied().filter(|&d| d <= want).max()?;
        let candidates: Vec<u32> = (0..self.depth.len() as u32)
            .filter(|&i| self.depth[i as usize] == best)
            .collect();
        Some(candidates[self.rng.random_range(0..candidates.len())])
    }

    fn entry(&mut self) -> Record {
        let i = self.ids.len();
        let id = self.new_id();
        let parent = self.leaf;
        let ms = self.tick();
        let compact =
            matches!(self.spec.compaction_every, Some(k) if k > 0 && (i + 1).is_multiple_of(k));
        let (entry, kind) = match (parent, compact) {
            (Some(p), true) => (self.compaction(p), Kind::Compaction),
            _ => match parent.map(|p| self.kind[p as usize]) {
                None | Some(Kind::AssistantStop) | Some(Kind::Compaction) => {
                    (self.user(ms), Kind::User)
                }
                Some(Kind::User) | Some(Kind::ToolResult) => self.assistant(&id, ms),
                Some(Kind::AssistantTool) => {
                    let pid = self.ids[parent.map_or(0, |p| p as usize)].clone();
                    (self.tool_result(&pid, ms), Kind::ToolResult)
                }
            },
        };
        let parent_id = parent.map(|p| self.ids[p as usize].clone());
        self.ids.push(id.clone());
        self.parent.push(parent.unwrap_or(NO_PARENT));
        self.depth
            .push(parent.map_or(0, |p| self.depth[p as usize] + 1));
        self.kind.push(kind);
        self.leaf = Some(i as u32);
        Record::Entry {
            id,
            parent_id,
            timestamp: format_ms(ms),
            entry,
        }
    }

    fn image(&mut self) -> String {
        let n = payload::size(
            &mut self.rng,
            Size {
                lo: 6_000,
                hi: 75_000,
            },
        );
        let data = payload::base64_blob(&mut self.rng, n);
        format!(",{{\"type\":\"image\",\"data\":\"{data}\",\"mimeType\":\"image/png\"}}")
    }

    fn content(&mut self, size: Size, images: bool) -> String {
        let text = self.text(size);
        let mut content = format!("[{{\"type\":\"text\",\"text\":{}}}", quote(&text));
        if images && self.rng.random_bool(self.spec.payload.image_odds()) {
            content.push_str(&self.image());
        }
        content.push(']');
        content
    }

    fn user(&mut self, ms: i64) -> NewEntry {
        let content = self.content(self.spec.payload.user(), true);
        NewEntry::Message {
            message: format!("{{\"role\":\"user\",\"content\":{content},\"timestamp\":{ms}}}"),
        }
    }

    fn assistant(&mut self, id: &str, ms: i64) -> (NewEntry, Kind) {
        let uses_tool = self.rng.random_bool(0.65);
        let text = self.text(self.spec.payload.assistant());
        let mut blocks = format!("{{\"type\":\"text\",\"text\":{}}}", quote(&text));
        if uses_tool {
            let name = tool_name(id);
            let w = self.words[self.rng.random_range(0..self.words.len())];
            let args = match name {
                "bash" => format!("{{\"command\":{}}}", quote(&format!("cargo test {w}"))),
                "grep" => format!("{{\"pattern\":{},\"path\":\"src\"}}", quote(w)),
                _ => format!("{{\"path\":{}}}", quote(&format!("src/{w}.rs"))),
            };
            blocks.push_str(&format!(
                ",{{\"type\":\"toolCall\",\"id\":\"call_{id}\",\"name\":\"{name}\",\"arguments\":{args}}}"
            ));
        }
        let input: u64 = self.rng.random_range(1_000..150_000);
        let output: u64 = self.rng.random_range(50..8_000);
        let cache: u64 = self.rng.random_range(0..100_000);
        let cost = |tokens: u64, per_million: u64| (tokens * per_million) as f64 / 1e6;
        let (ci, co, cc) = (cost(input, 3), cost(output, 15), cost(cache, 3) / 10.0);
        let usage = format!(
            "{{\"input\":{input},\"output\":{output},\"cacheRead\":{cache},\"cacheWrite\":0,\
             \"totalTokens\":{},\"cost\":{{\"input\":{ci},\"output\":{co},\"cacheRead\":{cc},\
             \"cacheWrite\":0,\"total\":{}}}}}",
            input + output + cache,
            ci + co + cc
        );
        let stop = if uses_tool { "toolUse" } else { "stop" };
        let message = format!(
            "{{\"role\":\"assistant\",\"content\":[{blocks}],\"api\":\"anthropic-messages\",\
             \"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{usage},\
             \"stopReason\":\"{stop}\",\"timestamp\":{ms}}}"
        );
        let kind = if uses_tool {
            Kind::AssistantTool
        } else {
            Kind::AssistantStop
        };
        (NewEntry::Message { message }, kind)
    }

    fn tool_result(&mut self, call_entry: &str, ms: i64) -> NewEntry {
        let content = self.content(self.spec.payload.tool_result(), true);
        NewEntry::Message {
            message: format!(
                "{{\"role\":\"toolResult\",\"toolCallId\":\"call_{call_entry}\",\"toolName\":\"{}\",\
                 \"content\":{content},\"isError\":false,\"timestamp\":{ms}}}",
                tool_name(call_entry)
            ),
        }
    }

    fn compaction(&mut self, parent: u32) -> NewEntry {
        let back = self.rng.random_range(2..=6);
        let mut kept = parent;
        for _ in 1..back {
            match self.parent[kept as usize] {
                NO_PARENT => break,
                p => kept = p,
            }
        }
        let summary = self.text(self.spec.payload.summary());
        NewEntry::Compaction {
            summary,
            first_kept_entry_id: self.ids[kept as usize].clone(),
            tokens_before: self.rng.random_range(50_000..180_000),
            retained_tail: None,
            details: Some(
                "{\"readFiles\":[\"src/main.rs\"],\"modifiedFiles\":[\"src/session/store.rs\"]}"
                    .to_owned(),
            ),
            usage: None,
            from_hook: None,
        }
    }
}

fn tool_name(id: &str) -> &'static str {
    let v = u32::from_str_radix(id, 16).unwrap_or(0);
    TOOLS[v as usize % TOOLS.len()]
}

impl Iterator for Generator {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if self.ids.len() >= self.spec.entries {
            return None;
        }
        if self.branch_at.get(self.next_branch) == Some(&self.ids.len()) {
            self.next_branch += 1;
            return Some(self.branch());
        }
        Some(self.entry())
    }
}

fn drive(spec: &GenSpec, mut sink: impl FnMut(&[u8])) -> GeneratedSession {
    let mut generator = Generator::new(spec);
    let mut bytes = generator.header().len() as u64 + 1;
    sink(generator.header().as_bytes());
    sink(b"\n");
    for record in &mut generator {
        let line = record.line();
        bytes += line.len() as u64 + 1;
        sink(line.as_bytes());
        sink(b"\n");
    }
    let mut done = generator.finish();
    done.bytes = bytes;
    done
}

/// Generates the session in memory (`jsonl` holds the file).
pub fn generate(spec: &GenSpec) -> GeneratedSession {
    let mut jsonl = Vec::new();
    let mut done = drive(spec, |b| jsonl.extend_from_slice(b));
    done.jsonl = jsonl;
    done
}

/// Generates the session into `out` (`jsonl` stays empty).
pub fn generate_to(spec: &GenSpec, out: &mut dyn Write) -> io::Result<GeneratedSession> {
    let mut error = None;
    let done = drive(spec, |b| {
        if error.is_none() {
            if let Err(e) = out.write_all(b) {
                error = Some(e);
            }
        }
    });
    match error {
        Some(e) => Err(e),
        None => out.flush().map(|_| done),
    }
}
