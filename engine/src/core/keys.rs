//! Every key grove writes is built here, and docs/format.md documents each byte.
//!
//! A key is a one-byte table tag followed by big-endian integers (so that byte order is
//! numeric order) and, where a table is keyed by a string, the string's UTF-8 bytes last.
//! `sid` is a session's dense internal number, `seq` a record's position in its session log.

/// Store-wide metadata: `[0x00] ++ name`.
pub const T_META: u8 = 0x00;
/// Handle record: `[0x01][sid]`.
pub const T_SESSION: u8 = 0x01;
/// Handle head: `[0x02][sid]`.
pub const T_HEAD: u8 = 0x02;
/// Handle id index: `[0x03] ++ session id` → sid.
pub const T_SESSION_ID: u8 = 0x03;
/// Import in progress: `[0x04][sid]` → empty. Removed when the import publishes.
pub const T_PENDING: u8 = 0x04;
/// Packed records: `[0x05][sid]` → the number of leading log records stored in log packs
/// (u64 BE); absent when the session has none.
pub const T_PACKED: u8 = 0x05;
/// Persisted context view: `[0x06][sid]` → ViewRecord, then its materialized rows:
/// `[0x06][sid][chunk]` → [`grove_codec::record::ViewRowsRecord`], copies of log rows the
/// view reads, so that a cold resume of a path scattered over the log reads a few small values
/// instead of every pack the path passes through. Placed after the tables of small values
/// (`0x01`–`0x05`): sled pages hold up to 16 keys whatever their size, and a view sharing a
/// page with an id filter or packs would pull them in; only the table's last page can reach
/// the log (`0x10`). Layouts up to 6 kept the view record under `0x17`.
pub const T_VIEW: u8 = 0x06;
/// Lease: `[0x07][sid]` → [`grove_codec::record::LeaseRecord`], who holds the session (a
/// turn or a navigation). Written only in a store whose backend processes share; a store one
/// process holds keeps its leases in memory.
pub const T_LEASE: u8 = 0x07;
/// Session pin (`08 ++ sid`, empty): retention spares the session (`Store::set_pinned`).
pub const T_PIN: u8 = 0x08;
/// Catalogue index by working directory (layout 15): `09 ++ blake3(cwd)[..16] ++ session id
/// ++ 00 ++ sid`, empty; written with the catalogue row, removed when the session is.
pub const T_BY_CWD: u8 = 0x09;
/// Catalogue index by creation time (layout 15): `0A ++ ms ++ session id ++ 00 ++ sid`, empty,
/// where `ms` is the header timestamp in milliseconds since the epoch as an i64 with its
/// sign bit flipped, big-endian (so byte order is time order); absent when the timestamp does
/// not parse.
pub const T_BY_CREATED: u8 = 0x0A;
/// Catalogue index by label (layout 15): `0B ++ blake3(label)[..16] ++ session id ++ 00 ++
/// sid ++ seq`, empty: a label the `label` entry `seq` of the session set (trimmed, decoded).
/// Never rewritten when a later entry changes or clears the target's label: a superset of the
/// current labels, which a listing checks against the session's label index (`0x15`).
pub const T_BY_LABEL: u8 = 0x0B;
/// Catalogue index by last activity (layout 15): `0C ++ hour ++ session id ++ 00 ++ sid`,
/// empty, where `hour` is the session's last activity (its last record's timestamp, else its
/// creation) in whole hours since the epoch, an i64 with its sign bit flipped, big-endian.
/// Written when a session is created or imported and by the append that moves its activity
/// into another hour (which deletes the row of the hour before); a crash may leave a stale
/// row besides the current one: a superset, which a listing checks against the head, and
/// `gc` sweeps.
pub const T_BY_UPDATED: u8 = 0x0C;

