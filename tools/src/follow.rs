//! Following other tools' transcript files as the tools write them (`grove import --watch`):
//! a [`Follower`] per file imports its complete lines once, then appends each line the tool adds,
//! so the store keeps a live copy of every session. The cursor is the session itself: the lines it
//! keeps are the file's first lines, so a follower started again (after a restart, or a kill)
//! reads them back and goes on where the last one stopped, never twice.
//!
//! It owns that bookkeeping and calls the engine's faces (`Store`, `Session`) and the codec's
//! translation (`grove::codec::foreign`).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use grove::codec::foreign::{self, Format, Survey, Translator};
use grove::{complete_lines_len, ExactOptions, GroveError, ImportOptions, Session, Store};

/// What went wrong with one followed file.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error(transparent)]
    Grove(#[from] GroveError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: byte {byte}: {reason}")]
    Line {
        path: PathBuf,
        line: u64,
        byte: u64,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Unfollowable { path: PathBuf, reason: String },
}

/// One followed file and what its session holds of it.
pub struct Follower {
    path: PathBuf,
    format: Format,
    /// The session's id.
    pub session: String,
    translator: Translator,
    survey: Survey,
    /// Lines the session holds.
    pub lines: u64,
    /// The bytes of the file those lines are (their LFs counted).
    bytes: u64,
}

impl Follower {
    /// Starts following `path`: its session (named by the file, `grove import --format`) is read
    /// back when the store has it, else made of the file's complete lines. `None` while the file
    /// has no complete line yet.
    pub fn start(
        store: &Store,
        path: &Path,
        format: Format,
        options: &ImportOptions,
    ) -> Result<Option<(Follower, u64)>, FollowError> {
        let unfollowable = |reason: String| FollowError::Unfollowable {
            path: path.to_owned(),
            reason,
        };
        let named = grove::session_id_of_file(path);
        let (id, imported) = match named.as_deref().map(|id| store.session(id)) {
            Some(Ok(_)) => (named.clone().unwrap_or_default(), 0),
            Some(Err(GroveError::SessionNotFound(_))) | None => {
                let complete = complete_lines_len(path)?;
                if complete == 0 {
                    return Ok(None);
                }
                let report =
                    store.import_foreign_prefix(path, format, options.clone(), complete)?;
                (report.session, report.entries)
            }
            Some(Err(e)) => return Err(e.into()),
        };
        let session = store.session(&id)?;
        match foreign::header_format(&session.record().header) {
            Some((was, true)) if was == format => {}
            Some((was, false)) if was == format => {
                return Err(unfollowable(format!(
                    "session {id} was imported when the file's last line had no newline; \
                     delete it and import the file again to follow it"
                )))
            }
            _ => {
                return Err(unfollowable(format!(
                    "session {id} was not imported from a {} transcript",
                    format.name()
                )))
            }
        }
        let mut follower = Follower {
            path: path.to_owned(),
            format,
            session: id,
            translator: Translator::new(format),
            survey: Survey::new(format),
            lines: 0,
            bytes: 0,
        };
        follower.read_back(&session)?;
        // A follower killed between its last append and its leaf move left the leaf on that
        // line: put it where the tool resumes.
        let leaf = follower.survey.leaf();
        if session.leaf()? != leaf {
            session.move_to(leaf.as_deref())?;
        }
        Ok(Some((follower, imported)))
    }

    /// Reads the session's lines back into the translation's state, and checks that they are
    /// still the file's first lines.
    fn read_back(&mut self, session: &Session) -> Result<(), FollowError> {
        let mut last: Vec<u8> = Vec::new();
        for entry in session.entries() {
            let entry = entry?;
            let Some(original) = foreign::original_line(self.format, &entry.line) else {
                continue;
            };
            let translated = self
                .translator
                .line(&original)
                .map_err(|e| self.line_error(e))?;
            self.survey.add(&translated);
            self.lines += 1;
            self.bytes += original.len() as u64 + 1;
            last = original;
        }
        // The file must still begin with those lines: its last one is where it was.
        let mut file = self.open()?;
        if file.get_ref().metadata().map_err(|e| self.io(e))?.len() < self.bytes {
            return Err(self.changed("it is shorter than what its session holds"));
        }
        let mut found = vec![0u8; last.len() + 1];
        let at = self.bytes - found.len() as u64;
        file.seek(SeekFrom::Start(at)).map_err(|e| self.io(e))?;
        file.read_exact(&mut found).map_err(|e| self.io(e))?;
        if found[..last.len()] != last[..] || found[last.len()] != b'\n' {
            return Err(self.changed("its lines are not those its session holds"));
        }
        Ok(())
    }

    /// Appends the complete lines the file has gained since; returns how many.
    pub fn catch_up(&mut self, store: &Store) -> Result<u64, FollowError> {
        let complete = complete_lines_len(&self.path)?;
        if complete < self.bytes {
            return Err(self.changed("it shrank"));
        }
        if complete == self.bytes {
            return Ok(0);
        }
        let session = store.session(&self.session)?;
        let mut file = self.open()?;
        file.seek(SeekFrom::Start(self.bytes))
            .map_err(|e| self.io(e))?;
        let mut input = file.take(complete - self.bytes);
        let mut added = 0;
        let mut line = Vec::new();
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line).map_err(|e| self.io(e))? == 0 {
                break;
            }
            if line.pop() != Some(b'\n') {
                break;
            }
            let translated = self
                .translator
                .line(&line)
                .map_err(|e| self.line_error(e))?;
            let text = String::from_utf8(translated.line.clone())
                .map_err(|_| self.changed("a line is not UTF-8"))?;
            session.append_exact_with(&text, ExactOptions::default())?;
            self.survey.add(&translated);
            self.lines += 1;
            self.bytes += line.len() as u64 + 1;
            added += 1;
        }
        // The leaf where the tool resumes (each exact append moved it to its line).
        let leaf = self.survey.leaf();
        if session.leaf()? != leaf {
            session.move_to(leaf.as_deref())?;
        }
        Ok(added)
    }

    fn open(&self) -> Result<BufReader<std::fs::File>, FollowError> {
        let file = std::fs::File::open(&self.path).map_err(|e| self.io(e))?;
        Ok(BufReader::new(file))
    }

    fn io(&self, source: std::io::Error) -> FollowError {
        FollowError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn changed(&self, reason: &str) -> FollowError {
        FollowError::Unfollowable {
            path: self.path.clone(),
            reason: format!(
                "{reason}: the file was rewritten, not appended to, since session {} was made \
                 of it; it is no longer followed",
                self.session
            ),
        }
    }

    fn line_error(&self, e: grove::codec::error::LineError) -> FollowError {
        FollowError::Line {
            path: self.path.clone(),
            line: e.line,
            byte: e.byte_offset,
            reason: e.reason,
        }
    }
}
