//! A PostgreSQL primary with a synchronous standby of its own, for the tests that restart, kill
//! and fail over the database (docs/scale-out.md, "The synchronous standby").
//!
//! [`PgCluster::start`] makes both in a temporary directory with Debian's package
//! (`/usr/lib/postgresql/*/bin`; `tools/pg-setup.sh install` installs it when missing), on free
//! loopback ports, as the `postgres` user when the tests run as root (PostgreSQL refuses root):
//! `initdb`, the primary started with `wal_level=replica`, `synchronous_standby_names =
//! 'grove_standby'` and `synchronous_commit = on`, the standby copied with `pg_basebackup -R`
//! and streaming as `application_name=grove_standby`. It returns once `pg_stat_replication`
//! shows the standby as `sync`, so from then on a commit the primary acknowledges is on the
//! standby too. The primary's settings are given on its command line, not in its
//! `postgresql.conf`, so the standby (a copy of its data directory) does not inherit them: once
//! promoted it commits without waiting for a standby of its own.
//!
//! Each pair is private to its test (never the shared server of `GROVE_TEST_PG`), and one pair
//! runs at a time in a test process ([`PgCluster`] holds a lock until it is dropped), so the
//! destructive tests do not load the machine with several database pairs at once. Dropping it
//! stops both servers and removes the directory.
//!
//! Without PostgreSQL's binaries (and no way to install them) [`PgCluster::start`] says so and
//! returns None, unless `CI` is set: there it panics, as CI must run these tests.

use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The `application_name` the standby streams as, and the primary's
/// `synchronous_standby_names`.
pub const STANDBY_NAME: &str = "grove_standby";

/// How long any one wait of the helper may take before it fails: generous, for a loaded
/// machine.
const WAIT: Duration = Duration::from_secs(180);

/// What failed while driving the servers.
#[derive(Debug)]
pub struct ClusterError(String);

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClusterError {}

type Result<T> = std::result::Result<T, ClusterError>;

fn fail<T>(message: impl Into<String>) -> Result<T> {
    Err(ClusterError(message.into()))
}

