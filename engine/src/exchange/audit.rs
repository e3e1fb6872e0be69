//! Audit files (`grove export --audit`, `grove verify --file`): one self-contained file with a
//! session's records, its operation log and the digests that bind them, optionally signed
//! with an ed25519 key ([`signing`], the `audit-sign` feature), checked later without a store.
//!
//! The file is JSON lines in one canonical form (docs/format.md, "Audit file"): a header line,
//! one line per record (its sequence number, chain digest, content digest, operation stamp
//! when it begins one, and the entry line exactly as stored), and a trailer with the session's
//! seal, the blake3 of every byte before the trailer and, when signed, the public key and the
//! signature. [`verify_audit`] re-renders every line it parses and refuses any byte that
//! differs from the canonical form, recomputes every content digest, every chain digest it
//! can derive from the file, the seal and the file digest, and checks the signature: any
//! change to the file is either detected or refused.
//!
//! This room reads a session through `Handle::walk_log` and the seal of `oplog`; it writes
//! only to the writer it is given.

use std::collections::HashMap;
use std::io::Write;

use grove_codec::digest::{self, Digest};
use grove_codec::op::{OpKind, OpStamp};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::core::error::{GroveError, Result};
use crate::core::util;
use crate::exchange::signing::{self, AuditKey};
use crate::log::handle::Handle;
use crate::ops::oplog;
use crate::ops::oplog::{seal_next, seal_start, seal_step, Contents};

/// The format version written in the header line.
pub const AUDIT_VERSION: u64 = 1;

/// What the signature signs: this context, the file digest and the seal.
const SIGN_CONTEXT: &[u8] = b"grove audit v1\0";

/// What an audit file holds, once verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditReport {
    /// The session id.
    pub session: String,
    /// Records in the file.
    pub records: u64,
    /// Operations in the file.
    pub operations: u64,
    /// The session's seal, recomputed (equal to the file's).
    pub seal: String,
    /// The public key that signed the file (hex), when it is signed.
    pub signed_by: Option<String>,
    /// The records whose lines were redacted, each with the record of the last redaction
    /// that explains it (positions in the session log).
    pub redacted: Vec<(u64, u64)>,
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn header_line(session: &str, records: u64, operations: u64, header: &str) -> String {
    format!(
        "{{\"groveAudit\":{AUDIT_VERSION},\"session\":{},\"records\":{records},\"operations\":{operations},\"header\":{header}}}",
        json_str(session)
    )
}

fn record_line(
    seq: u64,
    chain: &Digest,
    content: &Digest,
    redacted: Option<&Digest>,
    op: Option<&OpStamp>,
    line: &str,
) -> String {
    let redacted = match redacted {
        None => String::new(),
        Some(d) => format!(",\"redacted\":\"{}\"", digest::hex(d)),
    };
    let op = match op {
        None => String::new(),
        Some(stamp) => format!(
            ",\"op\":{{\"kind\":{},\"timeMs\":{},\"actor\":{}}}",
            json_str(stamp.kind().unwrap_or(OpKind::Legacy).name()),
            stamp.time_ms,
            json_str(&stamp.actor)
        ),
    };
    format!(
        "{{\"seq\":{seq},\"digest\":\"{}\",\"content\":\"{}\"{redacted}{op},\"line\":{line}}}",
        digest::hex(chain),
        digest::hex(content)
    )
}

fn trailer_line(seal: &str, file_digest: &str, signature: Option<(&str, &str)>) -> String {
    match signature {
        None => format!("{{\"seal\":\"{seal}\",\"fileDigest\":\"{file_digest}\"}}"),
        Some((public, sig)) => format!(
            "{{\"seal\":\"{seal}\",\"fileDigest\":\"{file_digest}\",\"publicKey\":\"{public}\",\"signature\":\"{sig}\"}}"
        ),
    }
}

fn signed_message(file_digest: &Digest, seal: &Digest) -> Vec<u8> {
    let mut m = SIGN_CONTEXT.to_vec();
    m.extend_from_slice(file_digest);
    m.extend_from_slice(seal);
    m
}

/// A writer that hashes what goes through it.
struct Hashing<'w> {
    out: &'w mut dyn Write,
    hasher: blake3::Hasher,
}

