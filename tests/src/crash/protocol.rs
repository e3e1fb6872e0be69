//! What the crash child and its driver share: the line protocol on the child's stdout, the
//! seeded random generator, session-id families, the log hash and the generated pi file.
//!
//! The child prints one line per event and flushes after each. An *intent* line is written
//! before an operation starts and an *ack* line after the call returned `Ok`, so the driver
//! knows, for every operation a kill may have interrupted, what must and what may be in the
//! store. Tokens are separated by single spaces; a stored line, when reported, is the last
//! field and runs to the end of the protocol line (stored lines never contain a newline).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use grove::codec::digest::{self, Digest, ROOT_PARENT};

/// One line of the child's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `o`: the process runs and is about to open the store.
    Starting,
    /// `O <ms>`: the store is open (sled recovery and grove's clean-up done).
    Opened {
        /// How long the open took.
        ms: u64,
    },
    /// `c <session>`: about to create a session.
    CreateIntent {
        /// The new session's id.
        session: String,
    },
    /// `C <session>`: the session was created.
    CreateAck {
        /// The session id.
        session: String,
    },
    /// `a <session> <id>`: about to append entry `id`.
    AppendIntent {
        /// The session.
        session: String,
        /// The entry id chosen by the child.
        id: String,
    },
    /// `A <session> <id> <len> <line>`: the append returned; the entry's stored line.
    AppendAck {
        /// The session.
        session: String,
        /// The entry id.
        id: String,
        /// The session's log length right after the append (single-writer sessions only).
        len: u64,
        /// The stored line, exactly.
        line: String,
    },
    /// `b <session> <n>`: about to append `n` entries in one atomic batch.
    BatchIntent {
        /// The session.
        session: String,
        /// How many entries.
        n: u64,
    },
    /// `B <session> <len> <hash> <id,id,…>`: the batch returned.
    BatchAck {
        /// The session.
        session: String,
        /// The log length right after the batch.
        len: u64,
        /// [`LogHash`] of the batch's lines, in order.
        hash: String,
        /// The ids, in order.
        ids: Vec<String>,
    },
    /// `m <session> <target|->`: about to move the leaf (`-`: the root position).
    MoveIntent {
        /// The session.
        session: String,
        /// The target entry.
        target: Option<String>,
    },
    /// `M <session> <target|-> <len>`: the move returned.
    MoveAck {
        /// The session.
        session: String,
        /// The target entry.
        target: Option<String>,
        /// The log length right after the move.
        len: u64,
    },
    /// `f <new> <source> <count> <hash> <leaf|->`: about to fork; what the fork must hold.
    ForkIntent {
        /// The new session.
        session: String,
        /// The forked session.
        source: String,
        /// Number of log records the fork must have.
        count: u64,
        /// [`LogHash`] of those records' lines.
        hash: String,
        /// The fork's leaf.
        leaf: Option<String>,
    },
    /// `F <new>`: the fork returned.
    ForkAck {
        /// The new session.
        session: String,
    },
    /// `i <new>`: about to import the generated file under this session id.
    ImportIntent {
        /// The new session.
        session: String,
    },
    /// `I <new> <entries>`: the import returned.
    ImportAck {
        /// The new session.
        session: String,
        /// Entries reported by the import.
        entries: u64,
    },
    /// `x <session>`: about to delete a session.
    DeleteIntent {
        /// The session.
        session: String,
    },
    /// `X <session>`: the deletion returned.
    DeleteAck {
        /// The session.
        session: String,
    },
    /// `E`: the child stopped by itself (its time or operation budget ran out).
    End,
    /// `ERR <text>`: an operation failed; the child exits with status 2.
    Error {
        /// What failed.
        text: String,
    },
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

fn parse_opt(s: &str) -> Option<String> {
    (s != "-").then(|| s.to_owned())
}

