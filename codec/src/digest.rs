//! Digests. Each entry's content hash is blake3 of its stored line bytes; its chain digest
//! binds the content hash to the parent's chain digest under a domain tag, so the digest of
//! a leaf authenticates every entry on its path to the root.

use std::sync::LazyLock;

use blake3::hazmat::HasherExt;

/// A 32-byte blake3 digest.
pub type Digest = [u8; 32];

/// The domain tag of the entry chain (blake3 key-derivation context).
pub const CHAIN_CONTEXT: &str = "grove 2026-11 entry chain v1";

/// The chain digest that stands for "no parent".
pub const ROOT_PARENT: Digest = [0u8; 32];

/// blake3 of an entry's stored line bytes.
pub fn content_hash(line: &[u8]) -> Digest {
    *blake3::hash(line).as_bytes()
}

/// The chain digest of an entry: `derive_key(CHAIN_CONTEXT, parent_digest || content_hash)`.
pub fn chain(parent: &Digest, content: &Digest) -> Digest {
    // The context string's key, hashed once per process rather than once per entry.
    static CONTEXT_KEY: LazyLock<blake3::hazmat::ContextKey> =
        LazyLock::new(|| blake3::hazmat::hash_derive_key_context(CHAIN_CONTEXT));
    let mut h = blake3::Hasher::new_from_context_key(&CONTEXT_KEY);
    h.update(parent);
    h.update(content);
    *h.finalize().as_bytes()
}

/// Lowercase hex of a digest.
pub fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}
