//! Redaction (`grove redact`, docs/design.md "Redaction"): values of an entry — or its whole
//! content — replaced by a marker in every read, the original bytes taken out of the log,
//! and the change recorded as an operation of its own.
//!
//! One transaction, under the session's writer lock, writes a leaf record that leaves the leaf
//! where it is and carries the redaction's note (the entry, the paths, the reason, the blake3
//! of what was removed and of the line before and after, [`RedactionNote`]), stamped as a
//! `redact` operation with its actor and time; then, in the same commit and after it, the log
//! value holding the entry's row rewritten with the redacted line (its node keeps its content
//! and chain digests, so nothing after it changes and seals stay checkable), the session's
//! materialized view rows deleted, and the label index mended when the entry set a label.
//! Payloads the old line referenced, old versions the backend keeps and the search index's
//! old words go at the next `gc` ([`crate::maintain::gc`]).
//!
//! May call: [`crate::context`] (the view cache), [`crate::log`], [`crate::core`],
//! [`crate::kv`].

use grove_codec::digest;
use grove_codec::op::OpKind;
use grove_codec::record::LabelRecord;
use grove_codec::redact::{self, RedactionNote};
use grove_codec::{EntryKind, Envelope};

use crate::context::views::Views;
use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::kv::{Durability, WriteBatch};
use crate::log::handle::Handle;
use crate::log::tip::Tip;
use crate::log::write::{transact, Staged};

/// One redaction, as [`crate::Session::redact`] made it or [`crate::Session::redactions`]
/// reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    /// The redacted entry.
    pub entry_id: String,
    /// The paths redacted (JSON pointers).
    pub paths: Vec<String>,
    /// Why.
    pub reason: String,
    /// blake3 (hex) of the removed values.
    pub removed: String,
    /// blake3 (hex) of the entry's line before this redaction.
    pub before: String,
    /// blake3 (hex) of its line after.
    pub after: String,
    /// The id of the leaf record that records it.
    pub record_id: String,
    /// Who made it (the operation's actor).
    pub actor: Option<String>,
    /// When (ms since the Unix epoch).
    pub time_ms: Option<u64>,
}

/// Redacts `entry` of `s`: the value at `path` (a JSON pointer), or with `None` its whole
/// content (module docs). Durable when it returns.
pub(crate) fn redact(
    s: &Handle,
    views: &Views,
    entry: &str,
    path: Option<&str>,
    reason: &str,
) -> Result<Redaction> {
    s.inner.check_writable()?;
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(GroveError::InvalidArgument(
            "a redaction needs a reason".to_owned(),
        ));
    }
    let made = transact(s, OpKind::Redact, Durability::Sync, None, |txn| {
        // Everything buffered reaches the backend first, so the log value holding the entry
        // is read, and rewritten, under the key it is stored at.
        s.inner.durable_commit(WriteBatch::new(), false)?;
        let seq = txn.require_entry(entry)?;
        let current = s.entry_at(seq)?;
        let redacted = redact::redact(&current.line, path).map_err(|e| {
            GroveError::InvalidArgument(format!("entry {entry} of session {}: {e}", s.id()))
        })?;
        if redacted.line == current.line {
            return Err(GroveError::InvalidArgument(format!(
                "entry {entry} of session {}: {} already redacted",
                s.id(),
                redacted.paths.join(", ")
            )));
        }
        let before = Envelope::parse(&current.line);
        let after = Envelope::parse(&redacted.line);
        let same = match (&before, &after) {
            (Ok(b), Ok(a)) => {
                a.kind == b.kind
                    && a.id == b.id
                    && a.parent_id == b.parent_id
                    && a.target_id == b.target_id
            }
            _ => false,
        };
        if !same {
            return Err(GroveError::InvalidArgument(format!(
                "entry {entry} of session {}: redacting {} would change what the tree reads",
                s.id(),
                redacted.paths.join(", ")
            )));
        }
        let note = RedactionNote {
            entry_id: entry.to_owned(),
            seq,
            paths: redacted.paths.clone(),
            reason: reason.to_owned(),
            removed: digest::hex(&redacted.removed),
            before: digest::hex(&digest::content_hash(current.line.as_bytes())),
            after: digest::hex(&digest::content_hash(redacted.line.as_bytes())),
        };
        let (record_id, record_seq) = txn.record_redaction(&note)?;
        let (key, value) = s.rewritten_value(seq, &redacted.line)?;
        txn.also_put(key, value);
        // The backend's files hold the old bytes until `grove gc` rewrites them; and a build
        // that would take a redacted line for damage no longer opens the store.
        txn.also_put(keys::meta(keys::META_REWRITE_DUE), Vec::new());
        txn.also_put(keys::meta(keys::META_FORMAT), keys::FORMAT_MARKER.to_vec());
        // The materialized view rows copy lines: gone (a cache, rebuilt from the log).
        let view = keys::session_prefix(keys::T_VIEW, s.sid);
        for pair in s.inner.kv.scan(&view, &keys::prefix_end(&view)) {
            txn.also_delete(pair?.0);
        }
        if current.node.kind == EntryKind::Label.tag() {
            // The catalogue's label index keys the label by its digest: that row goes too.
            if let Some((_, old)) = crate::log::labels::label_value(&current.line) {
                let text = crate::log::labels::label_text(&old);
                txn.also_delete(keys::by_label(&text, s.id(), s.sid, seq));
            }
            if let Some(target) = after.ok().and_then(|e| e.target_id) {
                let key = keys::label(s.sid, &target);
                let setter = s.inner.get::<LabelRecord>(&key)?.map(|r| r.set_by);
                if setter == Some(seq) {
                    let mut batch = WriteBatch::new();
                    s.label_update(&mut batch, &redacted.line, &target, seq);
                    for (k, v) in batch.into_ops() {
                        match v {
                            Some(v) => txn.also_put(k, v),
                            None => txn.also_delete(k),
                        }
                    }
                }
            }
        }
        Ok(Staged::Commit((note, record_id, record_seq)))
    })?;
    // What this process remembers of the session's lines and nodes goes with them.
    *s.logs.session_lock(s.sid).lock() = Tip::default();
    views.forget(s.sid);
    let (note, record_id, record_seq) = made;
    let (_, stamp) = crate::log::handle::decode_row_stamped(
        s.inner.kv.as_ref(),
        s.id(),
        record_seq,
        s.row(record_seq)?,
    )?;
    Ok(Redaction {
        entry_id: note.entry_id,
        paths: note.paths,
        reason: note.reason,
        removed: note.removed,
        before: note.before,
        after: note.after,
        record_id,
        actor: stamp.as_ref().map(|s| s.actor.clone()),
        time_ms: stamp.as_ref().map(|s| s.time_ms),
    })
}

