//! Three `grove serve` nodes over one PostgreSQL table, on a primary with a synchronous standby
//! (issue 20, "Many nodes"; docs/scale-out.md, "One database, many nodes"). Each test starts a
//! database pair of its own (`grove_tests::pg_cluster`) and three real servers on it; client
//! threads append to the same few sessions with compare-and-swap (`POST
//! /v1/sessions/{sid}/entries/if`), reading the leaf through one node and appending through
//! another. After what each test does to the nodes or the database, every acknowledged append
//! is in its session exactly once, each session is one chain in which every client's appends
//! keep their order, every live node reads the same chain, and so does a fourth node started
//! at the end (which reads what the database holds, not what a node kept in memory), and
//! `grove verify` is clean.
//!
//! Many nodes writing one session rest on fenced commits and on each node checking its cached
//! head against the log (docs/scale-out.md, "Fencing"): without them an append through one
//! node overwrote another node's and nodes read stale leaves, and these tests failed.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use grove_tests::pg_cluster::PgCluster;
use serde_json::{json, Value};

use super::{Server, TOKEN};
use crate::cli::grove_bin;

/// The table every node opens.
const TABLE: &str = "grove_cluster";
/// How long the tests wait for clients to make progress before failing: generous, for a
/// loaded 2-core machine.
const PROGRESS: Duration = Duration::from_secs(300);

/// The nodes (three, but for the one-node test) and the database pair under them.
struct Cluster {
    /// The servers; None once killed.
    nodes: Vec<Option<Server>>,
    /// Their `http://127.0.0.1:PORT`, kept after a kill (clients find it refusing).
    urls: Vec<String>,
    /// The URL the nodes were given.
    pg_url: String,
    dirs: Vec<tempfile::TempDir>,
    /// Dropped last: the servers stop before their database does.
    pg: PgCluster,
}

impl Cluster {
    /// A database pair and three nodes on `url(pg)`, with `sessions` sessions made through
    /// the first; None (outside CI) without PostgreSQL.
    fn start(url: impl Fn(&PgCluster) -> String, sessions: usize) -> Option<Cluster> {
        Cluster::start_nodes(url, sessions, 3)
    }

    /// [`Cluster::start`] with `count` nodes.
    fn start_nodes(
        url: impl Fn(&PgCluster) -> String,
        sessions: usize,
        count: usize,
    ) -> Option<Cluster> {
        let pg = PgCluster::start()?;
        let pg_url = url(&pg);
        let mut nodes = Vec::new();
        let mut dirs = Vec::new();
        for _ in 0..count {
            let (server, dir) = node(&pg_url);
            nodes.push(Some(server));
            dirs.push(dir);
        }
        let urls = nodes.iter().flatten().map(|s| s.url.clone()).collect();
        let cluster = Cluster {
            nodes,
            urls,
            pg_url,
            dirs,
            pg,
        };
        for s in 0..sessions {
            cluster.node(0).ok(
                201,
                "POST",
                "/v1/sessions",
                Some(&json!({ "id": session(s) }).to_string()),
            );
        }
        Some(cluster)
    }

    /// A fourth node started now: what it reads comes from the database, not from anything a
    /// node kept in memory while the writers ran.
    fn fresh_node(&self) -> (Server, tempfile::TempDir) {
        node(&self.pg_url)
    }

    fn node(&self, n: usize) -> &Server {
        self.nodes[n].as_ref().expect("a live node")
    }

    fn live(&self) -> Vec<&Server> {
        self.nodes.iter().flatten().collect()
    }

    /// SIGKILL to node `n`.
    fn kill(&mut self, n: usize) {
        if let Some(server) = self.nodes[n].take() {
            server.kill();
        }
    }

    /// [`check`] through every live node and a fresh one.
    fn check(&self, sessions: usize, acked: &[Acked]) {
        let (fresh, _dir) = self.fresh_node();
        let mut nodes = self.live();
        nodes.push(&fresh);
        check(&nodes, sessions, acked);
    }

