//! Full-text search across the sessions of a store (`Store::search`, `grove search`,
//! `GET /v1/search`; docs/design.md "Search", docs/format.md "The search index").
//!
//! The index is tantivy's, in the store directory's `search/` (in memory for a store without
//! a directory: it is built there at the first search). One document per entry that has text
//! ([`grove_codec::text::searchable`]): the session's number, the entry's position, its type,
//! role and time, and its text, indexed and not stored: a hit's snippet is made from the log,
//! so the index holds no copy of what was said.
//!
//! **Never behind.** The index is derived from the log and catches up before every search:
//! each commit's touched sessions are kept ([`crate::core::commits`]), and a search first
//! indexes what those sessions appended past the index's marks (the position each session
//! is indexed up to), then searches. The marks are the payload of tantivy's commit, written
//! atomically with the documents, so a process killed at any moment leaves an index that is
//! exactly as far as its marks say, and the next catch-up goes on from there. A session gone
//! from the catalogue has its documents deleted. The first search after opening, a commit
//! that published or deleted a session, and a store whose backend other processes write
//! compare every session's head with its mark.
//!
//! This room owns the index's files, its schema, the catch-up and the queries. It may call
//! the core (keys, shared state, commits), the log (handles, catalogue rows) and the tree
//! (ancestors, for whether a hit is on its session's active path).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::PathBuf;

use grove_codec::record::{NodeRecord, SessionRecord};
use grove_codec::redact::RedactionNote;
use grove_codec::text::searchable;
use grove_codec::EntryKind;
use parking_lot::Mutex;
use tantivy::collector::{Count, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser, RangeQuery, RegexQuery, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, Value as _, FAST, INDEXED, STORED, STRING, TEXT,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::core::error::{GroveError, Result};
use crate::core::keys;
use crate::core::shared::Inner;
use crate::log::handle::Handle;
use crate::log::shared::Logs;

/// The version of the index's schema and marks; an index of another version is rebuilt.
const VERSION: u64 = 1;

/// The memory tantivy's writer may fill before it writes a segment.
const WRITER_BYTES: usize = 32 << 20;

/// Documents added between two commits of one catch-up, at most (a large import is indexed
/// in steps, each one a commit with its marks).
const COMMIT_EVERY: u64 = 10_000;

/// The most characters of a hit's snippet.
const SNIPPET_CHARS: usize = 160;

/// What a search asks for.
#[derive(Debug, Clone, Default)]
pub struct SearchOptions {
    /// Only this session's entries (its id).
    pub session: Option<String>,
    /// Only entries of these types (`message`, `compaction`, …) or message roles (`user`,
    /// `assistant`, `toolResult`, …); empty: every type.
    pub types: Vec<String>,
    /// Only entries whose `timestamp` is at or after this time (ms since the Unix epoch).
    pub since_ms: Option<i64>,
    /// The most hits (best first); 0 means 20.
    pub limit: usize,
}

/// One entry found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The session's id.
    pub session: String,
    /// The entry's id.
    pub entry: String,
    /// Its position in the session log.
    pub seq: u64,
    /// Its `type`.
    pub entry_type: String,
    /// A message's role.
    pub role: Option<String>,
    /// Its `timestamp`.
    pub timestamp: Option<String>,
    /// How well it matches (BM25); hits come best first.
    pub score: f32,
    /// A piece of its text around the best match.
    pub snippet: String,
    /// The matched words in `snippet`, as byte ranges of its UTF-8.
    pub highlights: Vec<(usize, usize)>,
    /// Whether the entry is on its session's active path (the branch to the leaf).
    pub active: bool,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResults {
    /// The hits, best first.
    pub hits: Vec<SearchHit>,
    /// How many entries match in all (the hits are the first `limit` of them).
    pub total: usize,
    /// How many entries the catch-up before the search indexed.
    pub indexed: u64,
}

/// What a catch-up or a rebuild did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexReport {
    /// Entries indexed.
    pub indexed: u64,
    /// Sessions whose documents were removed (deleted sessions).
    pub removed: u64,
    /// Sessions indexed.
    pub sessions: u64,
}

