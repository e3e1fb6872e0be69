//! Reading a session log, whose leading records may be stored in log packs (an import writes
//! packs; appends write one log row per record). The session's packed count tells the two
//! apart: records `0 .. packed` live in packs keyed by their first seq, records from `packed`
//! on in single rows (docs/format.md, "Packs"). Everything here hands out the value of a
//! single log row, whichever way it is stored.

use std::collections::VecDeque;

use grove_codec::pack::LogPack;

use crate::error::{GroveError, Result};
use crate::keys;
use crate::kv::Scan;
use crate::session::{decode_row, Entry, Session};

fn corrupt_pack(first: u64, e: grove_codec::CodecError) -> GroveError {
    GroveError::Corrupt(format!("log pack at record {first}: {e}"))
}

fn key_seq(key: &[u8]) -> Result<u64> {
    keys::last_u64(key).ok_or_else(|| GroveError::Corrupt("log key".into()))
}

impl Session {
    /// Calls `read` with the log row of `seq`; `None` when the log has no such record.
    pub(crate) fn read_row<T>(&self, seq: u64, read: impl FnOnce(&[u8]) -> T) -> Result<Option<T>> {
        if seq >= self.packed {
            let mut read = Some(read);
            let mut out = None;
            self.inner
                .kv
                .read_value(&keys::log(self.sid, seq), &mut |row| {
                    if let Some(read) = read.take() {
                        out = Some(read(row));
                    }
                })?;
            return Ok(out);
        }
        // The pack with the greatest first seq not above `seq`, read in place.
        let mut read = Some(read);
        let mut out: Result<Option<T>> = Ok(None);
        self.inner.kv.read_last(
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
        LogRows::new(self, lo, hi, false)
    }

    /// The records `lo .. hi` in descending order.
    pub(crate) fn log_range_rev(&self, lo: u64, hi: u64) -> LogRows<'_> {
        LogRows::new(self, lo, hi, true)
    }
}

/// Which part of the log a [`LogRows`] reads next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Packs,
    Singles,
    Done,
}

/// Log records of a range, in either direction, from packs and single rows alike.
pub(crate) struct LogRows<'a> {
    session: &'a Session,
    lo: u64,
    hi: u64,
    rev: bool,
    part: Part,
    scan: Option<Scan<'a>>,
    /// Rows of the current pack still to hand out: `(seq, row)`.
    buffered: VecDeque<(u64, Vec<u8>)>,
    /// The seq the next record must have.
    expect: Option<u64>,
}

impl<'a> LogRows<'a> {
    fn new(session: &'a Session, lo: u64, hi: u64, rev: bool) -> LogRows<'a> {
        let empty = lo >= hi;
        let first_part = if rev { Part::Singles } else { Part::Packs };
        LogRows {
            session,
            lo,
            hi,
            rev,
            part: if empty { Part::Done } else { first_part },
            scan: None,
            buffered: VecDeque::new(),
            expect: Some(if rev { hi.saturating_sub(1) } else { lo }),
        }
    }

    fn key(&self, seq: u64) -> Vec<u8> {
        keys::log(self.session.sid, seq)
    }

    fn pack_key(&self, first: u64) -> Vec<u8> {
        keys::log_pack(self.session.sid, first)
    }

    /// Opens the scan of the current part; `false` when the part is empty.
    fn open(&mut self) -> Result<bool> {
        let packed = self.session.packed;
        let kv = &self.session.inner.kv;
        match self.part {
            Part::Singles => {
                let (lo, hi) = (self.lo.max(packed), self.hi);
                if lo >= hi {
                    return Ok(false);
                }
                let end = if hi == u64::MAX {
                    keys::prefix_end(&keys::session_prefix(keys::T_LOG, self.session.sid))
                } else {
                    self.key(hi)
                };
                let start = self.key(lo);
                self.scan = Some(if self.rev {
                    kv.scan_rev(&start, &end)
                } else {
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
                    // From the pack holding `lo`.
                    let mut start = self.pack_key(self.lo);
                    let (first, past) = (self.pack_key(0), self.pack_key(self.lo + 1));
                    kv.read_last(&first, &past, &mut |key, _| {
                        start = key.to_vec();
                    })?;
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

    /// Queues the rows of one pack that fall in the range; `false` when the pack lies
    /// entirely below the range (a descending scan is then done).
    fn unpack(&mut self, first: u64, value: &[u8]) -> Result<bool> {
        let pack = LogPack::parse(value).map_err(|e| corrupt_pack(first, e))?;
        let end = first.saturating_add(pack.len() as u64);
        if end <= self.lo {
            return Ok(false);
        }
        let (from, to) = (
            first.max(self.lo),
            end.min(self.hi).min(self.session.packed),
        );
        let mut rows: Vec<(u64, Vec<u8>)> = (from..to)
            .filter_map(|seq| {
                let i = usize::try_from(seq - first).ok()?;
                pack.row(i).map(|r| (seq, r.to_vec()))
            })
            .collect();
        if self.rev {
            rows.reverse();
        }
        self.buffered.extend(rows);
        Ok(true)
    }

    fn check(&mut self, seq: u64) -> Result<()> {
        match self.expect {
            Some(e) if e == seq => {
                self.expect = if self.rev {
                    seq.checked_sub(1)
                } else {
                    seq.checked_add(1)
                };
                Ok(())
            }
            Some(e) => Err(GroveError::Corrupt(format!("log record {e} is missing"))),
            None => Err(GroveError::Corrupt(format!(
                "log record {seq} out of range"
            ))),
        }
    }

    /// The end of the range was reached: every record in it must have been seen.
    fn finish(&self) -> Result<()> {
        let Some(e) = self.expect else { return Ok(()) };
        let complete = if self.rev {
            e < self.lo
        } else {
            self.hi == u64::MAX || e >= self.hi
        };
        if complete {
            Ok(())
        } else {
            Err(GroveError::Corrupt(format!("log record {e} is missing")))
        }
    }

    fn step(&mut self) -> Result<Option<(u64, Vec<u8>)>> {
        loop {
            if let Some((seq, row)) = self.buffered.pop_front() {
                self.check(seq)?;
                return Ok(Some((seq, row)));
            }
            if self.part == Part::Done {
                self.finish()?;
                return Ok(None);
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
            if self.part == Part::Singles {
                self.check(seq)?;
                return Ok(Some((seq, value)));
            }
            if !self.unpack(seq, &value)? {
                self.advance_part();
            }
        }
    }
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
    /// The records decoded.
    pub(crate) fn entries(self) -> impl Iterator<Item = Result<Entry>> + 'a {
        self.map(|row| row.and_then(|(seq, row)| decode_row(seq, row)))
    }
}
