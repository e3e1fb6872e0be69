//! A straightforward JSONL session store, the way pi's session manager works: resuming
//! reads the whole file, parses every line into a `serde_json::Value`, builds an id map,
//! and walks parent links from the leaf to the root; writes append a line to the file and
//! keep the parsed entry in memory.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use serde_json::Value;

use super::context_messages;
use crate::Result;

/// An open session file with every entry parsed in memory.
pub struct JsonlStore {
    file: File,
    header: Value,
    entries: Vec<Value>,
    by_id: HashMap<String, usize>,
    leaf: Option<String>,
}

impl JsonlStore {
    /// Reads and parses the whole file (pi's `SessionManager` load).
    pub fn open(path: &Path) -> Result<JsonlStore> {
        let text = std::fs::read_to_string(path)?;
        let mut lines = text.split('\n').filter(|l| !l.trim().is_empty());
        let header: Value = serde_json::from_str(lines.next().ok_or("empty session file")?)?;
        let mut store = JsonlStore {
            file: OpenOptions::new().append(true).open(path)?,
            header,
            entries: Vec::new(),
            by_id: HashMap::new(),
            leaf: None,
        };
        for line in lines {
            store.add(serde_json::from_str(line)?);
        }
        Ok(store)
    }

    fn add(&mut self, entry: Value) {
        let id = entry.get("id").and_then(Value::as_str).map(str::to_owned);
        self.leaf = if entry.get("type").and_then(Value::as_str) == Some("leaf") {
            entry
                .get("targetId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        } else {
            id.clone()
        };
        if let Some(id) = id {
            self.by_id.insert(id, self.entries.len());
        }
        self.entries.push(entry);
    }

    /// The session id from the header.
    pub fn session_id(&self) -> Option<&str> {
        self.header.get("id").and_then(Value::as_str)
    }

    /// The active leaf.
    pub fn leaf(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Entries and leaf records held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the session has no records.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The root-first path to `leaf` (default: the active leaf).
    pub fn path(&self, leaf: Option<&str>) -> Vec<&Value> {
        let mut path = Vec::new();
        let mut cur = leaf.or(self.leaf.as_deref());
        while let Some(id) = cur {
            let Some(&i) = self.by_id.get(id) else { break };
            let entry = &self.entries[i];
            path.push(entry);
            if path.len() > self.entries.len() {
                break; // a cycle
            }
            cur = entry.get("parentId").and_then(Value::as_str);
        }
        path.reverse();
        path
    }

    /// The messages at the active leaf.
    pub fn build_context(&self) -> Result<Vec<Cow<'_, Value>>> {
        context_messages(&self.path(None))
    }

    /// Appends a line (an entry or a leaf line) to the file and to memory.
    pub fn append_line(&mut self, line: &str) -> Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.file.write_all(&bytes)?;
        self.add(serde_json::from_str(line)?);
        Ok(())
    }

    /// Appends several lines with one write.
    pub fn append_lines(&mut self, lines: &[String]) -> Result<()> {
        let mut bytes = Vec::new();
        for line in lines {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        self.file.write_all(&bytes)?;
        for line in lines {
            self.add(serde_json::from_str(line)?);
        }
        Ok(())
    }
}