/// The fields of the index.
#[derive(Clone, Copy)]
struct Fields {
    sid: Field,
    seq: Field,
    kind: Field,
    time: Field,
    text: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let fields = Fields {
        sid: b.add_u64_field("sid", INDEXED | FAST | STORED),
        seq: b.add_u64_field("seq", FAST | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        time: b.add_i64_field("time", INDEXED | FAST | STORED),
        text: b.add_text_field("text", TEXT),
    };
    (b.build(), fields)
}

/// The index, once opened.
struct Open {
    index: Index,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    fields: Fields,
    /// Per session number: the position the session is indexed up to (its next record).
    marks: BTreeMap<u64, u64>,
    /// Every session's head must be compared with its mark at the next catch-up.
    full_scan: bool,
}

/// The store's search index: opened at the first search.
pub(crate) struct Search {
    dir: Option<PathBuf>,
    open: Mutex<Option<Open>>,
}

fn failed(what: &str) -> impl Fn(tantivy::TantivyError) -> GroveError + '_ {
    move |e| GroveError::SearchIndex(format!("{what}: {e}"))
}

/// The marks as the commit's payload: `VERSION sid:next sid:next …`.
fn encode_marks(marks: &BTreeMap<u64, u64>) -> String {
    let mut out = format!("grove-search {VERSION}");
    for (sid, next) in marks {
        out.push_str(&format!(" {sid}:{next}"));
    }
    out
}

/// The marks of a payload; `None` when it is not this version's.
fn decode_marks(payload: &str) -> Option<BTreeMap<u64, u64>> {
    let mut words = payload.split(' ');
    if words.next() != Some("grove-search") || words.next()? != VERSION.to_string() {
        return None;
    }
    words
        .map(|w| {
            let (sid, next) = w.split_once(':')?;
            Some((sid.parse().ok()?, next.parse().ok()?))
        })
        .collect()
}

impl Search {
    pub(crate) fn new(dir: Option<PathBuf>) -> Search {
        Search {
            dir: dir.map(|d| d.join("search")),
            open: Mutex::new(None),
        }
    }

