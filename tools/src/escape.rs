//! Escaping control characters of stored text in human output, so that a message holding
//! terminal escape sequences cannot recolour, move the cursor, retitle or ring the terminal
//! it is printed on, and one holding bidirectional controls cannot reorder what is shown
//! after it (a name that reads differently from what it is).
//!
//! The control characters are C0 (U+0000–U+001F) except LF and TAB, DEL (U+007F) and C1
//! (U+0080–U+009F, among them CSI). Each is written as Rust's `char::escape_debug` writes it
//! (`\u{1b}`, `\u{7}`, `\r`, `\0`), as `grove ls` shows a session's name. The bidirectional
//! controls are the embeddings and overrides (U+202A–U+202E), the isolates (U+2066–U+2069)
//! and the marks (U+200E, U+200F, U+061C); each is written `\u{202e}`. Whether to escape is
//! decided once per command (`--escape`, `GROVE_ESCAPE`; on a terminal by default).

use std::borrow::Cow;
use std::io::{self, Write};

/// When stored text is escaped (`--escape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EscapeArg {
    /// When stdout is a terminal.
    Auto,
    /// Always (for tests, or a pager that passes escapes through).
    Always,
    /// Never: the text as stored.
    Never,
}

impl EscapeArg {
    /// Whether to escape, given whether stdout is a terminal.
    pub fn enabled(self, terminal: bool) -> bool {
        match self {
            EscapeArg::Auto => terminal,
            EscapeArg::Always => true,
            EscapeArg::Never => false,
        }
    }
}

/// Whether `c` is a control character that is escaped.
fn is_escaped(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// Whether `c` is a bidirectional control (an embedding, override, isolate or mark).
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
    )
}

/// Writes the escape of `c`, an escaped character.
fn push_escape(out: &mut String, c: char) {
    if c.is_control() {
        out.extend(c.escape_debug());
    } else {
        out.extend(c.escape_unicode());
    }
}

/// The longest UTF-8 sequence of an escaped character (the bidirectional controls').
const MAX_ESCAPED_LEN: usize = 3;

/// What the bytes at the start of `rest` are, for [`Escaping`].
enum Lead {
    /// A character passed as it is (or a byte of one).
    Plain,
    /// An escaped character of this many bytes.
    Escaped(char, usize),
    /// The start of a character that may be escaped and continues in the next write.
    Incomplete,
}

fn lead(rest: &[u8]) -> Lead {
    let len = match rest[0] {
        b'\n' | b'\t' => return Lead::Plain,
        b @ (0x00..=0x1f | 0x7f) => return Lead::Escaped(char::from(b), 1),
        // C1 controls and U+061C; the bidirectional controls of the U+2000 block.
        0xc2 | 0xd8 => 2,
        0xe2 => MAX_ESCAPED_LEN,
        _ => return Lead::Plain,
    };
    let Some(bytes) = rest.get(..len) else {
        return Lead::Incomplete;
    };
    match std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) if is_escaped(c) => Lead::Escaped(c, len),
        _ => Lead::Plain,
    }
}

/// `text` with its control characters escaped (borrowed when it has none).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_escaped(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer that escapes the control characters of the UTF-8 text written through it (an
/// escaped character split across two writes included). Bytes that are not UTF-8 pass
/// unchanged.
pub struct Escaping<W: Write> {
    inner: W,
    /// The start of a character that may be escaped, whose other bytes have not been written
    /// yet (at most [`MAX_ESCAPED_LEN`] - 1 bytes).
    pending: Vec<u8>,
}

impl<W: Write> Escaping<W> {
    /// Escapes what is written to `inner`.
    pub fn new(inner: W) -> Escaping<W> {
        Escaping {
            inner,
            pending: Vec::new(),
        }
    }

    /// Writes `buf` escaped, keeping a character it ends in the middle of for the next write.
    fn escape(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut start = 0;
        let mut i = 0;
        while i < buf.len() {
            match lead(&buf[i..]) {
                Lead::Plain => i += 1,
                Lead::Escaped(c, len) => {
                    self.inner.write_all(&buf[start..i])?;
                    let mut escaped = String::new();
                    push_escape(&mut escaped, c);
                    self.inner.write_all(escaped.as_bytes())?;
                    i += len;
                    start = i;
                }
                Lead::Incomplete => {
                    self.inner.write_all(&buf[start..i])?;
                    self.pending = buf[i..].to_vec();
                    return Ok(());
                }
            }
        }
        self.inner.write_all(&buf[start..])
    }
}

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.pending.is_empty() {
            self.escape(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(buf);
            self.escape(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Escaping<W> {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            // Not a whole character after all: the bytes as they were. Nothing to report an
            // error to here.
            let _ = self.inner.write_all(&self.pending);
        }
    }
}

#[cfg(test)]
mod tests;
