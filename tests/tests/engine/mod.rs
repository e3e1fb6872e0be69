//! Engine behaviour: sessions, appends, leaf moves, paths, contexts, persistence, bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit;
mod bad_input;
mod basics;
mod batches;
mod buffered;
mod catalogue_index;
mod deep;
mod durability;
mod exact;
mod faulty;
mod fenced;
mod fork;
mod full_disk;
mod hostile;
mod id_runs;
mod index_packs;
mod input_limits;
mod keys;
mod line_limit;
mod listing;
mod lost_writes;
mod model;
mod navigate;
mod openai;
mod oplog;
mod packs;
mod payloads;
mod postgres;
mod proof;
mod read_checks;
mod redact;
mod redb;
mod reopen;
mod replay;
mod retain;
mod salvage;
mod search;
mod seed_questions;
mod sled_guard;
mod sled_scan;
mod streaming;
mod torn;
mod verify;
mod view_rows;
mod views;

use grove::{Backend, Durability, NewEntry, Session, StoreConfig};

/// A pi user message with one text block.
pub fn user(text: &str) -> NewEntry {
    NewEntry::Message {
        message: format!(
            r#"{{"role":"user","content":[{{"type":"text","text":{}}}],"timestamp":1}}"#,
            serde_json::to_string(text).unwrap()
        ),
    }
}

/// A pi assistant message with one text block.
pub fn assistant(text: &str) -> NewEntry {
    NewEntry::Message {
        message: format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":{}}}],"api":"a","provider":"p","model":"m","usage":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":2}}"#,
            serde_json::to_string(text).unwrap()
        ),
    }
}

/// The internal number of session `id`.
pub fn sid_of(store: &grove::Store, id: &str) -> u64 {
    let sid = store
        .kv()
        .get(&grove::keys::session_id(id))
        .unwrap()
        .unwrap();
    u64::from_be_bytes(sid.try_into().unwrap())
}

/// The texts of a context's messages (first text block or string content).
pub fn texts(session: &Session) -> Vec<String> {
    session
        .build_context()
        .unwrap()
        .messages
        .iter()
        .map(|m| {
            let v: serde_json::Value = serde_json::from_str(m).unwrap();
            match &v["content"] {
                serde_json::Value::String(s) => s.clone(),
                c => c[0]["text"].as_str().unwrap_or_default().to_owned(),
            }
        })
        .collect()
}

/// The seed scenario: user 1 → assistant 1 → plan A → assistant A; back to assistant 1;
/// plan B → assistant B. Returns the ids in that order.
pub fn seed(session: &Session) -> Vec<String> {
    let u1 = session.append(user("user 1")).unwrap();
    let a1 = session.append(assistant("assistant 1")).unwrap();
    let pa = session.append(user("plan A")).unwrap();
    let aa = session.append(assistant("assistant A")).unwrap();
    session.move_to(Some(&a1)).unwrap();
    let pb = session.append(user("plan B")).unwrap();
    let ab = session.append(assistant("assistant B")).unwrap();
    vec![u1, a1, pa, aa, pb, ab]
}

/// A sled (or, with `redb`, a redb) store in `dir` with sync durability.
pub fn sync_config(dir: &std::path::Path, redb: bool) -> StoreConfig {
    let backend = if redb {
        Backend::Redb(dir.to_owned())
    } else {
        Backend::Sled(dir.to_owned())
    };
    StoreConfig::new(dir)
        .backend(backend)
        .durability(Durability::Sync)
}