    /// Opens the index (creating it, or rebuilding one of another version or whose marks
    /// cannot be read).
    fn open_index(&self, inner: &Inner) -> Result<Open> {
        let (schema, fields) = schema();
        let index = match &self.dir {
            Some(dir) => {
                let io = |source| GroveError::Io {
                    path: dir.clone(),
                    source,
                };
                crate::kv::files::create_dir_all(dir).map_err(io)?;
                let directory = MmapDirectory::open(dir)
                    .map_err(|e| GroveError::SearchIndex(format!("{}: {e}", dir.display())))?;
                match Index::open_or_create(directory, schema.clone()) {
                    Ok(index) => index,
                    Err(e) if inner.read_only => {
                        return Err(GroveError::SearchIndex(format!(
                            "{}: {e} (the next search of a writer builds it again)",
                            dir.display()
                        )))
                    }
                    // Another schema (an older grove's): the index is derived, so it is
                    // made again.
                    Err(_) => {
                        std::fs::remove_dir_all(dir).map_err(io)?;
                        crate::kv::files::create_dir_all(dir).map_err(io)?;
                        let directory = MmapDirectory::open(dir).map_err(|e| {
                            GroveError::SearchIndex(format!("{}: {e}", dir.display()))
                        })?;
                        Index::create(directory, schema, Default::default())
                            .map_err(failed("creating the index"))?
                    }
                }
            }
            None => Index::create_in_ram(schema),
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(failed("opening a reader"))?;
        let metas = index.load_metas().map_err(failed("reading its commit"))?;
        let marks = metas.payload.as_deref().and_then(decode_marks);
        let mut open = Open {
            index,
            reader,
            writer: None,
            fields,
            marks: marks.clone().unwrap_or_default(),
            full_scan: true,
        };
        if marks.is_none() && metas.payload.is_some() {
            if inner.read_only {
                return Err(GroveError::SearchIndex(
                    "its marks are of another version (the next search of a writer builds it \
                     again)"
                        .to_owned(),
                ));
            }
            // Marks of another version: start over.
            open.clear()?;
        }
        inner.commits.watch();
        Ok(open)
    }

    /// Runs `f` on the open index (opened first if need be).
    fn with<T>(&self, inner: &Inner, f: impl FnOnce(&mut Open) -> Result<T>) -> Result<T> {
        let mut guard = self.open.lock();
        if guard.is_none() {
            *guard = Some(self.open_index(inner)?);
        }
        match guard.as_mut() {
            Some(open) => f(open),
            None => Err(GroveError::SearchIndex("not open".to_owned())),
        }
    }

    /// Indexes what the log holds past the index's marks.
    pub(crate) fn catch_up(
        &self,
        inner: &Inner,
        logs: &std::sync::Arc<Logs>,
    ) -> Result<IndexReport> {
        self.with(inner, |open| open.catch_up(inner, logs))
    }

    /// Forgets the index and builds it again from the log.
    pub(crate) fn reindex(
        &self,
        inner: &Inner,
        logs: &std::sync::Arc<Logs>,
    ) -> Result<IndexReport> {
        self.with(inner, |open| {
            open.clear()?;
            open.catch_up(inner, logs)
        })
    }

    /// Catches up, then runs `query`.
    pub(crate) fn search(
        &self,
        inner: &Inner,
        logs: &std::sync::Arc<Logs>,
        query: &str,
        options: &SearchOptions,
    ) -> Result<SearchResults> {
        self.with(inner, |open| {
            let report = open.catch_up(inner, logs)?;
            let mut results = open.query(inner, logs, query, options)?;
            results.indexed = report.indexed;
            Ok(results)
        })
    }

    /// Catches up, then rewrites the index's segments without its deleted documents
    /// ([`Open::compact`]); nothing when the store has no index. Whether anything was merged.
    pub(crate) fn compact(&self, inner: &Inner, logs: &std::sync::Arc<Logs>) -> Result<bool> {
        if !self.exists() {
            return Ok(false);
        }
        self.with(inner, |open| {
            open.catch_up(inner, logs)?;
            open.compact()
        })
    }

    /// Whether the store has an index: one was built here, or its files are in the store
    /// directory.
    pub(crate) fn exists(&self) -> bool {
        self.open.lock().is_some()
            || self
                .dir
                .as_ref()
                .is_some_and(|dir| dir.join("meta.json").exists())
    }

    /// Checks the index against the log without changing either: no session is indexed past
    /// its end of log, each has as many documents as its log has entries with text below its
    /// mark, and no session outside the catalogue has a mark. A session indexed only part way
    /// is no problem (the next search catches it up). Returns the disagreements: the session
    /// (`sid N` for one the catalogue lacks) and what is wrong.
    pub(crate) fn verify(
        &self,
        inner: &Inner,
        logs: &std::sync::Arc<Logs>,
    ) -> Result<Vec<(String, String)>> {
        self.with(inner, |open| open.check(inner, logs))
    }
}

/// The sessions of the catalogue: number → record (published ones only).
fn catalogue(inner: &Inner) -> Result<BTreeMap<u64, SessionRecord>> {
    let start = vec![keys::T_SESSION_ID];
    let end = keys::prefix_end(&start);
    let mut out = BTreeMap::new();
    for pair in inner.kv.scan(&start, &end) {
        let (_, value) = pair?;
        let Some(sid) = keys::u64_value(&value) else {
            continue;
        };
        if let Some(record) = published(inner, sid)? {
            out.insert(sid, record);
        }
    }
    Ok(out)
}

/// Session `sid`'s record, when it is in the catalogue (not deleted, not an import still
/// being written).
fn published(inner: &Inner, sid: u64) -> Result<Option<SessionRecord>> {
    let Some(record) = inner.get::<SessionRecord>(&keys::session(sid))? else {
        return Ok(None);
    };
    Ok((inner.sid_of(&record.id)? == Some(sid)).then_some(record))
}

impl Open {
    fn writer(&mut self) -> Result<&mut IndexWriter> {
        if self.writer.is_none() {
            let writer = self
                .index
                .writer_with_num_threads(1, WRITER_BYTES)
                .map_err(failed("opening its writer"))?;
            self.writer = Some(writer);
        }
        self.writer
            .as_mut()
            .ok_or_else(|| GroveError::SearchIndex("no writer".to_owned()))
    }