    /// `grove verify --json` on the table, as a separate process: clean, and it checked the
    /// `sessions` sessions and at least `records` records (so not some other, empty table).
    fn verify(&self, sessions: usize, records: usize) {
        let out = Command::new(grove_bin())
            .arg("--store")
            .arg(self.dirs[0].path().join("cli"))
            .args(["--backend", "postgres", "--pg", &self.pg_url])
            .args(["--pg-table", TABLE, "verify", "--json"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "grove verify: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(report["problems"], json!([]), "{report}");
        assert_eq!(report["sessions"], sessions, "{report}");
        assert!(
            report["records"].as_u64().unwrap() >= records as u64,
            "{report}"
        );
    }
}

/// A `grove serve` node on the table at `pg_url`, in a directory of its own (its token and
/// unix socket).
fn node(pg_url: &str) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("grove.sock");
    let global = [
        "--durability",
        "sync",
        "--backend",
        "postgres",
        "--pg",
        pg_url,
        "--pg-table",
        TABLE,
    ];
    let extra = ["--socket", socket.to_str().unwrap()];
    (Server::start_with(dir.path(), &global, &extra), dir)
}

fn session(s: usize) -> String {
    format!("s{s}")
}

/// One HTTP client of a writer thread; transport errors are values.
#[derive(Clone)]
struct Client {
    agent: ureq::Agent,
}

impl Client {
    fn new() -> Client {
        Client {
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(120))
                .build(),
        }
    }

    fn call(&self, base: &str, method: &str, path: &str, body: Option<&str>) -> Reply {
        let req = self
            .agent
            .request(method, &format!("{base}{path}"))
            .set("authorization", &format!("Bearer {TOKEN}"))
            .set("content-type", "application/json");
        let result = match body {
            Some(b) => req.send_string(b),
            None => req.call(),
        };
        let (status, text) = match result {
            Ok(resp) => (resp.status(), resp.into_string()),
            Err(ureq::Error::Status(status, resp)) => {
                // The database away: the answer says when to ask again.
                if status == 503 {
                    assert_eq!(
                        resp.header("retry-after"),
                        Some("1"),
                        "{method} {base}{path}: 503 without Retry-After"
                    );
                }
                (status, resp.into_string())
            }
            Err(e) => return Reply::Down(e.to_string()),
        };
        match text.map(|t| serde_json::from_str::<Value>(&t).map_err(|e| format!("{e}: {t}"))) {
            Ok(Ok(v)) => Reply::Answer(status, v),
            Ok(Err(e)) => Reply::Down(format!("{status}: not JSON: {e}")),
            Err(e) => Reply::Down(format!("{status}: reading the body: {e}")),
        }
    }
}

/// What a request got.
enum Reply {
    /// The status and the JSON body.
    Answer(u16, Value),
    /// No answer (the node is gone, the connection broke).
    Down(String),
}

/// One compare-and-swap attempt's outcome.
enum Step {
    Appended(String),
    /// The leaf moved between the read and the append.
    Conflict,
    /// An error answer the client may retry (`unavailable`, `busy`): its code.
    Retry(String),
    /// No answer from the node.
    Down,
}

/// Whether an error answer is one a client retries: `unavailable` (503, the database could not
/// be reached or gave the statement up) or `busy` (409, a commit refused too often). A `storage`
/// answer (500) is not: it says the store failed in a way asking again does not mend.
fn retryable(status: u16, body: &Value) -> Option<String> {
    let code = body["code"].as_str()?;
    let ok = matches!((status, code), (503, "unavailable") | (409, "busy"));
    ok.then(|| code.to_owned())
}

/// Reads `sid`'s leaf through `read` and appends a child of it through `write`, naming it.
fn cas_append(
    client: &Client,
    read: &str,
    write: &str,
    sid: &str,
    by: &str,
) -> Result<Step, String> {
    let leaf = match client.call(read, "GET", &format!("/v1/sessions/{sid}"), None) {
        Reply::Answer(200, v) => v["leaf"].clone(),
        Reply::Answer(status, v) => {
            return retryable(status, &v)
                .map(Step::Retry)
                .ok_or_else(|| format!("GET {read} /v1/sessions/{sid}: {status} {v}"))
        }
        Reply::Down(_) => return Ok(Step::Down),
    };
    let body = json!({
        "expectedLeaf": leaf,
        "entry": {"type": "custom", "customType": "cas", "data": {"by": by}},
    })
    .to_string();
    match client.call(
        write,
        "POST",
        &format!("/v1/sessions/{sid}/entries/if"),
        Some(&body),
    ) {
        Reply::Answer(200, v) if v["appended"] == true => match v["id"].as_str() {
            Some(id) => Ok(Step::Appended(id.to_owned())),
            None => Err(format!("POST {write} entries/if: {v}")),
        },
        Reply::Answer(200, v) if v["appended"] == false => Ok(Step::Conflict),
        Reply::Answer(status, v) => retryable(status, &v)
            .map(Step::Retry)
            .ok_or_else(|| format!("POST {write} /v1/sessions/{sid}/entries/if: {status} {v}")),
        Reply::Down(_) => Ok(Step::Down),
    }
}

