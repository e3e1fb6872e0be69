//! The campaign's fixed sled cases (issue 28, point 4): one bit flipped at byte 20,000 or
//! 100,000 of sled's log `db`, with sled's snapshot files kept and removed.
//!
//! sled 0.34.7 writes its snapshot (`snap.*`) when it opens a database, covering the log up to
//! then; what a process writes after its open is read from the log at the next open. With the
//! snapshot kept, sled opens the damaged store and meets the flipped bit only when it reads the
//! page it is in; with the snapshot removed it meets it at open and refuses the store (`Read
//! corrupted data`). A store reaches the second state when the damage is in what was written
//! since its last open — the log of a long-running writer (`grove serve`, an agent's process),
//! damaged before anything opened the store again — and removing `snap.*` makes the whole log
//! that part.
//!
//! Each case runs the campaign's checks ([`super::Case::check`], the reads first, as a user
//! would before turning to salvage), then checks salvage's outcome against what the damage
//! touched: every session of the pristine store is in DEST exactly or reported lost by name,
//! and DEST verifies; with the snapshot removed, every session that read exactly from the
//! same damage with the snapshot kept (the sessions the damage did not touch) is in DEST.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::damage::{self, Damage, DamageKind};
use super::pristine::Pristine;
use super::{dest_exports, run, Case, Config, FailureKind, Report};

/// The bytes of `db` the fixed cases flip (bit 4), as issue 28 reported them.
pub const OFFSETS: [u64; 2] = [20_000, 100_000];

/// Runs the fixed cases on copies of the sled store `pristine`, numbered after the seeded
/// cases of `config`, adding to `report`.
pub fn run_fixed_cases(
    config: &Config,
    pristine: &Pristine,
    report: &mut Report,
) -> Result<(), String> {
    let size = std::fs::metadata(pristine.dir.join("db"))
        .map_err(|e| format!("the pristine store's db: {e}"))?
        .len();
    let mut case = config.first_case + config.cases;
    for offset in OFFSETS {
        if offset >= size {
            return Err(format!(
                "the pristine sled db has {size} bytes, fewer than the fixed cases flip"
            ));
        }
        let damage = Damage {
            file: PathBuf::from("db"),
            size,
            kind: DamageKind::Flip,
            offset,
            len: 0,
            bit: 4,
        };
        let untouched = run_one(config, pristine, case, &damage, false, None, report)?;
        case += 1;
        run_one(
            config,
            pristine,
            case,
            &damage,
            true,
            Some(&untouched),
            report,
        )?;
        case += 1;
    }
    Ok(())
}

/// One fixed case; returns the sessions that read exactly.
fn run_one(
    config: &Config,
    pristine: &Pristine,
    case: u64,
    damage: &Damage,
    remove_snapshots: bool,
    untouched: Option<&[String]>,
    report: &mut Report,
) -> Result<Vec<String>, String> {
    let work = config.work_dir.join(format!("case-{case}"));
    let _ = std::fs::remove_dir_all(&work);
    let src = work.join("src");
    damage::copy_tree(&pristine.dir, &src)?;
    damage::apply(&src, damage)?;
    if remove_snapshots {
        remove_snapshot_files(&src)?;
    }
    let what = format!(
        "{damage}, snap.* {}",
        if remove_snapshots { "removed" } else { "kept" }
    );
    let evidence = match &config.evidence_dir {
        Some(dir) => {
            let kept = dir.join(format!("grove-campaign-sled-fixed-{case}"));
            let _ = std::fs::remove_dir_all(&kept);
            damage::copy_tree(&src, &kept.join("store"))?;
            Some(kept)
        }
        None => None,
    };
    let failures_before = report.failures.len();
    let mut c = Case::new(config, case, what.clone(), src, report);
    let outcome = c.check(pristine, &work)?;
    let intact = std::mem::take(&mut c.intact);
    if let Some(salvage) = c.salvage.take() {
        check_salvage(&mut c, pristine, &work.join("dest"), &salvage, untouched)?;
    }
    report.cases += 1;
    *report.by_damage.entry("sled log flip (fixed)").or_insert(0) += 1;
    let failures = &report.failures[failures_before..];
    if config.progress {
        eprintln!("case {case} [{what}]: {outcome}");
    }
    match evidence {
        Some(kept) if !failures.is_empty() => {
            let lines: Vec<String> = failures.iter().map(ToString::to_string).collect();
            let text = format!("sled fixed case {case}\n{what}\n{}\n", lines.join("\n"));
            std::fs::write(kept.join("failure.txt"), text).map_err(|e| format!("evidence: {e}"))?;
        }
        Some(kept) => {
            let _ = std::fs::remove_dir_all(kept);
        }
        None => {}
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(intact)
}

/// Removes sled's snapshot files from the store `dir`.
fn remove_snapshot_files(dir: &Path) -> Result<(), String> {
    let read = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for item in read {
        let path = item.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("snap."))
        {
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Checks salvage's DEST against the pristine store and salvage's own report.
fn check_salvage(
    c: &mut Case<'_>,
    pristine: &Pristine,
    dest: &Path,
    salvage: &run::Run,
    untouched: Option<&[String]>,
) -> Result<(), String> {
    let copies = dest_exports(dest, "sled")?;
    let report: Option<serde_json::Value> = serde_json::from_slice(&salvage.stdout).ok();
    let lost: BTreeSet<String> = report
        .as_ref()
        .and_then(|r| r["lost"].as_array())
        .map(|l| {
            l.iter()
                .filter_map(|l| l["session"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for id in &pristine.sessions {
        let exact = copies.get(id) == Some(&pristine.exports[id]);
        if !exact && !lost.contains(id) {
            let detail = format!(
                "{} in DEST and not reported lost; salvage exited {:?}: {}",
                if copies.contains_key(id) {
                    "differs"
                } else {
                    "missing"
                },
                salvage.code,
                salvage.stderr_head()
            );
            c.fail(
                FailureKind::SalvageUnreported,
                &format!("salvage ({id})"),
                detail,
            );
        }
    }
    for id in untouched.unwrap_or_default() {
        if copies.get(id) != Some(&pristine.exports[id]) {
            let detail = format!(
                "read exactly with sled's snapshot kept, but not recovered with it removed: {}",
                super::lost_reason(salvage, id)
            );
            c.fail(
                FailureKind::SalvageMissed,
                &format!("salvage ({id})"),
                detail,
            );
        }
    }
    if grove::kv::existing_backend(dest).is_some() {
        let verify = run::grove(&c.config.grove, dest, "sled", &["verify"], c.config.timeout);
        if !verify.ok() {
            let detail = format!(
                "exit {:?}: {}",
                verify.code,
                String::from_utf8_lossy(&verify.stdout).trim()
            );
            c.fail(FailureKind::DestUnsound, "verify DEST", detail);
        }
    }
    Ok(())
}
