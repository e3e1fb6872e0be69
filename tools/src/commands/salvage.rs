//! `grove salvage`: copy every session of a damaged store that still reads and verifies into
//! a new store, and report the ones that could not be copied (`grove::salvage`).

use std::path::{Path, PathBuf};

use grove::salvage::{salvage, Lost, SalvageReport};
use grove::store::SledRescue;
use grove::{Backend, Store, StoreConfig};
use serde_json::json;

use crate::env::{BackendArg, Env};
use crate::error::{CmdResult, CommandError};

/// Copy every session of a damaged store that still reads and verifies into a new store, and
/// report the sessions that could not be copied.
///
/// SRC is opened read-only with `--backend`: nothing is written to it. Its sessions are found
/// in its catalogue and by scanning their records directly, so a damaged catalogue hides no
/// intact session. Each session's log must read whole; it is exported and imported into DEST
/// under the same id, and the copy must match the source record by record (every line its
/// content hash, every node the fold of its parent), with the same leaf. Indexes are rebuilt
/// from the log, so a session whose only damage is in its indexes is recovered (the damage
/// is noted). A session that fails is left out of DEST and reported with the reason; the
/// failure of one session stops none of the others.
///
/// DEST is created when missing and must hold no session. Prints one line per session and a
/// summary line; exits 0 when every session found was copied and 3 (`SalvageIncomplete`)
/// otherwise.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The damaged store's directory (its backend is `--backend`).
    src: PathBuf,
    /// The new store's directory.
    dest: PathBuf,
    /// The backend of DEST (default: `--backend`, the backend of SRC).
    #[arg(long, value_enum, value_name = "BACKEND")]
    dest_backend: Option<BackendArg>,
    /// Print {"damage": ["..."], "lost": [{"reason", "session"}], "recovered": [{"entries",
    /// "indexDamage", "listed", "records", "session"}]} instead.
    #[arg(long)]
    json: bool,
}

fn backend(arg: BackendArg, dir: &Path) -> CmdResult<Backend> {
    match arg {
        BackendArg::Sled => Ok(Backend::Sled(dir.to_owned())),
        BackendArg::Redb => Ok(Backend::Redb(dir.to_owned())),
        #[cfg(feature = "postgres")]
        BackendArg::Postgres => Err(CommandError::invalid(
            "salvage copies store directories (sled, redb); a PostgreSQL store is not one",
            "salvage a damaged sled or redb store into a new sled or redb store; \
             PostgreSQL's own tools restore its databases",
        )),
    }
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    if same_dir(&args.src, &args.dest) {
        return Err(CommandError::invalid(
            format!(
                "SRC and DEST are the same directory ({})",
                args.src.display()
            ),
            "salvage into a new directory",
        ));
    }
    // A store that lost acknowledged writes opens read-only; salvage reports the loss. A sled
    // database sled refuses to open is read without sled (`grove::kv::sled_scan`).
    let (src, rescue) = Store::open_for_salvage(
        &StoreConfig::new(&args.src)
            .backend(backend(env.backend, &args.src)?)
            .lock_wait(env.lock_wait),
    )?;
    let dest_backend = args.dest_backend.unwrap_or(env.backend);
    let mut dest_config = StoreConfig::new(&args.dest)
        .backend(backend(dest_backend, &args.dest)?)
        .durability(env.durability.durability())
        .compress(env.compress)
        .lock_wait(env.lock_wait);
    if let Some(bytes) = env.disk_reserve {
        dest_config = dest_config.disk_reserve(bytes);
    }
    let dest = Store::open_with(dest_config)?;
    let mut report = salvage(&src, &dest)?;
    if let Some(rescue) = &rescue {
        note_scan(&mut report, rescue);
    }
    dest.flush()?;
    if args.json {
        print_json(&report, env)?;
    } else {
        print_human(&report, &args.dest, env)?;
    }
    if report.is_complete() {
        Ok(())
    } else {
        Err(CommandError::SalvageIncomplete {
            lost: report.lost.len(),
            damage: report.damage.len(),
        })
    }
}

/// Adds to `report` that sled could not open the source and what the scan of its files
/// could not read; a session whose keys were in a damaged page and that was not recovered is
/// reported lost by name.
fn note_scan(report: &mut SalvageReport, rescue: &SledRescue) {
    let scan = &rescue.scan;
    let mut damage = vec![format!(
        "{}; the store's files were read without sled",
        rescue.error
    )];
    damage.extend(scan.damage.iter().cloned());
    damage.append(&mut report.damage);
    report.damage = damage;
    for id in scan.lost_keys.iter().filter_map(|key| {
        grove::keys::string_suffix(key, 1)
            .filter(|_| key.first() == Some(&grove::keys::T_SESSION_ID))
    }) {
        let known = report.recovered.iter().any(|r| r.session == id)
            || report.lost.iter().any(|l| l.session == id);
        if !known {
            report.lost.push(Lost {
                session: id,
                reason: "its keys were in a damaged sled page".into(),
            });
        }
    }
}

/// Whether `a` and `b` name the same existing directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn print_human(report: &SalvageReport, dest: &Path, env: &mut Env<'_>) -> CmdResult {
    for r in &report.recovered {
        let unlisted = if r.listed {
            ""
        } else {
            " (found by its records; the catalogue did not list it)"
        };
        writeln!(
            env.out,
            "recovered: {} ({} entries){unlisted}",
            r.session, r.entries
        )?;
        if let Some(damage) = &r.index_damage {
            writeln!(
                env.out,
                "  its log was sound; its indexes were rebuilt ({damage})"
            )?;
        }
    }
    for lost in &report.lost {
        writeln!(env.out, "not recovered: {}: {}", lost.session, lost.reason)?;
    }
    for damage in &report.damage {
        writeln!(env.out, "damage: {damage}")?;
    }
    let found = report.recovered.len() + report.lost.len();
    writeln!(
        env.out,
        "{} of {found} session(s) recovered into {}, {} not recovered{}",
        report.recovered.len(),
        dest.display(),
        report.lost.len(),
        if report.damage.is_empty() {
            String::new()
        } else {
            format!(
                "; {} store-wide problem(s), which may hide sessions",
                report.damage.len()
            )
        }
    )?;
    Ok(())
}

fn print_json(report: &SalvageReport, env: &mut Env<'_>) -> CmdResult {
    let recovered: Vec<_> = report
        .recovered
        .iter()
        .map(|r| {
            json!({
                "session": r.session,
                "entries": r.entries,
                "records": r.records,
                "listed": r.listed,
                "indexDamage": r.index_damage,
            })
        })
        .collect();
    let lost: Vec<_> = report
        .lost
        .iter()
        .map(|l| json!({ "session": l.session, "reason": l.reason }))
        .collect();
    let out = json!({ "recovered": recovered, "lost": lost, "damage": report.damage });
    writeln!(env.out, "{out}")?;
    Ok(())
}
