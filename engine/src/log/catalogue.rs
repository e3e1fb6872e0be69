//! The session catalogue of the log layer: creating sessions, opening them by id or prefix,
//! listing, deleting and purging them, and clearing what a crash left of unfinished imports
//! and deletions. Session numbers and the catalogue rows' commits are the core's
//! ([`crate::core::shared`]); the handles made here are the log's ([`Handle`]).
//!
//! May call: [`crate::log`]'s handle, shared state and tip, [`crate::core`], [`crate::kv`].

use std::sync::Arc;

use grove_codec::header::Header;
use grove_codec::record::{self, HeadRecord, LabelRecord, SessionRecord};

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::{fenced_out, FENCE_TRIES};
use crate::core::util;
use crate::kv::{Durability, WriteBatch};
use crate::log::handle::Handle;
use crate::log::shared::Logs;
use crate::log::tip::{Tip, SESSION_LOCKS_KEPT};

/// Options of a new session.
#[derive(Debug, Clone, Default)]
pub struct CreateSession {
    /// The session id; a lowercase UUIDv7 when `None`. Must match
    /// `^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`.
    pub id: Option<String>,
    /// Working directory recorded in the header; empty means the process's current
    /// directory (pi requires a non-empty `cwd` in version-3 headers).
    pub cwd: String,
    /// Header `metadata` as JSON object text.
    pub metadata: Option<String>,
    /// Header `parentSession` (pi: the parent's file path).
    pub parent_session: Option<String>,
    /// The grove id of the session this one derives from.
    pub parent_session_id: Option<String>,
}

/// A session as listed by [`crate::Store::sessions`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// Session id.
    pub id: String,
    /// Creation timestamp.
    pub created: String,
    /// Working directory.
    pub cwd: String,
    /// Number of entries.
    pub entries: u64,
    /// The grove session this one was forked from.
    pub parent_session_id: Option<String>,
    /// Header `parentSession`.
    pub parent_session: Option<String>,
}

/// Which sessions a listing names ([`crate::Store::sessions_page_where`]); every field given
/// must hold. Times are milliseconds since the Unix epoch; ranges include their start and
/// exclude their end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFilter {
    /// The working directory, exactly.
    pub cwd: Option<String>,
    /// Text the session's name contains (case-insensitive).
    pub name: Option<String>,
    /// A label one of its entries carries, exactly (trimmed).
    pub label: Option<String>,
    /// Created at or after.
    pub created_from: Option<i64>,
    /// Created before.
    pub created_until: Option<i64>,
    /// Last active (its last record's timestamp, else its creation) at or after.
    pub updated_from: Option<i64>,
    /// Last active before.
    pub updated_until: Option<i64>,
}

impl SessionFilter {
    /// Whether it names every session.
    pub fn is_empty(&self) -> bool {
        *self == SessionFilter::default()
    }

    fn in_range(t: Option<i64>, from: Option<i64>, until: Option<i64>) -> bool {
        match t {
            Some(t) => from.is_none_or(|f| t >= f) && until.is_none_or(|u| t < u),
            None => from.is_none() && until.is_none(),
        }
    }

