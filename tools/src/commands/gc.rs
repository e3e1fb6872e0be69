//! `grove gc`: removes the payloads no session references, finishes redactions, and rewrites
//! the store's files when a redaction asks for it.

use crate::env::Env;
use crate::error::CmdResult;

/// Remove what the store no longer needs: the payloads no session references (the large
/// string values stored once by their blake3; deleting a session leaves its payloads for
/// this), listing each one removed; and after a redaction, every other copy of the redacted
/// bytes.
///
/// A redaction takes the bytes out of the log at once; gc then applies any redaction a crash
/// left recorded but unwritten, drops the copies of redacted lines that materialized views
/// hold, rewrites the search index without their words, and — for a store in a directory
/// (sled or redb), when a redaction was made since the last rewrite or with --rewrite — copies
/// every live key into fresh files that take the store's place, so no old page keeps the
/// bytes. The rewrite needs the store to itself (a server must be stopped) and room for a
/// second copy. Nothing a session still references is removed. Prints one line per removed
/// payload (`removed HASH BYTES`) and a summary; with --json one object, {"payloads",
/// "payloadBytes", "referenced", "removed": [{"hash", "bytes"}], "removedBytes",
/// "redactionsApplied", "rewriteDue", "searchCompacted", "catalogueRowsRemoved",
/// "backendCompacted", "rewritten": null or {"keys", "bytesBefore", "bytesAfter"}}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rewrite the store's files even when no redaction asks for it (compacts the backend).
    #[arg(long)]
    rewrite: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let store = env.open_store()?;
    let report = store.gc()?;
    let in_dir = matches!(
        env.store_config()?.backend,
        grove::Backend::Sled(_) | grove::Backend::Redb(_)
    );
    drop(store);
    let rewritten = if in_dir && (report.rewrite_due || args.rewrite) {
        Some(grove::Store::rewrite(&env.store_config()?)?)
    } else {
        None
    };
    if args.json {
        let mut value = crate::output::gc_value(&report);
        value["rewritten"] = match &rewritten {
            None => serde_json::Value::Null,
            Some(r) => serde_json::json!({
                "keys": r.keys,
                "bytesBefore": r.bytes_before,
                "bytesAfter": r.bytes_after,
            }),
        };
        writeln!(env.out, "{value}")?;
        return Ok(());
    }
    for (hash, bytes) in &report.removed {
        writeln!(env.out, "removed {hash} {bytes}")?;
    }
    writeln!(
        env.out,
        "{} payload(s) of {} kept (referenced), {} removed ({} bytes)",
        report.referenced,
        report.payloads,
        report.removed.len(),
        report.removed_bytes()
    )?;
    if report.redactions_applied > 0 {
        writeln!(
            env.out,
            "{} redaction(s) a crash had left unwritten applied",
            report.redactions_applied
        )?;
    }
    if report.backend_compacted {
        writeln!(
            env.out,
            "the store's table was rewritten (VACUUM FULL): no redacted byte is left in it"
        )?;
    }
    if let Some(r) = &rewritten {
        writeln!(
            env.out,
            "store files rewritten: {} keys, {} bytes before, {} after",
            r.keys, r.bytes_before, r.bytes_after
        )?;
    } else if report.rewrite_due {
        writeln!(
            env.out,
            "a redaction was made since the store's files were last rewritten: its bytes may \
             remain in their free space until `grove gc` runs on a store in a directory"
        )?;
    }
    Ok(())
}
