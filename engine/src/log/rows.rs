//! Reading a session log. Its leading records may be stored in log packs (an import writes
//! packs), the rest under log keys (tag `0x10`), whose value is either one record's row or a
//! **batch**: the rows of consecutive records — of one transaction of several (`append_many`,
//! a move with its branch summary), or of several coalesced by the write buffer — keyed by
//! the first one's seq. The session's packed count tells packs and
//! log keys apart: records `0 .. packed` live in packs keyed by their first seq, records from
//! `packed` on under log keys (docs/format.md, "Packs", "Batches"). Everything here hands out
//! the value of a single log row, whichever way it is stored.

use std::collections::VecDeque;

use grove_codec::pack::{LogPack, LogValue, BATCH_MARK};

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::kv::{Kv, Scan};
use crate::log::handle::{decode_row, Entry, Handle};

fn corrupt_pack(first: u64, e: grove_codec::CodecError) -> GroveError {
    GroveError::Corrupt(format!("log pack at record {first}: {e}"))
}

fn corrupt_value(first: u64, e: grove_codec::CodecError) -> GroveError {
    GroveError::Corrupt(format!("log value at record {first}: {e}"))
}

fn key_seq(key: &[u8]) -> Result<u64> {
    keys::last_u64(key).ok_or_else(|| GroveError::Corrupt("log key".into()))
}

/// Calls `read` with row `seq` of the value under log key `first`, when the value holds it.
fn read_in<T>(
    first: u64,
    value: &[u8],
    seq: u64,
    read: &mut Option<impl FnOnce(&[u8]) -> T>,
) -> Result<Option<T>> {
    let value = LogValue::parse(value).map_err(|e| corrupt_value(first, e))?;
    let row = seq
        .checked_sub(first)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| value.row(i));
    Ok(row.and_then(|row| read.take().map(|read| read(row))))
}

impl Handle {
    /// Calls `read` with the log row of `seq`; `None` when the log has no such record.
    pub(crate) fn read_row<T>(&self, seq: u64, read: impl FnOnce(&[u8]) -> T) -> Result<Option<T>> {
        let kv = &self.inner.kv;
        let mut read = Some(read);
        let mut out: Result<Option<T>> = Ok(None);
        if seq >= self.packed {
            // The record's own key (a row, or the first record of a batch), else the batch
            // with the greatest first seq below it.
            let found = kv.read_value(&keys::log(self.sid, seq), &mut |value| {
                out = read_in(seq, value, seq, &mut read);
            })?;
            if !found {
                kv.read_last(
                    &keys::log(self.sid, self.packed),
                    &keys::log(self.sid, seq),
                    &mut |key, value| {
                        out = key_seq(key).and_then(|first| read_in(first, value, seq, &mut read));
                    },
                )?;
            }
            return out;
        }
        // The pack with the greatest first seq not above `seq`, read in place.
        kv.read_last(
            &keys::log_pack(self.sid, 0),
            &keys::log_pack(self.sid, seq + 1),
            &mut |key, value| {
                out = (|| {
                    let first = key_seq(key)?;
                    let pack = LogPack::parse(value).map_err(|e| corrupt_pack(first, e))?;
                    let row = usize::try_from(seq - first).ok().and_then(|i| pack.row(i));
                    Ok(row.and_then(|row| read.take().map(|read| read(row))))
                })();
            },
        )?;
        out
    }

    /// The records `lo .. hi` in ascending order (`hi = u64::MAX`: to the end of the log).
    /// A gap in the log is reported as `Corrupt`.
    pub(crate) fn log_range(&self, lo: u64, hi: u64) -> LogRows<'_> {
        LogRows::new(self.inner.kv.as_ref(), self.sid, self.packed, lo, hi, false)
    }

    /// The records `lo .. hi` in descending order.
    pub(crate) fn log_range_rev(&self, lo: u64, hi: u64) -> LogRows<'_> {
        LogRows::new(self.inner.kv.as_ref(), self.sid, self.packed, lo, hi, true)
    }

    /// The records of the log's last value under a log key (a single row, or a batch): the
    /// last transaction's, the only one a crash may have left with index rows missing (one
    /// floor lookup). Empty when the session has no records after its packs.
    pub(crate) fn last_value(&self) -> Result<Vec<(u64, Vec<u8>)>> {
        let start = keys::log(self.sid, self.packed);
        let end = keys::prefix_end(&keys::session_prefix(keys::T_LOG, self.sid));
        let mut out = Ok(Vec::new());
        self.inner.kv.read_last(&start, &end, &mut |key, value| {
            out = (|| {
                let first = key_seq(key)?;
                let value = LogValue::parse(value).map_err(|e| corrupt_value(first, e))?;
                Ok((0..value.len())
                    .filter_map(|i| value.row(i).map(|row| (first + i as u64, row.to_vec())))
                    .collect())
            })();
        })?;
        out
    }
}

/// Which part of the log a [`LogRows`] reads next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Packs,
    Singles,
    Done,
}