    /// Whether session `sid` (its `record`) passes: the record's fields first, then what
    /// needs its head, name or labels.
    fn passes(&self, logs: &Arc<Logs>, sid: u64, record: &SessionRecord) -> Result<bool> {
        if self.cwd.as_deref().is_some_and(|c| c != record.cwd) {
            return Ok(false);
        }
        let created = grove_codec::time::parse_ms(&record.created);
        if !Self::in_range(created, self.created_from, self.created_until) {
            return Ok(false);
        }
        if self.updated_from.is_none()
            && self.updated_until.is_none()
            && self.name.is_none()
            && self.label.is_none()
        {
            return Ok(true);
        }
        let handle = Handle::open(logs.clone(), sid, record.clone())?;
        if self.updated_from.is_some() || self.updated_until.is_some() {
            let updated = handle
                .head()?
                .last_timestamp
                .as_deref()
                .and_then(grove_codec::time::parse_ms)
                .or(created);
            if !Self::in_range(updated, self.updated_from, self.updated_until) {
                return Ok(false);
            }
        }
        if let Some(want) = &self.name {
            let name = handle.name()?.unwrap_or_default().to_lowercase();
            if !name.contains(&want.to_lowercase()) {
                return Ok(false);
            }
        }
        if let Some(want) = &self.label {
            let want = want.trim();
            if !handle.labels()?.values().any(|l| l.label == want) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl Logs {
    /// Creates an empty session.
    pub(crate) fn create_session(self: &Arc<Logs>, options: CreateSession) -> Result<Handle> {
        let id = match options.id {
            Some(id) => {
                util::check_session_id(&id)?;
                id
            }
            None => util::new_session_id(),
        };
        let cwd = if options.cwd.is_empty() {
            std::env::current_dir().map_or_else(|_| "/".to_owned(), |d| d.display().to_string())
        } else {
            options.cwd
        };
        let header = Header::create(
            &id,
            &util::now_iso(),
            &cwd,
            options.parent_session.as_deref(),
            options.metadata.as_deref(),
        );
        let sid = self.inner.alloc_sid()?;
        let record = SessionRecord {
            id: id.clone(),
            header: header.raw,
            created: header.timestamp,
            cwd: header.cwd,
            parent_session: header.parent_session,
            parent_session_id: options.parent_session_id,
            source_path: None,
        };
        let head = HeadRecord {
            next_seq: 0,
            leaf: None,
            entries: 0,
            name_at: None,
            last_timestamp: None,
        };
        let mut batch = WriteBatch::new();
        batch.put(keys::session(sid), record::encode(&record));
        batch.put(keys::head(sid), record::encode(&head));
        for key in index_keys(sid, &record, None) {
            batch.put(key, Vec::new());
        }
        self.inner.list(&id, sid, batch, self.inner.durability)?;
        let session = Handle::new(self.clone(), sid, record);
        if self.inner.shared {
            // What this process just wrote, it need not read back: the session's number, record
            // and empty state, for its first writes by id ([`crate::Store::session_for_write`]).
            self.remember(&id, sid, &session);
            self.session_lock(sid).lock().head = Some(head.clone());
            session.install_new_state(head);
        }
        Ok(session)
    }

    /// Remembers that `id` names session `sid`, and what it is ([`crate::Store::session_for_write`]).
    fn remember(self: &Arc<Logs>, id: &str, sid: u64, session: &Handle) {
        if self.inner.shared {
            let mut named = self.named.lock();
            if named.len() >= SESSION_LOCKS_KEPT {
                named.clear();
            }
            named.insert(id.to_owned(), sid);
        }
        let mut described = self.described.lock();
        if described.len() >= SESSION_LOCKS_KEPT {
            described.clear();
        }
        described.insert(sid, (session.record.clone(), session.packed));
    }

    /// Publishes a fully written session under its id (the last write of an import).
    pub(crate) fn publish(
        self: &Arc<Logs>,
        sid: u64,
        id: &str,
        mut batch: WriteBatch,
    ) -> Result<()> {
        batch.delete(keys::pending(sid));
        self.inner.list(id, sid, batch, Durability::Sync)
    }

    /// Opens the session with exactly this id.
    pub(crate) fn session(self: &Arc<Logs>, id: &str) -> Result<Handle> {
        let sid = self
            .inner
            .sid_of(id)?
            .ok_or_else(|| GroveError::SessionNotFound(id.to_owned()))?;
        self.open_listed(id, sid)
    }

    /// Opens the session with exactly this id to write to it. The same as [`crate::Store::session`],
    /// except in a store other processes share: there a session this process opened before is
    /// opened from memory, without reading its catalogue row, so that an append through it
    /// costs one round trip (its commit). That is safe because each of its commits checks the
    /// catalogue row in the same statement: if another process deleted the session
    /// meanwhile, nothing is written and the operation fails with `SessionNotFound` (and the
    /// id is looked up again next time; the caller may retry with [`crate::Store::session`], which
    /// finds a session created since under the same id). Reads through it trust the same
    /// memory, so read through [`crate::Store::session`] what must reflect other processes' deletions.
    pub(crate) fn session_for_write(self: &Arc<Logs>, id: &str) -> Result<Handle> {
        if self.inner.shared {
            let known = self.named.lock().get(id).copied();
            if let Some(sid) = known {
                let described = self.described.lock().get(&sid).cloned();
                if let Some((record, packed)) = described {
                    return Ok(Handle::known(self.clone(), sid, record, packed));
                }
            }
        }
        self.session(id)
    }

    /// Opens session `sid`, listed as `id`; `SessionNotFound` when it was deleted meanwhile
    /// (its catalogue row goes first, its record last).
    fn open_listed(self: &Arc<Logs>, id: &str, sid: u64) -> Result<Handle> {
        let known = self.described.lock().get(&sid).cloned();
        if let Some((record, packed)) = known {
            let session = Handle::known(self.clone(), sid, record, packed);
            self.remember(id, sid, &session);
            return Ok(session);
        }
        match self.inner.require::<SessionRecord>(&keys::session(sid)) {
            Ok(record) => {
                let session = Handle::open(self.clone(), sid, record)?;
                self.remember(id, sid, &session);
                Ok(session)
            }
            Err(_) if self.inner.sid_of(id)? != Some(sid) => {
                Err(GroveError::SessionNotFound(id.to_owned()))
            }
            Err(e) => Err(e),
        }
    }

    /// Opens the session whose id is `prefix` or starts with it (unique prefixes only).
    pub(crate) fn find_session(self: &Arc<Logs>, prefix: &str) -> Result<Handle> {
        if let Some(sid) = self.inner.sid_of(prefix)? {
            return self.open_listed(prefix, sid);
        }
        let start = keys::session_id(prefix);
        let end = keys::prefix_end(&start);
        let mut matches = Vec::new();
        for pair in self.inner.kv.scan(&start, &end).take(6) {
            let (k, _) = pair?;
            matches.push(keys::string_suffix(&k, 1).unwrap_or_default());
        }
        match matches.len() {
            0 => Err(GroveError::SessionNotFound(prefix.to_owned())),
            1 => self.session(&matches[0]),
            _ => Err(GroveError::AmbiguousPrefix {
                what: "session",
                prefix: prefix.to_owned(),
                candidates: matches.join(", "),
            }),
        }
    }

    /// Every session, ordered by id, read from the catalogue (a few reads per session, no
    /// entry loaded; docs/design.md, "Commit protocol"). A session deleted meanwhile is left out.
    pub(crate) fn sessions(self: &Arc<Logs>) -> Result<Vec<SessionSummary>> {
        self.sessions_page(None, usize::MAX, false, &SessionFilter::default())
    }

    /// At most `limit` sessions that pass `filter`, in id order (`descending`: from the
    /// last), from the first id after `after` (before it, descending): the listing reads the
    /// sessions it weighs, not the catalogue. A page of a store of 100,000 sessions costs the
    /// page; a filtered one reads its candidates from the catalogue index of its most
    /// selective condition ([`Candidates`]) and weighs those until the page is full.
    pub(crate) fn sessions_page(
        self: &Arc<Logs>,
        after: Option<&str>,
        limit: usize,
        descending: bool,
        filter: &SessionFilter,
    ) -> Result<Vec<SessionSummary>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let plan = Candidates::plan(filter, self.inner.catalogue_indexed);
        let mut last: Option<(String, u64)> = None;
        let candidates = match &plan {
            Candidates::Timed { .. } => {
                match self.race_timed(after, limit, descending, filter, &plan)? {
                    Race::Scanned(page) => return Ok(page),
                    Race::Gathered(found) => found,
                }
            }
            plan => plan.read(self, after, descending)?,
        };
        for candidate in candidates {
            let (id, sid) = candidate?;
            // Several label entries of one session: one candidate.
            if last.as_ref().is_some_and(|(i, s)| *i == id && *s == sid) {
                continue;
            }
            last = Some((id.clone(), sid));
            if let Some(summary) = self.weigh(&id, sid, filter)? {
                out.push(summary);
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Session `sid`, listed as `id`, if it passes `filter`; `None` when it does not, or was
    /// deleted meanwhile (its catalogue row goes first, then its rows: whatever reading it
    /// gave, it is not listed).
    fn weigh(
        self: &Arc<Logs>,
        id: &str,
        sid: u64,
        filter: &SessionFilter,
    ) -> Result<Option<SessionSummary>> {
        let read = || -> Result<Option<SessionSummary>> {
            let rec: SessionRecord = self.inner.require(&keys::session(sid))?;
            if !filter.is_empty() && !filter.passes(self, sid, &rec)? {
                return Ok(None);
            }
            let entries = Handle::open(self.clone(), sid, rec.clone())?.entry_count()?;
            Ok(Some(SessionSummary {
                id: rec.id,
                created: rec.created,
                cwd: rec.cwd,
                entries,
                parent_session_id: rec.parent_session_id,
                parent_session: rec.parent_session,
            }))
        };
        let read = read();
        if self.inner.sid_of(id)? != Some(sid) {
            return Ok(None);
        }
        read
    }

    /// A page of a filter whose indexed condition is a time range (creation or last
    /// activity): the catalogue weighed from the cursor, raced against reading the range's
    /// index keys ([`RACE_KEYS`] keys per session weighed). When ids follow creation times
    /// (UUIDv7, or any id given in creation order), a range near the cursor fills the page
    /// from the catalogue after a few sessions, and a range far from it is gathered from the
    /// index before the catalogue gets there; either way the page costs about twice the
    /// cheaper of the two.
    fn race_timed(
        self: &Arc<Logs>,
        after: Option<&str>,
        limit: usize,
        descending: bool,
        filter: &SessionFilter,
        plan: &Candidates,
    ) -> Result<Race<'_>> {
        let mut scan = Candidates::All.read(self, after, descending)?;
        let mut range = plan.keys(self)?;
        let mut page = Vec::new();
        let mut gathered = Vec::new();
        loop {
            match scan.next() {
                None => return Ok(Race::Scanned(page)),
                Some(candidate) => {
                    let (id, sid) = candidate?;
                    if let Some(summary) = self.weigh(&id, sid, filter)? {
                        page.push(summary);
                        if page.len() >= limit {
                            return Ok(Race::Scanned(page));
                        }
                    }
                }
            }
            for _ in 0..RACE_KEYS {
                match range.next() {
                    Some(entry) => gathered.push(entry?),
                    None => return Ok(Race::Gathered(in_id_order(gathered, after, descending))),
                }
            }
        }
    }

    /// Deletes a session and everything stored for it. It disappears from the catalogue
    /// first, atomically; its rows are then removed in bounded batches.
    pub(crate) fn delete_session(self: &Arc<Logs>, id: &str) -> Result<()> {
        let sid = {
            let _guard = self.inner.catalogue.lock();
            let sid = self
                .inner
                .sid_of(id)?
                .ok_or_else(|| GroveError::SessionNotFound(id.to_owned()))?;
            let listed = keys::session_id(id);
            let value = sid.to_be_bytes();
            let mut tries = 0;
            loop {
                let mut batch = WriteBatch::new();
                batch.delete(listed.clone());
                batch.put(keys::pending(sid), Vec::new());
                // Another process may have deleted it meanwhile: the row is the guard.
                if self.inner.commit_fenced(
                    &[(&listed, Some(&value))],
                    batch,
                    false,
                    self.inner.durability,
                )? {
                    break;
                }
                if self.inner.sid_of(id)? != Some(sid) {
                    return Err(GroveError::SessionNotFound(id.to_owned()));
                }
                tries += 1;
                if tries == FENCE_TRIES {
                    return Err(fenced_out(&format!("deleting session {id}")));
                }
                util::backoff(tries);
            }
            sid
        };
        self.purge(sid)
    }

    /// Removes every row of an unpublished session (the pending marker last, so a crash
    /// midway leaves it to the next open).
    pub(crate) fn purge(self: &Arc<Logs>, sid: u64) -> Result<()> {
        // The catalogue index rows, found from the session's record and labels before those
        // go (the label index's rows of labels changed since are left to `gc`).
        let mut indexed = Vec::new();
        if let Some(record) = self.inner.get::<SessionRecord>(&keys::session(sid))? {
            // (The last-activity row of a later hour than the creation's is left to `gc`.)
            indexed = index_keys(sid, &record, None);
            let start = keys::session_prefix(keys::T_LABEL, sid);
            for pair in self.inner.kv.scan(&start, &keys::prefix_end(&start)) {
                if let Ok(label) = record::decode::<LabelRecord>(&pair?.1) {
                    let text = crate::log::labels::label_text(&label.label);
                    indexed.push(keys::by_label(&text, &record.id, sid, label.set_by));
                }
            }
        }
        let lock = self.session_lock(sid);
        let mut tip = lock.lock();
        *tip = Tip::default();
        self.forget_id_index(sid);
        self.described.lock().remove(&sid);
        for tag in keys::SESSION_TABLES {
            if tag == keys::T_PENDING {
                continue;
            }
            let start = keys::session_prefix(tag, sid);
            let end = keys::prefix_end(&start);
            loop {
                let mut batch = WriteBatch::new();
                for pair in self.inner.kv.scan(&start, &end).take(10_000) {
                    batch.delete(pair?.0);
                }
                if batch.is_empty() {
                    break;
                }
                self.inner.commit(batch, Durability::None)?;
            }
        }
        let mut batch = WriteBatch::new();
        for key in indexed {
            batch.delete(key);
        }
        batch.delete(keys::session(sid));
        batch.delete(keys::pending(sid));
        self.inner.commit(batch, self.inner.durability)
    }

    /// Removes what imports and deletions interrupted by a crash left behind. Not in a shared
    /// store: there a pending session may be another process's import on its way.
    pub(crate) fn discard_unfinished_imports(self: &Arc<Logs>) -> Result<()> {
        if self.inner.shared {
            return Ok(());
        }
        let start = vec![keys::T_PENDING];
        let end = keys::prefix_end(&start);
        let pending: Vec<u64> = self
            .inner
            .kv
            .scan(&start, &end)
            .map(|p| p.map(|(k, _)| keys::last_u64(&k)))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        for sid in pending {
            self.purge(sid)?;
        }
        Ok(())
    }
}

/// The catalogue index rows of session `sid`, written with its catalogue row: its working
/// directory (`0x09`) and, when the timestamps parse, its creation time (`0x0A`) and the hour
/// of its last activity (`0x0C`: `last`, its last record's timestamp, else its creation).
pub(crate) fn index_keys(sid: u64, record: &SessionRecord, last: Option<&str>) -> Vec<Vec<u8>> {
    let mut out = vec![keys::by_cwd(&record.cwd, &record.id, sid)];
    if let Some(ms) = grove_codec::time::parse_ms(&record.created) {
        out.push(keys::by_created(ms, &record.id, sid));
    }
    if let Some(hour) = activity_hour(last, &record.created) {
        out.push(keys::by_updated(hour, &record.id, sid));
    }
    out
}

/// The hour (since the epoch) of a session's last activity: its last record's timestamp
/// `last`, else its creation `created`; `None` when it does not parse.
pub(crate) fn activity_hour(last: Option<&str>, created: &str) -> Option<i64> {
    grove_codec::time::parse_ms(last.unwrap_or(created)).map(|ms| ms.div_euclid(keys::HOUR_MS))
}

/// Whether two timestamps fall in the same hour, without parsing them when both are
/// canonical UTC (`YYYY-MM-DDTHH…Z`, as pi and grove write them): the append path's test.
pub(crate) fn same_hour(a: Option<&str>, b: Option<&str>, created: &str) -> bool {
    let (a, b) = (a.unwrap_or(created), b.unwrap_or(created));
    let canonical =
        |t: &str| t.len() >= 20 && t.ends_with('Z') && t.as_bytes().get(10) == Some(&b'T');
    if canonical(a) && canonical(b) {
        return a.as_bytes()[..13] == b.as_bytes()[..13];
    }
    activity_hour(Some(a), created) == activity_hour(Some(b), created)
}

/// Writes the catalogue indexes of every listed session (a store of layout 14 or older,
/// opened to write: [`crate::open`]): each session's cwd, creation and last-activity rows,
/// and a label row for each of its current labels. Idempotent, in bounded batches; the caller
/// writes the new format marker after it.
pub(crate) fn index_catalogue(logs: &Arc<Logs>) -> Result<()> {
    let inner = &logs.inner;
    let start = vec![keys::T_SESSION_ID];
    let end = keys::prefix_end(&start);
    let mut batch = WriteBatch::new();
    let mut staged = 0;
    for pair in inner.kv.scan(&start, &end) {
        let (_, v) = pair?;
        let Some(sid) = keys::u64_value(&v) else {
            return Err(GroveError::Corrupt("session id index value".to_owned()));
        };
        let Some(record) = inner.get::<SessionRecord>(&keys::session(sid))? else {
            continue;
        };
        // A session whose head or labels do not read is indexed as far as they do (`verify`
        // reports the rest): one damaged session does not keep the store from opening.
        let last = Handle::open(logs.clone(), sid, record.clone())
            .and_then(|h| h.head())
            .ok()
            .and_then(|h| h.last_timestamp);
        for key in index_keys(sid, &record, last.as_deref()) {
            batch.put(key, Vec::new());
            staged += 1;
        }
        let labels = keys::session_prefix(keys::T_LABEL, sid);
        for pair in inner.kv.scan(&labels, &keys::prefix_end(&labels)) {
            let Ok(label) = record::decode::<LabelRecord>(&pair?.1) else {
                continue;
            };
            let text = crate::log::labels::label_text(&label.label);
            batch.put(
                keys::by_label(&text, &record.id, sid, label.set_by),
                Vec::new(),
            );
            staged += 1;
        }
        if staged >= 10_000 {
            inner.commit(std::mem::take(&mut batch), Durability::None)?;
            staged = 0;
        }
    }
    inner.commit(batch, Durability::None)
}

/// Where a listing takes its candidate sessions from: the catalogue's id rows (`0x03`, every
/// session), or the catalogue index of the filter's most selective indexed condition: the
/// working directory (`0x09`), then a label (`0x0B`), both in id order from the cursor, so
/// a page stops when it is full; or the creation range (`0x0A`), whose candidates are
/// gathered and put in id order first (a page costs the sessions created in the range); or
/// the last-activity range (`0x0C`, by the hour), alike. The name is weighed on each
/// candidate, and every condition is weighed exactly.
enum Candidates {
    All,
    /// A prefix of keys `prefix ++ id ++ 00 ++ sid ++ tail` in id order, `tail` bytes long.
    Keyed {
        prefix: Vec<u8>,
        tail: usize,
    },
    /// The keys `start .. stop` of a time index (`0A`, `0C`: `tag ++ time ++ id ++ 00 ++ sid`).
    Timed {
        start: Vec<u8>,
        stop: Vec<u8>,
    },
}

/// A listing's candidates: session id and number.
type CandidateIter<'a> = Box<dyn Iterator<Item = Result<(String, u64)>> + 'a>;

impl Candidates {
    fn plan(filter: &SessionFilter, indexed: bool) -> Candidates {
        if !indexed {
            return Candidates::All;
        }
        if let Some(cwd) = &filter.cwd {
            return Candidates::Keyed {
                prefix: keys::by_cwd_prefix(cwd),
                tail: 0,
            };
        }
        if let Some(label) = &filter.label {
            return Candidates::Keyed {
                prefix: keys::by_label_prefix(label.trim()),
                tail: 8,
            };
        }
        if filter.created_from.is_some() || filter.created_until.is_some() {
            return Candidates::Timed {
                start: keys::by_created_prefix(filter.created_from.unwrap_or(i64::MIN)),
                stop: match filter.created_until {
                    Some(until) => keys::by_created_prefix(until),
                    None => keys::prefix_end(&[keys::T_BY_CREATED]),
                },
            };
        }
        if filter.updated_from.is_some() || filter.updated_until.is_some() {
            let hour = |ms: i64| ms.div_euclid(keys::HOUR_MS);
            return Candidates::Timed {
                start: keys::by_updated_prefix(filter.updated_from.map_or(i64::MIN, hour)),
                // The hour of the last millisecond before the end, included.
                stop: match filter.updated_until {
                    Some(until) => keys::by_updated_prefix(hour(until.saturating_sub(1)) + 1),
                    None => keys::prefix_end(&[keys::T_BY_UPDATED]),
                },
            };
        }
        Candidates::All
    }

    fn read<'a>(
        &self,
        logs: &'a Arc<Logs>,
        after: Option<&str>,
        descending: bool,
    ) -> Result<CandidateIter<'a>> {
        let kv = &logs.inner.kv;
        let corrupt = || GroveError::Corrupt("catalogue index key".to_owned());
        match self {
            Candidates::All => {
                let prefix = vec![keys::T_SESSION_ID];
                let (start, stop) = cursor_range(&prefix, after, descending, &[]);
                let scan = match descending {
                    true => kv.scan_rev(&start, &stop),
                    false => kv.scan(&start, &stop),
                };
                Ok(Box::new(scan.map(move |pair| {
                    let (key, v) = pair?;
                    let sid = keys::u64_value(&v)
                        .ok_or_else(|| GroveError::Corrupt("session id index value".to_owned()))?;
                    Ok((keys::string_suffix(&key, 1).unwrap_or_default(), sid))
                })))
            }
            Candidates::Keyed { prefix, tail } => {
                let (start, stop) = cursor_range(prefix, after, descending, &[1]);
                let scan = match descending {
                    true => kv.scan_rev(&start, &stop),
                    false => kv.scan(&start, &stop),
                };
                let (len, tail) = (prefix.len(), *tail);
                Ok(Box::new(scan.map(move |pair| {
                    let (key, _) = pair?;
                    keys::catalogue_entry(&key, len, tail).ok_or_else(corrupt)
                })))
            }
            Candidates::Timed { .. } => {
                let found = self.keys(logs)?.collect::<Result<Vec<_>>>()?;
                Ok(in_id_order(found, after, descending))
            }
        }
    }

    /// A time range's index keys in time order (of [`Candidates::Timed`]).
    fn keys<'a>(&self, logs: &'a Arc<Logs>) -> Result<CandidateIter<'a>> {
        let Candidates::Timed { start, stop } = self else {
            return Err(GroveError::Corrupt("not a time range".to_owned()));
        };
        let scan = logs.inner.kv.scan(start, stop);
        Ok(Box::new(scan.map(|pair| {
            let (key, _) = pair?;
            keys::catalogue_entry(&key, 9, 0)
                .ok_or_else(|| GroveError::Corrupt("catalogue index key".to_owned()))
        })))
    }
}

