//! The seeded session generator, which lives in grove-codec (feature `gen`, shared with
//! `grove gen`), re-exported here under its old path, and what only the benchmarks need on top
//! of it: a generated session as the engine's append calls ([`AppendCalls`]). It calls the
//! codec's generator and the engine's public API.

use grove_codec::writer::NewEntry;

pub use grove_codec::gen::{
    generate, generate_to, GenSpec, GeneratedSession, Generator, Payload, Record, CWD,
};

/// A generated session as append calls: each entry with its generated id and timestamp, so
/// that grove stores exactly the generated lines.
pub struct AppendCalls {
    /// The session id.
    pub session_id: String,
    /// The header line.
    pub header: String,
    /// Each entry and the options that give it its generated id and timestamp.
    pub entries: Vec<(NewEntry, grove::AppendOptions)>,
    /// Every generated line (entries and any other records), in order.
    pub lines: Vec<String>,
}

impl AppendCalls {
    /// Generates `spec`.
    pub fn new(spec: &GenSpec) -> AppendCalls {
        let mut generator = Generator::new(spec);
        let session_id = generator.session_id().to_owned();
        let header = generator.header().to_owned();
        let mut entries = Vec::new();
        let mut lines = Vec::new();
        for record in &mut generator {
            let line = record.line();
            if let Record::Entry {
                id,
                timestamp,
                entry,
                ..
            } = record
            {
                let options = grove::AppendOptions {
                    id: Some(id),
                    timestamp: Some(timestamp),
                    durability: None,
                };
                entries.push((entry, options));
            }
            lines.push(line);
        }
        AppendCalls {
            session_id,
            header,
            entries,
            lines,
        }
    }
}