/// Log records of a range, in either direction, from packs, batches and single rows alike.
pub(crate) struct LogRows<'a> {
    kv: &'a dyn Kv,
    sid: u64,
    packed: u64,
    lo: u64,
    hi: u64,
    rev: bool,
    part: Part,
    scan: Option<Scan<'a>>,
    /// Rows of the current pack or batch still to hand out: `(seq, row)`.
    buffered: VecDeque<(u64, Vec<u8>)>,
    /// The seq the next record must have.
    expect: Option<u64>,
    /// Times the scan of the log keys was reopened at a record it skipped ([`LogRows::reopen`]).
    reopens: u32,
}

/// Most reopens of one [`LogRows`] before a skipped record is reported missing.
const REOPENS: u32 = 16;

impl<'a> LogRows<'a> {
    /// The records `lo .. hi` of session `sid` (whose records `0 .. packed` are in packs).
    pub(crate) fn new(
        kv: &'a dyn Kv,
        sid: u64,
        packed: u64,
        lo: u64,
        hi: u64,
        rev: bool,
    ) -> LogRows<'a> {
        let empty = lo >= hi;
        let first_part = if rev { Part::Singles } else { Part::Packs };
        LogRows {
            kv,
            sid,
            packed,
            lo,
            hi,
            rev,
            part: if empty { Part::Done } else { first_part },
            scan: None,
            buffered: VecDeque::new(),
            expect: Some(if rev { hi.saturating_sub(1) } else { lo }),
            reopens: 0,
        }
    }

    fn key(&self, seq: u64) -> Vec<u8> {
        keys::log(self.sid, seq)
    }

    fn pack_key(&self, first: u64) -> Vec<u8> {
        keys::log_pack(self.sid, first)
    }

    /// Opens the scan of the current part; `false` when the part is empty.
    fn open(&mut self) -> Result<bool> {
        let (packed, kv) = (self.packed, self.kv);
        match self.part {
            Part::Singles => {
                let (lo, hi) = (self.lo.max(packed), self.hi);
                if lo >= hi {
                    return Ok(false);
                }
                let end = if hi == u64::MAX {
                    keys::prefix_end(&keys::session_prefix(keys::T_LOG, self.sid))
                } else {
                    self.key(hi)
                };
                let base = self.key(packed);
                self.scan = Some(if self.rev {
                    // Descending from the value holding `hi - 1` (a batch may begin below
                    // `lo`); stops once past `lo`.
                    kv.scan_rev(&base, &end)
                } else {
                    // From the value holding `lo`: its key, or a batch beginning below it.
                    let mut start = self.key(lo);
                    if lo > packed {
                        kv.read_last(&base, &self.key(lo + 1), &mut |key, _| {
                            start = key.to_vec();
                        })?;
                    }
                    kv.scan(&start, &end)
                });
            }
            Part::Packs => {
                let hi = self.hi.min(packed);
                if self.lo >= hi {
                    return Ok(false);
                }
                if self.rev {
                    // Descending from the pack holding `hi - 1`; stops once past `lo`.
                    self.scan = Some(kv.scan_rev(&self.pack_key(0), &self.pack_key(hi)));
                } else {
                    // From the pack holding `lo`, read in place: only the rows in the range
                    // are copied (a short run of a bushy session's branch needs a few rows
                    // of a pack of up to 128 KiB); the packs after it, if the range goes on.
                    let (first, past) = (self.pack_key(0), self.pack_key(self.lo + 1));
                    let mut floor: Option<Result<u64>> = None;
                    let (lo, hi_all, limit) = (self.lo, self.hi, packed);
                    let buffered = &mut self.buffered;
                    kv.read_last(&first, &past, &mut |key, value| {
                        floor = Some(key_seq(key).and_then(|seq| {
                            let pack = LogPack::parse(value).map_err(|e| corrupt_pack(seq, e))?;
                            queue_rows(buffered, seq, &pack, (lo, hi_all, limit), false);
                            Ok(seq)
                        }));
                    })?;
                    let start = match floor.transpose()? {
                        Some(seq) => self.pack_key(seq.saturating_add(1)),
                        None => self.pack_key(self.lo),
                    };
                    self.scan = Some(kv.scan(&start, &self.pack_key(hi)));
                }
            }
            Part::Done => return Ok(false),
        }
        Ok(true)
    }

    /// Moves to the next part once the current one is exhausted.
    fn advance_part(&mut self) {
        self.scan = None;
        self.part = match (self.part, self.rev) {
            (Part::Packs, false) => Part::Singles,
            (Part::Singles, true) => Part::Packs,
            _ => Part::Done,
        };
    }

    /// Queues the rows of one pack or batch that fall in the range; `false` when it lies
    /// entirely below the range (a descending scan is then done with the part).
    fn unpack(&mut self, first: u64, pack: &LogPack<'_>) -> bool {
        let limit = match self.part {
            Part::Packs => self.packed,
            _ => u64::MAX,
        };
        let range = (self.lo, self.hi, limit);
        queue_rows(&mut self.buffered, first, pack, range, self.rev)
    }

    /// Whether `seq` is the next record; `false` when it is not and the scan was reopened at
    /// the expected one ([`LogRows::reopen`]), an error when it is not and cannot be.
    fn check(&mut self, seq: u64) -> Result<bool> {
        match self.expect {
            Some(e) if e == seq => {
                self.expect = if self.rev {
                    seq.checked_sub(1)
                } else {
                    seq.checked_add(1)
                };
                Ok(true)
            }
            Some(e) => {
                if self.reopen(e) {
                    Ok(false)
                } else {
                    Err(GroveError::Corrupt(format!("log record {e} is missing")))
                }
            }
            None => Err(GroveError::Corrupt(format!(
                "log record {seq} out of range"
            ))),
        }
    }

    /// Restarts the scan of the log keys at record `e`, which it skipped: the store's write
    /// buffer may have moved records from their own keys into a batch under an earlier key
    /// while the scan ran (a scan reads the buffer as it was when the scan began, the backend
    /// as it is), so a fresh floor lookup finds them. `false` for a record of the packs, or
    /// after [`REOPENS`] reopens: the record is missing.
    fn reopen(&mut self, e: u64) -> bool {
        if e < self.packed || self.reopens >= REOPENS {
            return false;
        }
        self.reopens += 1;
        self.part = Part::Singles;
        self.scan = None;
        self.buffered.clear();
        if self.rev {
            self.hi = e + 1;
        } else {
            self.lo = e;
        }
        true
    }

    /// The end of the range was reached: every record in it must have been seen. `false`
    /// when one was not and the scan was reopened at it.
    fn finish(&mut self) -> Result<bool> {
        let Some(e) = self.expect else {
            return Ok(true);
        };
        let complete = if self.rev {
            e < self.lo
        } else {
            self.hi == u64::MAX || e >= self.hi
        };
        if complete {
            Ok(true)
        } else if self.reopen(e) {
            Ok(false)
        } else {
            Err(GroveError::Corrupt(format!("log record {e} is missing")))
        }
    }

    fn step(&mut self) -> Result<Option<(u64, Vec<u8>)>> {
        loop {
            if let Some((seq, row)) = self.buffered.pop_front() {
                if self.check(seq)? {
                    return Ok(Some((seq, row)));
                }
                continue;
            }
            if self.part == Part::Done {
                if self.finish()? {
                    return Ok(None);
                }
                continue;
            }
            if self.scan.is_none() && !self.open()? {
                self.advance_part();
                continue;
            }
            let next = self.scan.as_mut().and_then(Iterator::next);
            let Some(pair) = next else {
                self.advance_part();
                continue;
            };
            let (key, value) = pair?;
            let seq = key_seq(&key)?;
            let pack = if self.part == Part::Singles {
                if value.first() != Some(&BATCH_MARK) {
                    // A single row: handed out as it is.
                    if seq >= self.lo {
                        if self.check(seq)? {
                            return Ok(Some((seq, value)));
                        }
                        continue;
                    }
                    // Below the range: the row a floor lookup found (ascending), or the end
                    // of a descending scan.
                    if self.rev {
                        self.advance_part();
                    }
                    continue;
                }
                match LogValue::parse(&value).map_err(|e| corrupt_value(seq, e))? {
                    LogValue::Batch(pack) => pack,
                    LogValue::Row(_) => continue,
                }
            } else {
                LogPack::parse(&value).map_err(|e| corrupt_pack(seq, e))?
            };
            if !self.unpack(seq, &pack) && self.rev {
                self.advance_part();
            }
        }
    }
}

