//! PostgreSQL as a grove backend: one table of ordered byte keys and values.
//!
//! Owns the table (`CREATE TABLE IF NOT EXISTS TABLE (k BYTEA PRIMARY KEY, v BYTEA NOT NULL)`)
//! and the connections to the database; calls only the `postgres` crate. The SQL is what
//! CockroachDB and YugabyteDB run as well: no advisory locks, no extensions, no stored
//! procedures.
//!
//! - `bytea` compares bytewise, as grove's keys must sort.
//! - A [`WriteBatch`] is one statement (a delete of one array of keys and an upsert of two
//!   more, `unnest`ed), so it is atomic and costs one round trip; the last operation on a key
//!   wins, resolved here before it is sent.
//! - A scan reads pages of [`PAGE_ROWS`] rows, one query each, from a connection it takes for
//!   that page only, so a reader holds no connection while its caller works.
//! - Each commit is durable when PostgreSQL answers it (`synchronous_commit` is the server's
//!   to set; its default waits for the WAL flush), so [`Kv::flush`] has nothing to do.
//! - Connections are pooled (at most [`POOL`] kept); each prepares its statements once.
//! - **Conditional batches** ([`Kv::apply_if`]) fence writers in different processes, each in
//!   one statement. The common one, a single guard expected absent that the batch itself puts
//!   (a commit's first log key, a catalogue row), is a **claim**: the guard row is inserted
//!   `ON CONFLICT DO NOTHING`, and the rest of the batch is written only if it was, at the
//!   server's default isolation (read committed): of two writers claiming one key, the second
//!   waits for the first and finds it taken. A claim may also hold rows: guards that expect a
//!   value on keys the batch leaves alone (a commit's session catalogue row) are read in the
//!   same statement `FOR KEY SHARE`, so the claim is inserted only while each has its value,
//!   and a writer that deletes or changes one waits for the claim's statement to commit (or,
//!   first, makes the claim find it gone). Any other guards are checked by a statement on
//!   connections whose transactions are `SERIALIZABLE`, so of two writers that read the same
//!   guard one commits and the other is refused (its statement finds the guard changed, or
//!   PostgreSQL aborts it with a serialization failure, 40001). Serializable statements also
//!   abort for writes that merely share an index page, which is why appends claim instead:
//!   forty sessions appended at once through one node failed that way within eight tries.
//!   Reads and plain batches use the default pool.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use postgres::{Client, NoTls, Statement};

use super::{Guard, Kv, KvError, Pair, Scan, WriteBatch};

/// Rows a scan reads per query.
pub const PAGE_ROWS: i64 = 512;
/// Connections kept open between calls.
pub const POOL: usize = 8;
/// The table of a store when none is named.
pub const DEFAULT_TABLE: &str = "grove_kv";

/// The statements of one connection.
struct Conn {
    client: Client,
    get: Statement,
    last: Statement,
    page: Statement,
    page_rev: Statement,
    apply: Statement,
    apply_if: Statement,
    claim: Statement,
}

