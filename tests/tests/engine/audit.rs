//! Audit files: a session's records, operation log and digests in one file, optionally
//! signed with ed25519, checked without a store. Every fixture of the pi oracle (duplicate
//! ids, self parents, orphans, torn lines, lone surrogates...) exports and verifies; the seal
//! in the file is the session's; and every byte of a signed file, flipped one at a time, is
//! detected or the file refused.

use grove::{verify_audit, AuditKey, CreateSession, GroveError, ImportOptions, Store};

use super::{assistant, user};
use crate::cli::fixture;

fn audit(s: &grove::Session, key: Option<&AuditKey>) -> Vec<u8> {
    let mut out = Vec::new();
    let seal = s.export_audit(&mut out, key).unwrap();
    assert_eq!(seal, s.seal().unwrap().digest);
    out
}

#[test]
fn every_oracle_fixture_exports_an_audit_file_that_verifies() {
    let store = Store::in_memory().unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(fixture("")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let options = ImportOptions {
            strictness: grove::Strictness::Lenient,
            ..ImportOptions::default()
        };
        let Ok(report) = store.import_file(&path, options) else {
            continue;
        };
        let s = store.session(&report.session).unwrap();
        let file = audit(&s, None);
        let got = verify_audit(&file, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(got.seal, s.seal().unwrap().digest, "{}", path.display());
        assert_eq!(got.records, s.log().count() as u64);
        assert_eq!(got.signed_by, None);
        checked += 1;
    }
    assert!(checked >= 20, "{checked} fixtures");
}

#[test]
fn a_signed_file_names_its_key_and_refuses_any_other() {
    let store = Store::in_memory().unwrap().with_actor("auditor");
    let s = store.create_session(CreateSession::default()).unwrap();
    let a = s.append(user("one")).unwrap();
    s.append(assistant("two")).unwrap();
    s.move_to(Some(&a)).unwrap();
    s.set_label(&a, Some("start")).unwrap();
    let key = AuditKey::generate().unwrap();
    let again = AuditKey::parse(&format!("  {}\n", key.to_hex())).unwrap();
    assert_eq!(again.public_hex(), key.public_hex());
    assert!(matches!(
        AuditKey::parse("xyz"),
        Err(GroveError::InvalidArgument(_))
    ));
    let file = audit(&s, Some(&key));
    let text = String::from_utf8(file.clone()).unwrap();
    assert!(text.contains(r#""op":{"kind":"move","timeMs":"#), "{text}");
    assert!(text.contains(r#""actor":"auditor""#));
    let report = verify_audit(&file, Some(&key.public_hex())).unwrap();
    assert_eq!(report.signed_by.as_deref(), Some(key.public_hex().as_str()));
    assert_eq!(report.operations, 4);
    assert_eq!(report.records, 4);
    verify_audit(&file, None).unwrap();
    let other = AuditKey::generate().unwrap();
    let err = verify_audit(&file, Some(&other.public_hex())).unwrap_err();
    assert!(err.to_string().contains("another key"), "{err}");
    // An unsigned file is refused when a key is required.
    let unsigned = audit(&s, None);
    assert!(verify_audit(&unsigned, Some(&key.public_hex())).is_err());
    // A file re-signed by another key after an edit verifies only against that key.
    let forged = audit(&s, Some(&other));
    assert!(verify_audit(&forged, Some(&key.public_hex())).is_err());
}

#[test]
fn every_flipped_byte_of_an_audit_file_is_detected_or_refused() {
    let store = Store::in_memory().unwrap();
    let s = store
        .create_session(CreateSession {
            id: Some("flip".into()),
            ..CreateSession::default()
        })
        .unwrap();
    let a = s.append(user("a \"quoted\" \\ text é")).unwrap();
    s.append_many(&[assistant("two"), user("three")]).unwrap();
    s.move_to(Some(&a)).unwrap();
    s.set_name("flipped").unwrap();
    for (key, label) in [
        (Some(AuditKey::generate().unwrap()), "signed"),
        (None, "unsigned"),
    ] {
        let file = audit(&s, key.as_ref());
        let public = key.as_ref().map(AuditKey::public_hex);
        verify_audit(&file, public.as_deref()).unwrap();
        for mask in [0xFFu8, 0x01, 0x20] {
            for i in 0..file.len() {
                let mut bad = file.clone();
                bad[i] ^= mask;
                assert!(
                    verify_audit(&bad, public.as_deref()).is_err(),
                    "{label}: byte {i} ^ {mask:#x} ({:?} -> {:?}) went undetected",
                    file[i] as char,
                    bad[i] as char
                );
            }
        }
        // Truncated anywhere, or with a line dropped, it is refused too.
        for cut in (0..file.len()).step_by(7) {
            assert!(verify_audit(&file[..cut], public.as_deref()).is_err());
        }
    }
}