/// Queues onto `buffered` the rows of the pack or batch beginning at record `first` that
/// fall in `lo .. hi` and below `limit` (`(lo, hi, limit)`), in the scan's direction;
/// `false` when it lies entirely below `lo`.
fn queue_rows(
    buffered: &mut VecDeque<(u64, Vec<u8>)>,
    first: u64,
    pack: &LogPack<'_>,
    (lo, hi, limit): (u64, u64, u64),
    rev: bool,
) -> bool {
    let end = first.saturating_add(pack.len() as u64);
    if end <= lo {
        return false;
    }
    let (from, to) = (first.max(lo), end.min(hi).min(limit));
    let rows = (from..to).filter_map(|seq| {
        let i = usize::try_from(seq - first).ok()?;
        pack.row(i).map(|r| (seq, r.to_vec()))
    });
    if rev {
        let rows: Vec<_> = rows.collect();
        buffered.extend(rows.into_iter().rev());
    } else {
        buffered.extend(rows);
    }
    true
}

impl Iterator for LogRows<'_> {
    type Item = Result<(u64, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.step() {
            Ok(Some(row)) => Some(Ok(row)),
            Ok(None) => None,
            Err(e) => {
                self.part = Part::Done;
                self.scan = None;
                self.buffered.clear();
                self.expect = None;
                Some(Err(e))
            }
        }
    }
}

impl<'a> LogRows<'a> {
    /// The records decoded, each line checked against its CRC-32 or, in rows of older
    /// layouts, its content hash ([`decode_row`]; `session` is the id errors name).
    pub(crate) fn entries(self, session: &'a str) -> impl Iterator<Item = Result<Entry>> + 'a {
        let kv = self.kv;
        self.map(move |row| row.and_then(|(seq, row)| decode_row(kv, session, seq, row)))
    }
}