impl Event {
    /// The protocol line, without its newline.
    pub fn to_line(&self) -> String {
        match self {
            Event::Starting => "o".to_owned(),
            Event::Opened { ms } => format!("O {ms}"),
            Event::CreateIntent { session } => format!("c {session}"),
            Event::CreateAck { session } => format!("C {session}"),
            Event::AppendIntent { session, id } => format!("a {session} {id}"),
            Event::AppendAck {
                session,
                id,
                len,
                line,
            } => format!("A {session} {id} {len} {line}"),
            Event::BatchIntent { session, n } => format!("b {session} {n}"),
            Event::BatchAck {
                session,
                len,
                hash,
                ids,
            } => format!("B {session} {len} {hash} {}", ids.join(",")),
            Event::MoveIntent { session, target } => format!("m {session} {}", opt(target)),
            Event::MoveAck {
                session,
                target,
                len,
            } => format!("M {session} {} {len}", opt(target)),
            Event::ForkIntent {
                session,
                source,
                count,
                hash,
                leaf,
            } => format!("f {session} {source} {count} {hash} {}", opt(leaf)),
            Event::ForkAck { session } => format!("F {session}"),
            Event::ImportIntent { session } => format!("i {session}"),
            Event::ImportAck { session, entries } => format!("I {session} {entries}"),
            Event::DeleteIntent { session } => format!("x {session}"),
            Event::DeleteAck { session } => format!("X {session}"),
            Event::End => "E".to_owned(),
            Event::Error { text } => format!("ERR {}", text.replace('\n', " | ")),
        }
    }

    /// Parses one complete protocol line.
    pub fn parse(line: &str) -> Result<Event, String> {
        let bad = || format!("malformed protocol line: {line:?}");
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        let f: Vec<&str> = rest.split(' ').collect();
        let need = |n: usize| if f.len() == n { Ok(()) } else { Err(bad()) };
        Ok(match tag {
            "o" => Event::Starting,
            "O" => {
                need(1)?;
                Event::Opened { ms: num(f[0])? }
            }
            "c" | "C" | "x" | "X" | "F" | "i" => {
                need(1)?;
                let session = f[0].to_owned();
                match tag {
                    "c" => Event::CreateIntent { session },
                    "C" => Event::CreateAck { session },
                    "x" => Event::DeleteIntent { session },
                    "X" => Event::DeleteAck { session },
                    "F" => Event::ForkAck { session },
                    _ => Event::ImportIntent { session },
                }
            }
            "a" => {
                need(2)?;
                Event::AppendIntent {
                    session: f[0].to_owned(),
                    id: f[1].to_owned(),
                }
            }
            "A" => {
                let mut it = rest.splitn(4, ' ');
                let (Some(session), Some(id), Some(len), Some(line)) =
                    (it.next(), it.next(), it.next(), it.next())
                else {
                    return Err(bad());
                };
                Event::AppendAck {
                    session: session.to_owned(),
                    id: id.to_owned(),
                    len: num(len)?,
                    line: line.to_owned(),
                }
            }
            "b" => {
                need(2)?;
                Event::BatchIntent {
                    session: f[0].to_owned(),
                    n: num(f[1])?,
                }
            }
            "B" => {
                need(4)?;
                Event::BatchAck {
                    session: f[0].to_owned(),
                    len: num(f[1])?,
                    hash: f[2].to_owned(),
                    ids: f[3].split(',').map(str::to_owned).collect(),
                }
            }
            "m" => {
                need(2)?;
                Event::MoveIntent {
                    session: f[0].to_owned(),
                    target: parse_opt(f[1]),
                }
            }
            "M" => {
                need(3)?;
                Event::MoveAck {
                    session: f[0].to_owned(),
                    target: parse_opt(f[1]),
                    len: num(f[2])?,
                }
            }
            "f" => {
                need(5)?;
                Event::ForkIntent {
                    session: f[0].to_owned(),
                    source: f[1].to_owned(),
                    count: num(f[2])?,
                    hash: f[3].to_owned(),
                    leaf: parse_opt(f[4]),
                }
            }
            "I" => {
                need(2)?;
                Event::ImportAck {
                    session: f[0].to_owned(),
                    entries: num(f[1])?,
                }
            }
            "E" => Event::End,
            "ERR" => Event::Error {
                text: rest.to_owned(),
            },
            _ => return Err(bad()),
        })
    }

