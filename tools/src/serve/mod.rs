//! `grove serve`: one process owns a store and serves it to many clients over HTTP/1.1 with
//! JSON bodies (docs/api.md is the contract). This room owns the server: its listeners (a
//! unix socket, and TCP behind a bearer token), who may send a request (`guard.rs`: the
//! `Host` and `Origin` of a TCP request, every body's type), the connection loop (hyper, with
//! header timeouts and graceful shutdown, a request answered before its body was read:
//! `unread.rs`) and the server's life (a store opened to read on a
//! full disk, reopened for writing once there is room: `full_disk.rs`; a store closed to
//! rewrite its files after a redaction, and reopened: `rewrite.rs`).
//!
//! Its modules, from the bottom up: the error body and request extractors (`api.rs`, with the
//! nesting limit `depth.rs`), the limits (`limits.rs`), the stores served (`stores.rs`); the
//! state every route shares and the blocking pool its engine calls run on (`state/`);
//! streamed results (`stream.rs`) and followed replays (`follow.rs`); then the routes
//! (`routes/`: one table, one file per group of docs/api.md). None imports a module above it.
//! It calls the engine's public API only (`grove::Store`, `grove::Session`), each call on
//! tokio's blocking pool, and nothing else in the tool but `env::Env` to open the store as
//! every command does, `summarizer_args` to build the summarizer as `grove navigate` does,
//! `etcd_args` and `shard` to serve sessions sharded by the map in etcd, `output` to write
//! proofs, operations, seals and tree nodes as the CLI's `--json` does, and `page` for the
//! HTML page of `GET /view` (`routes/page.rs`, served without the token). A request's
//! `Grove-Client` header names the actor its operations are stamped with (`server` without
//! one).

mod api;
mod depth;
pub mod embed;
mod follow;
mod full_disk;
mod guard;
pub mod js_text;
mod limits;
mod retain;
mod rewrite;
mod routes;
mod state;
mod stores;
mod stream;
mod unread;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tower::ServiceExt;

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
#[cfg(feature = "postgres")]
use crate::shard::router::{Refresher, Shards};
use crate::summarizer_args::SummarizerArgs;
use grove::GroveError;
use stores::Stores;

/// What keeps a sharded server's map fresh; a build without sharding has none.
#[cfg(not(feature = "postgres"))]
type Refresher = ();

