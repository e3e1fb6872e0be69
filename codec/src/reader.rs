//! Streaming reader of pi session JSONL (v1, v2, v3 and the harness extensions).
//!
//! Memory stays bounded by the longest line: lines are read one at a time into a reused
//! buffer, and a line longer than the reader's limit ([`DEFAULT_MAX_LINE_BYTES`] unless
//! given) stops the read with [`CodecError::LineTooLong`] before more than the limit is
//! buffered, in strict and lenient mode alike (an endless input such as `/dev/zero` is one
//! endless line). Lines are split at LF only (U+2028/U+2029 inside strings are content), and
//! each line's text is kept verbatim, including a trailing CR.

use std::io::{BufRead, ErrorKind};

use crate::entry::Envelope;
use crate::error::{CodecError, LineError};
use crate::header::Header;
use crate::migrate::Migrator;

/// The longest line a reader accepts unless told otherwise: 256 MiB, its LF not counted.
///
/// Far above any line pi writes in practice (the largest line of the pi oracle fixtures is
/// 32 KB; a message with several base64 images is a few MB), and below what pi can load at
/// all: pi reads a session file into one JavaScript string, which V8 caps at about 512 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 256 << 20;

/// How strictly lines are checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Strictness {
    /// A malformed line fails the whole read (pi harness behaviour; grove's default).
    #[default]
    Strict,
    /// A malformed line is skipped and reported as [`Diagnostic::Skipped`], with its bytes.
    Lenient,
}

/// Something the reader noticed and did not fail on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Diagnostic {
    /// A line holding only whitespace was dropped.
    BlankLine {
        /// Physical line number.
        line: u64,
    },
    /// Lenient mode skipped a malformed line; `bytes` keeps it for quarantine.
    Skipped {
        /// Where and why.
        error: LineError,
        /// The line's bytes.
        bytes: Vec<u8>,
    },
    /// The final line had no LF and did not parse: excluded.
    TornTail {
        /// Where and why.
        error: LineError,
        /// The line's bytes.
        bytes: Vec<u8>,
    },
    /// The final line had no LF but parsed; it was kept (export adds the LF).
    MissingFinalNewline {
        /// Physical line number.
        line: u64,
    },
    /// The line was migrated from a legacy version; the stored form differs from the file.
    Migrated {
        /// Physical line number.
        line: u64,
    },
}

/// One entry or leaf line, with its position in the file.
#[derive(Debug, Clone)]
pub struct Line {
    /// Physical 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub byte_offset: u64,
    /// The line's text as grove stores and exports it (original, or migrated form).
    pub text: String,
    /// The validated common fields.
    pub envelope: Envelope,
}

/// Reads a pi session file line by line.
pub struct JsonlReader<R> {
    input: R,
    buf: Vec<u8>,
    line_no: u64,
    offset: u64,
    strictness: Strictness,
    max_line_bytes: usize,
    header: Header,
    migrator: Option<Migrator>,
    fresh_id: Box<dyn FnMut() -> String + Send>,
    diagnostics: Vec<Diagnostic>,
}

enum RawLine {
    Eof,
    Line {
        line: u64,
        offset: u64,
        terminated: bool,
    },
}

impl<R: BufRead> JsonlReader<R> {
    /// Opens a reader with the default line limit ([`DEFAULT_MAX_LINE_BYTES`]) and reads the
    /// header. `fresh_id` draws ids for v1 migration.
    pub fn new(
        input: R,
        strictness: Strictness,
        fresh_id: Box<dyn FnMut() -> String + Send>,
    ) -> Result<JsonlReader<R>, CodecError> {
        JsonlReader::with_max_line_bytes(input, strictness, fresh_id, DEFAULT_MAX_LINE_BYTES)
    }

    /// Opens a reader that refuses lines longer than `max_line_bytes` (the LF not counted)
    /// and reads the header.
    pub fn with_max_line_bytes(
        input: R,
        strictness: Strictness,
        fresh_id: Box<dyn FnMut() -> String + Send>,
        max_line_bytes: usize,
    ) -> Result<JsonlReader<R>, CodecError> {
        let mut reader = JsonlReader {
            input,
            buf: Vec::with_capacity(max_line_bytes.min(64 * 1024)),
            line_no: 0,
            offset: 0,
            strictness,
            max_line_bytes,
            header: Header::create("", "", "", None, None),
            migrator: None,
            fresh_id,
            diagnostics: Vec::new(),
        };
        loop {
            match reader.read_raw()? {
                RawLine::Eof => {
                    return Err(CodecError::InvalidSession {
                        reason: "missing session header".to_owned(),
                    })
                }
                RawLine::Line { line, .. } => {
                    if is_blank(&reader.buf) {
                        reader.diagnostics.push(Diagnostic::BlankLine { line });
                        continue;
                    }
                    let text = std::str::from_utf8(&reader.buf).map_err(|_| {
                        CodecError::InvalidSession {
                            reason: "first line is not a valid session header".to_owned(),
                        }
                    })?;
                    let mut header =
                        Header::parse(text).map_err(|reason| CodecError::InvalidSession {
                            reason: format!("line {line}: {reason}"),
                        })?;
                    // A legacy (v1, v2) header may have an empty id; any other keeps the rule.
                    if !header.id.is_empty() {
                        crate::ids::check_id("session", &header.id).map_err(|e| {
                            CodecError::InvalidSession {
                                reason: format!("line {line}: {e}"),
                            }
                        })?;
                    }
                    if header.source_version < 3 {
                        let migrator = Migrator::new(header.source_version);
                        header.raw = migrator.header(&header.raw).ok_or_else(|| {
                            CodecError::InvalidSession {
                                reason: "first line is not a valid session header".to_owned(),
                            }
                        })?;
                        reader.migrator = Some(migrator);
                    }
                    reader.header = header;
                    return Ok(reader);
                }
            }
        }
    }

