//! `grove keygen`: a new ed25519 key to sign audit files with.

use std::io::Write as _;
use std::path::PathBuf;

use crate::env::Env;
use crate::error::{CmdResult, CommandError};

/// Write a new ed25519 signing key to KEYFILE (64 hex digits, mode 0600; an existing file is
/// never replaced) and print its public key, which `grove verify --file FILE --pubkey KEY`
/// takes. `grove export SESSION --audit --sign KEYFILE` signs with it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to write the key.
    keyfile: PathBuf,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let key = grove::AuditKey::generate()?;
    let file_err = |source| CommandError::File {
        path: args.keyfile.clone(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&args.keyfile).map_err(file_err)?;
    writeln!(file, "{}", key.to_hex()).map_err(file_err)?;
    file.sync_all().map_err(file_err)?;
    writeln!(env.out, "{}", key.public_hex())?;
    Ok(())
}