/// Serve the store to many clients at once over HTTP/1.1 (docs/api.md): on a unix socket
/// (mode 0600, no token) and, with --listen, on TCP behind a bearer token; TCP answers only
/// requests naming its own address and coming from no other site. Writes are as
/// durable as --durability says before they are acknowledged. SIGTERM or SIGINT stops
/// accepting, finishes the requests in flight, flushes and closes the store.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The unix socket to listen on. Default: grove.sock in the store directory.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Also listen on TCP at HOST:PORT (port 0: any free port; the line printed at start
    /// names it). Needs --token-file.
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<SocketAddr>,
    /// A file whose first line is the bearer token every TCP request must carry
    /// (`authorization: Bearer TOKEN`); readable by its owner only (mode 0600 or 0400).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// A host name TCP requests may name in their `Host` header (any port), besides the
    /// listener's own address (and `localhost` on a loopback listener): the name of a proxy
    /// or of the machine. May be given more than once.
    #[arg(long, value_name = "NAME")]
    allow_host: Vec<String>,
    /// The largest request body accepted, in bytes; larger ones get 413.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    max_body: usize,
    /// The largest pi JSONL body `POST /v1/import` accepts, in bytes; larger ones get 413 and
    /// import nothing. The body is imported as it arrives, so this bounds the disk it may
    /// take, not the server's memory.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 30)]
    max_import: usize,
    /// How long a client may take to send a request's headers, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    header_timeout: u64,
    /// How long a client may take to send a request's body, in seconds (an import's: between
    /// two chunks of it); a slower one gets 408 and the connection is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    body_timeout: u64,
    /// Connections served at once (both listeners); one more is answered 503 busy and
    /// closed.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_connections: usize,
    /// Followed replays (`replay?follow=true`) at once; one more is answered 503 busy.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_followers: usize,
    /// Streamed reads (entries, log, paths, contexts, exports, replays) at once: each holds a
    /// thread of the server's blocking pool while its client reads, so that the rest stay
    /// for writes. One more is answered 503 busy.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_streams: usize,
    /// How often an idle followed replay sends an empty line, in seconds: writing is what
    /// finds a client that went away.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    keepalive: f64,
    /// The bound of a health check, in seconds: of its deep read, of the blocking pool's
    /// answer, and the age at which a write in flight counts as stuck.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    health_timeout: f64,
    /// How long to wait for requests in flight at shutdown, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    drain_timeout: u64,
    /// Serve sessions sharded over several PostgreSQL clusters, by the shard map held in this
    /// etcd cluster (its members' client URLs, comma-separated; docs/scale-out.md). The
    /// global --backend, --pg and --store are not used then. (Feature `postgres`.)
    #[cfg(feature = "postgres")]
    #[arg(long, value_name = "URL[,URL...]", env = "GROVE_ETCD")]
    etcd: Option<String>,
    /// The prefix of the shard map's keys in etcd.
    #[cfg(feature = "postgres")]
    #[arg(long, value_name = "PREFIX", default_value = crate::shard::map::DEFAULT_PREFIX, env = "GROVE_ETCD_PREFIX")]
    etcd_prefix: String,
    /// How often the shard map is read again from etcd, in seconds (a move's --grace must
    /// exceed it).
    #[cfg(feature = "postgres")]
    #[arg(long, value_name = "SECONDS", default_value_t = 0.2)]
    map_refresh: f64,
    /// Apply this retention policy (the JSON of `grove retain --policy`) on a schedule; each
    /// run is recorded in the store's operation log and reported on stderr. Not with --etcd.
    #[arg(long, value_name = "FILE")]
    retain: Option<PathBuf>,
    /// How often the --retain policy runs (an age such as 1h, 30m, 1d); the first run is that
    /// long after the start.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1h",
        requires = "retain"
    )]
    retain_every: String,
    #[command(flatten)]
    summarizer: SummarizerArgs,
}

