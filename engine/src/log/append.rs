//! The writes of the session handle, each one transaction of [`crate::log::write`]: appends
//! (as given, exact, optimistic, chains) and leaf moves with what they carry (a branch
//! summary, a label).
//!
//! May call: [`crate::log::write`], [`crate::log::handle`], [`crate::core`], [`crate::kv`].

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::kv::Durability;
use crate::kv::WriteBatch;
use crate::log::handle::{AppendOptions, AppendOutcome, ExactOptions, Handle};
use crate::log::write::{transact, Appended, LeaseCheck, Staged};
use grove_codec::op::OpKind;
use grove_codec::record::{self, LabelRecord};
use grove_codec::writer::NewEntry;
use grove_codec::EntryKind;

/// No label for [`Handle::move_to_with`].
pub(crate) const NO_LABEL: Option<fn(Option<&str>) -> NewEntry> = None;

/// The writes of the session handle: appends and leaf moves, each one transaction.
impl Handle {
    /// Appends an entry as a child of the active leaf; it becomes the leaf. Returns its id.
    pub(crate) fn append(&self, entry: NewEntry) -> Result<String> {
        self.append_with(entry, AppendOptions::default())
    }

    /// [`Handle::append`] with per-call options. The id is `options.id`, else the `id` of a
    /// [`NewEntry::Raw`] object (both given, they must agree), else a fresh one. A given id
    /// must be new to the session, unless it names this same entry (same type and fields,
    /// `parentId` and `timestamp` aside; the timestamp compared when one is given): then the
    /// append is a retry of one that was applied, and answers its id, writing nothing. Under
    /// another entry it is [`GroveError::DuplicateId`].
    pub(crate) fn append_with(&self, entry: NewEntry, options: AppendOptions) -> Result<String> {
        let durability = options.durability.unwrap_or(self.inner.durability);
        transact(self, OpKind::Append, durability, None, |txn| {
            Ok(
                match txn.append(&entry, options.id.clone(), options.timestamp.clone())? {
                    Appended::New(id) => Staged::Commit(id),
                    Appended::Stored { id, .. } => Staged::Abandon(id),
                },
            )
        })
    }

    /// Appends the caller's exact entry, one pi entry object as JSON text (pi's
    /// `SessionStorage.appendEntry`): its `id`, `parentId` and `timestamp` are kept and its
    /// bytes stored as given. The id must be new to the session ([`GroveError::DuplicateId`])
    /// and the parent one of its entries or null ([`GroveError::RejectedEntry`]). The entry
    /// becomes the leaf; a `leaf` object moves the leaf to its `targetId` (an entry or null).
    /// Returns the id. A forked session's first entry, whose parent lies in the source
    /// session, is carried by [`crate::Store::fork`] and import, not by this call.
    pub(crate) fn append_exact(
        &self,
        entry: &str,
        durability: Option<Durability>,
    ) -> Result<String> {
        self.append_exact_with(
            entry,
            ExactOptions {
                durability,
                ..ExactOptions::default()
            },
        )
    }

    /// [`Handle::append_exact`] with per-call options.
    pub(crate) fn append_exact_with(&self, entry: &str, options: ExactOptions) -> Result<String> {
        let durability = options.durability.unwrap_or(self.inner.durability);
        transact(self, OpKind::Append, durability, None, |txn| {
            let before = txn.head.leaf;
            let seq = txn.head.next_seq;
            let id = match txn.append_exact(entry.trim().to_owned())? {
                Appended::New(id) => id,
                // The same line is stored under its id: a retry.
                Appended::Stored { id, .. } => return Ok(Staged::Abandon(id)),
            };
            if options.keep_leaf {
                if txn.node(seq)?.kind == EntryKind::Leaf.tag() {
                    return Err(GroveError::RejectedEntry {
                        session: self.id().to_owned(),
                        reason: format!(
                            "{id} is a leaf record: it moves the leaf, which keepLeaf forbids"
                        ),
                    });
                }
                txn.move_leaf(before)?;
            }
            Ok(Staged::Commit(id))
        })
    }

