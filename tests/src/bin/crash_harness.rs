//! grove-crash-harness: runs kill cycles of `grove-crash-child` against one store directory
//! and checks the store after every kill (see `grove_tests::crash`).
//!
//! ```text
//! grove-crash-harness [--cycles N] [--store DIR] [--seed S] [--mode all|append|move|fork|import]
//!                     [--child PATH] [--import-lines N] [--skip-check-percent P]
//!                     [--full-check-every N] [--quiet]
//! ```
//! Without `--store` a fresh temporary directory is used (removed after a successful run).
//! Exits with status 1 on the first failure, after keeping the store as evidence.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use grove_tests::crash::{self, Config, Mode};

fn run() -> Result<(), String> {
    let mut cycles: u32 = 50;
    let mut store: Option<PathBuf> = None;
    let mut seed: Option<u64> = None;
    let mut mode = Mode::All;
    let mut child: Option<PathBuf> = None;
    let mut import_lines: Option<usize> = None;
    let mut skip: Option<u64> = None;
    let mut full_every: Option<u32> = None;
    let mut backend = "sled".to_owned();
    let mut progress = true;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--quiet" {
            progress = false;
            continue;
        }
        if flag == "--help" || flag == "-h" {
            println!(
                "grove-crash-harness [--cycles N] [--store DIR] [--seed S] [--mode all|append|move|fork|import] [--child PATH] [--import-lines N] [--skip-check-percent P] [--full-check-every N] [--quiet]"
            );
            return Ok(());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--cycles" => cycles = num(&value)? as u32,
            "--store" => store = Some(PathBuf::from(value)),
            "--seed" => seed = Some(num(&value)?),
            "--mode" => mode = Mode::parse(&value)?,
            "--child" => child = Some(PathBuf::from(value)),
            "--import-lines" => import_lines = Some(num(&value)? as usize),
            "--skip-check-percent" => skip = Some(num(&value)?.min(100)),
            "--full-check-every" => full_every = Some(num(&value)? as u32),
            "--backend" => backend = value,
            _ => return Err(format!("unknown flag {flag} (--help)")),
        }
    }
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let child = match child {
        Some(c) => c,
        None => crash::child_binary()?,
    };
    let temp = match &store {
        Some(_) => None,
        None => Some(tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?),
    };
    let store_dir = match (&store, &temp) {
        (Some(s), _) => s.clone(),
        (None, Some(t)) => t.path().join("store"),
        (None, None) => return Err("no store directory".into()),
    };
    let mut config = Config::new(&store_dir, cycles, seed, mode, child);
    config.progress = progress;
    config.backend = backend;
    if let Some(n) = import_lines {
        config.import_lines = n;
    }
    if let Some(p) = skip {
        config.skip_check_percent = p;
    }
    if let Some(n) = full_every {
        config.full_check_every = n;
    }
    eprintln!(
        "grove-crash-harness: {cycles} cycles, mode {}, seed {seed}, store {}",
        mode.name(),
        store_dir.display()
    );
    let report = crash::run_cycles_with(&config)?;
    println!("{report}");
    println!("seed {seed}, store {}", store_dir.display());
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("grove-crash-harness: FAILED\n{e}");
        std::process::exit(1);
    }
}