pub fn run(env: &mut Env<'_>, args: &Args) -> CmdResult<()> {
    let token = match &args.token_file {
        None => None,
        Some(path) => Some(read_token(path)?),
    };
    if let (Some(addr), None) = (args.listen, &token) {
        return Err(CommandError::invalid(
            format!(
                "refusing to listen on {addr} without a token: any local user, and any web page \
                 open in a browser, could read and change every session"
            ),
            format!("make a token file and give it with --token-file: `(umask 077; openssl rand -hex 32 > grove.token)`, then `grove serve --listen {addr} --token-file grove.token`"),
        ));
    }
    let allowed = args
        .allow_host
        .iter()
        .map(|name| {
            guard::allowed_name(name).map_err(|message| {
                CommandError::invalid(
                    message,
                    "give --allow-host a host name, such as grove.example.com",
                )
            })
        })
        .collect::<CmdResult<Vec<_>>>()?;
    // Sharded (--etcd): one store per cluster of the shard map, which a thread keeps fresh.
    let mut full_disk = None;
    #[cfg(feature = "postgres")]
    let etcd = args.etcd.as_ref();
    #[cfg(not(feature = "postgres"))]
    let etcd: Option<std::convert::Infallible> = None;
    let (stores, refresher): (Stores, Option<Refresher>) = match etcd {
        None => match env.open_store() {
            Ok(store) => (Stores::One(store), None),
            // The disk has less than the reserve free: serve reads; writes answer DiskFull.
            Err(CommandError::Grove(GroveError::DiskFull {
                dir,
                required,
                available,
                ..
            })) => {
                eprintln!(
                    "grove serve: {} has {available} bytes free, less than the reserve of \
                     {required}: serving reads; writes are refused (DiskFull) until space is \
                     freed (the store is then reopened for writing)",
                    dir.display()
                );
                full_disk = Some((
                    state::FullDisk {
                        dir,
                        reserve: required,
                    },
                    full_disk::Openers {
                        write: env.store_opener(false)?,
                        read: env.store_opener(true)?,
                    },
                ));
                (Stores::One(env.read_store()?), None)
            }
            Err(e) => return Err(e),
        },
        #[cfg(not(feature = "postgres"))]
        Some(never) => match never {},
        #[cfg(feature = "postgres")]
        Some(etcd) => {
            let (etcd, keys) = crate::etcd_args::connect(&crate::etcd_args::EtcdArgs {
                etcd: etcd.clone(),
                etcd_prefix: args.etcd_prefix.clone(),
            })?;
            let shards = Shards::open(etcd, keys, env.cluster_opener("server"))?;
            let every = Duration::try_from_secs_f64(args.map_refresh).map_err(|_| {
                CommandError::invalid(
                    format!(
                        "--map-refresh {} is not a number of seconds",
                        args.map_refresh
                    ),
                    "give a duration in seconds, such as 0.2",
                )
            })?;
            let refresher = shards.refresh_every(every);
            (Stores::Sharded(shards), Some(refresher))
        }
    };
    // The retention policy is read and checked now; each run reads its ages again.
    let retention = match &args.retain {
        None => None,
        Some(path) => {
            if etcd.is_some() {
                return Err(CommandError::invalid(
                    "--retain applies to one store, not to sessions sharded over clusters",
                    "run `grove retain --apply` on each cluster's store",
                ));
            }
            let text = std::fs::read_to_string(path).map_err(|source| CommandError::File {
                path: path.clone(),
                source,
            })?;
            let bad = |e: String| {
                CommandError::invalid(
                    format!("{}: {e}", path.display()),
                    "see `grove retain --help` for the policy's form",
                )
            };
            let json: crate::retain::PolicyJson =
                serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
            crate::retain::policy(json, crate::when::now_ms()).map_err(bad)?;
            let every = crate::retain::age_ms(&args.retain_every, crate::when::now_ms())
                .ok()
                .filter(|ms| *ms > 0)
                .ok_or_else(|| {
                    CommandError::invalid(
                        format!("--retain-every {} is not a duration", args.retain_every),
                        "give a duration such as 30m, 1h or 1d",
                    )
                })?;
            Some((text, Duration::from_millis(every)))
        }
    };
    let socket = args
        .socket
        .clone()
        .unwrap_or_else(|| env.store_dir.join("grove.sock"));
    if args.max_streams >= limits::BLOCKING_THREADS {
        return Err(CommandError::invalid(
            format!(
                "--max-streams {} would leave no thread of the blocking pool ({}) for writes",
                args.max_streams,
                limits::BLOCKING_THREADS
            ),
            "give a smaller --max-streams",
        ));
    }
    let body_timeout = Duration::from_secs(args.body_timeout);
    let limits = limits::Limits::new(
        args.max_body,
        args.max_import,
        body_timeout,
        seconds("--keepalive", args.keepalive)?,
        seconds("--health-timeout", args.health_timeout)?,
        args.max_followers,
        args.max_streams,
    );
    // The state holds the only handle to the stores: a store opened to read on a full disk
    // is closed and reopened for writing once there is room (full_disk.rs).
    // A store in a directory, open for writing: its files can be rewritten (rewrite.rs).
    let rewriter = match &stores {
        Stores::One(store)
            if full_disk.is_none() && matches!(store.backend_name(), "sled" | "redb") =>
        {
            Some(state::Rewriter {
                config: env.store_config()?,
                open: env.store_opener(false)?,
            })
        }
        _ => None,
    };
    let state = state::State::new(
        stores,
        limits,
        full_disk.as_ref().map(|(full, _)| full.clone()),
        env.durability.durability(),
        args.summarizer.summarizer(),
        rewriter,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(limits::BLOCKING_THREADS)
        .thread_name("grove-serve")
        .build()
        .map_err(|e| CommandError::io("starting the server's runtime", e))?;
    let conn = ConnLimits {
        header_timeout: Duration::from_secs(args.header_timeout),
        drain: Duration::from_secs(args.drain_timeout),
        open: Arc::new(tokio::sync::Semaphore::new(args.max_connections)),
    };
    let announce_in = (etcd.is_none() && env.store_dir.is_dir()).then(|| env.store_dir.clone());
    let out = &mut *env.out;
    let served = state.clone();
    runtime.block_on(async move {
        if let Some((full, openers)) = full_disk {
            tokio::spawn(full_disk::reopen_when_room(state.clone(), full, openers));
        }
        if let Some((text, every)) = retention {
            tokio::spawn(retain::every(state.clone(), text, every));
        }
        let stopped = shutdown_signal();
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut servers = Vec::new();
        let unix = bind_unix(&socket)?;
        // Where this server listens, for a program that finds the store held (the native
        // packages' `openStore` connects here instead): only a store of this process's own
        // directory (not a sharded one). Written before the server says it listens, so that
        // whoever waits for that finds it (the socket is bound: a connection waits to be
        // accepted).
        let announced = announce_in.and_then(|dir| announce(&dir, &socket));
        writeln!(out, "listening on unix:{}", socket.display())
            .and_then(|()| out.flush())
            .map_err(|e| CommandError::io("writing to stdout", e))?;
        let router = unread::answered_whole(
            guard::unix(routes::router(state.clone(), None)),
            body_timeout,
        );
        servers.push(tokio::spawn(serve_unix(
            unix,
            router,
            conn.clone(),
            stop_rx.clone(),
        )));
        if let Some(addr) = args.listen {
            let tcp = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| CommandError::io(format!("listening on {addr}"), e))?;
            let local = tcp
                .local_addr()
                .map_err(|e| CommandError::io("reading the TCP address", e))?;
            writeln!(out, "listening on http://{local}")
                .and_then(|()| out.flush())
                .map_err(|e| CommandError::io("writing to stdout", e))?;
            let router = unread::answered_whole(
                guard::tcp(
                    routes::router(state.clone(), token.clone().map(Arc::from)),
                    guard::Hosts::new(local, allowed),
                ),
                body_timeout,
            );
            servers.push(tokio::spawn(serve_tcp(
                tcp,
                router,
                conn.clone(),
                stop_rx.clone(),
            )));
        }
        stopped.await;
        state.stop();
        let _ = stop_tx.send(true);
        for server in servers {
            let _ = server.await;
        }
        let _ = std::fs::remove_file(&socket);
        if let Some(file) = announced {
            let _ = std::fs::remove_file(file);
        }
        Ok::<(), CommandError>(())
    })?;
    // Every request is finished (or abandoned after the drain timeout): flush and close.
    drop(runtime);
    #[cfg(feature = "postgres")]
    drop(refresher);
    #[cfg(not(feature = "postgres"))]
    let _: Option<Refresher> = refresher;
    let stores = served.current_stores();
    drop(served);
    // (A store opened only to read, on a full disk, has nothing to flush.)
    for store in stores.iter().flat_map(Stores::all) {
        if !store.is_read_only() {
            store.flush()?;
        }
    }
    drop(stores);
    Ok(())
}