    /// Optimistic append: appends only if the leaf is still `expected_leaf` (`None`: the root
    /// position). When another writer moved the leaf meanwhile, nothing is written and the
    /// outcome says where the leaf is now — a value, not an error. An entry object's `id` is
    /// used as [`Handle::append_with`] uses it; the same entry stored under it as a child of
    /// `expected_leaf` (a retry of an append that was applied) is `Appended` again.
    pub(crate) fn append_if(
        &self,
        expected_leaf: Option<&str>,
        entry: NewEntry,
    ) -> Result<AppendOutcome> {
        transact(self, OpKind::Append, self.inner.durability, None, |txn| {
            if let Some(id) = entry.given_id().ok().flatten() {
                if txn
                    .stored_as(&entry, &id, None)?
                    .is_some_and(|p| p.as_deref() == expected_leaf)
                {
                    return Ok(Staged::Abandon(AppendOutcome::Appended(id)));
                }
            }
            let actual = match txn.head.leaf {
                None => None,
                Some(seq) => Some(txn.node(seq)?.id.into()),
            };
            if actual.as_deref() != expected_leaf {
                return Ok(Staged::Abandon(AppendOutcome::Conflict {
                    actual_leaf: actual,
                }));
            }
            let id = txn.append(&entry, None, None)?.staged()?;
            Ok(Staged::Commit(AppendOutcome::Appended(id)))
        })
    }

    /// Appends several entries as a chain (each the child of the one before), atomically: after
    /// a crash either all of them are in the log or none is (up to 256 entries and 128 KiB
    /// are one log value, more one atomic batch; docs/format.md, "Batches"). Returns their ids.
    /// An entry object's `id` is used as [`Handle::append_with`] uses it. A batch whose every
    /// entry names the same entry stored under its id, as the same chain (a retry of a batch
    /// that was applied), answers their ids and writes nothing; a batch of which only some are
    /// stored is [`GroveError::InvalidArgument`] naming the first.
    pub(crate) fn append_many(&self, entries: &[NewEntry]) -> Result<Vec<String>> {
        transact(
            self,
            OpKind::AppendMany,
            self.inner.durability,
            None,
            |txn| {
                txn.reserve(entries.len());
                let appended = entries
                    .iter()
                    .map(|e| txn.append(e, None, None))
                    .collect::<Result<Vec<_>>>()?;
                let ids: Vec<String> = appended.iter().map(|a| a.id().to_owned()).collect();
                let stored = |(i, a): (usize, &Appended)| match a {
                    Appended::Stored { parent, .. } => {
                        i == 0 || parent.as_deref() == ids.get(i - 1).map(String::as_str)
                    }
                    Appended::New(_) => false,
                };
                if !appended.is_empty() && appended.iter().enumerate().all(stored) {
                    return Ok(Staged::Abandon(ids));
                }
                if let Some(Appended::Stored { id, .. }) = appended
                    .into_iter()
                    .find(|a| matches!(a, Appended::Stored { .. }))
                {
                    return Err(GroveError::InvalidArgument(format!(
                        "entry id {} is stored already, but not the whole batch: a batch is \
                         answered as stored only when all of its entries are, as one chain (a \
                         retry); give the new entries new ids",
                        grove_codec::ids::show_id(&id)
                    )));
                }
                Ok(Staged::Commit(ids))
            },
        )
    }

    /// Adds the label-index update of a `label` entry at `seq` (spec §6.1: trimmed; blank
    /// or non-string clears).
    /// The catalogue's label index gets the label too (`0x0B`, never removed by a later
    /// label: [`crate::core::keys::T_BY_LABEL`]).
    pub(crate) fn label_update(&self, batch: &mut WriteBatch, line: &str, target: &str, seq: u64) {
        let key = keys::label(self.sid, target);
        match crate::log::labels::label_value(line) {
            Some((_, label)) => {
                let text = crate::log::labels::label_text(&label);
                batch.put(keys::by_label(&text, self.id(), self.sid, seq), Vec::new());
                batch.put(key, record::encode(&LabelRecord { label, set_by: seq }));
            }
            None => batch.delete(key),
        }
    }

    /// Moves the leaf and, with `summary`, appends a branch summary at the target in the
    /// same atomic write (one log value, spec §7.1), then, with `label`, the label entry it
    /// makes from the summary's id. One operation of kind `op`. Returns the summary's id.
    pub(crate) fn move_to_with(
        &self,
        target: Option<&str>,
        summary: Option<&NewEntry>,
        label: Option<impl Fn(Option<&str>) -> NewEntry>,
        durability: Option<Durability>,
        op: OpKind,
        lease: LeaseCheck<'_>,
    ) -> Result<Option<String>> {
        let durability = durability.unwrap_or(self.inner.durability);
        transact(self, op, durability, Some(lease), |txn| {
            let target_seq = match target {
                None => None,
                Some(id) => Some(txn.require_entry(id)?),
            };
            txn.move_leaf(target_seq)?;
            let summary_id = match summary {
                None => None,
                Some(entry) => Some(txn.append(entry, None, None)?.staged()?),
            };
            if let Some(label) = &label {
                txn.append(&label(summary_id.as_deref()), None, None)?
                    .staged()?;
            }
            Ok(Staged::Commit(summary_id))
        })
    }
}