/// Milliseconds in an hour: the unit of [`T_BY_UPDATED`].
pub const HOUR_MS: i64 = 3_600_000;
/// Log row (node record and line bytes): `[0x10][sid][seq]`, for records from the session's
/// packed count on. Tag `0x11` is unused (it held node records before format 2).
pub const T_LOG: u8 = 0x10;
/// Entry id rows of store layouts 2 and 3: `[0x12][sid] ++ entry id` → seq. Layout 4 keeps
/// the ids of appended records in id runs; opening an older store moves its rows there.
pub const T_ENTRY_ID: u8 = 0x12;
/// Children index: `[0x13][sid][parent seq | ROOT][child seq]` → empty.
pub const T_CHILD: u8 = 0x13;
/// Leaf history: `[0x14][sid][seq]` → empty, one per leaf record.
pub const T_LEAF_HISTORY: u8 = 0x14;
/// Current labels: `[0x15][sid] ++ target id` → LabelRecord.
pub const T_LABEL: u8 = 0x15;
/// Compactions: `[0x16][sid][seq]` → empty, one per compaction entry.
pub const T_COMPACTION: u8 = 0x16;

/// The persisted view of layouts up to 6, `[0x17][sid]`; opening such a store removes them.
pub const T_VIEW_OLD: u8 = 0x17;
/// Id packs: `[0x18][sid] ++ first id` → a sorted run of the entry-id index.
pub const T_ID_PACK: u8 = 0x18;
/// Log packs: `[0x19][sid][first seq]` → the log rows of records `first ..`, below the
/// session's packed count. A table of its own, so that appended rows do not join the sled page
/// of the session's last packs (sled rewrites a whole page, packs included, as rows are added
/// to it).
pub const T_LOG_PACK: u8 = 0x19;
/// Id filter: `[0x1A][sid]` → a Bloom filter of the ids in the session's id packs.
pub const T_ID_FILTER: u8 = 0x1A;

/// Id runs: `[0x1B][sid][first seq]` → [`grove_codec::pack::IdRunMeta`]: the run of the
/// ids of appended records `first .. end`, with its filter.
pub const T_ID_RUN: u8 = 0x1B;
/// Id-run packs: `[0x1C][sid][run first seq] ++ first id` → an id pack of that run.
pub const T_ID_RUN_PACK: u8 = 0x1C;
/// Children-index packs: `[0x1D][sid][first parent seq | ROOT][first child seq]` →
/// [`grove_codec::record::ChildPackRecord`]: the children-index rows of an imported session,
/// up to 1,024 to a value (appended entries write `0x13` rows). sled's open and page table grow
/// with the number of keys: a session with 10,000 branch points took 20,000 one-row keys here
/// and in the leaf history, two thirds of a 1,000,000-entry store's pages.
pub const T_CHILD_PACK: u8 = 0x1D;
/// Leaf-history packs: `[0x1E][sid][first seq]` → [`grove_codec::record::LeafPackRecord`]:
/// the leaf records of an imported session, up to 1,024 to a value.
pub const T_LEAF_PACK: u8 = 0x1E;

/// Payloads: `[0x20] ++ blake3 of the payload` → the payload's bytes: a large JSON string
/// value cut out of the lines that hold it, stored once for every session (docs/format.md,
/// "Payloads"). Store-wide, not per session: after the per-session tables.
pub const T_PAYLOAD: u8 = 0x20;
/// Store operation (`21 ++ n`, u64 BE from 0): an operation on the store as a whole, such as
/// a retention run (`StoreOpRecord`).
pub const T_STORE_OP: u8 = 0x21;

/// The children-index parent of root entries.
pub const ROOT: u64 = u64::MAX;

/// Every per-session table, for deletion and verification.
pub const SESSION_TABLES: [u8; 19] = [
    T_HEAD,
    T_LEASE,
    T_PIN,
    T_PENDING,
    T_PACKED,
    T_LOG,
    T_ENTRY_ID,
    T_CHILD,
    T_LEAF_HISTORY,
    T_LABEL,
    T_COMPACTION,
    T_VIEW,
    T_ID_PACK,
    T_LOG_PACK,
    T_ID_FILTER,
    T_ID_RUN,
    T_ID_RUN_PACK,
    T_CHILD_PACK,
    T_LEAF_PACK,
];

