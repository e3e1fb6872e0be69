//! The durable-commit record: grove's own account, kept **outside** the backend, of how many
//! commits the backend acknowledged as durable, so that a backend that silently loses
//! acknowledged writes — sled drops the rest of its log after a flipped bit, redb falls back
//! to its previous commit, a file is truncated or replaced — cannot also lose the evidence
//! (docs/design.md, "What a store survives"; docs/format.md, "The store directory").
//!
//! Every durable commit (a `Sync` commit, a group-commit flush, [`crate::Store::flush`])
//! writes the next **epoch** under the meta key `durable` in the same backend commit, then,
//! once the backend's flush has returned, the same epoch to the file `grove.commit` (one
//! `pwrite`, no fsync) together with the heads of the sessions written since the previous
//! record. The backend is durable before the file is written, so the file never runs ahead
//! of what the backend made durable; a kill between the two leaves the file behind, which is
//! harmless. At open, a backend whose epoch is below the file's lost acknowledged writes.
//!
//! This module owns the file and the epoch; it is called by the store's commit path
//! ([`crate::core::shared`]) and reads the backend only through [`crate::kv::Kv`].

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use grove_codec::pack::{LogPack, LogValue};
use grove_codec::record::{self, SessionRecord};

use crate::core::error::{GroveError, LostWrites, Result};
use crate::core::keys;
use crate::kv::{Kv, WriteBatch};

/// The record file's name, in the store directory.
pub const COMMIT_FILE: &str = "grove.commit";

/// The meta key holding the backend's epoch (u64 BE).
pub(crate) fn epoch_key() -> Vec<u8> {
    keys::meta(keys::META_DURABLE)
}

/// Sessions whose heads one record lists at most (the rest are counted).
const SESSIONS_KEPT: usize = 64;

const MAGIC: &[u8; 8] = b"grovedc1";

/// What the record file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Record {
    epoch: u64,
    /// `(sid, next_seq, session id)` of the heads written by the commits this epoch made
    /// durable.
    heads: Vec<(u64, u64, String)>,
    /// Sessions written beyond those listed.
    more: u64,
}

/// `magic ++ epoch:u64 ++ more:u64 ++ count:u32 ++ (sid:u64 ++ next_seq:u64 ++ len:u16 ++
/// session id) × count ++ crc32(everything before) LE`, integers big-endian.
fn encode(record: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + 16 * record.heads.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&record.epoch.to_be_bytes());
    out.extend_from_slice(&record.more.to_be_bytes());
    let count = u32::try_from(record.heads.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_be_bytes());
    for (sid, next, id) in &record.heads {
        out.extend_from_slice(&sid.to_be_bytes());
        out.extend_from_slice(&next.to_be_bytes());
        // Handle ids are short (`util::check_session_id`); a longer one is cut.
        let id = &id.as_bytes()[..id.len().min(u16::MAX as usize)];
        out.extend_from_slice(&(id.len() as u16).to_be_bytes());
        out.extend_from_slice(id);
    }
    let sum = crc32fast::hash(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Decodes the record at the start of `bytes`. Bytes after its checksum are the tail of an
/// earlier, longer record: the file is rewritten in place and cut after, so a process killed
/// between the two leaves them (they are ignored).
fn decode(bytes: &[u8]) -> Option<Record> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_be_bytes(rest.get(at..at + 8)?.try_into().ok()?))
    };
    let epoch = u64_at(0)?;
    let more = u64_at(8)?;
    let count = u32::from_be_bytes(rest.get(16..20)?.try_into().ok()?) as usize;
    let mut at = 20;
    let mut heads = Vec::with_capacity(count.min(SESSIONS_KEPT));
    for _ in 0..count {
        let (sid, next) = (u64_at(at)?, u64_at(at + 8)?);
        let len = u16::from_be_bytes(rest.get(at + 16..at + 18)?.try_into().ok()?) as usize;
        let id = rest.get(at + 18..at + 18 + len)?;
        heads.push((sid, next, String::from_utf8_lossy(id).into_owned()));
        at += 18 + len;
    }
    let end = MAGIC.len() + at;
    let sum = bytes.get(end..end + 4)?;
    (crc32fast::hash(&bytes[..end]).to_le_bytes() == sum).then_some(Record { epoch, heads, more })
}

/// The durable-commit state of an open store.
pub(crate) struct Durable {
    path: PathBuf,
    file: File,
    epoch: u64,
    /// Sessions written since the last record: sid → the end of their log written.
    heads: BTreeMap<u64, u64>,
    /// The length of the record file as last written.
    len: u64,
    /// Handle ids of the sessions recorded lately, by sid.
    names: BTreeMap<u64, String>,
    more: u64,
}

fn io_error(path: &Path, source: std::io::Error) -> GroveError {
    GroveError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Reads the record file of `dir`: `None` when it does not exist or is empty.
fn read_record(path: &Path) -> Result<Option<Record>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, e)),
    };
    if bytes.is_empty() {
        return Ok(None);
    }
    decode(&bytes).map(Some).ok_or_else(|| {
        GroveError::Corrupt(format!(
            "{} is damaged: the record of the last durable commit does not decode (delete it \
             to go on without the check of acknowledged writes)",
            path.display()
        ))
    })
}

/// The backend's epoch.
fn held_epoch(kv: &dyn Kv) -> Result<u64> {
    Ok(kv
        .get(&epoch_key())?
        .and_then(|v| keys::u64_value(&v))
        .unwrap_or(0))
}