/// An acknowledged append: the writer, its session's index, the entry's id.
type Acked = (usize, usize, String);

/// What the writers share with the test.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    acked: Mutex<Vec<Acked>>,
    /// Acknowledged appends per writer.
    counts: Vec<AtomicUsize>,
    /// `unavailable` answers, `busy` answers, and requests no node answered.
    unavailable: AtomicUsize,
    busy: AtomicUsize,
    down: AtomicUsize,
    conflicts: AtomicUsize,
}

/// Writer threads appending with compare-and-swap through every node in turn.
struct Writers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<Result<(), String>>>,
}

impl Writers {
    /// `count` writers over `sessions` sessions and the nodes at `urls`: writer `w`'s n-th
    /// append goes to session `(w + n) % sessions`, reads its leaf through node `(w + n) % 3`
    /// and appends through the next node. A retryable answer or a node that does not answer
    /// makes it start over (read again, through the next nodes); any other answer ends it with
    /// an error.
    fn start(urls: &[String], count: usize, sessions: usize) -> Writers {
        let shared = Arc::new(Shared {
            counts: (0..count).map(|_| AtomicUsize::new(0)).collect(),
            ..Shared::default()
        });
        let threads = (0..count)
            .map(|w| {
                let shared = shared.clone();
                let urls = urls.to_vec();
                let client = Client::new();
                std::thread::spawn(move || {
                    let mut n = w;
                    let mut attempt = 0usize;
                    while !shared.stop.load(Ordering::Relaxed) {
                        let s = n % sessions;
                        let read = &urls[(n + attempt) % urls.len()];
                        let write = &urls[(n + attempt + 1) % urls.len()];
                        attempt += 1;
                        let step = cas_append(&client, read, write, &session(s), &format!("w{w}"))
                            .map_err(|e| format!("writer {w}: {e}"))?;
                        match step {
                            Step::Appended(id) => {
                                shared.acked.lock().unwrap().push((w, s, id));
                                shared.counts[w].fetch_add(1, Ordering::SeqCst);
                                n += 1;
                                attempt = 0;
                            }
                            Step::Conflict => {
                                shared.conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                            Step::Retry(code) => {
                                let count = if code == "busy" {
                                    &shared.busy
                                } else {
                                    &shared.unavailable
                                };
                                count.fetch_add(1, Ordering::Relaxed);
                                // The database is away: do not spin on it.
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            Step::Down => {
                                shared.down.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        Writers { shared, threads }
    }

    /// Requests no node answered so far.
    fn unanswered(&self) -> usize {
        self.shared.down.load(Ordering::Relaxed)
    }

    /// Each writer's acknowledged appends now.
    fn counts(&self) -> Vec<usize> {
        self.shared
            .counts
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect()
    }

    /// Waits until every writer has `more` acknowledged appends past `from` (their counts at
    /// some earlier moment); fails if a writer ended with an error or none came for a long
    /// time.
    fn wait_for(&mut self, from: &[usize], more: usize) {
        let start = Instant::now();
        loop {
            let now = self.counts();
            if now.iter().zip(from).all(|(n, f)| *n >= f + more) {
                eprintln!(
                    "writers: {more} more appends each in {:.1} s",
                    start.elapsed().as_secs_f64()
                );
                return;
            }
            if let Some(i) = self.threads.iter().position(JoinHandle::is_finished) {
                let result = self.threads.remove(i).join().unwrap();
                self.shared.stop.store(true, Ordering::Relaxed);
                panic!("a writer ended: {result:?}");
            }
            assert!(
                start.elapsed() < PROGRESS,
                "writers made no progress: {now:?} acknowledged, waiting for {more} past {from:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the writers; every acknowledged append.
    fn stop(mut self) -> Vec<Acked> {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in std::mem::take(&mut self.threads) {
            t.join().unwrap().unwrap();
        }
        eprintln!(
            "writers: {} acknowledged, {} conflicts, {} unavailable and {} busy answers, {} requests unanswered",
            self.shared.acked.lock().unwrap().len(),
            self.shared.conflicts.load(Ordering::Relaxed),
            self.shared.unavailable.load(Ordering::Relaxed),
            self.shared.busy.load(Ordering::Relaxed),
            self.shared.down.load(Ordering::Relaxed)
        );
        std::mem::take(&mut *self.shared.acked.lock().unwrap())
    }
}

impl Drop for Writers {
    /// A test that failed stops its writers too.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

/// Every session, read through every node in `nodes`: one chain (its entries in log order are
/// the path from the root to the leaf), each id once, holding every acknowledged append, each
/// writer's in the order they were acknowledged; and the same chain through every node.
fn check(nodes: &[&Server], sessions: usize, acked: &[Acked]) {
    let ids = |v: Vec<Value>| -> Vec<String> {
        v.iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    for s in 0..sessions {
        let sid = session(s);
        let mut first: Option<Vec<String>> = None;
        for (n, node) in nodes.iter().enumerate() {
            let entries = ids(node.lines(&format!("/v1/sessions/{sid}/entries")));
            let path = ids(node.lines(&format!("/v1/sessions/{sid}/path")));
            assert_eq!(path, entries, "{sid} through node {n}: one chain");
            let position: std::collections::HashMap<&str, usize> = path
                .iter()
                .enumerate()
                .map(|(i, id)| (id.as_str(), i))
                .collect();
            assert_eq!(
                position.len(),
                path.len(),
                "{sid} through node {n}: an id twice"
            );
            let mut last_of_writer: std::collections::HashMap<usize, usize> = Default::default();
            for (w, _, id) in acked.iter().filter(|(_, a, _)| *a == s) {
                let Some(&at) = position.get(id.as_str()) else {
                    panic!("{sid} through node {n}: acknowledged {id} (writer {w}) is missing");
                };
                if let Some(before) = last_of_writer.insert(*w, at) {
                    assert!(
                        before < at,
                        "{sid} through node {n}: writer {w}'s appends out of order"
                    );
                }
            }
            match &first {
                None => first = Some(path),
                Some(other) => assert_eq!(&path, other, "{sid}: node {n} reads another chain"),
            }
        }
    }
}

/// What every node answers while the database is away: an append (which must reach the
/// database) fails with `unavailable` (503, with `Retry-After`), the error clients retry; a read
/// fails the same way unless the node answers it from what it holds; health is `unavailable`
/// too; and the store is not poisoned.
fn assert_unavailable(cluster: &Cluster) {
    let started = Instant::now();
    let client = Client::new();
    for url in &cluster.urls {
        let body = json!({"entry": {"type": "custom", "customType": "away"}}).to_string();
        match client.call(url, "POST", "/v1/sessions/s0/entries", Some(&body)) {
            Reply::Answer(status, v) => assert_eq!(
                (status, v["code"].as_str()),
                (503, Some("unavailable")),
                "{url}: an append, the database away: {v}"
            ),
            Reply::Down(e) => panic!("{url}: an append, the database away: no answer: {e}"),
        }
        match client.call(url, "GET", "/v1/sessions/s0", None) {
            Reply::Answer(200, _) => {}
            Reply::Answer(status, v) => assert_eq!(
                (status, v["code"].as_str()),
                (503, Some("unavailable")),
                "{url}: a read, the database away: {v}"
            ),
            Reply::Down(e) => panic!("{url}: a read, the database away: no answer: {e}"),
        }
        // Health says the database is away (the append just failed), not that the store is
        // poisoned.
        match client.call(url, "GET", "/v1/health", None) {
            Reply::Answer(503, v) if v["code"] == "unavailable" => {
                assert_eq!(v["poisoned"], Value::Null, "{url}: {v}")
            }
            Reply::Answer(status, v) => panic!("{url}: health {status} {v}"),
            Reply::Down(e) => panic!("{url}: health: {e}"),
        }
    }
    eprintln!(
        "the database away: checked in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn compare_and_swap_through_three_nodes_loses_no_update() {
    const SESSIONS: usize = 2;
    let Some(cluster) = Cluster::start(PgCluster::primary_url, SESSIONS) else {
        return;
    };
    let mut writers = Writers::start(&cluster.urls, 4, SESSIONS);
    writers.wait_for(&[0; 4], 20);
    let acked = writers.stop();
    cluster.check(SESSIONS, &acked);
    cluster.verify(SESSIONS, acked.len());
    assert_eq!(cluster.pg.sync_state().as_deref(), Some("sync"));
    // An append through the node that writes the session is one round trip: its commit,
    // which also checks that the session is still listed (docs/scale-out.md, "Round trips
    // through a node").
    let node = cluster.node(2);
    node.ok(201, "POST", "/v1/sessions", Some(r#"{"id": "trips"}"#));
    let trips = || node.ok(200, "GET", "/v1/health", None)["roundTrips"].as_u64();
    let append = |text: &str| {
        let body = json!({"entry": {"role": "user", "content": text, "timestamp": 1}});
        node.ok(
            201,
            "POST",
            "/v1/sessions/trips/entries",
            Some(&body.to_string()),
        );
    };
    append("first");
    let mut costs = Vec::new();
    for i in 0..20 {
        let before = trips().expect("a postgres node counts round trips");
        append(&format!("counted {i}"));
        costs.push(trips().map(|t| t - before));
    }
    assert_eq!(costs, vec![Some(1); 20], "round trips of 20 appends");
}

#[test]
fn a_node_killed_mid_write_loses_nothing_acknowledged_and_the_others_go_on() {
    const SESSIONS: usize = 3;
    let Some(mut cluster) = Cluster::start(PgCluster::primary_url, SESSIONS) else {
        return;
    };
    let mut writers = Writers::start(&cluster.urls, 3, SESSIONS);
    writers.wait_for(&[0; 3], 5);
    cluster.kill(0);
    let at_kill = writers.counts();
    writers.wait_for(&at_kill, 10);
    // The writers found it gone (they go to every node in turn) and went on through the others.
    assert!(writers.unanswered() > 0);
    let acked = writers.stop();
    cluster.check(SESSIONS, &acked);
    cluster.verify(SESSIONS, acked.len());
}

#[test]
fn the_primary_restarted_gives_retryable_errors_then_service_resumes() {
    const SESSIONS: usize = 2;
    let Some(cluster) = Cluster::start(PgCluster::primary_url, SESSIONS) else {
        return;
    };
    let mut writers = Writers::start(&cluster.urls, 3, SESSIONS);
    writers.wait_for(&[0; 3], 5);
    // The restart in two halves, so that requests are made while it is down.
    cluster.pg.stop_primary().unwrap();
    assert_unavailable(&cluster);
    cluster.pg.start_primary().unwrap();
    let restarted = writers.counts();
    writers.wait_for(&restarted, 5);
    // And `pg_ctl restart` as a whole, under the writers.
    cluster.pg.restart_primary().unwrap();
    let restarted = writers.counts();
    writers.wait_for(&restarted, 5);
    let acked = writers.stop();
    cluster.check(SESSIONS, &acked);
    cluster.verify(SESSIONS, acked.len());
}

#[test]
fn the_standby_promoted_after_the_primary_is_killed_loses_nothing_acknowledged() {
    const SESSIONS: usize = 2;
    let Some(cluster) = Cluster::start(PgCluster::failover_url, SESSIONS) else {
        return;
    };
    let mut writers = Writers::start(&cluster.urls, 3, SESSIONS);
    writers.wait_for(&[0; 3], 5);
    cluster.pg.kill_primary().unwrap();
    let at_kill = writers.counts();
    // Until the standby is promoted, no node has a database to write to.
    assert_unavailable(&cluster);
    cluster.pg.promote_standby().unwrap();
    writers.wait_for(&at_kill, 5);
    let acked = writers.stop();
    cluster.check(SESSIONS, &acked);
    cluster.verify(SESSIONS, acked.len());
    // What was read came from the promoted standby: the killed primary cannot answer.
    assert!(postgres::Client::connect(&cluster.pg.primary_url(), postgres::NoTls).is_err());
}

/// The database's failures as one node sees them, apart from what many nodes add (fenced
/// commits): the primary stopped and started, restarted, then killed and the standby promoted,
/// under writers that all go through the one node.
#[test]
fn one_node_rides_through_a_restart_and_a_failover() {
    const SESSIONS: usize = 2;
    let Some(cluster) = Cluster::start_nodes(PgCluster::failover_url, SESSIONS, 1) else {
        return;
    };
    let mut writers = Writers::start(&cluster.urls, 2, SESSIONS);
    writers.wait_for(&[0; 2], 5);
    cluster.pg.stop_primary().unwrap();
    assert_unavailable(&cluster);
    cluster.pg.start_primary().unwrap();
    let event = writers.counts();
    writers.wait_for(&event, 5);
    cluster.pg.restart_primary().unwrap();
    let event = writers.counts();
    writers.wait_for(&event, 5);
    cluster.pg.kill_primary().unwrap();
    let event = writers.counts();
    assert_unavailable(&cluster);
    cluster.pg.promote_standby().unwrap();
    writers.wait_for(&event, 5);
    let acked = writers.stop();
    cluster.check(SESSIONS, &acked);
    cluster.verify(SESSIONS, acked.len());
}
