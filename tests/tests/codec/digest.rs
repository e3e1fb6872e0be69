//! `grove_codec::digest`: content hashes and the entry chain.

use grove_codec::digest::{chain, content_hash, hex, Digest, CHAIN_CONTEXT, ROOT_PARENT};

#[test]
fn content_hash_is_blake3_of_the_bytes() {
    // Published BLAKE3 test vectors.
    assert_eq!(
        hex(&content_hash(b"")),
        "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
    );
    assert_eq!(
        hex(&content_hash(b"abc")),
        "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
    );
    let line = br#"{"type":"message","id":"a","parentId":null,"timestamp":"t"}"#;
    assert_eq!(content_hash(line), *blake3::hash(line).as_bytes());
    // The stored bytes, not a parsed form: a trailing CR changes the hash.
    let mut with_cr = line.to_vec();
    with_cr.push(b'\r');
    assert_ne!(content_hash(line), content_hash(&with_cr));
}

#[test]
fn chain_is_derive_key_over_parent_then_content() {
    let parent: Digest = [7; 32];
    let content = content_hash(b"entry");
    let mut input = parent.to_vec();
    input.extend_from_slice(&content);
    assert_eq!(
        chain(&parent, &content),
        blake3::derive_key(CHAIN_CONTEXT, &input)
    );
    assert_eq!(CHAIN_CONTEXT, "grove 2026-11 entry chain v1");
    assert_eq!(ROOT_PARENT, [0; 32]);
}

#[test]
fn chain_golden_value() {
    // Pins the chain so that a change of context string or input order is noticed.
    let root = chain(&ROOT_PARENT, &content_hash(b""));
    assert_eq!(
        hex(&root),
        hex(&blake3::derive_key(
            "grove 2026-11 entry chain v1",
            &[[0u8; 32], *blake3::hash(b"").as_bytes()].concat()
        ))
    );
    assert_ne!(
        root,
        content_hash(b""),
        "the chain is not the plain content hash"
    );
}

#[test]
fn chain_changes_with_parent_and_content() {
    let a = content_hash(b"a");
    let b = content_hash(b"b");
    let root_a = chain(&ROOT_PARENT, &a);
    let root_b = chain(&ROOT_PARENT, &b);
    assert_ne!(root_a, root_b, "content changes the chain");
    let under_a = chain(&root_a, &b);
    let under_b = chain(&root_b, &b);
    assert_ne!(under_a, under_b, "the parent changes the chain");
    assert_ne!(
        under_a, root_b,
        "a root and a child with the same content differ"
    );
    assert_ne!(chain(&a, &b), chain(&b, &a), "the inputs are ordered");
    assert_eq!(chain(&root_a, &b), under_a, "deterministic");

    // A change anywhere on a path changes the leaf digest.
    let path = [b"u1".as_slice(), b"a1", b"u2", b"a2"];
    let fold = |lines: &[&[u8]]| {
        lines
            .iter()
            .fold(ROOT_PARENT, |d, l| chain(&d, &content_hash(l)))
    };
    let leaf = fold(&path);
    for i in 0..path.len() {
        let mut changed = path;
        changed[i] = b"xx";
        assert_ne!(fold(&changed), leaf, "changing entry {i}");
    }
}

#[test]
fn hex_is_lowercase_and_64_chars() {
    let mut d: Digest = [0; 32];
    d[0] = 0xAB;
    d[31] = 0x0F;
    let h = hex(&d);
    assert_eq!(h.len(), 64);
    assert!(h.starts_with("ab00"));
    assert!(h.ends_with("000f"));
    assert_eq!(h, h.to_lowercase());
}