impl Conn {
    fn open(config: &postgres::Config, table: &str) -> Result<Conn, KvError> {
        let mut client = config.connect(NoTls)?;
        let get = client.prepare(&format!("SELECT v FROM {table} WHERE k = $1"))?;
        let last = client.prepare(&format!(
            "SELECT k, v FROM {table} WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT 1"
        ))?;
        let page = client.prepare(&format!(
            "SELECT k, v FROM {table} WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3"
        ))?;
        let page_rev = client.prepare(&format!(
            "SELECT k, v FROM {table} WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT $3"
        ))?;
        // One statement: atomic, one round trip. The CTE's delete and the insert touch
        // disjoint keys (the batch is resolved to one operation per key first).
        let apply = client.prepare(&format!(
            "WITH gone AS (DELETE FROM {table} WHERE k = ANY($1::bytea[])) \
             INSERT INTO {table} (k, v) SELECT * FROM unnest($2::bytea[], $3::bytea[]) \
             ON CONFLICT (k) DO UPDATE SET v = excluded.v"
        ))?;
        // Every guard holds when its key has the expected value, or is absent and NULL was
        // expected; the batch's statements run only then, and the answer says which.
        let apply_if = client.prepare(&format!(
            "WITH g AS (SELECT * FROM unnest($4::bytea[], $5::bytea[]) AS g(k, e)), \
             ok AS (SELECT coalesce(bool_and(CASE WHEN g.e IS NULL \
                 THEN NOT EXISTS (SELECT 1 FROM {table} t WHERE t.k = g.k) \
                 ELSE EXISTS (SELECT 1 FROM {table} t WHERE t.k = g.k AND t.v = g.e) END), \
                 true) AS yes FROM g), \
             {}",
            guarded_batch(table)
        ))?;
        // The claim: the guard row inserted unless present, and only while every held row
        // ($6, $7: keys and the values they must have) has its value, each locked against a
        // change until the statement commits; the rest only if the claim was inserted.
        let claim = client.prepare(&format!(
            "WITH held AS (SELECT t.k FROM {table} t \
                 JOIN unnest($6::bytea[], $7::bytea[]) AS h(k, e) ON t.k = h.k AND t.v = h.e \
                 FOR KEY SHARE OF t), \
             claim AS (INSERT INTO {table} (k, v) \
                 SELECT $4, $5 WHERE (SELECT count(*) FROM held) = cardinality($6::bytea[]) \
                 ON CONFLICT (k) DO NOTHING RETURNING 1), \
             ok AS (SELECT EXISTS (SELECT 1 FROM claim) AS yes), \
             {}",
            guarded_batch(table)
        ))?;
        Ok(Conn {
            claim,
            apply_if,
            client,
            get,
            last,
            page,
            page_rev,
            apply,
        })
    }
}

/// The PostgreSQL backend.
pub struct PostgresKv {
    config: postgres::Config,
    /// The same, with transactions `SERIALIZABLE` by default: the connections of
    /// conditional batches.
    fenced: postgres::Config,
    table: String,
    pool: Mutex<Vec<Conn>>,
    fenced_pool: Mutex<Vec<Conn>>,
    /// Statements sent to the server: each is one round trip ([`Kv::round_trips`]).
    statements: AtomicU64,
    /// Why the last round trip failed, when the server could not be reached
    /// ([`Kv::unavailable`]).
    unreachable: Mutex<Option<String>>,
}

/// The end of a conditional statement, after the CTE `ok` that says whether its guards hold:
/// the batch's deletes and puts ($1; $2, $3) only if they do, and the answer.
fn guarded_batch(table: &str) -> String {
    format!(
        "gone AS (DELETE FROM {table} WHERE (SELECT yes FROM ok) AND k = ANY($1::bytea[])), \
         put AS (INSERT INTO {table} (k, v) \
             SELECT * FROM unnest($2::bytea[], $3::bytea[]) WHERE (SELECT yes FROM ok) \
             ON CONFLICT (k) DO UPDATE SET v = excluded.v) \
         SELECT yes FROM ok"
    )
}

/// Whether `name` may name grove's table: a plain lowercase SQL identifier, so it needs no
/// quoting and cannot carry SQL.
pub fn valid_table(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}