/// The session's redactions, oldest first, each with its operation's actor and time.
pub(crate) fn redactions(s: &Handle) -> Result<Vec<Redaction>> {
    let found = s.redactions()?;
    let mut out: Vec<(u64, Redaction)> = Vec::new();
    for (_, notes) in found.iter() {
        for (record, note) in notes {
            let (entry, stamp) = crate::log::handle::decode_row_stamped(
                s.inner.kv.as_ref(),
                s.id(),
                *record,
                s.row(*record)?,
            )?;
            out.push((
                *record,
                Redaction {
                    entry_id: note.entry_id.clone(),
                    paths: note.paths.clone(),
                    reason: note.reason.clone(),
                    removed: note.removed.clone(),
                    before: note.before.clone(),
                    after: note.after.clone(),
                    record_id: entry.node.id.to_string(),
                    actor: stamp.as_ref().map(|s| s.actor.clone()),
                    time_ms: stamp.as_ref().map(|s| s.time_ms),
                },
            ));
        }
    }
    out.sort_by_key(|(seq, _)| *seq);
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

/// Finishes the redactions of `s` (`gc`): applies any whose row a crash left unrewritten (the
/// line still hashes to the note's `before`), and drops the session's materialized view rows
/// and cached view, which a reader may have persisted from a line read before the redaction.
/// Returns how many redactions it applied; a session without redactions costs one read of
/// its leaf history.
pub(crate) fn finish(s: &Handle, views: &Views) -> Result<u64> {
    let found = s.redactions()?;
    if found.is_empty() {
        return Ok(0);
    }
    let lock = s.logs.session_lock(s.sid);
    let mut tip = lock.lock();
    s.inner.durable_commit(WriteBatch::new(), false)?;
    let mut applied = 0;
    let mut batch = WriteBatch::new();
    for (seq, notes) in found.iter() {
        let current = s.entry_at(seq)?;
        let mut line = current.line.clone();
        for (_, note) in notes {
            if digest::hex(&digest::content_hash(line.as_bytes())) != note.before {
                continue;
            }
            let mut next = line.clone();
            for path in &note.paths {
                match redact::redact(&next, Some(path)) {
                    Ok(r) => next = r.line,
                    Err(_) => break,
                }
            }
            if digest::hex(&digest::content_hash(next.as_bytes())) == note.after {
                line = next;
                applied += 1;
            }
        }
        if line != current.line {
            let (key, value) = s.rewritten_value(seq, &line)?;
            batch.put(key, value);
        }
    }
    let view = keys::session_prefix(keys::T_VIEW, s.sid);
    for pair in s.inner.kv.scan(&view, &keys::prefix_end(&view)) {
        batch.delete(pair?.0);
    }
    if !batch.is_empty() {
        s.inner.durable_commit(batch, false)?;
    }
    *tip = Tip::default();
    drop(tip);
    views.forget(s.sid);
    Ok(applied)
}
