//! Tests of grove-codec: JavaScript string and date semantics, the header and entry rules of
//! spec §2, the streaming JSONL reader (strict, lenient, torn tails, §12), legacy migration
//! (§2.8), byte-exact round trips of the pi oracle fixtures, the canonical writer, the binary
//! records (with a golden-bytes pin) and the digest chain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod digest;
mod header;
mod jsstr;
mod line_limit;
mod migrate;
mod pack;
mod proptests;
mod reader;
mod record;
mod roundtrip;
mod span;
mod support;
mod time;
mod writer;