impl PostgresKv {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or the key=value
    /// form) and makes `table` when it does not exist.
    pub fn open(url: &str, table: &str) -> Result<PostgresKv, KvError> {
        if !valid_table(table) {
            return Err(KvError::Postgres(format!(
                "table name {table:?} is not a plain lowercase SQL identifier"
            )));
        }
        let config: postgres::Config = url
            .parse()
            .map_err(|e| KvError::Postgres(format!("database url: {e}")))?;
        let mut client = config.connect(NoTls)?;
        let create =
            format!("CREATE TABLE IF NOT EXISTS {table} (k BYTEA PRIMARY KEY, v BYTEA NOT NULL)");
        if let Err(e) = client.batch_execute(&create) {
            // Two processes opening a new table at once both create it: the loser's `IF NOT
            // EXISTS` check ran before the winner's table existed (unique_violation on the
            // catalogue, duplicate_object for its row type, or duplicate_table). The table is
            // there; once more confirms it.
            let raced = [
                postgres::error::SqlState::UNIQUE_VIOLATION,
                postgres::error::SqlState::DUPLICATE_OBJECT,
                postgres::error::SqlState::DUPLICATE_TABLE,
            ];
            match e.code() {
                Some(code) if raced.contains(code) => client.batch_execute(&create)?,
                _ => return Err(e.into()),
            }
        }
        drop(client);
        let mut fenced = config.clone();
        let options = config.get_options().unwrap_or("");
        fenced.options(format!("{options} -c default_transaction_isolation=serializable").trim());
        let kv = PostgresKv {
            config,
            fenced,
            table: table.to_owned(),
            pool: Mutex::new(Vec::new()),
            fenced_pool: Mutex::new(Vec::new()),
            statements: AtomicU64::new(0),
            unreachable: Mutex::new(None),
        };
        let first = Conn::open(&kv.config, &kv.table)?;
        kv.pool.lock().push(first);
        Ok(kv)
    }