    /// Whether this line announces an operation (its ack may never come).
    pub fn is_intent(&self) -> bool {
        matches!(
            self,
            Event::CreateIntent { .. }
                | Event::AppendIntent { .. }
                | Event::BatchIntent { .. }
                | Event::MoveIntent { .. }
                | Event::ForkIntent { .. }
                | Event::ImportIntent { .. }
                | Event::DeleteIntent { .. }
        )
    }

    /// Whether this line acknowledges an operation.
    pub fn is_ack(&self) -> bool {
        matches!(
            self,
            Event::CreateAck { .. }
                | Event::AppendAck { .. }
                | Event::BatchAck { .. }
                | Event::MoveAck { .. }
                | Event::ForkAck { .. }
                | Event::ImportAck { .. }
                | Event::DeleteAck { .. }
        )
    }
}

/// Writes one event to stdout as a whole line and flushes it: the driver reads the line as
/// soon as it is written, and a kill can cut off at most a last, unterminated line.
pub fn emit(event: &Event) -> Result<(), String> {
    let mut text = event.to_line();
    text.push('\n');
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("stdout: {e}"))
}

/// The family of a session, told by its id prefix; it decides which operations touch it and
/// therefore what the checker may expect of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `ap-…`: appended to by several threads at once.
    Appends,
    /// `mv-…`: appends and leaf moves by one thread.
    Moves,
    /// `fs-…`: fork sources, grown by atomic batches (and moves) by one thread.
    ForkSource,
    /// `fk-…`: forks, never written after the fork.
    Fork,
    /// `im-…`: imports of the generated file, never written after the import.
    Import,
}

impl Family {
    /// The family of a session id, if it is one of the harness's.
    pub fn of(session: &str) -> Option<Family> {
        Some(match session.get(..3)? {
            "ap-" => Family::Appends,
            "mv-" => Family::Moves,
            "fs-" => Family::ForkSource,
            "fk-" => Family::Fork,
            "im-" => Family::Import,
            _ => return None,
        })
    }

    /// Whether exactly one thread writes such a session, so that the log length after each
    /// acknowledged operation is known.
    pub fn single_writer(self) -> bool {
        matches!(self, Family::Moves | Family::ForkSource)
    }
}

/// xorshift64*: small, seeded, good enough for picking delays and operations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value; zero is remapped).
    pub fn new(seed: u64) -> Rng {
        let mut s = seed ^ 0x9E37_79B9_7F4A_7C15;
        // splitmix64 once, so that nearby seeds diverge at once.
        s = (s ^ (s >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        s = (s ^ (s >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        s ^= s >> 31;
        Rng(if s == 0 { 1 } else { s })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A random element.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len() as u64) as usize)
    }
}

/// A running hash of a sequence of stored lines: `h = chain(h, blake3(line))` from 32 zero
/// bytes, so equal hashes mean equal lines in equal order, and a log's hash over its first
/// `n` lines can be compared with a hash taken when it had `n` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHash {
    /// Lines hashed.
    pub count: u64,
    /// The running digest.
    pub digest: Digest,
}

impl Default for LogHash {
    fn default() -> LogHash {
        LogHash {
            count: 0,
            digest: ROOT_PARENT,
        }
    }
}

impl LogHash {
    /// Adds one line.
    pub fn push(&mut self, line: &str) {
        self.digest = digest::chain(&self.digest, &digest::content_hash(line.as_bytes()));
        self.count += 1;
    }

    /// The hash of these lines.
    pub fn of<'a>(lines: impl IntoIterator<Item = &'a str>) -> LogHash {
        let mut h = LogHash::default();
        for l in lines {
            h.push(l);
        }
        h
    }

    /// Lowercase hex of the digest.
    pub fn hex(&self) -> String {
        digest::hex(&self.digest)
    }
}

/// A pi user message with one text block.
pub fn user_message(text: &str) -> Result<String, String> {
    let text = serde_json::to_string(text).map_err(|e| e.to_string())?;
    Ok(format!(
        r#"{{"role":"user","content":[{{"type":"text","text":{text}}}],"timestamp":1}}"#
    ))
}

/// A pi assistant message with one text block.
pub fn assistant_message(text: &str) -> Result<String, String> {
    let text = serde_json::to_string(text).map_err(|e| e.to_string())?;
    Ok(format!(
        r#"{{"role":"assistant","content":[{{"type":"text","text":{text}}}],"api":"a","provider":"p","model":"m","usage":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":2}}"#
    ))
}

