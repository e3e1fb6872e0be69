//! grove-campaign: the corruption campaign (`grove_tests::campaign`) for large runs.
//!
//! ```text
//! grove-campaign [--backend sled|redb|both] [--cases N] [--seed S] [--first-case N]
//!                [--grove PATH] [--timeout SECS] [--work DIR] [--evidence DIR] [--quiet]
//! ```
//! Builds a pristine multi-session store per backend, then damages a copy of it at one random
//! place per case and checks what the `grove` binary reads, verifies and salvages from it.
//! `--grove` defaults to the `grove` next to this executable (`cargo build --release -p
//! grove-tools -p grove-tests`). Prints a report per backend; exits 1 when any check failed.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use grove_tests::campaign::{self, Config};

fn grove_next_to_me() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let name = format!("grove{}", std::env::consts::EXE_SUFFIX);
    let bin = exe.with_file_name(name);
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "{} not found (cargo build -p grove-tools, or --grove PATH)",
            bin.display()
        ))
    }
}

fn run() -> Result<bool, String> {
    let mut backends = vec!["sled".to_owned(), "redb".to_owned()];
    let mut cases: u64 = 200;
    let mut seed: Option<u64> = None;
    let mut first_case: u64 = 0;
    let mut grove: Option<PathBuf> = None;
    let mut timeout = Duration::from_secs(60);
    let mut work: Option<PathBuf> = None;
    let mut evidence: Option<PathBuf> = None;
    let mut progress = true;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--quiet" => {
                progress = false;
                continue;
            }
            "--help" | "-h" => {
                println!(
                    "grove-campaign [--backend sled|redb|both] [--cases N] [--seed S] \
                     [--first-case N] [--grove PATH] [--timeout SECS] [--work DIR] \
                     [--evidence DIR] [--quiet]"
                );
                return Ok(true);
            }
            _ => {}
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--backend" => {
                backends = match value.as_str() {
                    "both" => vec!["sled".to_owned(), "redb".to_owned()],
                    "sled" | "redb" => vec![value],
                    _ => return Err(format!("unknown backend {value} (sled|redb|both)")),
                }
            }
            "--cases" => cases = num(&value)?,
            "--seed" => seed = Some(num(&value)?),
            "--first-case" => first_case = num(&value)?,
            "--grove" => grove = Some(PathBuf::from(value)),
            "--timeout" => timeout = Duration::from_secs(num(&value)?),
            "--work" => work = Some(PathBuf::from(value)),
            "--evidence" => evidence = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown flag {flag} (--help)")),
        }
    }
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let grove = match grove {
        Some(g) => g,
        None => grove_next_to_me()?,
    };
    let temp = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let work = work.unwrap_or_else(|| temp.path().to_owned());
    let mut sound = true;
    for backend in &backends {
        let mut config = Config::new(&grove, backend, cases, seed, &work.join(backend));
        config.first_case = first_case;
        config.timeout = timeout;
        config.evidence_dir = evidence.clone();
        config.progress = progress;
        eprintln!("grove-campaign: {backend}, {cases} cases from {first_case}, seed {seed}");
        let report = campaign::run_campaign(&config)?;
        println!("{report}");
        sound &= report.failures.is_empty();
    }
    Ok(sound)
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("grove-campaign: {e}");
            std::process::exit(2);
        }
    }
}
