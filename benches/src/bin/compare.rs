//! The comparison harness: the same generated sessions through grove, SQLite and a
//! pi-style JSONL store; writes docs/benchmarks.md.
//!
//! ```sh
//! cargo run --release -p grove-benches --bin compare             # full targets
//! cargo run --release -p grove-benches --bin compare -- --quick  # CI smoke run
//! ```
//!
//! Options: `--quick`, `--out FILE`, `--workdir DIR`, `--runs N`, `--only a,b` (scenarios:
//! resume, bushy, depth, append, append_many).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use grove_benches::compare::{self, Options, SCENARIOS};

const USAGE: &str = "usage: compare [--quick] [--out FILE] [--workdir DIR] [--runs N] \
                     [--only resume,bushy,depth,append,append_many]";

fn parse(args: &[String]) -> Result<Options, String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().unwrap_or(manifest).to_path_buf();
    let mut options = Options {
        quick: false,
        out: PathBuf::new(),
        workdir: None,
        runs: None,
        only: Vec::new(),
    };
    let mut out = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--workdir" => options.workdir = Some(PathBuf::from(value("--workdir")?)),
            "--runs" => {
                let v = value("--runs")?;
                options.runs = Some(v.parse().map_err(|_| format!("--runs {v}: not a number"))?);
            }
            "--only" => {
                for name in value("--only")?.split(',') {
                    if !SCENARIOS.contains(&name) {
                        return Err(format!("unknown scenario {name}"));
                    }
                    options.only.push(name.to_owned());
                }
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    options.out = out.unwrap_or_else(|| {
        if options.quick {
            root.join("target/benchmarks-quick.md")
        } else {
            root.join("docs/benchmarks.md")
        }
    });
    Ok(options)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let report = match compare::run(&options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("compare: {e}");
            return ExitCode::FAILURE;
        }
    };
    let text = report.markdown();
    if let Some(dir) = options.out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(&options.out, &text) {
        eprintln!("compare: {}: {e}", options.out.display());
        return ExitCode::FAILURE;
    }
    println!("{text}");
    eprintln!("[compare] wrote {}", options.out.display());
    ExitCode::SUCCESS
}
