//! The payload text: base64, payload names, sizes in range.

use super::*;
use rand::SeedableRng;

#[test]
fn base64_matches_known_vectors() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"M"), "TQ==");
    assert_eq!(base64(b"Ma"), "TWE=");
    assert_eq!(base64(b"Man"), "TWFu");
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    assert_eq!(base64_blob(&mut rng, 10).len(), 16);
}

#[test]
fn payloads_parse_by_name() {
    assert_eq!("small".parse::<Payload>(), Ok(Payload::Small));
    assert_eq!("realistic".parse::<Payload>(), Ok(Payload::Realistic));
    assert!("huge".parse::<Payload>().is_err());
}

#[test]
fn sizes_stay_in_range() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for _ in 0..1000 {
        let n = size(&mut rng, Payload::Realistic.tool_result());
        assert!((200..100_000).contains(&n));
        let t = text(&mut rng, &words(), 50);
        assert!(t.len() >= 50);
    }
}
