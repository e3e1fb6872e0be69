//! Loading a generated session into a grove store: by import (the JSONL as is) or through
//! the API (`append_with` with the generated ids and timestamps, `move_to` at branch points).

use std::io::Cursor;

use grove::{AppendOptions, CreateSession, ImportOptions, ImportReport, Session, Store};

use crate::gen::{GenSpec, GeneratedSession, Generator, Record, CWD};

/// Imports the generated JSONL (strict, the default) and opens the new session.
pub fn import(store: &Store, generated: &GeneratedSession) -> grove::Result<Session> {
    let report = import_report(store, generated)?;
    store.session(&report.session)
}

/// Imports the generated JSONL (strict) and returns the import report.
pub fn import_report(store: &Store, generated: &GeneratedSession) -> grove::Result<ImportReport> {
    store.import_reader(Cursor::new(&generated.jsonl[..]), ImportOptions::default())
}

/// Builds the session of `spec` through the API: `create_session` with the generated id,
/// `append_with` of every entry with its generated id and timestamp, `move_to` at every
/// branch point. The entry lines are the generated ones byte for byte; the header and the
/// leaf lines are grove's own. The returned summary has no `jsonl`.
pub fn build_via_api(store: &Store, spec: &GenSpec) -> grove::Result<(Session, GeneratedSession)> {
    let mut generator = Generator::new(spec);
    let session = store.create_session(CreateSession {
        id: Some(generator.session_id().to_owned()),
        cwd: CWD.to_owned(),
        ..CreateSession::default()
    })?;
    for record in &mut generator {
        match record {
            Record::Entry {
                id,
                timestamp,
                entry,
                ..
            } => {
                session.append_with(
                    entry,
                    AppendOptions {
                        id: Some(id),
                        timestamp: Some(timestamp),
                        durability: None,
                    },
                )?;
            }
            Record::Leaf { target, .. } => session.move_to(target.as_deref())?,
        }
    }
    Ok((session, generator.finish()))
}