/// Store metadata name of the format marker.
pub const META_FORMAT: &[u8] = b"format";
/// Store metadata name of the durable-commit epoch (u64 BE; `crate::core::durable`).
pub const META_DURABLE: &[u8] = b"durable";
/// Store metadata name of the next session number.
pub const META_NEXT_SID: &[u8] = b"next_sid";
/// Present (empty) when a redaction was made since the store's files were last rewritten
/// (`grove gc`): the backend may still hold the redacted bytes in its free space.
pub const META_REWRITE_DUE: &[u8] = b"rewrite_due";
/// The format marker of this build's layout (15): layout 14 plus the catalogue indexes
/// (`0x09`–`0x0C`), which a build that does not write them would leave behind, so it must not
/// open the store (docs/format.md, "Version log").
pub const FORMAT_MARKER: &[u8] = b"grove\x00\x0f";

/// `[0x00] ++ name`.
pub fn meta(name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + name.len());
    k.push(T_META);
    k.extend_from_slice(name);
    k
}

fn tag_u64(tag: u8, a: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(9);
    k.push(tag);
    k.extend_from_slice(&a.to_be_bytes());
    k
}

fn tag_u64_u64(tag: u8, a: u64, b: u64) -> Vec<u8> {
    let mut k = tag_u64(tag, a);
    k.extend_from_slice(&b.to_be_bytes());
    k
}

fn tag_u64_bytes(tag: u8, a: u64, s: &[u8]) -> Vec<u8> {
    let mut k = tag_u64(tag, a);
    k.extend_from_slice(s);
    k
}

/// `[0x01][sid]`.
pub fn session(sid: u64) -> Vec<u8> {
    tag_u64(T_SESSION, sid)
}

/// `[0x02][sid]`.
pub fn head(sid: u64) -> Vec<u8> {
    tag_u64(T_HEAD, sid)
}

/// `[0x07][sid]`.
pub fn lease(sid: u64) -> Vec<u8> {
    tag_u64(T_LEASE, sid)
}

/// `08 ++ sid`: the session's pin.
pub fn pin(sid: u64) -> Vec<u8> {
    tag_u64(T_PIN, sid)
}

/// `21 ++ n`: store operation `n`.
pub fn store_op(n: u64) -> Vec<u8> {
    tag_u64(T_STORE_OP, n)
}

/// The 16-byte digest the catalogue indexes key a cwd or a label by.
fn text_key(text: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(&blake3::hash(text.as_bytes()).as_bytes()[..16]);
    out
}

/// The keys of sessions listed under `prefix` in a catalogue index: `prefix ++ id ++ 00 ++
/// sid` (`++ tail`).
fn catalogue_key(prefix: Vec<u8>, id: &str, sid: u64, tail: &[u8]) -> Vec<u8> {
    let mut k = prefix;
    k.extend_from_slice(id.as_bytes());
    k.push(0);
    k.extend_from_slice(&sid.to_be_bytes());
    k.extend_from_slice(tail);
    k
}

/// `09 ++ blake3(cwd)[..16]`: the sessions of one working directory.
pub fn by_cwd_prefix(cwd: &str) -> Vec<u8> {
    let mut k = vec![T_BY_CWD];
    k.extend_from_slice(&text_key(cwd));
    k
}

/// `09 ++ blake3(cwd)[..16] ++ id ++ 00 ++ sid`.
pub fn by_cwd(cwd: &str, id: &str, sid: u64) -> Vec<u8> {
    catalogue_key(by_cwd_prefix(cwd), id, sid, &[])
}

/// `0A ++ ms` (sign bit flipped, BE): where sessions created at `ms` start.
pub fn by_created_prefix(ms: i64) -> Vec<u8> {
    let mut k = vec![T_BY_CREATED];
    k.extend_from_slice(&((ms as u64) ^ (1 << 63)).to_be_bytes());
    k
}

/// `0A ++ ms ++ id ++ 00 ++ sid`.
pub fn by_created(ms: i64, id: &str, sid: u64) -> Vec<u8> {
    catalogue_key(by_created_prefix(ms), id, sid, &[])
}

/// `0C ++ hour` (sign bit flipped, BE): where sessions last active in that hour start.
pub fn by_updated_prefix(hour: i64) -> Vec<u8> {
    let mut k = vec![T_BY_UPDATED];
    k.extend_from_slice(&((hour as u64) ^ (1 << 63)).to_be_bytes());
    k
}

