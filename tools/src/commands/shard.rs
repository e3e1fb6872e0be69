//! `grove shard`: writes the shard map to etcd and moves sessions between clusters
//! (docs/scale-out.md, "Many databases: sharding by session"; the work is in `crate::shard`).

use std::time::Duration;

use serde_json::json;

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::etcd_args::{connect, EtcdArgs};
use crate::shard::etcd::{Compare, Op};
use crate::shard::map::{check_slots, even_ranges, Cluster};
use crate::shard::mover::{move_session, MoveError};

/// Sessions sharded over PostgreSQL clusters, with the shard map in etcd: write the map, show
/// where a session is, move a session to another cluster.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    Init(InitArgs),
    Where(WhereArgs),
    Move(MoveArgs),
}

/// Writes a new shard map: the clusters, and the 4,096 slots shared evenly among them in the
/// order given. Refused when a map is there already.
#[derive(Debug, clap::Args)]
struct InitArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
    /// A cluster: NAME=URL, or NAME=URL#TABLE (default table: grove's default).
    #[arg(long = "cluster", value_name = "NAME=URL[#TABLE]", required = true)]
    clusters: Vec<String>,
    /// Print the map written as JSON.
    #[arg(long)]
    json: bool,
}

/// Prints the slot and the cluster serving a session id (its pin, while it has one).
#[derive(Debug, clap::Args)]
struct WhereArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
    /// The session id (whole: it is hashed, not looked up).
    session: String,
    /// Print `{"session", "slot", "cluster", "frozen"}`.
    #[arg(long)]
    json: bool,
}

/// Moves a session to another cluster while nodes serve it: freezes its writes, copies it
/// loss-free (its pi JSONL, compared byte for byte), switches its route, and deletes the
/// source's copy after the grace period.
#[derive(Debug, clap::Args)]
struct MoveArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
    /// The session id (whole).
    session: String,
    /// The cluster to move it to.
    #[arg(long, value_name = "NAME")]
    to: String,
    /// Seconds every serving node has to see a change of the map and finish the requests it
    /// routed before it: waited after the freeze and after the switch. Must exceed the
    /// nodes' --map-refresh plus their longest request.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    grace: f64,
    /// Print the move's report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    match args.command {
        Sub::Init(a) => init(a, env),
        Sub::Where(a) => where_is(a, env),
        Sub::Move(a) => move_one(a, env),
    }
}

fn init(args: InitArgs, env: &mut Env<'_>) -> CmdResult {
    let (etcd, keys) = connect(&args.etcd)?;
    let mut clusters = std::collections::BTreeMap::new();
    let mut names = Vec::new();
    for spec in &args.clusters {
        let (name, location) = spec.split_once('=').ok_or_else(|| {
            CommandError::invalid(
                format!("--cluster '{spec}' is not NAME=URL[#TABLE]"),
                "for example --cluster a=postgres://grove@db-a:5432/grove#sessions",
            )
        })?;
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid || clusters.contains_key(name) {
            return Err(CommandError::invalid(
                format!("--cluster '{spec}': the name must be new, of letters, digits, - and _"),
                "name each cluster once",
            ));
        }
        let (url, table) = location
            .split_once('#')
            .unwrap_or((location, grove::kv::DEFAULT_TABLE));
        clusters.insert(
            name.to_owned(),
            Cluster {
                url: url.to_owned(),
                table: table.to_owned(),
            },
        );
        names.push(name.to_owned());
    }
    let slots = even_ranges(&names);
    check_slots(&slots, &clusters).map_err(MoveError::from)?;
    let slots_json = serde_json::to_vec(&slots).unwrap_or_default();
    let mut ops = vec![Op::Put {
        key: keys.slots(),
        value: slots_json,
        lease: None,
    }];
    for (name, cluster) in &clusters {
        ops.push(Op::Put {
            key: keys.cluster(name),
            value: serde_json::to_vec(cluster).unwrap_or_default(),
            lease: None,
        });
    }
    let written = etcd.txn(&[Compare::Absent(keys.slots())], &ops)?;
    let Some(revision) = written else {
        return Err(CommandError::invalid(
            format!("a shard map is there already under {}", keys.prefix()),
            "a map is written once; clusters and slots change by moving sessions",
        ));
    };
    if args.json {
        writeln!(
            env.out,
            "{}",
            json!({ "revision": revision, "slots": slots, "clusters": clusters })
        )?;
    } else {
        for r in &slots {
            writeln!(env.out, "slots {}..={} -> {}", r.first, r.last, r.cluster)?;
        }
        writeln!(env.out, "written at etcd revision {revision}")?;
    }
    Ok(())
}

fn where_is(args: WhereArgs, env: &mut Env<'_>) -> CmdResult {
    let (etcd, keys) = connect(&args.etcd)?;
    let (revision, kvs) = etcd.range_prefix(keys.prefix())?;
    let map = crate::shard::map::ShardMap::parse(&keys, revision, &kvs)?;
    let slot = crate::shard::map::slot(&args.session);
    let route = map.route(&args.session);
    let cluster = route.map(|r| r.cluster);
    let frozen = route.is_some_and(|r| r.frozen);
    if args.json {
        writeln!(
            env.out,
            "{}",
            json!({ "session": args.session, "slot": slot, "cluster": cluster, "frozen": frozen })
        )?;
    } else {
        writeln!(
            env.out,
            "{} slot {slot} -> {}{}",
            args.session,
            cluster.unwrap_or("(no cluster)"),
            if frozen {
                " (moving: writes refused)"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

fn move_one(args: MoveArgs, env: &mut Env<'_>) -> CmdResult {
    let (etcd, keys) = connect(&args.etcd)?;
    let grace = Duration::try_from_secs_f64(args.grace).map_err(|_| {
        CommandError::invalid(
            format!("--grace {} is not a number of seconds", args.grace),
            "give a duration in seconds, such as 5 or 0.5",
        )
    })?;
    let opener = env.cluster_opener("cli");
    let report = move_session(&etcd, &keys, &*opener, &args.session, &args.to, grace)?;
    if args.json {
        writeln!(
            env.out,
            "{}",
            json!({
                "session": report.sid, "from": report.from, "to": report.to,
                "records": report.records, "bytes": report.bytes,
                "switchedAt": report.switched_at,
            })
        )?;
    } else {
        writeln!(
            env.out,
            "moved {} from {} to {} ({} records, {} bytes of JSONL)",
            report.sid, report.from, report.to, report.records, report.bytes
        )?;
    }
    Ok(())
}