    /// The session header (migrated to version 3 if the file was older).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// What was noticed so far without failing.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Takes the diagnostics gathered so far.
    pub fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.diagnostics)
    }

    /// The next entry or leaf line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<Line>, CodecError> {
        loop {
            let (line, offset, terminated) = match self.read_raw()? {
                RawLine::Eof => return Ok(None),
                RawLine::Line {
                    line,
                    offset,
                    terminated,
                } => (line, offset, terminated),
            };
            if is_blank(&self.buf) {
                self.diagnostics.push(Diagnostic::BlankLine { line });
                continue;
            }
            match self.parse_current() {
                Ok((text, envelope, migrated)) => {
                    if !terminated {
                        self.diagnostics
                            .push(Diagnostic::MissingFinalNewline { line });
                    }
                    if migrated {
                        self.diagnostics.push(Diagnostic::Migrated { line });
                    }
                    return Ok(Some(Line {
                        line,
                        byte_offset: offset,
                        text,
                        envelope,
                    }));
                }
                Err(reason) => {
                    let error = LineError {
                        line,
                        byte_offset: offset,
                        reason,
                    };
                    let bytes = self.buf.clone();
                    // Only a line that is not even JSON can be a write torn by a crash; a
                    // complete object that fails validation is an invalid entry.
                    let unparseable = error.reason.starts_with("invalid JSON")
                        || error.reason.starts_with("invalid UTF-8");
                    if !terminated && unparseable {
                        self.diagnostics.push(Diagnostic::TornTail { error, bytes });
                        return Ok(None);
                    }
                    match self.strictness {
                        Strictness::Strict => return Err(CodecError::InvalidEntry(error)),
                        Strictness::Lenient => {
                            self.diagnostics.push(Diagnostic::Skipped { error, bytes });
                        }
                    }
                }
            }
        }
    }

    fn parse_current(&mut self) -> Result<(String, Envelope, bool), String> {
        let text = std::str::from_utf8(&self.buf).map_err(|e| format!("invalid UTF-8: {e}"))?;
        let (text, migrated) = match self.migrator.as_mut() {
            None => (text.to_owned(), false),
            Some(m) => {
                // Only lines that are JSON objects take part in the migration; the others
                // fail here as they would without it (invalid JSON may be a torn tail).
                serde_json::from_str::<serde::de::IgnoredAny>(text)
                    .map_err(|e| format!("invalid JSON: {e}"))?;
                let fresh = &mut self.fresh_id;
                let migrated = m
                    .entry(text, &mut **fresh)
                    .ok_or_else(|| "line is not a JSON object".to_owned())?;
                (migrated, true)
            }
        };
        let envelope = Envelope::parse(&text)?;
        crate::ids::check_id("entry", &envelope.id).map_err(|e| e.to_string())?;
        Ok((text, envelope, migrated))
    }

    /// Reads the next physical line into `buf`, its LF removed. Takes at most what the input
    /// has buffered at a time, so a line past the limit fails having buffered at most the
    /// limit (a `read_until` would buffer the whole line first).
    fn read_raw(&mut self) -> Result<RawLine, CodecError> {
        self.buf.clear();
        let offset = self.offset;
        let mut terminated = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(source) => return Err(CodecError::Io { offset, source }),
            };
            if available.is_empty() {
                break;
            }
            let (take, found) = match memchr::memchr(b'\n', available) {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            let content = take - usize::from(found);
            if self.buf.len().saturating_add(content) > self.max_line_bytes {
                return Err(CodecError::LineTooLong {
                    line: self.line_no + 1,
                    byte_offset: offset,
                    limit: self.max_line_bytes,
                });
            }
            // Grow as `Vec` would, but never past the limit (and its LF).
            let needed = self.buf.len() + take;
            if needed > self.buf.capacity() {
                let cap = needed
                    .max(self.buf.capacity().saturating_mul(2))
                    .min(self.max_line_bytes.saturating_add(1))
                    .max(needed);
                self.buf.reserve_exact(cap - self.buf.len());
            }
            self.buf.extend_from_slice(&available[..take]);
            self.input.consume(take);
            if found {
                terminated = true;
                break;
            }
        }
        if self.buf.is_empty() {
            return Ok(RawLine::Eof);
        }
        self.offset += self.buf.len() as u64;
        self.line_no += 1;
        if terminated {
            self.buf.pop();
        }
        Ok(RawLine::Line {
            line: self.line_no,
            offset,
            terminated,
        })
    }
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c'))
}
