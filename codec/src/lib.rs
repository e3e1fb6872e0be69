//! grove-codec: the entry model, the pi JSONL reader and writer, the binary record
//! encoding of the store, and the digest chain. Nothing here touches the file system:
//! readers take any `BufRead`, writers produce bytes.
//!
//! Invariant kept throughout: an entry's original JSON text is the source of truth. Typed
//! views ([`entry::Envelope`], [`fields`]) are parsed from it on demand and never written back,
//! so unknown entry types, unknown fields and unknown roles survive byte for byte.
#![forbid(unsafe_code)]

pub mod digest;
pub mod entry;
pub mod error;
pub mod fields;
pub mod foreign;
#[cfg(feature = "gen")]
pub mod gen;
pub mod header;
pub mod ids;
pub mod jsstr;
pub mod migrate;
pub mod op;
pub mod pack;
pub mod payload;
pub mod reader;
pub mod record;
pub mod redact;
pub mod shape;
pub mod splice;
pub mod text;
pub mod time;
pub mod writer;

pub use entry::{EntryKind, Envelope, Role};
pub use error::{CodecError, LineError};
pub use header::Header;
pub use ids::{check_id, IdError, MAX_ID_BYTES};
