//! Signatures of audit files: an ed25519 key ([`AuditKey`]) signs a file, and a signed file's
//! signature is checked against the public key it names ([`verify`]).
//!
//! ed25519 is the `audit-sign` feature, on by default. Built without it, no [`AuditKey`] can
//! be made and a signed file's signature cannot be checked: both are refused with
//! [`GroveError::InvalidArgument`] naming the feature, while unsigned audit files are written
//! and verified as usual.
//!
//! May call: [`crate::core`].

use crate::core::error::{GroveError, Result};
#[cfg(feature = "audit-sign")]
use crate::core::util;

/// An ed25519 signing key, read from a key file: 64 hex digits (the 32-byte secret seed).
#[cfg(feature = "audit-sign")]
pub struct AuditKey(ed25519_dalek::SigningKey);

/// An ed25519 signing key. This build has no ed25519 (the `audit-sign` feature): no key can
/// be made, and [`AuditKey::generate`] and [`AuditKey::parse`] say so.
#[cfg(not(feature = "audit-sign"))]
pub struct AuditKey(std::convert::Infallible);

#[cfg(feature = "audit-sign")]
impl AuditKey {
    /// A new random key.
    pub fn generate() -> Result<AuditKey> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| GroveError::InvalidState(format!("no randomness for a key: {e}")))?;
        Ok(AuditKey(ed25519_dalek::SigningKey::from_bytes(&seed)))
    }

    /// Parses a key file's text (64 hex digits, surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<AuditKey> {
        let seed = util::unhex::<32>(text.trim()).ok_or_else(|| {
            GroveError::InvalidArgument(
                "a signing key file holds 64 hex digits (the ed25519 secret seed)".into(),
            )
        })?;
        Ok(AuditKey(ed25519_dalek::SigningKey::from_bytes(&seed)))
    }

    /// The key file's text.
    pub fn to_hex(&self) -> String {
        util::hex(&self.0.to_bytes())
    }

    /// The public key, as 64 hex digits.
    pub fn public_hex(&self) -> String {
        util::hex(self.0.verifying_key().as_bytes())
    }

    /// The signature of `message`, as 128 hex digits.
    pub(crate) fn sign_hex(&self, message: &[u8]) -> String {
        use ed25519_dalek::Signer;
        util::hex(&self.0.sign(message).to_bytes())
    }
}

#[cfg(not(feature = "audit-sign"))]
impl AuditKey {
    /// Refused: this build cannot sign.
    pub fn generate() -> Result<AuditKey> {
        Err(no_ed25519("a signing key"))
    }

    /// Refused: this build cannot sign.
    pub fn parse(_text: &str) -> Result<AuditKey> {
        Err(no_ed25519("a signing key"))
    }

    /// The key file's text (no key exists in this build).
    pub fn to_hex(&self) -> String {
        match self.0 {}
    }

    /// The public key (no key exists in this build).
    pub fn public_hex(&self) -> String {
        match self.0 {}
    }

    pub(crate) fn sign_hex(&self, _message: &[u8]) -> String {
        match self.0 {}
    }
}

/// Checks that `signature` (128 hex digits) signs `message` by `public` (64 hex digits);
/// what is wrong with either is reported through `bad`.
#[cfg(feature = "audit-sign")]
pub(crate) fn verify(
    public: &str,
    signature: &str,
    message: &[u8],
    bad: impl Fn(String) -> GroveError,
) -> Result<()> {
    use ed25519_dalek::Verifier;
    let key_bytes = util::unhex::<32>(public)
        .ok_or_else(|| bad("the public key is not 64 hex digits".into()))?;
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key_bytes)
        .map_err(|e| bad(format!("the public key is not an ed25519 key: {e}")))?;
    let signature = util::unhex::<64>(signature)
        .ok_or_else(|| bad("the signature is not 128 hex digits".into()))?;
    key.verify(message, &ed25519_dalek::Signature::from_bytes(&signature))
        .map_err(|_| bad("the signature does not verify".into()))
}

/// Refused: this build cannot check a signature.
#[cfg(not(feature = "audit-sign"))]
pub(crate) fn verify(
    _public: &str,
    _signature: &str,
    _message: &[u8],
    _bad: impl Fn(String) -> GroveError,
) -> Result<()> {
    Err(no_ed25519("checking a signed audit file"))
}

/// The refusal of a build without ed25519.
#[cfg(not(feature = "audit-sign"))]
fn no_ed25519(what: &str) -> GroveError {
    GroveError::InvalidArgument(format!(
        "{what} needs ed25519, and this grove was built without the audit-sign feature"
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// With ed25519, a key survives its key file and signs what `verify` accepts, and nothing
    /// else: another message, another key, a malformed key or signature.
    #[cfg(feature = "audit-sign")]
    #[test]
    fn a_key_signs_what_verify_accepts_and_nothing_else() {
        let key = AuditKey::generate().unwrap();
        let again = AuditKey::parse(&format!("  {}\n", key.to_hex())).unwrap();
        assert_eq!(again.public_hex(), key.public_hex());
        let signature = key.sign_hex(b"message");
        let bad = |reason: String| GroveError::InvalidArgument(reason);
        verify(&key.public_hex(), &signature, b"message", bad).unwrap();
        let other = AuditKey::generate().unwrap();
        for (public, signature, message) in [
            (key.public_hex(), signature.clone(), &b"massage"[..]),
            (other.public_hex(), signature.clone(), &b"message"[..]),
            (
                key.public_hex().to_uppercase(),
                signature.clone(),
                &b"message"[..],
            ),
            (
                key.public_hex(),
                signature[..126].to_owned(),
                &b"message"[..],
            ),
        ] {
            assert!(verify(&public, &signature, message, bad).is_err());
        }
        assert!(AuditKey::parse("00").is_err());
    }

    /// Without ed25519, making a key and checking a signature are refused by name.
    #[cfg(not(feature = "audit-sign"))]
    #[test]
    fn without_ed25519_keys_and_signatures_are_refused_by_name() {
        let refused = |r: Result<()>| match r {
            Err(GroveError::InvalidArgument(m)) => assert!(m.contains("audit-sign"), "{m}"),
            other => panic!("not refused: {other:?}"),
        };
        refused(AuditKey::generate().map(|_| ()));
        refused(AuditKey::parse(&"0".repeat(64)).map(|_| ()));
        let bad = |reason: String| GroveError::InvalidArgument(reason);
        refused(verify(&"0".repeat(64), &"0".repeat(128), b"m", bad));
    }
}
