//! Import of other tools' transcripts (Claude Code's, Codex's rollouts), each original line kept
//! byte for byte (docs/format.md, "Foreign transcripts").
//!
//! A file is read twice: once to check every line and learn what the header and the leaf need
//! ([`grove_codec::foreign::Survey`]), then again, translated line by line into pi JSONL that
//! streams into the pi importer ([`super::import`]), which writes it atomically. A line that is
//! not one of the format's fails the import naming the file, the line and its byte, before
//! anything is written.
//!
//! May call: [`super::import`], [`crate::log`], [`crate::core`]; the translation is the codec's.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use grove_codec::foreign::{self, Format, Survey, Translator};
use grove_codec::reader::DEFAULT_MAX_LINE_BYTES;

use crate::core::error::{GroveError, Result};
use crate::exchange::import::{import_reader, ImportOptions, ImportReport};
use crate::log::shared::Logs;

/// What a file is, as `grove import --format auto` tells it from its first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    /// pi's JSONL (or anything that is not another tool's: the pi importer judges it).
    Pi,
    /// Another tool's transcript.
    Foreign(Format),
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> GroveError + '_ {
    move |source| GroveError::Io {
        path: path.to_owned(),
        source,
    }
}

fn open(path: &Path) -> Result<BufReader<std::fs::File>> {
    let file = std::fs::File::open(path).map_err(io_error(path))?;
    Ok(BufReader::with_capacity(1 << 20, file))
}

/// The format of the file at `path`, from its first line.
pub fn detect_file(path: &Path) -> Result<Detected> {
    let mut first = Vec::new();
    open(path)?
        .take(DEFAULT_MAX_LINE_BYTES as u64)
        .read_until(b'\n', &mut first)
        .map_err(io_error(path))?;
    Ok(foreign::detect(&first).map_or(Detected::Pi, Detected::Foreign))
}

/// The lines of a file: each one's bytes without its LF, and whether the last had one.
struct Lines<R> {
    input: R,
    line: u64,
    offset: u64,
    max: usize,
    /// Whether the last line read ended with LF (true before any).
    ended: bool,
}

impl<R: BufRead> Lines<R> {
    fn new(input: R, max: usize) -> Lines<R> {
        Lines {
            input,
            line: 0,
            offset: 0,
            max,
            ended: true,
        }
    }

    /// The next line, `None` at the end.
    fn next_line(&mut self, path: &Path) -> Result<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        let limit = self.max as u64 + 1;
        let read = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut buf)
            .map_err(io_error(path))?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        let start = self.offset;
        self.offset += read as u64;
        self.ended = buf.last() == Some(&b'\n');
        if self.ended {
            buf.pop();
        }
        if buf.len() > self.max {
            return Err(GroveError::LineTooLong {
                file: Some(path.to_owned()),
                line: self.line,
                byte_offset: start,
                limit: self.max,
            });
        }
        Ok(Some(buf))
    }
}

/// The session id a transcript's file name gives it (`STEM`, or `SESSION.STEM` for a subagent's
/// `SESSION/subagents/STEM.jsonl`), when it is a valid one.
pub fn session_id_of_file(path: &Path) -> Option<String> {
    let named = file_session_id(path);
    crate::core::util::check_session_id(&named)
        .ok()
        .map(|()| named)
}

/// `STEM`, or `SESSION.STEM` for a subagent's `SESSION/subagents/STEM.jsonl`.
fn file_session_id(path: &Path) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    let parent = path.parent();
    let dir_name = |p: Option<&Path>| {
        p.and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .map(str::to_owned)
    };
    match (dir_name(parent), dir_name(parent.and_then(Path::parent))) {
        (Some(sub), Some(session)) if sub == "subagents" => format!("{session}.{stem}"),
        _ => stem,
    }
}