/// Keys of a time range that [`Logs::race_timed`] gathered before the catalogue filled
/// its page, or the page it filled.
enum Race<'a> {
    Scanned(Vec<SessionSummary>),
    Gathered(CandidateIter<'a>),
}

/// Index keys read per catalogue session weighed when a time range races the catalogue: a
/// key costs about a fifth of a weighed session (docs/benchmarks.md, "Listing").
const RACE_KEYS: usize = 8;

/// `found` (session ids and numbers) after the cursor, in id order (descending: reversed, and
/// before it).
fn in_id_order<'a>(
    mut found: Vec<(String, u64)>,
    after: Option<&str>,
    descending: bool,
) -> CandidateIter<'a> {
    found.retain(|(id, _)| {
        after.is_none_or(|a| match descending {
            false => id.as_str() > a,
            true => id.as_str() < a,
        })
    });
    // (A session's stale last-activity rows besides its current one: one candidate.)
    found.sort_unstable();
    found.dedup();
    if descending {
        found.reverse();
    }
    Box::new(found.into_iter().map(Ok))
}

/// The key range of a listing over `prefix ++ id …` from the cursor `after`: ascending, from
/// just past `prefix ++ after ++ past` (the keys of ids after it); descending, up to `prefix
/// ++ after` (exclusive).
fn cursor_range(
    prefix: &[u8],
    after: Option<&str>,
    descending: bool,
    past: &[u8],
) -> (Vec<u8>, Vec<u8>) {
    let end = keys::prefix_end(prefix);
    let at = |id: &str| {
        let mut key = prefix.to_vec();
        key.extend_from_slice(id.as_bytes());
        key
    };
    match (after, descending) {
        (Some(id), false) => {
            let mut key = at(id);
            key.extend_from_slice(if past.is_empty() { &[0] } else { past });
            (key, end)
        }
        (Some(id), true) => (prefix.to_vec(), at(id)),
        (None, _) => (prefix.to_vec(), end),
    }
}