    /// Commits what was added with the marks, and lets readers see it.
    fn commit(&mut self) -> Result<()> {
        let payload = encode_marks(&self.marks);
        let writer = self.writer()?;
        let mut prepared = writer.prepare_commit().map_err(failed("committing"))?;
        prepared.set_payload(&payload);
        prepared.commit().map_err(failed("committing"))?;
        self.reader.reload().map_err(failed("reloading its reader"))
    }

    /// Removes every document and mark.
    fn clear(&mut self) -> Result<()> {
        self.writer()?
            .delete_all_documents()
            .map_err(failed("clearing it"))?;
        self.marks.clear();
        self.full_scan = true;
        self.commit()
    }

    /// Adds the document of `entry` of session `sid`; `false` when it has no text.
    fn add(&mut self, sid: u64, entry: &crate::log::handle::Entry) -> Result<bool> {
        let Some(found) = searchable(&entry.line) else {
            return Ok(false);
        };
        if found.text.is_empty() {
            return Ok(false);
        }
        let mut doc = TantivyDocument::new();
        doc.add_u64(self.fields.sid, sid);
        doc.add_u64(self.fields.seq, entry.seq);
        doc.add_text(self.fields.kind, &found.entry_type);
        if let Some(role) = &found.role {
            doc.add_text(self.fields.kind, role);
        }
        doc.add_i64(self.fields.time, found.time_ms.unwrap_or(i64::MIN));
        doc.add_text(self.fields.text, &found.text);
        self.writer()?
            .add_document(doc)
            .map_err(failed("adding a document"))?;
        Ok(true)
    }

    /// Rewrites the index's segments without the documents deleted since they were written
    /// (a redaction's old document among them), so no file keeps their words, and removes the
    /// files no longer used ([`crate::Store::gc`]). Returns whether anything was merged.
    fn compact(&mut self) -> Result<bool> {
        let searcher = self.reader.searcher();
        let deleted = searcher
            .segment_readers()
            .iter()
            .any(|r| r.num_deleted_docs() > 0);
        if !deleted {
            return Ok(false);
        }
        // tantivy's own merges run in the background and may take the segments first: they
        // finish, and the merge is made by a writer that merges nothing else.
        if let Some(writer) = self.writer.take() {
            writer
                .wait_merging_threads()
                .map_err(failed("finishing its merges"))?;
        }
        self.writer()?
            .set_merge_policy(Box::new(tantivy::merge_policy::NoMergePolicy));
        let ids = self
            .index
            .searchable_segment_ids()
            .map_err(failed("listing segments"))?;
        if !ids.is_empty() {
            self.writer()?
                .merge(&ids)
                .wait()
                .map_err(failed("merging segments"))?;
        }
        self.commit()?;
        if let Some(writer) = self.writer.take() {
            writer
                .garbage_collect_files()
                .wait()
                .map_err(failed("removing unused files"))?;
            // The next writer merges as tantivy does by default.
            writer
                .wait_merging_threads()
                .map_err(failed("finishing its merges"))?;
        }
        Ok(true)
    }