/// `--NAME SECONDS` as a duration.
fn seconds(name: &str, value: f64) -> CmdResult<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            CommandError::invalid(
                format!("{name} {value} is not a positive number of seconds"),
                "give a duration in seconds, such as 5",
            )
        })
}

/// The token of the token file `path`, which only its owner may read.
fn read_token(path: &Path) -> CmdResult<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| CommandError::io(format!("reading the token file {}", path.display()), e))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(CommandError::invalid(
            format!(
                "the token file {} has mode {:o}: users other than its owner may read the token",
                path.display(),
                mode & 0o777
            ),
            format!("run `chmod 600 {}`", path.display()),
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| CommandError::io(format!("reading the token file {}", path.display()), e))?;
    let token = text.lines().next().unwrap_or_default().trim().to_owned();
    if token.len() < 16 {
        return Err(CommandError::invalid(
            format!(
                "the token in {} is {} characters long; a bearer token needs at least 16",
                path.display(),
                token.len()
            ),
            "write a long random token to the file, e.g. `(umask 077; openssl rand -hex 32 > FILE)`",
        ));
    }
    Ok(token)
}

/// Binds the unix socket with mode 0600 (a stale socket file of a server that is gone is
/// replaced; a live one is an error).
/// The file in the store directory that says a server holds the store, and where it listens
/// (docs/format.md, "Files").
const SERVE_FILE: &str = "serve.json";

