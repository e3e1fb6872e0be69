//! Log rows built by hand, for the tests of the line checks (docs/format.md, "LogRow"): rows
//! as builds of store layout 8 and earlier wrote them (a version-1 node record, without the
//! CRC-32 of the line), layout-9 rows that claim a chosen CRC, and a rewrite of the rows a
//! session stores, wherever they lie (single rows, batches, log packs).

use grove::keys;
use grove::kv::WriteBatch;
use grove::Store;
use grove_codec::pack::{LogPack, LogPackWriter, LogValue};
use grove_codec::record::{self, FormatVersion, NodeRecord, CHECKSUM_LEN};

/// The log row a build of store layout 8 or earlier wrote for `node` and `line`:
/// `len:u32 BE ++ node record (version 1) ++ line`.
pub fn layout_8_row(node: &NodeRecord, line: &[u8]) -> Vec<u8> {
    framed(record::encode(node), line)
}

/// A layout-9 log row of `node` and `line` whose node record claims `crc` as the line's
/// CRC-32, right or wrong (under a valid record checksum).
pub fn row_claiming(node: &NodeRecord, crc: u32, line: &[u8]) -> Vec<u8> {
    let v1 = record::encode(node);
    let mut payload = vec![FormatVersion::V2 as u8];
    payload.extend_from_slice(&v1[1..v1.len() - CHECKSUM_LEN]);
    payload.extend_from_slice(&crc.to_le_bytes());
    let sum = crc32fast::hash(&payload).to_le_bytes();
    payload.extend_from_slice(&sum);
    framed(payload, line)
}

fn framed(node_record: Vec<u8>, line: &[u8]) -> Vec<u8> {
    let len = u32::try_from(node_record.len()).unwrap_or(u32::MAX);
    let mut row = len.to_be_bytes().to_vec();
    row.extend(node_record);
    row.extend_from_slice(line);
    row
}

/// Where a stored log value of a session lies.
enum Value {
    Row,
    Batch,
    Pack,
}

/// Rewrites the stored log rows of session `sid`: every row for which `edit` returns a new
/// one is replaced, in its single row, batch or log pack (whose table is rebuilt), through
/// the store's backend, then flushed. Returns how many rows were replaced.
pub fn rewrite_rows(
    store: &Store,
    sid: u64,
    mut edit: impl FnMut(&[u8]) -> Option<Vec<u8>>,
) -> Result<usize, String> {
    let mut batch = WriteBatch::new();
    let mut replaced = 0;
    for table in [keys::T_LOG, keys::T_LOG_PACK] {
        let start = keys::session_prefix(table, sid);
        for pair in store.kv().scan(&start, &keys::prefix_end(&start)) {
            let (key, value) = pair.map_err(|e| e.to_string())?;
            let (kind, rows): (Value, Vec<&[u8]>) = if table == keys::T_LOG_PACK {
                let pack = LogPack::parse(&value).map_err(|e| e.to_string())?;
                (
                    Value::Pack,
                    (0..pack.len()).filter_map(|i| pack.row(i)).collect(),
                )
            } else {
                match LogValue::parse(&value).map_err(|e| e.to_string())? {
                    LogValue::Row(row) => (Value::Row, vec![row]),
                    LogValue::Batch(pack) => (
                        Value::Batch,
                        (0..pack.len()).filter_map(|i| pack.row(i)).collect(),
                    ),
                }
            };
            let edited: Vec<Option<Vec<u8>>> = rows.iter().map(|row| edit(row)).collect();
            let count = edited.iter().filter(|e| e.is_some()).count();
            if count == 0 {
                continue;
            }
            replaced += count;
            let mut pack = LogPackWriter::new();
            for (row, new) in rows.iter().zip(&edited) {
                pack.push(new.as_deref().unwrap_or(row))
                    .map_err(|e| e.to_string())?;
            }
            let new_value = match kind {
                Value::Row => pack.take_row().unwrap_or_default(),
                Value::Batch => pack.take_batch(),
                Value::Pack => pack.take(),
            };
            batch.put(key, new_value);
        }
    }
    store.kv().apply(batch).map_err(|e| e.to_string())?;
    store.flush().map_err(|e| e.to_string())?;
    Ok(replaced)
}

/// Rewrites every row of session `sid` as a layout-8 build wrote it ([`layout_8_row`]) and
/// marks the store as layout 8, as if that build had written the session. Returns how many
/// rows were rewritten.
pub fn as_layout_8(store: &Store, sid: u64) -> Result<usize, String> {
    let rows = rewrite_rows(store, sid, |row| {
        let row = record::decode_log(row).ok()?;
        Some(layout_8_row(&row.node, row.line))
    })?;
    let mut batch = WriteBatch::new();
    batch.put(keys::meta(keys::META_FORMAT), LAYOUT_8_MARKER.to_vec());
    store.kv().apply(batch).map_err(|e| e.to_string())?;
    store.flush().map_err(|e| e.to_string())?;
    Ok(rows)
}

/// Rewrites every log row of session `sid` as store layout 9 wrote it (no operation stamps:
/// version-2 node records throughout) and sets the layout-9 marker. Returns the rows rewritten.
pub fn as_layout_9(store: &Store, sid: u64) -> Result<usize, String> {
    let rows = rewrite_rows(store, sid, |row| {
        let row = record::decode_log(row).ok()?;
        Some(record::encode_log(&row.node, row.line))
    })?;
    let mut batch = WriteBatch::new();
    batch.put(keys::meta(keys::META_FORMAT), b"grove\x00\x09".to_vec());
    store.kv().apply(batch).map_err(|e| e.to_string())?;
    store.flush().map_err(|e| e.to_string())?;
    Ok(rows)
}

/// The format marker of store layout 8 (docs/format.md, "Store metadata").
pub const LAYOUT_8_MARKER: &[u8] = b"grove\x00\x08";