    fn catch_up(&mut self, inner: &Inner, logs: &std::sync::Arc<Logs>) -> Result<IndexReport> {
        let touched = inner.commits.take_touched();
        let mut report = IndexReport::default();
        let candidates: BTreeMap<u64, Option<SessionRecord>> =
            if self.full_scan || touched.all || inner.shared {
                let listed = catalogue(inner)?;
                let mut all: BTreeMap<u64, Option<SessionRecord>> =
                    self.marks.keys().map(|&sid| (sid, None)).collect();
                all.extend(listed.into_iter().map(|(sid, r)| (sid, Some(r))));
                all
            } else {
                let mut some = BTreeMap::new();
                for sid in touched.sids {
                    some.insert(sid, published(inner, sid)?);
                }
                some
            };
        let mut pending = 0u64;
        let mut changed = false;
        for (sid, record) in candidates {
            let Some(record) = record else {
                if self.marks.remove(&sid).is_some() {
                    let term = Term::from_field_u64(self.fields.sid, sid);
                    self.writer()?.delete_term(term);
                    report.removed += 1;
                    changed = true;
                }
                continue;
            };
            let mark = self.marks.get(&sid).copied().unwrap_or(0);
            let handle = Handle::open(logs.clone(), sid, record)?;
            let next = handle.next_seq()?;
            if next <= mark {
                continue;
            }
            let mut at = mark;
            let mut indexed_here = false;
            for entry in handle.log_from(mark) {
                let entry = entry?;
                if entry.seq >= next {
                    break;
                }
                at = entry.seq + 1;
                if EntryKind::from_tag(entry.node.kind) == Some(EntryKind::Leaf) {
                    // A redaction of a record indexed before: its document goes, and the
                    // record's line as it now is comes in its place.
                    let Some(note) = RedactionNote::of_line(&entry.line) else {
                        continue;
                    };
                    if note.seq >= mark {
                        continue;
                    }
                    let query = BooleanQuery::new(vec![
                        (
                            Occur::Must,
                            Box::new(TermQuery::new(
                                Term::from_field_u64(self.fields.sid, sid),
                                IndexRecordOption::Basic,
                            )) as Box<dyn Query>,
                        ),
                        (
                            Occur::Must,
                            Box::new(RangeQuery::new(
                                Bound::Included(Term::from_field_u64(self.fields.seq, note.seq)),
                                Bound::Included(Term::from_field_u64(self.fields.seq, note.seq)),
                            )),
                        ),
                    ]);
                    self.writer()?
                        .delete_query(Box::new(query))
                        .map_err(failed("removing a redacted entry"))?;
                    let redacted = handle.entry_at(note.seq)?;
                    if self.add(sid, &redacted)? {
                        report.indexed += 1;
                    }
                    continue;
                }
                if !self.add(sid, &entry)? {
                    continue;
                }
                report.indexed += 1;
                pending += 1;
                indexed_here = true;
                if pending >= COMMIT_EVERY {
                    self.marks.insert(sid, at);
                    self.commit()?;
                    pending = 0;
                }
            }
            self.marks.insert(sid, at);
            if indexed_here {
                report.sessions += 1;
            }
            changed = true;
        }
        self.full_scan = false;
        if changed {
            self.commit()?;
        }
        Ok(report)
    }