/// The number of log rows `value` under `key` holds, when `key` is a log key or a log pack.
fn log_rows(key: &[u8], value: &[u8]) -> Option<u64> {
    match *key.first()? {
        keys::T_LOG => LogValue::parse(value).ok().map(|v| v.len() as u64),
        keys::T_LOG_PACK => LogPack::parse(value).ok().map(|p| p.len() as u64),
        _ => None,
    }
}

/// The end of session `sid`'s log as the backend holds it (one past its last record).
fn log_end(kv: &dyn Kv, sid: u64) -> Result<u64> {
    let mut end = 0;
    for key in [keys::log(sid, 0), keys::log_pack(sid, 0)] {
        let stop = keys::prefix_end(&key[..9]);
        kv.read_last(&key, &stop, &mut |k, v| {
            if let Some(rows) = log_rows(k, v) {
                end = end.max(keys::last_u64(k).unwrap_or(0) + rows);
            }
        })?;
    }
    Ok(end)
}

/// Compares the record of `dir` with the backend: what was lost, if anything.
pub(crate) fn check(dir: &Path, kv: &dyn Kv) -> Result<Option<LostWrites>> {
    let path = dir.join(COMMIT_FILE);
    let Some(record) = read_record(&path)? else {
        return Ok(None);
    };
    let held = held_epoch(kv)?;
    if held >= record.epoch {
        return Ok(None);
    }
    let mut sessions = Vec::new();
    for (sid, next_seq, name) in record.heads {
        let held = log_end(kv, sid)?;
        let what = match held {
            0 => "the whole session is missing".to_owned(),
            held if held < next_seq => {
                format!("records {held} .. {next_seq} are missing (its log ends at record {held})")
            }
            _ => continue,
        };
        sessions.push((name, what));
    }
    Ok(Some(LostWrites {
        dir: dir.to_owned(),
        acknowledged: record.epoch,
        held,
        sessions,
        // The record names the sessions of the last durable commit only.
        complete: record.more == 0 && record.epoch - held <= 1,
    }))
}

impl Durable {
    /// Opens the record of `dir` for a writer (creating it), starting from the backend's
    /// epoch: a record ahead of the backend is taken back to it, so the caller checks first
    /// ([`check`]) and refuses such a store unless the user accepted the loss.
    pub(crate) fn open(dir: &Path, kv: &dyn Kv) -> Result<Durable> {
        let path = dir.join(COMMIT_FILE);
        let file = crate::kv::files::owner_only(&mut OpenOptions::new())
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        let mut durable = Durable {
            path,
            file,
            epoch: held_epoch(kv)?,
            heads: BTreeMap::new(),
            names: BTreeMap::new(),
            more: 0,
            len: u64::MAX,
        };
        // The file says what the backend holds from now on (a lagging or accepted record).
        durable.write_record(Vec::new())?;
        Ok(durable)
    }

    /// Notes the log records a batch about to be applied writes (called for every commit).
    pub(crate) fn note(&mut self, batch: &WriteBatch) {
        for (key, value) in batch.ops() {
            let Some(value) = value else { continue };
            let Some(rows) = log_rows(key, value) else {
                continue;
            };
            let Some(sid) = key
                .get(1..9)
                .and_then(|b| Some(u64::from_be_bytes(b.try_into().ok()?)))
            else {
                continue;
            };
            let next = keys::last_u64(key).unwrap_or(0) + rows;
            if self.heads.len() >= SESSIONS_KEPT && !self.heads.contains_key(&sid) {
                self.more += 1;
                continue;
            }
            let known = self.heads.entry(sid).or_insert(0);
            *known = (*known).max(next);
        }
    }

    /// Stages the next epoch in `batch` (the commit that will be flushed); returns it.
    pub(crate) fn stage(&mut self, batch: &mut WriteBatch) -> u64 {
        let epoch = self.epoch + 1;
        batch.put(epoch_key(), epoch.to_be_bytes().to_vec());
        epoch
    }

    /// Records `epoch` (staged by [`Durable::stage`]) once the backend's flush covering it has
    /// returned; `kv` names the sessions.
    pub(crate) fn record(&mut self, epoch: u64, kv: &dyn Kv) -> Result<()> {
        self.epoch = self.epoch.max(epoch);
        let mut heads = Vec::with_capacity(self.heads.len());
        for (sid, next_seq) in std::mem::take(&mut self.heads) {
            if !self.names.contains_key(&sid) {
                if self.names.len() >= SESSIONS_KEPT {
                    self.names.clear();
                }
                let id = kv
                    .get(&keys::session(sid))?
                    .and_then(|v| record::decode::<SessionRecord>(&v).ok())
                    .map_or_else(|| format!("#{sid}"), |r| r.id);
                self.names.insert(sid, id);
            }
            let id = self.names.get(&sid).cloned().unwrap_or_default();
            heads.push((sid, next_seq, id));
        }
        self.write_record(heads)
    }

    fn write_record(&mut self, heads: Vec<(u64, u64, String)>) -> Result<()> {
        let record = Record {
            epoch: self.epoch,
            heads,
            more: std::mem::take(&mut self.more),
        };
        let bytes = encode(&record);
        // One `pwrite` in place; the file is cut only when the record got shorter.
        let written = self.file.write_all_at(&bytes, 0).and_then(|()| {
            let len = bytes.len() as u64;
            if len < self.len {
                self.file.set_len(len)?;
            }
            self.len = len;
            Ok(())
        });
        written.map_err(|e| io_error(&self.path, e))
    }
}
