//! The session header line (spec §2.2).

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::entry::{present, string_field};
use crate::jsstr::quote;

/// A session header. `raw` is the exact line text grove re-emits on export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header line as it will be exported (original bytes, or migrated/created form).
    pub raw: String,
    /// The version the file declared (1 when absent); grove always exports version 3.
    pub source_version: u32,
    /// Session id.
    pub id: String,
    /// Creation timestamp string.
    pub timestamp: String,
    /// Working directory (`""` for legacy headers without one).
    pub cwd: String,
    /// `parentSession`, verbatim.
    pub parent_session: Option<String>,
    /// `metadata` as raw JSON object text.
    pub metadata: Option<String>,
}

#[derive(Deserialize)]
struct HeaderFields<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "present")]
    ty: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    kind: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    version: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    timestamp: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    cwd: Option<&'a RawValue>,
    #[serde(
        rename = "parentSession",
        default,
        borrow,
        deserialize_with = "present"
    )]
    parent_session: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    metadata: Option<&'a RawValue>,
}

const NOT_A_HEADER: &str = "first line is not a valid session header";

impl Header {
    /// Parses a header line. The error is pi's `invalid_session` reason.
    pub fn parse(text: &str) -> Result<Header, String> {
        if text.starts_with('\u{feff}') {
            return Err(format!("{NOT_A_HEADER} (the file starts with a UTF-8 BOM)"));
        }
        let fields: HeaderFields<'_> =
            serde_json::from_str(text).map_err(|_| NOT_A_HEADER.to_owned())?;
        if fields.kind.and_then(string_field).as_deref() == Some("header") {
            return Err("unsupported session version (pi ≥0.84 format)".to_owned());
        }
        if fields.ty.and_then(string_field).as_deref() != Some("session") {
            return Err(NOT_A_HEADER.to_owned());
        }
        let version = match fields.version {
            None => 1,
            // A JSON number equal to 1, 2 or 3 (JavaScript compares `3.0` equal to `3`).
            Some(v) => match v.get().parse::<f64>() {
                Ok(1.0) => 1,
                Ok(2.0) => 2,
                Ok(3.0) => 3,
                _ => return Err("unsupported session version".to_owned()),
            },
        };
        let id = fields.id.and_then(string_field).ok_or(NOT_A_HEADER)?;
        let text_field = |f: Option<&RawValue>| f.and_then(string_field).unwrap_or_default();
        let timestamp = text_field(fields.timestamp);
        let cwd = text_field(fields.cwd);
        if version == 3 {
            for (name, value) in [("id", &id), ("timestamp", &timestamp), ("cwd", &cwd)] {
                if value.is_empty() {
                    return Err(format!("session header is missing {name}"));
                }
            }
        }
        let parent_session = match fields.parent_session {
            None => None,
            Some(raw) => {
                Some(string_field(raw).ok_or("session header parentSession must be a string")?)
            }
        };
        let metadata = match fields.metadata {
            None => None,
            Some(raw) if raw.get().starts_with('{') => Some(raw.get().to_owned()),
            Some(_) => return Err("session header metadata must be an object".to_owned()),
        };
        Ok(Header {
            raw: text.to_owned(),
            source_version: version,
            id,
            timestamp,
            cwd,
            parent_session,
            metadata,
        })
    }

    /// A header grove creates: keys in the order `type, version, id, timestamp, cwd,
    /// parentSession, metadata` (spec §2.2). `metadata` must be JSON object text.
    pub fn create(
        id: &str,
        timestamp: &str,
        cwd: &str,
        parent_session: Option<&str>,
        metadata: Option<&str>,
    ) -> Header {
        let mut raw = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":{},\"timestamp\":{},\"cwd\":{}",
            quote(id),
            quote(timestamp),
            quote(cwd)
        );
        if let Some(p) = parent_session {
            raw.push_str(",\"parentSession\":");
            raw.push_str(&quote(p));
        }
        if let Some(m) = metadata {
            raw.push_str(",\"metadata\":");
            raw.push_str(m);
        }
        raw.push('}');
        Header {
            raw,
            source_version: 3,
            id: id.to_owned(),
            timestamp: timestamp.to_owned(),
            cwd: cwd.to_owned(),
            parent_session: parent_session.map(str::to_owned),
            metadata: metadata.map(str::to_owned),
        }
    }
}
