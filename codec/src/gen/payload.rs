//! Payload text: code-and-prose-like text of a requested size (with quotes, backslashes,
//! newlines and non-ASCII, so JSON escaping is exercised) and base64 images.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// How big the generated messages are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Payload {
    /// Short texts (tens to hundreds of bytes), no images: structure-bound workloads.
    #[default]
    Small,
    /// Agent-like sizes: user messages 200 B–4 KB, assistant text 200 B–20 KB, tool
    /// results 200 B–100 KB (log-uniform), and an occasional base64 image.
    Realistic,
}

impl std::str::FromStr for Payload {
    type Err = String;

    /// `small` or `realistic` (for command lines such as `grove gen --payload`).
    fn from_str(s: &str) -> Result<Payload, String> {
        match s {
            "small" => Ok(Payload::Small),
            "realistic" => Ok(Payload::Realistic),
            other => Err(format!("unknown payload {other:?} (small or realistic)")),
        }
    }
}

/// Byte ranges (inclusive low, exclusive high) of one kind of text.
#[derive(Debug, Clone, Copy)]
pub(super) struct Size {
    pub lo: usize,
    pub hi: usize,
}

impl Payload {
    pub(super) fn user(self) -> Size {
        match self {
            Payload::Small => Size { lo: 40, hi: 200 },
            Payload::Realistic => Size { lo: 200, hi: 4_000 },
        }
    }

    pub(super) fn assistant(self) -> Size {
        match self {
            Payload::Small => Size { lo: 40, hi: 300 },
            Payload::Realistic => Size {
                lo: 200,
                hi: 20_000,
            },
        }
    }

    pub(super) fn tool_result(self) -> Size {
        match self {
            Payload::Small => Size { lo: 40, hi: 400 },
            Payload::Realistic => Size {
                lo: 200,
                hi: 100_000,
            },
        }
    }

    pub(super) fn summary(self) -> Size {
        match self {
            Payload::Small => Size { lo: 100, hi: 300 },
            Payload::Realistic => Size {
                lo: 1_000,
                hi: 6_000,
            },
        }
    }

    /// Probability that a user message or tool result carries an image.
    pub(super) fn image_odds(self) -> f64 {
        match self {
            Payload::Small => 0.0,
            Payload::Realistic => 0.015,
        }
    }
}

/// The vocabulary, space-separated (quotes, backslashes and non-ASCII included).
const VOCAB: &str = concat!(
    "the session loader streams lines instead of reading whole file fn let mut impl ",
    "struct return Ok(()) Result<(),Error> self.entries parentId \"quoted\" ",
    "C:\\Users\\dev cargo test --release leaf branch context compaction summary ",
    "tokens build error: warning: src/main.rs src/session/store.rs => { } ( ) 0x1f 42 ",
    "1000 naïve café → ✓ 日本語 🚀 and to a is in that we it for this with as on not be ",
    "are from by match Some(x) None vec![] &str String u64 assert_eq! TODO refactor ",
    "parse JSONL torn tail index append move tree node depth label model thinking ",
    "tool call result edit write read bash grep ls diff patch commit why does fail ",
    "when run",
);

/// The vocabulary as words.
pub(super) fn words() -> Vec<&'static str> {
    VOCAB.split(' ').collect()
}

/// Log-uniform size in `[lo, hi)`.
pub(super) fn size(rng: &mut ChaCha8Rng, s: Size) -> usize {
    if s.hi <= s.lo + 1 {
        return s.lo;
    }
    let x: f64 = rng.random();
    let v = (s.lo as f64) * ((s.hi as f64) / (s.lo as f64)).powf(x);
    (v as usize).clamp(s.lo, s.hi - 1)
}

/// Text of about `len` bytes (at least `len`, at most a word more).
pub(super) fn text(rng: &mut ChaCha8Rng, words: &[&str], len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        let r: u32 = rng.random();
        s.push_str(words[(r as usize & 0xffff) % words.len()]);
        s.push(match r >> 28 {
            0 => '\n',
            1 => '.',
            2 => ',',
            _ => ' ',
        });
    }
    s
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 (with padding) of `n` random bytes.
pub(super) fn base64_blob(rng: &mut ChaCha8Rng, n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rng.fill(&mut bytes[..]);
    base64(&bytes)
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let v = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(B64[((v >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
