//! Where the shard map is (`--etcd`, `--etcd-prefix`) and the one function that connects to
//! it, shared by `grove shard` and `grove serve --etcd`. It calls `shard::etcd` and
//! `shard::map` for the client and the key names, and `error`.

use crate::error::{CmdResult, CommandError};
use crate::shard::etcd::Etcd;
use crate::shard::map::{Keys, DEFAULT_PREFIX};

/// Where the shard map is.
#[derive(Debug, Clone, clap::Args)]
pub struct EtcdArgs {
    /// The etcd cluster holding the shard map: its members' client URLs, comma-separated
    /// (http://HOST:PORT,...); each is tried in turn.
    #[arg(long, value_name = "URL[,URL...]", env = "GROVE_ETCD")]
    pub etcd: String,
    /// The prefix of the map's keys in etcd.
    #[arg(long, value_name = "PREFIX", default_value = DEFAULT_PREFIX, env = "GROVE_ETCD_PREFIX")]
    pub etcd_prefix: String,
}

/// The etcd client and key names of `args`.
pub fn connect(args: &EtcdArgs) -> CmdResult<(Etcd, Keys)> {
    let etcd = Etcd::new(&args.etcd).map_err(|e| {
        CommandError::invalid(
            e.to_string(),
            "give --etcd http://HOST:PORT[,http://HOST:PORT...]",
        )
    })?;
    Ok((etcd, Keys::new(&args.etcd_prefix)))
}
