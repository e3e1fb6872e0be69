//! Walking up the tree run by run. Each entry knows where its linear run starts (an entry
//! whose parent is the record just before it continues its parent's run), so the ancestors
//! of an entry are read as a few backward range scans — one per branch point on the path —
//! instead of one point lookup per entry.

use grove_codec::record::NodeRecord;

use crate::core::error::{GroveError, Result};
use crate::log::handle::{decode_row, Entry, Handle};
use crate::log::rows::LogRows;

/// The ancestors of an entry, itself first, up to its root. Parent cycles are followed: a
/// caller that walks past a `Parent::Cycle` link must watch for revisits.
pub(crate) struct Ancestors<'a> {
    session: &'a Handle,
    next: Option<u64>,
    run: Option<LogRows<'a>>,
    /// A short run still to read by point lookups: `(lo, next seq down)`.
    short: Option<(u64, u64)>,
    last_parent: Option<u64>,
}

/// Runs at least this long (below their top entry) are read with range scans.
const SCAN_FROM: u64 = 8;

impl<'a> Ancestors<'a> {
    pub(crate) fn new(session: &'a Handle, start: u64) -> Ancestors<'a> {
        Ancestors {
            session,
            next: Some(start),
            run: None,
            short: None,
            last_parent: None,
        }
    }

    /// Starts the run that ends at `top`. Short runs (common in bushy sessions) are read by
    /// point lookups, which cost less than opening a range iterator; the entry at `top`
    /// itself is returned at once, since its node had to be read to find the run.
    fn open_run(&mut self, top: u64) -> Result<Entry> {
        let entry = self.session.entry_at(top)?;
        let node: &NodeRecord = &entry.node;
        let lo = node.run_start.min(top);
        if top - lo >= SCAN_FROM {
            self.run = Some(self.session.log_range_rev(lo, top));
            self.next = None;
        } else {
            self.run = None;
            self.next = None;
            self.short = (lo < top).then(|| (lo, top - 1));
        }
        self.last_parent = node.parent.seq();
        if lo == top {
            self.next = node.parent.seq();
            self.last_parent = None;
        }
        Ok(entry)
    }

    fn step(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some((lo, seq)) = self.short {
                let entry = self.session.entry_at(seq)?;
                if self.last_parent != Some(seq) {
                    return Err(GroveError::Corrupt(format!("run broken at entry {seq}")));
                }
                self.short = (seq > lo).then(|| (lo, seq - 1));
                self.last_parent = entry.node.parent.seq();
                if seq == lo {
                    self.next = entry.node.parent.seq();
                    self.last_parent = None;
                }
                return Ok(Some(entry));
            }
            if self.run.is_none() {
                let Some(top) = self.next.take() else {
                    return Ok(None);
                };
                return self.open_run(top).map(Some);
            }
            let Some(run) = self.run.as_mut() else {
                return Ok(None);
            };
            match run.next() {
                Some(row) => {
                    let (seq, row) = row?;
                    let entry =
                        decode_row(self.session.inner.kv.as_ref(), self.session.id(), seq, row)?;
                    let seq = entry.seq;
                    if let Some(expected) = self.last_parent {
                        if expected != seq {
                            return Err(GroveError::Corrupt(format!(
                                "run broken: expected entry {expected}, found {seq}"
                            )));
                        }
                    }
                    let node = &entry.node;
                    self.last_parent = node.parent.seq();
                    if seq == node.run_start || node.parent.seq() != seq.checked_sub(1) {
                        // The run ends here; continue at the parent, if any.
                        self.run = None;
                        self.next = node.parent.seq();
                        self.last_parent = None;
                    }
                    return Ok(Some(entry));
                }
                _ => {
                    self.run = None;
                }
            }
        }
    }
}

impl Iterator for Ancestors<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        match self.step() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => None,
            Err(e) => {
                self.next = None;
                self.run = None;
                self.short = None;
                Some(Err(e))
            }
        }
    }
}

/// The ancestors of `start`, itself first (see [`Ancestors`]).
pub(crate) fn ancestors(s: &Handle, start: u64) -> Ancestors<'_> {
    Ancestors::new(s, start)
}

/// The ancestor of `seq` at `depth` (`seq` itself when `depth` is its own), by jump
/// pointers: O(log depth) node reads. `None` when `depth` is deeper than `seq`.
pub(crate) fn ancestor_at_depth(
    s: &Handle,
    seq: u64,
    node: &NodeRecord,
    depth: u64,
) -> Result<Option<(u64, NodeRecord)>> {
    if depth > node.depth {
        return Ok(None);
    }
    let (mut cur, mut n) = (seq, node.clone());
    while n.depth > depth {
        let next = match n.jump {
            Some(j) if j.depth >= depth => j.seq,
            _ => match n.parent {
                grove_codec::record::Parent::Seq(p) => p,
                _ => return Ok(None),
            },
        };
        cur = next;
        n = s.node(cur)?;
    }
    Ok(Some((cur, n)))
}

/// Whether the root of `seq`'s tree is the earliest member of a parent cycle (the walks
/// then go on past it, so tree-based shortcuts do not apply).
pub(crate) fn in_cycle_tree(s: &Handle, seq: u64) -> Result<bool> {
    let node = s.node(seq)?;
    Ok(match ancestor_at_depth(s, seq, &node, 0)? {
        Some((_, root)) => matches!(root.parent, grove_codec::record::Parent::Cycle(_)),
        None => true,
    })
}

/// The deepest common ancestor of two entries in the parent forest (cycle roots count
/// as roots), in O(log depth) node reads; `None` when they are in different trees.
pub(crate) fn common_ancestor(s: &Handle, a: u64, b: u64) -> Result<Option<u64>> {
    let (na, nb) = (s.node(a)?, s.node(b)?);
    let depth = na.depth.min(nb.depth);
    let Some((mut a, mut na)) = ancestor_at_depth(s, a, &na, depth)? else {
        return Ok(None);
    };
    let Some((mut b, mut nb)) = ancestor_at_depth(s, b, &nb, depth)? else {
        return Ok(None);
    };
    while a != b {
        match (na.jump, nb.jump) {
            (Some(ja), Some(jb)) if ja.seq != jb.seq => {
                a = ja.seq;
                b = jb.seq;
            }
            _ => match (na.parent, nb.parent) {
                (grove_codec::record::Parent::Seq(pa), grove_codec::record::Parent::Seq(pb)) => {
                    a = pa;
                    b = pb;
                }
                _ => return Ok(None),
            },
        }
        na = s.node(a)?;
        nb = s.node(b)?;
    }
    Ok(Some(a))
}