impl Hashing<'_> {
    fn line(&mut self, text: &str) -> std::io::Result<()> {
        self.hasher.update(text.as_bytes());
        self.hasher.update(b"\n");
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")
    }
}

/// Writes the session's audit file to `out` (signed with `key` when given) and returns
/// its seal. The records are read twice: once to count them, once to write them, so the
/// memory it takes is one record.
pub(crate) fn export_audit(
    s: &Handle,
    out: &mut dyn Write,
    key: Option<&AuditKey>,
) -> Result<String> {
    let io = |e: std::io::Error| GroveError::Io {
        path: "audit file".into(),
        source: e,
    };
    let (mut records, mut operations) = (0u64, 0u64);
    oplog::walk_log(s, |step| {
        operations += u64::from(step.stamp.is_some() || records == 0);
        records += 1;
        Ok(())
    })?;
    let mut w = Hashing {
        out,
        hasher: blake3::Hasher::new(),
    };
    let header = &s.record().header;
    w.line(&header_line(s.id(), records, operations, header))
        .map_err(io)?;
    let mut seal = seal_start(s.id(), header);
    let mut written = 0u64;
    let mut contents = Contents::of(s);
    oplog::walk_log(s, |step| {
        if written == records {
            // Records appended while the file was written stay out of it.
            return Ok(());
        }
        let line = std::str::from_utf8(step.line)
            .map_err(|_| GroveError::Corrupt(format!("record {} is not UTF-8", step.seq)))?;
        let (content, redacted) = contents.content(&step)?;
        if content != step.node.content {
            return Err(GroveError::Corrupt(format!(
                "session {}, entry {} (record {}): the stored line does not match its \
                 content hash",
                s.id(),
                step.node.id,
                step.seq
            )));
        }
        let now = redacted.map(|_| digest::content_hash(step.line));
        w.line(&record_line(
            step.seq,
            &step.node.digest,
            &content,
            now.as_ref(),
            step.stamp,
            line,
        ))
        .map_err(io)?;
        seal = seal_step(&seal, &step, &content);
        written += 1;
        Ok(())
    })?;
    let file_digest = *w.hasher.finalize().as_bytes();
    let signature = key.map(|k| {
        let signature = k.sign_hex(&signed_message(&file_digest, &seal));
        (k.public_hex(), signature)
    });
    let seal_hex = digest::hex(&seal);
    let trailer = trailer_line(
        &seal_hex,
        &digest::hex(&file_digest),
        signature.as_ref().map(|(p, s)| (p.as_str(), s.as_str())),
    );
    w.out.write_all(trailer.as_bytes()).map_err(io)?;
    w.out.write_all(b"\n").map_err(io)?;
    Ok(seal_hex)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderJson<'a> {
    #[serde(rename = "groveAudit")]
    version: u64,
    session: String,
    records: u64,
    operations: u64,
    #[serde(borrow)]
    header: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpJson {
    kind: String,
    #[serde(rename = "timeMs")]
    time_ms: u64,
    actor: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordJson<'a> {
    seq: u64,
    digest: String,
    content: String,
    redacted: Option<String>,
    op: Option<OpJson>,
    #[serde(borrow)]
    line: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrailerJson {
    seal: String,
    #[serde(rename = "fileDigest")]
    file_digest: String,
    #[serde(rename = "publicKey")]
    public_key: Option<String>,
    signature: Option<String>,
}

/// The minimal fields of an entry line the chain digest needs.
#[derive(Deserialize)]
struct EntryIds {
    #[serde(rename = "type")]
    kind: Option<String>,
    id: Option<String>,
    #[serde(rename = "parentId")]
    parent_id: Option<String>,
}

/// Checks an audit file without a store (`grove verify --file`). With `public_key` (64 hex
/// digits) the file must be signed by that key; without it, a signed file's signature is
/// checked against the key it names. Any byte that differs from what the file's own contents
/// imply is refused with `InvalidSession`, naming the line.
pub fn verify_audit(bytes: &[u8], public_key: Option<&str>) -> Result<AuditReport> {
    let bad = |line: usize, reason: String| GroveError::InvalidSession {
        file: None,
        reason: format!("audit file, line {line}: {reason}"),
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|e| bad(0, format!("not UTF-8 (byte {})", e.valid_up_to())))?;
    let body = text
        .strip_suffix('\n')
        .ok_or_else(|| bad(0, "it does not end with a line feed".into()))?;
    let lines: Vec<&str> = body.split('\n').collect();
    if lines.len() < 2 {
        return Err(bad(1, "a header line and a trailer are required".into()));
    }
    let canonical = |n: usize, given: &str, rendered: &str| {
        if given == rendered {
            Ok(())
        } else {
            Err(bad(n, "not in the canonical form grove writes".into()))
        }
    };
    let json = |n: usize, e: serde_json::Error| bad(n, format!("not the expected JSON: {e}"));
    // Header.
    let head: HeaderJson = serde_json::from_str(lines[0]).map_err(|e| json(1, e))?;
    if head.version != AUDIT_VERSION {
        return Err(bad(1, format!("audit format {} is unknown", head.version)));
    }
    canonical(
        1,
        lines[0],
        &header_line(
            &head.session,
            head.records,
            head.operations,
            head.header.get(),
        ),
    )?;
    if lines.len() as u64 != head.records + 2 {
        return Err(bad(
            lines.len(),
            format!(
                "the header announces {} records; the file holds {}",
                head.records,
                lines.len().saturating_sub(2)
            ),
        ));
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(lines[0].as_bytes());
    hasher.update(b"\n");
    let mut seal = seal_start(&head.session, head.header.get());
    let mut operations = 0u64;
    // First every record line, checked on its own; then the chain digests, which may name a
    // parent further down (an import resolves a parent id to its last occurrence).
    struct Checked {
        chain: Digest,
        content: Digest,
        ids: EntryIds,
    }
    let record_lines = &lines[1..lines.len() - 1];
    let mut checked: Vec<Checked> = Vec::with_capacity(record_lines.len());
    // Redaction notes (record, note) and the redacted records they must explain.
    let mut notes: Vec<(usize, grove_codec::redact::RedactionNote)> = Vec::new();
    let mut to_explain: Vec<(usize, Digest, Digest)> = Vec::new();
    let mut redactions: Vec<(u64, u64)> = Vec::new();
    let mut last_of: HashMap<String, usize> = HashMap::new();
    for (i, given) in record_lines.iter().enumerate() {
        let n = i + 2;
        let rec: RecordJson = serde_json::from_str(given).map_err(|e| json(n, e))?;
        if rec.seq != i as u64 {
            return Err(bad(n, format!("record {} where {i} was expected", rec.seq)));
        }
        let line = rec.line.get();
        let hashed = digest::content_hash(line.as_bytes());
        // A redacted record: its line hashes to `redacted`, and the redactions the file
        // records must lead there from its content digest (checked below).
        let (content, redacted) = match &rec.redacted {
            None => (hashed, None),
            Some(r) => {
                if util::unhex::<32>(r) != Some(hashed) {
                    return Err(bad(
                        n,
                        "the redacted entry's bytes do not hash to its redacted digest".into(),
                    ));
                }
                let content = util::unhex::<32>(&rec.content).ok_or_else(|| {
                    bad(
                        n,
                        "the content digest is not 64 lowercase hex digits".into(),
                    )
                })?;
                (content, Some(hashed))
            }
        };
        if content != hashed && redacted.is_none() {
            return Err(bad(
                n,
                "the entry's bytes do not hash to its content digest".into(),
            ));
        }
        if let Some(note) = grove_codec::redact::RedactionNote::of_line(line) {
            notes.push((i, note));
        }
        if let Some(now) = redacted {
            to_explain.push((i, content, now));
        }
        let chain = util::unhex::<32>(&rec.digest)
            .ok_or_else(|| bad(n, "the chain digest is not 64 lowercase hex digits".into()))?;
        let stamp = match &rec.op {
            None => None,
            Some(op) => {
                let kind = OpKind::ALL
                    .into_iter()
                    .find(|k| k.name() == op.kind)
                    .ok_or_else(|| bad(n, format!("unknown operation kind '{}'", op.kind)))?;
                Some(OpStamp::new(kind, &op.actor, op.time_ms))
            }
        };
        canonical(
            n,
            given,
            &record_line(
                rec.seq,
                &chain,
                &content,
                redacted.as_ref(),
                stamp.as_ref(),
                line,
            ),
        )?;
        let ids: EntryIds = serde_json::from_str(line).map_err(|e| json(n, e))?;
        if ids.kind.as_deref() != Some("leaf") {
            if let Some(id) = &ids.id {
                last_of.insert(id.clone(), i);
            }
        }
        operations += u64::from(stamp.is_some() || i == 0);
        seal = seal_next(&seal, rec.seq, &content, stamp.as_ref());
        hasher.update(given.as_bytes());
        hasher.update(b"\n");
        checked.push(Checked {
            chain,
            content,
            ids,
        });
    }
    for (i, content, now) in &to_explain {
        // The notes of this record, after it in the file, each starting where the one
        // before ended, from its content digest to the line it holds.
        let mut at = digest::hex(content);
        let mut by = None;
        for (j, note) in notes
            .iter()
            .filter(|(j, note)| j > i && note.seq == *i as u64)
        {
            if note.before == at {
                at.clone_from(&note.after);
                by = Some(*j as u64);
            }
        }
        if let (true, Some(by)) = (at == digest::hex(now), by) {
            redactions.push((*i as u64, by));
        } else {
            return Err(bad(
                i + 2,
                "the entry's line differs from its content digest and no redaction in the \
                 file explains it"
                    .into(),
            ));
        }
    }
    for (i, c) in checked.iter().enumerate() {
        if c.ids.kind.as_deref() == Some("leaf") {
            if c.chain != c.content {
                return Err(bad(
                    i + 2,
                    "a leaf record's digest is its content digest".into(),
                ));
            }
            continue;
        }
        let rootlike = digest::chain(&digest::ROOT_PARENT, &c.content);
        let ok = match c.ids.parent_id.as_deref() {
            None | Some("") => c.chain == rootlike,
            Some(p) if Some(p) == c.ids.id.as_deref() => c.chain == rootlike,
            Some(p) => match last_of.get(p) {
                // A parent the session does not hold: a root.
                None => c.chain == rootlike,
                Some(&j) => {
                    c.chain == digest::chain(&checked[j].chain, &c.content)
                        // The earliest entry of a parent cycle counts as a root.
                        || (j >= i && c.chain == rootlike)
                }
            },
        };
        if !ok {
            return Err(bad(
                i + 2,
                "the chain digest does not follow from its parent's".into(),
            ));
        }
    }
    if operations != head.operations {
        return Err(bad(
            1,
            format!(
                "the header announces {} operations; the records hold {operations}",
                head.operations
            ),
        ));
    }
    let n = lines.len();
    let last = lines[n - 1];
    let trailer: TrailerJson = serde_json::from_str(last).map_err(|e| json(n, e))?;
    let file_digest = *hasher.finalize().as_bytes();
    let signature = match (&trailer.public_key, &trailer.signature) {
        (Some(p), Some(s)) => Some((p.as_str(), s.as_str())),
        (None, None) => None,
        _ => return Err(bad(n, "a public key and a signature go together".into())),
    };
    canonical(
        n,
        last,
        &trailer_line(&trailer.seal, &trailer.file_digest, signature),
    )?;
    if util::unhex::<32>(&trailer.file_digest) != Some(file_digest) {
        return Err(bad(
            n,
            "the file digest does not match the file's bytes".into(),
        ));
    }
    if util::unhex::<32>(&trailer.seal) != Some(seal) {
        return Err(bad(n, "the seal does not match the records".into()));
    }
    let signed_by = match signature {
        None => {
            if public_key.is_some() {
                return Err(bad(n, "the file is not signed".into()));
            }
            None
        }
        Some((public, sig)) => {
            if let Some(want) = public_key {
                if want.trim().to_ascii_lowercase() != public {
                    return Err(bad(n, "the file is signed by another key".into()));
                }
            }
            signing::verify(
                public,
                sig,
                &signed_message(&file_digest, &seal),
                |reason| bad(n, reason),
            )?;
            Some(public.to_owned())
        }
    };
    Ok(AuditReport {
        session: head.session,
        records: head.records,
        operations,
        seal: digest::hex(&seal),
        signed_by,
        redacted: redactions,
    })
}