/// The session id of a transcript: its file's name (a subagent's transcript,
/// `SESSION/subagents/agent-ID.jsonl`, is `SESSION.agent-ID`), else the id its lines name; for
/// pi's files, the header's id first.
fn session_id(path: &Path, format: Format, survey: &Survey) -> Result<String> {
    let named = Some(file_session_id(path));
    let candidates = match format {
        Format::PiLanes | Format::PiCommits => [survey.session_id.clone(), named],
        Format::ClaudeCode | Format::Codex => [named, survey.session_id.clone()],
    };
    for candidate in candidates.into_iter().flatten() {
        if crate::core::util::check_session_id(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    Err(GroveError::InvalidSession {
        file: Some(path.to_owned()),
        reason: "neither the file's name nor the session id its lines name is a valid session id"
            .to_owned(),
    })
}

/// The number of bytes of `path` up to and with its last LF: its complete lines, as a file
/// another tool is still writing has them.
pub fn complete_lines_len(path: &Path) -> Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::File::open(path).map_err(io_error(path))?;
    let mut end = file.metadata().map_err(io_error(path))?.len();
    // Back from the end, a block at a time, to the last LF.
    let mut block = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let len = (end - start) as usize;
        file.seek(SeekFrom::Start(start)).map_err(io_error(path))?;
        file.read_exact(&mut block[..len]).map_err(io_error(path))?;
        if let Some(at) = block[..len].iter().rposition(|&b| b == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Imports another tool's transcript at `path` as a new session; with `read_limit`, only its
/// first that many bytes (a followed file's complete lines, [`complete_lines_len`]).
pub(crate) fn import_foreign_file(
    logs: &Arc<Logs>,
    actor: &str,
    path: &Path,
    format: Format,
    options: ImportOptions,
    read_limit: Option<u64>,
) -> Result<ImportReport> {
    let open = |path: &Path| -> Result<BufReader<std::io::Take<std::fs::File>>> {
        let file = std::fs::File::open(path).map_err(io_error(path))?;
        Ok(BufReader::with_capacity(
            1 << 20,
            file.take(read_limit.unwrap_or(u64::MAX)),
        ))
    };
    if options.strictness == grove_codec::reader::Strictness::Lenient {
        return Err(GroveError::InvalidArgument(format!(
            "a {} import keeps every line of {}; it cannot skip malformed ones (fix the line)",
            format.name(),
            path.display()
        )));
    }
    let max = options.max_line_bytes;
    // Pass 1: every line checked; the header and the leaf learnt.
    let mut lines = Lines::new(open(path)?, max);
    let mut translator = Translator::new(format);
    let mut survey = Survey::new(format);
    while let Some(line) = lines.next_line(path)? {
        let translated = translator
            .line(&line)
            .map_err(|e| GroveError::InvalidEntry {
                file: Some(path.to_owned()),
                line: e.line,
                byte_offset: e.byte_offset,
                reason: e.reason,
            })?;
        survey.add(&translated);
    }
    survey.final_newline = lines.ended;
    if survey.lines == 0 {
        return Err(GroveError::InvalidSession {
            file: Some(path.to_owned()),
            reason: format!("an empty file is no {} transcript", format.name()),
        });
    }
    let id = session_id(path, format, &survey)?;
    let fallback_cwd = path
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let header = survey.header(&id, &fallback_cwd, &file_name);
    // Pass 2: the lines again, translated as they stream into the importer.
    let translated = Translated {
        path: path.to_owned(),
        lines: Lines::new(open(path)?, max),
        translator: Translator::new(format),
        pending: header,
        at: 0,
        tail: survey.leaf_line(),
        expected: survey.lines,
    };
    let mut options = options;
    if options.source_path.is_none() {
        options.source_path = Some(path.to_owned());
    }
    import_reader(
        logs,
        actor,
        BufReader::with_capacity(1 << 20, translated),
        options,
    )
}

/// The pi JSONL of a transcript, made a line at a time: the header, each line's entry, the
/// leaf line.
struct Translated<R> {
    path: std::path::PathBuf,
    lines: Lines<R>,
    translator: Translator,
    /// Bytes made and not yet read, from `at`.
    pending: Vec<u8>,
    at: usize,
    /// The leaf line, once the lines are done.
    tail: Option<Vec<u8>>,
    /// How many lines the first pass read: a file that changed meanwhile is refused.
    expected: u64,
}

impl<R: BufRead> Translated<R> {
    /// Makes the next bytes; `false` at the end.
    fn refill(&mut self) -> std::io::Result<bool> {
        let changed = |what: &str| {
            std::io::Error::other(format!(
                "{} changed while it was imported ({what})",
                self.path.display()
            ))
        };
        self.pending.clear();
        self.at = 0;
        match self
            .lines
            .next_line(&self.path)
            .map_err(|e| std::io::Error::other(e.to_string()))?
        {
            Some(line) => {
                if self.lines.line > self.expected {
                    return Err(changed("it grew"));
                }
                let t = self
                    .translator
                    .line(&line)
                    .map_err(|e| changed(&e.to_string()))?;
                self.pending = t.line;
                self.pending.push(b'\n');
                Ok(true)
            }
            None => {
                if self.lines.line != self.expected {
                    return Err(changed("it shrank"));
                }
                match self.tail.take() {
                    Some(mut leaf) => {
                        leaf.push(b'\n');
                        self.pending = leaf;
                        Ok(true)
                    }
                    None => Ok(false),
                }
            }
        }
    }
}

impl<R: BufRead> Read for Translated<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == 0 && !self.pending.is_empty() && self.pending.last() != Some(&b'\n') {
            // The header, made without its LF.
            self.pending.push(b'\n');
        }
        while self.at >= self.pending.len() {
            if !self.refill()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