    /// Runs `work` on a pooled connection (a new one when all are in use). A connection that
    /// failed is closed rather than returned, so the next call reconnects.
    fn with<T>(
        &self,
        work: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, KvError> {
        Ok(self.pooled(&self.pool, &self.config, work)??)
    }

    /// [`PostgresKv::with`] for a read, which is tried once more on a new connection when
    /// the server had closed the one it took (a restart, a failover, a connection cut): a read
    /// changes nothing, so trying it again is safe, as a write's is not.
    fn read<T>(
        &self,
        mut work: impl FnMut(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, KvError> {
        match self.pooled(&self.pool, &self.config, &mut work)? {
            Err(e) if e.is_closed() => Ok(self.pooled(&self.pool, &self.config, work)??),
            done => Ok(done?),
        }
    }

    /// Runs `work` on a connection of `pool` (opened with `config` when none is free); the
    /// outer error is the connection's, the inner one the work's.
    fn pooled<T>(
        &self,
        pool: &Mutex<Vec<Conn>>,
        config: &postgres::Config,
        work: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<Result<T, postgres::Error>, KvError> {
        let taken = pool.lock().pop();
        let mut conn = match taken {
            Some(conn) if !conn.client.is_closed() => conn,
            _ => match Conn::open(config, &self.table) {
                Ok(conn) => conn,
                Err(e) => {
                    if let KvError::Unavailable(why) = &e {
                        *self.unreachable.lock() = Some(why.clone());
                    }
                    return Err(e);
                }
            },
        };
        // Every `work` is one statement (prepared when the connection opened).
        self.statements.fetch_add(1, Ordering::Relaxed);
        let result = work(&mut conn);
        match &result {
            Err(e) if postgres_transient(e) => {
                *self.unreachable.lock() = Some(postgres_text(e));
            }
            // Any answer of the server, an error of the statement included, says it is there.
            _ => {
                let mut unreachable = self.unreachable.lock();
                if unreachable.is_some() {
                    *unreachable = None;
                }
            }
        }
        if conn.client.is_closed() {
            // The server went away (a restart, a failover): the pooled connections to it, in
            // both pools, are gone too, so the next call opens a fresh one rather than fail on
            // each in turn.
            self.pool.lock().clear();
            self.fenced_pool.lock().clear();
        } else if result.is_ok() {
            let mut pool = pool.lock();
            if pool.len() < POOL {
                pool.push(conn);
            }
        }
        Ok(result)
    }

    fn page(&self, start: &[u8], end: &[u8], rev: bool) -> Result<Vec<Pair>, KvError> {
        self.read(|conn| {
            let statement = if rev { &conn.page_rev } else { &conn.page };
            let rows = conn.client.query(statement, &[&start, &end, &PAGE_ROWS])?;
            Ok(rows
                .into_iter()
                .map(|row| (row.get::<_, Vec<u8>>(0), row.get::<_, Vec<u8>>(1)))
                .collect())
        })
    }

    fn pages(&self, start: &[u8], end: &[u8], rev: bool) -> Scan<'_> {
        if start >= end {
            return Box::new(std::iter::empty());
        }
        Box::new(Pages {
            kv: self,
            start: start.to_vec(),
            end: end.to_vec(),
            rev,
            buffered: Vec::new().into_iter(),
            done: false,
        })
    }
}

/// A scan, one page at a time.
struct Pages<'a> {
    kv: &'a PostgresKv,
    start: Vec<u8>,
    end: Vec<u8>,
    rev: bool,
    buffered: std::vec::IntoIter<Pair>,
    done: bool,
}

impl Iterator for Pages<'_> {
    type Item = Result<Pair, KvError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(pair) = self.buffered.next() {
            return Some(Ok(pair));
        }
        if self.done {
            return None;
        }
        let page = match self.kv.page(&self.start, &self.end, self.rev) {
            Ok(page) => page,
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        self.done = (page.len() as i64) < PAGE_ROWS;
        if let Some((last, _)) = page.last() {
            if self.rev {
                // The next page ends (exclusively) at the smallest key read.
                self.end = last.clone();
            } else {
                // The next page starts just after the greatest key read.
                let mut next = last.clone();
                next.push(0);
                self.start = next;
            }
        }
        self.buffered = page.into_iter();
        self.buffered.next().map(Ok)
    }
}

impl Kv for PostgresKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        self.read(|conn| {
            let row = conn.client.query_opt(&conn.get, &[&key])?;
            Ok(row.map(|row| row.get::<_, Vec<u8>>(0)))
        })
    }

    fn read_last(
        &self,
        start: &[u8],
        end: &[u8],
        read: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, KvError> {
        if start >= end {
            return Ok(false);
        }
        let found = self.read(|conn| {
            let row = conn.client.query_opt(&conn.last, &[&start, &end])?;
            Ok(row.map(|row| (row.get::<_, Vec<u8>>(0), row.get::<_, Vec<u8>>(1))))
        })?;
        Ok(super::deliver(found, read))
    }

    fn scan(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.pages(start, end, false)
    }

    fn scan_rev(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        self.pages(start, end, true)
    }

    fn apply(&self, batch: WriteBatch) -> Result<(), KvError> {
        if batch.is_empty() {
            return Ok(());
        }
        let (deletes, keys, values) = resolve(batch);
        self.with(|conn| {
            conn.client
                .execute(&conn.apply, &[&deletes, &keys, &values])
                .map(drop)
        })
    }

    fn apply_if_all(&self, guards: &[Guard<'_>], batch: WriteBatch) -> Result<bool, KvError> {
        let (deletes, mut keys, mut values) = resolve(batch);
        if let Some((claimed, held)) = claim_of(guards, &deletes, &keys) {
            let at = keys.iter().position(|k| k.as_slice() == claimed);
            if let Some(at) = at {
                let (key, value) = (keys.swap_remove(at), values.swap_remove(at));
                let (held_keys, held_values): (Vec<&[u8]>, Vec<&[u8]>) = held.into_iter().unzip();
                let done = self.pooled(&self.pool, &self.config, |conn| {
                    let row = conn.client.query_one(
                        &conn.claim,
                        &[
                            &deletes,
                            &keys,
                            &values,
                            &key,
                            &value,
                            &held_keys,
                            &held_values,
                        ],
                    )?;
                    Ok(row.get::<_, bool>(0))
                })?;
                return refused_if_serialization(done);
            }
        }
        let guard_keys: Vec<&[u8]> = guards.iter().map(|(k, _)| *k).collect();
        let expected: Vec<Option<&[u8]>> = guards.iter().map(|(_, e)| *e).collect();
        let done = self.pooled(&self.fenced_pool, &self.fenced, |conn| {
            let row = conn.client.query_one(
                &conn.apply_if,
                &[&deletes, &keys, &values, &guard_keys, &expected],
            )?;
            Ok(row.get::<_, bool>(0))
        })?;
        refused_if_serialization(done)
    }

    fn flush(&self) -> Result<(), KvError> {
        Ok(())
    }

    fn round_trips(&self) -> Option<u64> {
        Some(self.statements.load(Ordering::Relaxed))
    }

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn shared(&self) -> bool {
        true
    }

    fn unavailable(&self) -> Option<String> {
        self.unreachable.lock().clone()
    }

    /// `VACUUM FULL` of the table (and its TOAST table): a new copy of the live rows, the old
    /// files removed; every other process's statements on the table wait for it.
    fn compact(&self) -> Result<bool, KvError> {
        let vacuum = format!("VACUUM FULL {}", self.table);
        self.with(|conn| conn.client.batch_execute(&vacuum))?;
        Ok(true)
    }
}

/// A row a claim holds: its key and the value it must have.
type Held<'g> = (&'g [u8], &'g [u8]);

/// Whether a conditional batch is a claim: exactly one guard expects its key absent and the
/// batch puts that key; every other guard expects a value on a key the batch leaves alone (a
/// held row: locked by the claim's statement, not written). Its claimed key and held rows.
fn claim_of<'g>(
    guards: &[Guard<'g>],
    deletes: &[Vec<u8>],
    puts: &[Vec<u8>],
) -> Option<(&'g [u8], Vec<Held<'g>>)> {
    let mut claimed = None;
    let mut held = Vec::new();
    for &(key, expected) in guards {
        match expected {
            None if claimed.is_none() && puts.iter().any(|k| k.as_slice() == key) => {
                claimed = Some(key);
            }
            None => return None,
            Some(value) => {
                let touched = |k: &Vec<u8>| k.as_slice() == key;
                if puts.iter().any(touched) || deletes.iter().any(touched) {
                    return None;
                }
                held.push((key, value));
            }
        }
    }
    Some((claimed?, held))
}

/// A conditional batch's answer: a serialization failure (another writer committed first, or a
/// database that runs every statement serializable, as CockroachDB does) is a refusal, not an
/// error.
fn refused_if_serialization(done: Result<bool, postgres::Error>) -> Result<bool, KvError> {
    match done {
        Ok(applied) => Ok(applied),
        Err(e) if e.code() == Some(&postgres::error::SqlState::T_R_SERIALIZATION_FAILURE) => {
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// The arrays of a batch's statement: the keys to delete, the keys to put and their values.
type Arrays = (Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// A batch as the arrays of its statement, the last operation on a key winning.
fn resolve(batch: WriteBatch) -> Arrays {
    let mut last: HashMap<Vec<u8>, Option<Vec<u8>>> = HashMap::with_capacity(batch.len());
    for (key, value) in batch.into_ops() {
        last.insert(key, value);
    }
    let mut arrays: Arrays = Default::default();
    for (key, value) in last {
        match value {
            Some(value) => {
                arrays.1.push(key);
                arrays.2.push(value);
            }
            None => arrays.0.push(key),
        }
    }
    arrays
}

impl From<postgres::Error> for KvError {
    fn from(e: postgres::Error) -> KvError {
        let text = postgres_text(&e);
        if postgres_transient(&e) {
            KvError::Unavailable(text)
        } else {
            KvError::Postgres(text)
        }
    }
}

/// A PostgreSQL error as text: the top error says what failed ("db error", "error connecting
/// to server"), its source why.
fn postgres_text(e: &postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(source) => format!("{e}: {source}"),
        None => e.to_string(),
    }
}

/// Whether a PostgreSQL error may go away when the call is tried again: an error with no
/// SQLSTATE is the client's own (the connection could not be made, or broke), and of the
/// server's codes those of a lost connection (class 08), an operator's or a crash's shutdown
/// and a server still starting (57P01–57P03), too many connections (53300), a conflict that
/// cancelled the transaction (40001, 40P01) and a read-only server (25006: a standby not yet
/// promoted, reached through a URL of several hosts).
fn postgres_transient(e: &postgres::Error) -> bool {
    let Some(state) = e.code() else {
        return true;
    };
    let code = state.code();
    code.starts_with("08")
        || matches!(
            code,
            "57P01" | "57P02" | "57P03" | "53300" | "40001" | "40P01" | "25006"
        )
}
