//! SQLite as an agent store would use it: one row per log record in `entries(session, id,
//! parent_id, seq, type, json)` keyed by (session, id), an index on (session, parent_id),
//! the leaf in `sessions`; the path is a `WITH RECURSIVE` walk up the parent links, the
//! context the path rows through the same selection as pi. WAL journal, `synchronous =
//! NORMAL` (no fsync per commit), one transaction per operation.

use std::borrow::Cow;
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Deserialize;
use serde_json::Value;

use super::{context_messages, PathEntry};
use crate::Result;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions(
    id TEXT PRIMARY KEY, header TEXT NOT NULL, leaf TEXT, next_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
    session TEXT NOT NULL, id TEXT NOT NULL, parent_id TEXT, seq INTEGER NOT NULL,
    type TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (session, id));
CREATE INDEX IF NOT EXISTS entries_parent ON entries(session, parent_id);
";

const PATH: &str = "
WITH RECURSIVE path(id, parent_id, type, json) AS (
    SELECT id, parent_id, type, json FROM entries WHERE session = ?1 AND id = ?2
    UNION ALL
    SELECT e.id, e.parent_id, e.type, e.json FROM entries e JOIN path p
        ON e.session = ?1 AND e.id = p.parent_id
)
SELECT id, type, json FROM path";

const INSERT: &str = "
INSERT OR REPLACE INTO entries(session, id, parent_id, seq, type, json)
SELECT ?1, ?2, ?3, next_seq, ?4, ?5 FROM sessions WHERE id = ?1";

const ADVANCE: &str = "UPDATE sessions SET leaf = ?2, next_seq = next_seq + 1 WHERE id = ?1";

/// A path row: the JSON is parsed only when the selection needs it.
pub struct Row {
    id: String,
    kind: String,
    json: String,
}

impl<'a> PathEntry<'a> for Row {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> &str {
        &self.kind
    }

    fn value(&self) -> Result<Cow<'a, Value>> {
        Ok(Cow::Owned(serde_json::from_str(&self.json)?))
    }
}

/// The fields of a line the table needs.
#[derive(Deserialize)]
pub struct Envelope<'a> {
    /// `type`.
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    /// `id`.
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    /// `parentId`.
    #[serde(rename = "parentId", borrow, default)]
    pub parent_id: Option<Cow<'a, str>>,
    /// `targetId` (leaf lines).
    #[serde(rename = "targetId", borrow, default)]
    pub target_id: Option<Cow<'a, str>>,
}

impl Envelope<'_> {
    /// The leaf after this record.
    fn leaf_after(&self) -> Option<&str> {
        if self.kind == "leaf" {
            self.target_id.as_deref()
        } else {
            Some(&self.id)
        }
    }
}

/// A SQLite database of sessions.
pub struct SqliteStore {
    conn: Connection,
}

impl SqliteStore {
    /// Opens (or creates) the database file.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)?;
        Ok(SqliteStore { conn })
    }

    /// Imports a pi JSONL file in one transaction; returns the session id.
    pub fn import(&mut self, jsonl: &[u8]) -> Result<String> {
        let text = std::str::from_utf8(jsonl)?;
        let mut lines = text.split('\n').filter(|l| !l.trim().is_empty());
        let header_line = lines.next().ok_or("empty session file")?;
        let header: Value = serde_json::from_str(header_line)?;
        let session = header
            .get("id")
            .and_then(Value::as_str)
            .ok_or("header without id")?
            .to_owned();
        let tx = self.conn.transaction()?;
        let mut leaf: Option<String> = None;
        let mut seq: i64 = 0;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO entries(session, id, parent_id, seq, type, json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for line in lines {
                let e: Envelope<'_> = serde_json::from_str(line)?;
                insert.execute(params![session, e.id, e.parent_id, seq, e.kind, line])?;
                leaf = e.leaf_after().map(str::to_owned);
                seq += 1;
            }
        }
        tx.execute(
            "INSERT INTO sessions(id, header, leaf, next_seq) VALUES (?1, ?2, ?3, ?4)",
            params![session, header_line, leaf, seq],
        )?;
        tx.commit()?;
        Ok(session)
    }

    /// The active leaf of `session`.
    pub fn leaf(&self, session: &str) -> Result<Option<String>> {
        let leaf = self
            .conn
            .prepare_cached("SELECT leaf FROM sessions WHERE id = ?1")?
            .query_row([session], |r| r.get::<_, Option<String>>(0))
            .optional()?;
        Ok(leaf.flatten())
    }

    /// The root-first path rows to `leaf`.
    pub fn path(&self, session: &str, leaf: &str) -> Result<Vec<Row>> {
        let mut stmt = self.conn.prepare_cached(PATH)?;
        let mut rows: Vec<Row> = stmt
            .query_map([session, leaf], |r| {
                Ok(Row {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    json: r.get(2)?,
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        rows.reverse();
        Ok(rows)
    }

    /// The messages at the active leaf.
    pub fn build_context(&self, session: &str) -> Result<Vec<Value>> {
        let Some(leaf) = self.leaf(session)? else {
            return Ok(Vec::new());
        };
        let path = self.path(session, &leaf)?;
        Ok(context_messages(&path)?
            .into_iter()
            .map(Cow::into_owned)
            .collect())
    }

    fn insert_line(
        tx: &rusqlite::Transaction<'_>,
        session: &str,
        line: &str,
    ) -> Result<Option<String>> {
        let e: Envelope<'_> = serde_json::from_str(line)?;
        tx.prepare_cached(INSERT)?
            .execute(params![session, e.id, e.parent_id, e.kind, line])?;
        let leaf = e.leaf_after().map(str::to_owned);
        tx.prepare_cached(ADVANCE)?
            .execute(params![session, leaf])?;
        Ok(leaf)
    }

    /// Appends one line (an entry, or a leaf line that moves the leaf) in one transaction.
    pub fn append_line(&mut self, session: &str, line: &str) -> Result<()> {
        let tx = self.conn.transaction()?;
        Self::insert_line(&tx, session, line)?;
        tx.commit()?;
        Ok(())
    }

    /// Appends several lines in one transaction.
    pub fn append_lines(&mut self, session: &str, lines: &[String]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for line in lines {
            Self::insert_line(&tx, session, line)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Creates an empty session.
    pub fn create_session(&self, session: &str, header: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO sessions(id, header, leaf, next_seq) VALUES (?1, ?2, NULL, 0)",
            params![session, header],
        )?;
        Ok(())
    }

    /// Moves the WAL into the database file (before measuring its size).
    pub fn checkpoint(&self) -> Result<()> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }
}