/// `0C ++ hour ++ id ++ 00 ++ sid`.
pub fn by_updated(hour: i64, id: &str, sid: u64) -> Vec<u8> {
    catalogue_key(by_updated_prefix(hour), id, sid, &[])
}

/// The hour of a `0C` key.
pub fn updated_hour(key: &[u8]) -> Option<i64> {
    let bytes: [u8; 8] = key.get(1..9)?.try_into().ok()?;
    Some((u64::from_be_bytes(bytes) ^ (1 << 63)) as i64)
}

/// `0B ++ blake3(label)[..16]`: the sessions an entry of which was labelled `label`.
pub fn by_label_prefix(label: &str) -> Vec<u8> {
    let mut k = vec![T_BY_LABEL];
    k.extend_from_slice(&text_key(label));
    k
}

/// `0B ++ blake3(label)[..16] ++ id ++ 00 ++ sid ++ seq`.
pub fn by_label(label: &str, id: &str, sid: u64, seq: u64) -> Vec<u8> {
    catalogue_key(by_label_prefix(label), id, sid, &seq.to_be_bytes())
}

/// The session id and number of a catalogue index key whose prefix is `prefix_len` bytes
/// long and whose key ends `tail_len` bytes after the sid.
pub fn catalogue_entry(key: &[u8], prefix_len: usize, tail_len: usize) -> Option<(String, u64)> {
    let end = key.len().checked_sub(tail_len)?;
    let sid_at = end.checked_sub(8)?;
    let sid = u64::from_be_bytes(key.get(sid_at..end)?.try_into().ok()?);
    let id_end = sid_at.checked_sub(1)?;
    if key.get(id_end) != Some(&0) || id_end < prefix_len {
        return None;
    }
    let id = String::from_utf8(key.get(prefix_len..id_end)?.to_vec()).ok()?;
    Some((id, sid))
}

/// `[0x03] ++ id`.
pub fn session_id(id: &str) -> Vec<u8> {
    let mut k = vec![T_SESSION_ID];
    k.extend_from_slice(id.as_bytes());
    k
}

/// `[0x04][sid]`.
pub fn pending(sid: u64) -> Vec<u8> {
    tag_u64(T_PENDING, sid)
}

/// `[0x05][sid]`.
pub fn packed(sid: u64) -> Vec<u8> {
    tag_u64(T_PACKED, sid)
}

/// `[0x10][sid][seq]`.
pub fn log(sid: u64, seq: u64) -> Vec<u8> {
    tag_u64_u64(T_LOG, sid, seq)
}

/// `[0x12][sid] ++ id`.
pub fn entry_id(sid: u64, id: &str) -> Vec<u8> {
    tag_u64_bytes(T_ENTRY_ID, sid, id.as_bytes())
}

/// `[0x20] ++ hash`.
pub fn payload(hash: &[u8; 32]) -> Vec<u8> {
    let mut k = Vec::with_capacity(33);
    k.push(T_PAYLOAD);
    k.extend_from_slice(hash);
    k
}

/// `[0x19][sid][first seq]`.
pub fn log_pack(sid: u64, first: u64) -> Vec<u8> {
    tag_u64_u64(T_LOG_PACK, sid, first)
}

/// `[0x1A][sid]`.
pub fn id_filter(sid: u64) -> Vec<u8> {
    tag_u64(T_ID_FILTER, sid)
}

/// `[0x18][sid] ++ first id`.
pub fn id_pack(sid: u64, first: &str) -> Vec<u8> {
    tag_u64_bytes(T_ID_PACK, sid, first.as_bytes())
}

/// `[0x1B][sid][first seq]`.
pub fn id_run(sid: u64, first: u64) -> Vec<u8> {
    tag_u64_u64(T_ID_RUN, sid, first)
}

/// `[0x1C][sid][run first seq]`: the prefix of one run's id packs.
pub fn id_run_packs(sid: u64, run: u64) -> Vec<u8> {
    tag_u64_u64(T_ID_RUN_PACK, sid, run)
}