    fn query(
        &self,
        inner: &Inner,
        logs: &std::sync::Arc<Logs>,
        text: &str,
        options: &SearchOptions,
    ) -> Result<SearchResults> {
        let mut parser = QueryParser::for_index(&self.index, vec![self.fields.text]);
        parser.set_conjunction_by_default();
        let (rest, prefixes) = split_prefixes(text);
        let (parsed, _errors) = parser.parse_query_lenient(&rest);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if !rest.trim().is_empty() || prefixes.is_empty() {
            clauses.push((Occur::Must, parsed.box_clone()));
        }
        for prefix in prefixes {
            let query = RegexQuery::from_pattern(&format!("{prefix}.*"), self.fields.text)
                .map_err(failed("reading a prefix"))?;
            clauses.push((Occur::Must, Box::new(query)));
        }
        if let Some(id) = &options.session {
            let sid = inner
                .sid_of(id)?
                .ok_or_else(|| GroveError::SessionNotFound(id.clone()))?;
            clauses.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_u64(self.fields.sid, sid),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        if !options.types.is_empty() {
            let any: Vec<(Occur, Box<dyn Query>)> = options
                .types
                .iter()
                .map(|t| {
                    let q: Box<dyn Query> = Box::new(TermQuery::new(
                        Term::from_field_text(self.fields.kind, t),
                        IndexRecordOption::Basic,
                    ));
                    (Occur::Should, q)
                })
                .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(any))));
        }
        if let Some(since) = options.since_ms {
            clauses.push((
                Occur::Must,
                Box::new(RangeQuery::new(
                    Bound::Included(Term::from_field_i64(self.fields.time, since)),
                    Bound::Unbounded,
                )),
            ));
        }
        let query = BooleanQuery::new(clauses);
        let limit = if options.limit == 0 {
            20
        } else {
            options.limit
        };
        let searcher = self.reader.searcher();
        let (top, total) = searcher
            .search(&query, &(TopDocs::with_limit(limit), Count))
            .map_err(failed("searching"))?;
        let mut snippets = SnippetGenerator::create(&searcher, &*parsed, self.fields.text)
            .map_err(failed("making snippets"))?;
        snippets.set_max_num_chars(SNIPPET_CHARS);
        let mut hits = Vec::with_capacity(top.len());
        // Per session: its handle and its leaf, read once for all its hits.
        let mut sessions: BTreeMap<u64, Option<(Handle, Leaf)>> = BTreeMap::new();
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(failed("reading a hit"))?;
            let u64_of = |field: Field| doc.get_first(field).and_then(|v| v.as_u64());
            let (Some(sid), Some(seq)) = (u64_of(self.fields.sid), u64_of(self.fields.seq)) else {
                continue;
            };
            if let std::collections::btree_map::Entry::Vacant(slot) = sessions.entry(sid) {
                let opened = match published(inner, sid)? {
                    Some(record) => {
                        let handle = Handle::open(logs.clone(), sid, record)?;
                        let leaf = match handle.leaf_seq()? {
                            Some(leaf) => Some((leaf, handle.node(leaf)?)),
                            None => None,
                        };
                        Some((handle, leaf))
                    }
                    None => None,
                };
                slot.insert(opened);
            }
            // A session deleted since the catch-up.
            let Some(Some((handle, leaf))) = sessions.get(&sid) else {
                continue;
            };
            let entry = handle.entry_at(seq)?;
            let found = searchable(&entry.line);
            let snippet = snippets.snippet(found.as_ref().map_or("", |f| f.text.as_str()));
            let active = on_active_path(handle, leaf, seq, &entry.node)?;
            hits.push(SearchHit {
                session: handle.record.id.clone(),
                entry: entry.node.id.to_string(),
                seq,
                entry_type: found
                    .as_ref()
                    .map(|f| f.entry_type.clone())
                    .unwrap_or_default(),
                role: found.as_ref().and_then(|f| f.role.clone()),
                timestamp: found
                    .as_ref()
                    .and_then(|f| f.time_ms)
                    .map(grove_codec::time::format_ms),
                score,
                snippet: snippet.fragment().to_owned(),
                highlights: snippet
                    .highlighted()
                    .iter()
                    .map(|r| (r.start, r.end))
                    .collect(),
                active,
            });
        }
        Ok(SearchResults {
            hits,
            total,
            indexed: 0,
        })
    }

    /// The disagreements between the index and the log (after a catch-up).
    fn check(&self, inner: &Inner, logs: &std::sync::Arc<Logs>) -> Result<Vec<(String, String)>> {
        let mut problems = Vec::new();
        let listed = catalogue(inner)?;
        let searcher = self.reader.searcher();
        for (sid, record) in &listed {
            let id = record.id.clone();
            let handle = Handle::open(logs.clone(), *sid, record.clone())?;
            let next = handle.next_seq()?;
            let mark = self.marks.get(sid).copied().unwrap_or(0);
            if mark > next {
                problems.push((
                    id.clone(),
                    format!("the search index has its records up to {mark}, its log only {next}"),
                ));
            }
            let mut expected = 0usize;
            for entry in handle.log_from(0) {
                let entry = entry?;
                if entry.seq >= mark {
                    break;
                }
                if EntryKind::from_tag(entry.node.kind) == Some(EntryKind::Leaf) {
                    continue;
                }
                if searchable(&entry.line).is_some_and(|f| !f.text.is_empty()) {
                    expected += 1;
                }
            }
            let query = TermQuery::new(
                Term::from_field_u64(self.fields.sid, *sid),
                IndexRecordOption::Basic,
            );
            let found = searcher
                .search(&query, &Count)
                .map_err(failed("counting"))?;
            if found != expected {
                problems.push((
                    id,
                    format!(
                        "the search index has {found} of its entries, its log {expected} with \
                         text below {mark}"
                    ),
                ));
            }
        }
        for sid in self.marks.keys() {
            if !listed.contains_key(sid) {
                problems.push((
                    format!("sid {sid}"),
                    "in the search index but not in the catalogue".to_owned(),
                ));
            }
        }
        Ok(problems)
    }
}