/// A primary and its synchronous standby, stopped when dropped.
pub struct PgCluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// The primary's TCP port on 127.0.0.1.
    pub primary_port: u16,
    /// The standby's TCP port on 127.0.0.1.
    pub standby_port: u16,
    /// Set once the primary was killed: Drop has nothing of it to stop.
    primary_killed: AtomicBool,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl PgCluster {
    /// Starts a primary and a synchronous standby (see the module's docs); None when
    /// PostgreSQL is not installed and `CI` is not set.
    pub fn start() -> Option<PgCluster> {
        let Some(bin) = binaries() else {
            if std::env::var_os("CI").is_some() {
                panic!("PostgreSQL is not installed: CI must install it (tools/pg-setup.sh)");
            }
            eprintln!("PostgreSQL is not installed: skipping a test of a primary with a standby (tools/pg-setup.sh installs it)");
            return None;
        };
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let start = Instant::now();
        match PgCluster::make(bin, guard) {
            Ok(cluster) => {
                eprintln!(
                    "pg_cluster: a primary and its synchronous standby in {:.1} s",
                    start.elapsed().as_secs_f64()
                );
                Some(cluster)
            }
            Err(e) => panic!("starting a PostgreSQL primary with a standby: {e}"),
        }
    }

    fn make(bin: PathBuf, guard: MutexGuard<'static, ()>) -> Result<PgCluster> {
        let dir = tempfile::Builder::new()
            .prefix("grove-pgc")
            .tempdir_in("/tmp")
            .map_err(|e| ClusterError(format!("a temporary directory: {e}")))?;
        if !dir.path().to_string_lossy().bytes().all(safe_byte) {
            return fail(format!("{}: an unexpected path", dir.path().display()));
        }
        if running_as_root() {
            run(Command::new("chown")
                .arg("postgres:postgres")
                .arg(dir.path()))?;
        }
        let mut cluster = PgCluster {
            bin,
            dir,
            primary_port: 0,
            standby_port: 0,
            primary_killed: AtomicBool::new(false),
            _one_at_a_time: guard,
        };
        let primary = cluster.primary_dir();
        cluster.as_pg(&format!(
            "{} -D {} -U postgres -A trust --no-sync -E UTF8 >{}/initdb.log 2>&1",
            cluster.tool("initdb"),
            primary.display(),
            cluster.dir().display()
        ))?;
        // A free port can be taken by someone else before the server binds it: try again.
        let mut attempt = 0;
        loop {
            cluster.primary_port = free_port()?;
            match cluster.start_primary() {
                Ok(()) => break,
                Err(e) if attempt < 3 => {
                    eprintln!("pg_cluster: the primary did not start ({e}); another port");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
        let standby = cluster.standby_dir();
        cluster.as_pg(&format!(
            "{} -D {} -h 127.0.0.1 -p {} -U postgres -R -X stream --no-sync --checkpoint=fast >{}/basebackup.log 2>&1",
            cluster.tool("pg_basebackup"),
            standby.display(),
            cluster.primary_port,
            cluster.dir().display()
        ))?;
        // `-R` wrote a primary_conninfo; this one (later in the file, so it wins) names the
        // standby as the primary's synchronous_standby_names expects.
        cluster.as_pg(&format!(
            "echo \"primary_conninfo = 'host=127.0.0.1 port={} user=postgres application_name={STANDBY_NAME}'\" >>{}/postgresql.auto.conf",
            cluster.primary_port,
            standby.display()
        ))?;
        let mut attempt = 0;
        loop {
            cluster.standby_port = free_port()?;
            let started = cluster.pg_ctl(
                &standby,
                "standby",
                &format!(
                    "start -o '-p {} -c listen_addresses=127.0.0.1 -k {} -c hot_standby=on -c wal_retrieve_retry_interval=200ms -c max_connections=100'",
                    cluster.standby_port,
                    cluster.dir().display()
                ),
            );
            match started {
                Ok(()) => break,
                Err(e) if attempt < 3 => {
                    eprintln!("pg_cluster: the standby did not start ({e}); another port");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
        cluster.wait_sync()?;
        Ok(cluster)
    }

    /// The primary's URL.
    pub fn primary_url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            self.primary_port
        )
    }

    /// The standby's URL.
    pub fn standby_url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            self.standby_port
        )
    }

    /// Both hosts, as a client that follows a failover names them: libpq's multi-host URL
    /// with `target_session_attrs=read-write`, so a connection goes to whichever is primary.
    pub fn failover_url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
            self.primary_port, self.standby_port
        )
    }

    /// Starts the primary (again, after [`PgCluster::stop_primary`]) with its settings.
    pub fn start_primary(&self) -> Result<()> {
        self.pg_ctl(
            &self.primary_dir(),
            "primary",
            &format!(
                "start -o '-p {} -c listen_addresses=127.0.0.1 -k {} -c wal_level=replica -c max_wal_senders=5 -c wal_keep_size=256MB -c synchronous_standby_names={STANDBY_NAME} -c synchronous_commit=on -c max_connections=100 -c fsync=on'",
                self.primary_port,
                self.dir().display()
            ),
        )
    }

    /// Stops the primary with a fast shutdown (its sessions are cut, as a restart cuts them).
    pub fn stop_primary(&self) -> Result<()> {
        self.pg_ctl(&self.primary_dir(), "primary", "-m fast stop")
    }

    /// `pg_ctl restart -m fast` of the primary; returns once it accepts connections.
    pub fn restart_primary(&self) -> Result<()> {
        self.pg_ctl(&self.primary_dir(), "primary", "-m fast restart")
    }

    /// SIGKILL to the primary's postmaster (the first line of its `postmaster.pid`); returns
    /// once the process is gone and its port refuses connections.
    pub fn kill_primary(&self) -> Result<()> {
        let pid_file = self.primary_dir().join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file)
            .map_err(|e| ClusterError(format!("{}: {e}", pid_file.display())))?;
        let pid: u32 = match text.lines().next().map(str::trim).map(str::parse) {
            Some(Ok(pid)) => pid,
            _ => return fail(format!("{}: no pid on its first line", pid_file.display())),
        };
        run(Command::new("kill").args(["-KILL", &pid.to_string()]))?;
        self.primary_killed.store(true, Ordering::Relaxed);
        let gone = || {
            // A zombie (not yet reaped by whoever adopted it) is as dead as a missing process.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            let dead = stat.is_empty() || state.starts_with('Z') || state.starts_with('X');
            dead && std::net::TcpStream::connect(("127.0.0.1", self.primary_port)).is_err()
        };
        poll("the killed primary to go away", gone)
    }

    /// Promotes the standby (`pg_ctl promote`); returns once it is out of recovery.
    pub fn promote_standby(&self) -> Result<()> {
        self.pg_ctl(&self.standby_dir(), "standby", "promote")?;
        let url = self.standby_url();
        poll("the promoted standby to leave recovery", || {
            postgres::Client::connect(&url, postgres::NoTls)
                .and_then(|mut c| c.query_one("SELECT pg_is_in_recovery()", &[]))
                .is_ok_and(|row| !row.get::<_, bool>(0))
        })
    }

    /// The standby's `sync_state` in the primary's `pg_stat_replication`, if it is connected.
    pub fn sync_state(&self) -> Option<String> {
        let mut client = postgres::Client::connect(&self.primary_url(), postgres::NoTls).ok()?;
        let row = client
            .query_opt(
                "SELECT sync_state FROM pg_stat_replication WHERE application_name = $1",
                &[&STANDBY_NAME],
            )
            .ok()??;
        row.get::<_, Option<String>>(0)
    }

    /// Waits until the standby streams from the primary as its synchronous standby.
    pub fn wait_sync(&self) -> Result<()> {
        poll(
            "the standby to be the primary's synchronous standby",
            || self.sync_state().as_deref() == Some("sync"),
        )
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn primary_dir(&self) -> PathBuf {
        self.dir().join("primary")
    }

    fn standby_dir(&self) -> PathBuf {
        self.dir().join("standby")
    }

    fn tool(&self, name: &str) -> String {
        self.bin.join(name).display().to_string()
    }

    /// `pg_ctl -D DATA -l DIR/NAME.log -w -t 180 ACTION`; the server's log in the error.
    fn pg_ctl(&self, data: &Path, name: &str, action: &str) -> Result<()> {
        let started = Instant::now();
        let log = self.dir().join(format!("{name}.log"));
        let done = self.as_pg(&format!(
            "{} -D {} -l {} -w -t {} {action} >>{}/pg_ctl.log 2>&1",
            self.tool("pg_ctl"),
            data.display(),
            log.display(),
            WAIT.as_secs(),
            self.dir().display()
        ));
        let verb = ["start", "stop", "restart", "promote"]
            .into_iter()
            .find(|verb| action.split(' ').any(|w| w == *verb))
            .unwrap_or(action);
        eprintln!(
            "pg_cluster: pg_ctl {verb} ({name}) in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        done.map_err(|e| {
            let tail = |path: &Path| {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(20)..].join("\n")
            };
            ClusterError(format!(
                "pg_ctl {action} ({name}): {e}\n{}\n{}",
                tail(&self.dir().join("pg_ctl.log")),
                tail(&log)
            ))
        })
    }

    /// Runs a shell command as the `postgres` user when running as root, else as oneself.
    fn as_pg(&self, script: &str) -> Result<()> {
        let mut command = if running_as_root() {
            let mut c = Command::new("su");
            c.args(["postgres", "-s", "/bin/sh", "-c", script]);
            c
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", script]);
            c
        };
        run(command.current_dir(self.dir()))
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let killed = self.primary_killed.load(Ordering::Relaxed);
        for (data, name) in [
            (self.standby_dir(), "standby"),
            (self.primary_dir(), "primary"),
        ] {
            if data.join("postmaster.pid").exists() && !(killed && name == "primary") {
                if let Err(e) = self.pg_ctl(&data, name, "-m immediate stop") {
                    eprintln!("pg_cluster: stopping the {name}: {e}");
                }
            }
        }
    }
}

/// Polls `ready` until it holds, up to [`WAIT`].
fn poll(what: &str, mut ready: impl FnMut() -> bool) -> Result<()> {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() > WAIT {
            return fail(format!("waited {} s for {what}", WAIT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn run(command: &mut Command) -> Result<()> {
    let out: Output = command
        .output()
        .map_err(|e| ClusterError(format!("{command:?}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        fail(format!(
            "{command:?}: {}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"/-_.".contains(&b)
}

fn free_port() -> Result<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| ClusterError(format!("a free port: {e}")))
}

fn running_as_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
    })
}

/// The newest `/usr/lib/postgresql/*/bin` holding `initdb`; when there is none,
/// `tools/pg-setup.sh install` is run once (it installs Debian's package as root) and the
/// search repeated.
pub fn binaries() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| {
        find_binaries().or_else(|| {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/pg-setup.sh");
            // Its progress goes to stderr, the folder to stdout (read again below).
            match Command::new("bash").arg(&script).arg("install").output() {
                Ok(out) if out.status.success() => find_binaries(),
                _ => None,
            }
        })
    })
    .clone()
}

fn find_binaries() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|item| {
            let item = item.ok()?;
            let version: u32 = item.file_name().to_str()?.parse().ok()?;
            let bin = item.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}