/// `[0x1C][sid][run first seq] ++ first id`.
pub fn id_run_pack(sid: u64, run: u64, first: &str) -> Vec<u8> {
    let mut k = id_run_packs(sid, run);
    k.extend_from_slice(first.as_bytes());
    k
}

/// `[0x13][sid][parent][child]`; `parent` is [`ROOT`] for roots.
pub fn child(sid: u64, parent: u64, child: u64) -> Vec<u8> {
    let mut k = tag_u64_u64(T_CHILD, sid, parent);
    k.extend_from_slice(&child.to_be_bytes());
    k
}

/// `[0x1D][sid][first parent][first child]`.
pub fn child_pack(sid: u64, parent: u64, child: u64) -> Vec<u8> {
    let mut k = tag_u64_u64(T_CHILD_PACK, sid, parent);
    k.extend_from_slice(&child.to_be_bytes());
    k
}

/// `[0x1D][sid][parent]`: the prefix of the children-index packs that start with `parent`.
pub fn child_packs_of(sid: u64, parent: u64) -> Vec<u8> {
    tag_u64_u64(T_CHILD_PACK, sid, parent)
}

/// `[0x1E][sid][first seq]`.
pub fn leaf_pack(sid: u64, first: u64) -> Vec<u8> {
    tag_u64_u64(T_LEAF_PACK, sid, first)
}

/// The children-index row an entry needs, as its parent (or [`ROOT`]): none for shadowed
/// entries, and none for an entry that continues its parent's run (parent `seq − 1`), which
/// is the parent's implicit first child.
pub fn child_row(node: &grove_codec::record::NodeRecord, seq: u64) -> Option<u64> {
    use grove_codec::record::Parent;
    if node.shadowed {
        return None;
    }
    match node.parent {
        Parent::Seq(p) if p + 1 == seq => None,
        Parent::Seq(p) => Some(p),
        _ => Some(ROOT),
    }
}

/// `[0x13][sid][parent]`: the prefix of a parent's children.
pub fn children_of(sid: u64, parent: u64) -> Vec<u8> {
    tag_u64_u64(T_CHILD, sid, parent)
}

/// `[0x14][sid][seq]`.
pub fn leaf_history(sid: u64, seq: u64) -> Vec<u8> {
    tag_u64_u64(T_LEAF_HISTORY, sid, seq)
}

/// `[0x15][sid] ++ target id`.
pub fn label(sid: u64, target: &str) -> Vec<u8> {
    tag_u64_bytes(T_LABEL, sid, target.as_bytes())
}

/// `[0x16][sid][seq]`.
pub fn compaction(sid: u64, seq: u64) -> Vec<u8> {
    tag_u64_u64(T_COMPACTION, sid, seq)
}

/// `[0x17][sid]`.
pub fn view(sid: u64) -> Vec<u8> {
    tag_u64(T_VIEW, sid)
}

/// `[0x06][sid][chunk]`.
pub fn view_rows(sid: u64, chunk: u64) -> Vec<u8> {
    tag_u64_u64(T_VIEW, sid, chunk)
}

/// The key range of a session's materialized view rows.
pub fn view_rows_range(sid: u64) -> (Vec<u8>, Vec<u8>) {
    (view_rows(sid, 0), prefix_end(&session_prefix(T_VIEW, sid)))
}

/// `[tag][sid]`: the prefix of one session's rows in a table.
pub fn session_prefix(tag: u8, sid: u64) -> Vec<u8> {
    tag_u64(tag, sid)
}

/// The smallest key greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return end;
        }
    }
    vec![0xFF; prefix.len() + 1]
}

/// The trailing big-endian u64 of a key.
pub fn last_u64(key: &[u8]) -> Option<u64> {
    let start = key.len().checked_sub(8)?;
    let bytes: [u8; 8] = key[start..].try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

/// Decodes a big-endian u64 value.
pub fn u64_value(v: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = v.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

/// The string suffix of a key after `prefix_len` bytes.
pub fn string_suffix(key: &[u8], prefix_len: usize) -> Option<String> {
    String::from_utf8(key.get(prefix_len..)?.to_vec()).ok()
}