/// Random printable text of `len` characters (words of lowercase letters, some non-ASCII).
pub fn random_text(rng: &mut Rng, len: usize) -> String {
    const WORDS: &[&str] = &[
        "grove",
        "branch",
        "leaf",
        "fork",
        "sled",
        "crash",
        "kill",
        "entry",
        "tree",
        "agent",
        "context",
        "import",
        "journal",
        "recover",
        "ünïcode",
        "日本",
        "🌳",
        "\"quoted\"",
        "back\\slash",
        "tab\there",
    ];
    let mut out = String::with_capacity(len + 16);
    while out.chars().count() < len {
        if !out.is_empty() {
            out.push(' ');
        }
        if let Some(w) = rng.pick(WORDS) {
            out.push_str(w);
        }
        let _ = write!(out, "{}", rng.below(1000));
    }
    out
}

/// The header id of the generated import file (the child substitutes its own per import).
pub const TEMPLATE_SESSION_ID: &str = "crash-import-template";

/// A pi v3 header line.
pub fn header_line(id: &str) -> String {
    format!(
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2025-06-01T12:00:00.000Z","cwd":"/crash/import"}}"#
    )
}

/// Writes a pi v3 session file of `lines` message entries (mostly a chain, with branches
/// back to random earlier entries, texts of a few hundred bytes to a few kilobytes, so that
/// the import spans several of grove's write batches). Returns the entry lines.
pub fn write_import_file(path: &Path, seed: u64, lines: usize) -> Result<Vec<String>, String> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(lines);
    let mut ids: Vec<String> = Vec::with_capacity(lines);
    let mut file = header_line(TEMPLATE_SESSION_ID);
    file.push('\n');
    for k in 0..lines {
        let id = format!("e{k:07x}");
        let parent = match ids.last() {
            None => "null".to_owned(),
            Some(last) if !rng.chance(3) => format!("\"{last}\""),
            Some(_) => format!("\"{}\"", ids[rng.below(ids.len() as u64) as usize]),
        };
        let len = if rng.chance(10) {
            rng.range(1500, 4000)
        } else {
            rng.range(100, 1200)
        } as usize;
        let text = random_text(&mut rng, len);
        let message = if k % 2 == 0 {
            user_message(&text)?
        } else {
            assistant_message(&text)?
        };
        let secs = k as u64;
        let line = format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-06-{:02}T{:02}:{:02}:{:02}.000Z","message":{message}}}"#,
            2 + secs / 86_400,
            (secs / 3600) % 24,
            (secs / 60) % 60,
            secs % 60
        );
        file.push_str(&line);
        file.push('\n');
        ids.push(id);
        out.push(line);
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, file).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(out)
}

/// Reads the entry lines (everything after the header) of a session file.
pub fn read_body(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text.lines().skip(1).map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_round_trips() {
        let events = vec![
            Event::Starting,
            Event::Opened { ms: 12 },
            Event::CreateIntent {
                session: "ap-c1".into(),
            },
            Event::AppendAck {
                session: "ap-c1".into(),
                id: "c1t0n0".into(),
                len: 3,
                line: r#"{"type":"message","id":"x y"}"#.into(),
            },
            Event::BatchAck {
                session: "fs-t0".into(),
                len: 9,
                hash: "ab".into(),
                ids: vec!["a".into(), "b".into()],
            },
            Event::MoveIntent {
                session: "mv-t0".into(),
                target: None,
            },
            Event::MoveAck {
                session: "mv-t0".into(),
                target: Some("e1".into()),
                len: 4,
            },
            Event::ForkIntent {
                session: "fk-1".into(),
                source: "fs-1".into(),
                count: 3,
                hash: "cd".into(),
                leaf: None,
            },
            Event::ImportAck {
                session: "im-1".into(),
                entries: 5,
            },
            Event::End,
            Event::Error {
                text: "it broke".into(),
            },
        ];
        for e in events {
            assert_eq!(Event::parse(&e.to_line()), Ok(e));
        }
        assert!(Event::parse("A ap-1 id").is_err());
        assert!(Event::parse("Q").is_err());
    }
}
