//! The write buffer's hand-over hook for the session log ([`crate::kv::buffered::Coalesce`]):
//! consecutive log values of one session (rows and batches under log keys `10 ++ sid ++ seq`
//! whose records follow each other) become one batch under the first one's key, within the
//! log-pack limits — the value one `append_many` of the same records writes (docs/format.md,
//! "Batches").
//!
//! May call: [`crate::core::keys`], [`crate::kv`].

use grove_codec::pack::{LogPackWriter, LogValue, LOG_PACK_BYTES, LOG_PACK_RECORDS};

use crate::core::keys;
use crate::kv::buffered::{Coalesce, Overlay};
use crate::kv::WriteBatch;

/// Coalesces the session log's values when the write buffer is handed over (module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct LogCoalesce;

impl Coalesce for LogCoalesce {
    fn coalesce(&self, ops: &Overlay) -> WriteBatch {
        coalesce(ops)
    }
}

/// The log value under `key` — a row or a batch — as its first seq and its rows; `None` for
/// any other key (or a value that does not parse, which is passed on as it is).
fn log_rows<'v>(key: &[u8], value: &'v [u8]) -> Option<(u64, LogValue<'v>)> {
    if key.len() != 17 || key.first() != Some(&keys::T_LOG) {
        return None;
    }
    Some((keys::last_u64(key)?, LogValue::parse(value).ok()?))
}

/// Consecutive log values of one session being coalesced into one batch.
struct RowRun<'o> {
    key: &'o [u8],
    /// The first value, written as it is when nothing joins it.
    first: &'o [u8],
    /// Its rows.
    first_rows: LogValue<'o>,
    next_seq: u64,
    /// Records and bytes of rows in the run.
    records: usize,
    bytes: usize,
    /// The batch, made when a second value joins.
    pack: Option<LogPackWriter>,
}

/// Bytes of the rows of a log value.
fn rows_len(rows: &LogValue<'_>) -> usize {
    (0..rows.len())
        .filter_map(|i| rows.row(i))
        .map(<[u8]>::len)
        .sum()
}

/// Adds the rows of a log value to a pack (a row is far below the 4 GiB its offsets allow).
fn push_rows(pack: &mut LogPackWriter, rows: &LogValue<'_>) {
    for i in 0..rows.len() {
        if let Some(row) = rows.row(i) {
            let _ = pack.push(row);
        }
    }
}

impl<'o> RowRun<'o> {
    fn start(key: &'o [u8], first: &'o [u8], seq: u64, rows: LogValue<'o>) -> RowRun<'o> {
        RowRun {
            key,
            first,
            next_seq: seq + rows.len() as u64,
            records: rows.len(),
            bytes: rows_len(&rows),
            first_rows: rows,
            pack: None,
        }
    }

    /// Adds the rows of the value under `key` if they continue the run and fit its pack.
    fn join(&mut self, key: &[u8], seq: u64, rows: &LogValue<'_>) -> bool {
        // The log-pack limits: a pack is closed once its rows reach LOG_PACK_BYTES (a row may
        // pass it, a batch joins only below it).
        let bytes = rows_len(rows);
        let fits = self.records + rows.len() <= LOG_PACK_RECORDS
            && self.bytes < LOG_PACK_BYTES
            && (rows.len() == 1 || self.bytes + bytes <= LOG_PACK_BYTES);
        if seq != self.next_seq || key.get(..9) != self.key.get(..9) || !fits {
            return false;
        }
        let (records, held) = (self.records + rows.len(), self.bytes + bytes);
        let pack = self.pack.get_or_insert_with(|| {
            // Room for a few more values like these (a run of many small rows grows it a few
            // times; a buffer of many short runs does not hold a full pack's bytes for each).
            let mut pack = LogPackWriter::with_capacity(
                (records * 4).min(LOG_PACK_RECORDS),
                (held * 4).min(LOG_PACK_BYTES + bytes),
            );
            push_rows(&mut pack, &self.first_rows);
            pack
        });
        push_rows(pack, rows);
        self.next_seq = seq + rows.len() as u64;
        self.records += rows.len();
        self.bytes += bytes;
        true
    }

    fn finish(self, batch: &mut WriteBatch) {
        match self.pack {
            None => batch.put(self.key.to_vec(), self.first.to_vec()),
            Some(mut pack) => batch.put(self.key.to_vec(), pack.take_batch()),
        }
    }
}

/// The buffered operations as one batch, consecutive log values of a session coalesced into
/// batches within the log-pack limits.
fn coalesce(overlay: &Overlay) -> WriteBatch {
    let mut batch = WriteBatch::new();
    let mut run: Option<RowRun<'_>> = None;
    for (key, value) in overlay {
        if let Some((value, (seq, rows))) = value
            .as_deref()
            .and_then(|v| log_rows(key, v).map(|found| (v, found)))
        {
            if let Some(r) = &mut run {
                if r.join(key, seq, &rows) {
                    continue;
                }
            }
            if let Some(r) = run.take() {
                r.finish(&mut batch);
            }
            run = Some(RowRun::start(key, value, seq, rows));
            continue;
        }
        if let Some(r) = run.take() {
            r.finish(&mut batch);
        }
        match value {
            Some(v) => batch.put(key.clone(), v.clone()),
            None => batch.delete(key.clone()),
        }
    }
    if let Some(r) = run.take() {
        r.finish(&mut batch);
    }
    batch
}
