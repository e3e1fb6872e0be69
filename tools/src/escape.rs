//! Escaping control characters of stored text in human output, so that a message holding
//! terminal escape sequences cannot recolour, move the cursor, retitle or ring the terminal
//! it is printed on.
//!
//! The control characters are C0 (U+0000–U+001F) except LF and TAB, DEL (U+007F) and C1
//! (U+0080–U+009F, among them CSI). Each is written as Rust's `char::escape_debug` writes it
//! (`\u{1b}`, `\u{7}`, `\r`, `\0`), as `grove ls` shows a session's name. Whether to escape is
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
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` with its control characters escaped (borrowed when it has none).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_escaped(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer that escapes the control characters of the UTF-8 text written through it (a C1
/// character split across two writes included). Bytes that are not UTF-8 pass unchanged.
pub struct Escaping<W: Write> {
    inner: W,
    /// A 0xC2 lead byte whose continuation has not been written yet.
    pending_c2: bool,
}

impl<W: Write> Escaping<W> {
    /// Escapes what is written to `inner`.
    pub fn new(inner: W) -> Escaping<W> {
        Escaping {
            inner,
            pending_c2: false,
        }
    }

    /// Writes the escape of the control character with code point `code`.
    fn write_escape(&mut self, code: u8) -> io::Result<()> {
        let c = char::from(code);
        write!(self.inner, "{}", c.escape_debug())
    }
}

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        let mut i = 0;
        if self.pending_c2 {
            let Some(&b) = buf.first() else {
                return Ok(0);
            };
            self.pending_c2 = false;
            if (0x80..=0x9f).contains(&b) {
                self.write_escape(b)?;
                start = 1;
                i = 1;
            } else {
                self.inner.write_all(&[0xc2])?;
            }
        }
        while i < buf.len() {
            let b = buf[i];
            let escape = match b {
                b'\n' | b'\t' => None,
                0x00..=0x1f | 0x7f => Some((b, 1)),
                0xc2 => match buf.get(i + 1) {
                    Some(&next) if (0x80..=0x9f).contains(&next) => Some((next, 2)),
                    Some(_) => None,
                    None => {
                        // The character continues in the next write.
                        self.inner.write_all(&buf[start..i])?;
                        self.pending_c2 = true;
                        return Ok(buf.len());
                    }
                },
                _ => None,
            };
            match escape {
                Some((code, len)) => {
                    self.inner.write_all(&buf[start..i])?;
                    self.write_escape(code)?;
                    i += len;
                    start = i;
                }
                None => i += 1,
            }
        }
        self.inner.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Escaping<W> {
    fn drop(&mut self) {
        if self.pending_c2 {
            // Not UTF-8 after all: the byte as it was. Nothing to report an error to here.
            let _ = self.inner.write_all(&[0xc2]);
        }
    }
}

#[cfg(test)]
mod tests;
