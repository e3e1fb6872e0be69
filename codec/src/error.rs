//! Errors of the codec. Every error that comes from a file names the line (physical,
//! 1-based) and the byte offset where that line starts.

use std::fmt;

/// Where a problem was found in a JSONL input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// Physical 1-based line number (blank lines count).
    pub line: u64,
    /// Byte offset of the start of the line.
    pub byte_offset: u64,
    /// What is wrong with the line.
    pub reason: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} (byte {}): {}",
            self.line, self.byte_offset, self.reason
        )
    }
}

/// Errors of decoding pi JSONL and grove's binary records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The header is missing, malformed, or of an unsupported version (pi `invalid_session`).
    #[error("invalid session: {reason}")]
    InvalidSession {
        /// pi's wording where pi has one.
        reason: String,
    },
    /// An entry line is not valid (pi `invalid_entry`).
    #[error("invalid entry at {0}")]
    InvalidEntry(LineError),
    /// The final line has no newline and does not parse: a write torn by a crash.
    #[error("torn final line at {0}")]
    TornTail(LineError),
    /// A line is longer than the reader's limit (`JsonlReader::with_max_line_bytes`); the
    /// read stops there, in lenient mode too.
    #[error("line {line} (byte {byte_offset}) is longer than the limit of {limit} bytes")]
    LineTooLong {
        /// Physical 1-based line number.
        line: u64,
        /// Byte offset of the start of the line.
        byte_offset: u64,
        /// The limit, in bytes (the line's LF not counted).
        limit: usize,
    },
    /// Reading the input failed.
    #[error("read failed at byte {offset}: {source}")]
    Io {
        /// Byte offset reached before the failure.
        offset: u64,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A stored record could not be decoded.
    #[error("corrupt record: {0}")]
    CorruptRecord(String),
    /// A stored record has a format version this build does not know.
    #[error("unknown record format version {0}")]
    UnknownFormatVersion(u8),
}