/// Writes [`SERVE_FILE`] (`{"pid":…,"socket":…}`, atomically); best effort: a store whose
/// directory cannot take it is served all the same, and openers are refused with `Locked`.
fn announce(dir: &Path, socket: &Path) -> Option<PathBuf> {
    let socket = std::path::absolute(socket).ok()?;
    let text = serde_json::json!({ "pid": std::process::id(), "socket": socket }).to_string();
    let file = dir.join(SERVE_FILE);
    let temp = dir.join(format!("{SERVE_FILE}.{}", std::process::id()));
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, &file))
        .map_err(|_| std::fs::remove_file(&temp))
        .ok()?;
    Some(file)
}

fn bind_unix(path: &Path) -> CmdResult<tokio::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(CommandError::invalid(
                format!("another server listens on {}", path.display()),
                "stop it, or give --socket another path",
            ));
        }
        std::fs::remove_file(path).map_err(|e| {
            CommandError::io(format!("removing the stale socket {}", path.display()), e)
        })?;
    }
    let listener = std::os::unix::net::UnixListener::bind(path)
        .map_err(|e| CommandError::io(format!("listening on {}", path.display()), e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| CommandError::io(format!("setting the mode of {}", path.display()), e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| CommandError::io("configuring the socket", e))?;
    tokio::net::UnixListener::from_std(listener)
        .map_err(|e| CommandError::io("configuring the socket", e))
}

/// SIGTERM or SIGINT, whichever comes first. The handlers are installed when this is called,
/// not when it is awaited: the server calls it before it says it listens, so a stop sent the
/// moment it is ready is a graceful stop (requests finished, the store flushed), never the
/// default disposition's exit, which loses what durability `none` had not flushed.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let signals = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match signals {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => std::future::pending::<()>().await,
        }
    }
}

/// The limits of the connection loop, shared by both listeners.
#[derive(Clone)]
struct ConnLimits {
    header_timeout: Duration,
    drain: Duration,
    /// A place per connection served (`--max-connections`).
    open: Arc<tokio::sync::Semaphore>,
}

async fn serve_unix(
    listener: tokio::net::UnixListener,
    router: axum::Router,
    conn: ConnLimits,
    stop: watch::Receiver<bool>,
) {
    serve(
        || async { listener.accept().await.map(|(s, _)| s) },
        router,
        conn,
        stop,
    )
    .await;
}

async fn serve_tcp(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    conn: ConnLimits,
    stop: watch::Receiver<bool>,
) {
    serve(
        || async {
            let (s, _) = listener.accept().await?;
            let _ = s.set_nodelay(true);
            Ok(s)
        },
        router,
        conn,
        stop,
    )
    .await;
}

/// The connection loop: each accepted connection is served by hyper's HTTP/1.1 server (with
/// keep-alive and a header read timeout) until `stop`; then the connections finish their
/// requests in flight, for at most `drain`. A connection over `--max-connections` is
/// answered `503 busy` and closed.
async fn serve<S, F, Fut>(
    mut accept: F,
    router: axum::Router,
    caps: ConnLimits,
    mut stop: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::io::Result<S>>,
{
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = accept() => {
                let stream = match accepted {
                    Ok(s) => s,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, then go on serving.
                        eprintln!("grove serve: accepting a connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(place) = caps.open.clone().try_acquire_owned() else {
                    let busy = tower::service_fn(|_: Request<hyper::body::Incoming>| async {
                        Ok::<_, std::convert::Infallible>(limits::over_connection_cap())
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(caps.header_timeout)
                        .keep_alive(false)
                        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(busy));
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    continue;
                };
                let service = router
                    .clone()
                    .map_request(|req: Request<hyper::body::Incoming>| req.map(axum::body::Body::new));
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(caps.header_timeout)
                    .keep_alive(true)
                    // A client that shuts down its write side after a request still gets
                    // the answer.
                    .half_close(true)
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
                let watched = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = watched.await;
                    drop(place);
                });
            }
            _ = stop.changed() => break,
        }
    }
    let drain = caps.drain;
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(drain) => {
            eprintln!("grove serve: requests still in flight after {drain:?}; closing anyway");
        }
    }
}
