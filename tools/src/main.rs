//! `grove`: the command-line tool of the grove session store (the library `grove_tools` holds
//! it all; docs/cli.md describes every subcommand).
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    grove_tools::main()
}