/// The words of `query` that end in `*` outside quotes and are letters and digits before it
/// (tantivy's parser takes a prefix only as a phrase's last word), lowercased as the index's
/// words are; and the query without them.
fn split_prefixes(query: &str) -> (String, Vec<String>) {
    let mut rest = Vec::new();
    let mut prefixes = Vec::new();
    let mut quoted = false;
    for word in query.split_whitespace() {
        let prefix = word
            .strip_suffix('*')
            .filter(|p| !quoted && !p.is_empty() && p.chars().all(char::is_alphanumeric));
        match prefix {
            Some(p) => prefixes.push(p.to_lowercase()),
            None => rest.push(word),
        }
        if word.matches('"').count() % 2 == 1 {
            quoted = !quoted;
        }
    }
    (rest.join(" "), prefixes)
}

/// Whether `seq` (whose node is `node`) is on the session's active path: the ancestor of
/// `leaf` at `seq`'s depth is `seq`.
fn on_active_path(h: &Handle, leaf: &Leaf, seq: u64, node: &NodeRecord) -> Result<bool> {
    let Some((leaf, leaf_node)) = leaf else {
        return Ok(false);
    };
    Ok(
        crate::tree::ancestors::ancestor_at_depth(h, *leaf, leaf_node, node.depth)?
            .is_some_and(|(at, _)| at == seq),
    )
}

/// A session's leaf (its position and node), `None` at the root position.
type Leaf = Option<(u64, NodeRecord)>;

#[cfg(test)]
mod tests {
    use super::{decode_marks, encode_marks};
    use std::collections::BTreeMap;

    #[test]
    fn prefixes_are_the_starred_words_outside_quotes() {
        let split = |q: &str| super::split_prefixes(q);
        assert_eq!(split("Pla* b"), ("b".to_owned(), vec!["pla".to_owned()]));
        assert_eq!(
            split("\"a b\"* c*"),
            ("\"a b\"*".to_owned(), vec!["c".to_owned()])
        );
        assert_eq!(split("\"x y* z\" w"), ("\"x y* z\" w".to_owned(), vec![]));
        assert_eq!(split("a.b* *"), ("a.b* *".to_owned(), vec![]));
    }

    #[test]
    fn marks_read_back_and_another_version_is_refused() {
        let marks: BTreeMap<u64, u64> = [(1, 10), (7, 0), (u64::MAX, 3)].into_iter().collect();
        assert_eq!(decode_marks(&encode_marks(&marks)), Some(marks));
        assert_eq!(decode_marks("grove-search 1"), Some(BTreeMap::new()));
        assert_eq!(decode_marks("grove-search 0 1:2"), None);
        assert_eq!(decode_marks("grove-search 1 1:x"), None);
        assert_eq!(decode_marks("other"), None);
    }
}
