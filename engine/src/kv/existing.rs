//! Which backend a store directory holds, read from the files in it.

use std::path::Path;

use super::redb_kv::REDB_FILE;

/// The backend whose files the directory `dir` holds ("sled" or "redb"), if any: `grove.redb`
/// is redb's database file; `conf` and `db` are sled's.
pub fn existing_backend(dir: &Path) -> Option<&'static str> {
    if dir.join(REDB_FILE).exists() {
        Some("redb")
    } else if dir.join("conf").exists() || dir.join("db").exists() {
        Some("sled")
    } else {
        None
    }
}
