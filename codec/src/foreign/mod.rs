//! Transcripts of other agents' tools as pi v3 JSONL that keeps every original line: Claude
//! Code's (`~/.claude/projects/PROJECT/SESSION.jsonl`: lines linked by `uuid`/`parentUuid`) and
//! Codex's rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`: `{timestamp, type,
//! payload}` lines, one after the other). docs/format.md, "Foreign transcripts", is the mapping.
//!
//! Each original line becomes one `custom` entry whose `customType` is the tool and the line's
//! type (`claude-code.user`, `codex.response_item`) and whose `data` is the line itself, its bytes
//! as they were (a line that is a JSON object with nothing around it), or `text`, the line as a
//! string (anything else that is still a JSON object, such as a line ending in CR). So the tree
//! and the HTML view show the tool's own objects, and [`original_line`] gives each line back byte
//! for byte. The tree comes from the tool's links: a Claude line is a child of its `parentUuid`
//! (or, at a compaction boundary, its `logicalParentUuid`), a line without a `uuid` (a title, a
//! tag, a summary) a child of the line before it; a Codex line is a child of the line before it.
//!
//! It owns that translation and calls nothing but serde_json: no I/O. A reader makes two passes
//! over a file ([`Survey`], then [`Translator`] again for the lines), since the header and the
//! leaf depend on all of it.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::LineError;

pub mod chain;
pub mod history;
pub mod lanes;

use chain::Link;

/// A transcript format other than pi's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code's session transcripts.
    ClaudeCode,
    /// Codex's rollout files.
    Codex,
    /// pi 0.84's lane-based JSONL (`{"kind":"header","version":4}`: entry, record, lane and
    /// fact lines).
    PiLanes,
    /// pi 0.85–0.99's commit log (`{"v":4,"kind":"header","storageVersion":1}`: one commit a
    /// line, a write or an array of writes).
    PiCommits,
}

impl Format {
    /// The name used in `customType`s, the header and the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::PiLanes => "pi-lanes",
            Format::PiCommits => "pi-commits",
        }
    }

    /// The format of that name.
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "claude-code" => Some(Format::ClaudeCode),
            "codex" => Some(Format::Codex),
            "pi-lanes" => Some(Format::PiLanes),
            "pi-commits" => Some(Format::PiCommits),
            _ => None,
        }
    }
}

/// The fields a line is read for (the rest is kept as it is, in the line).
#[derive(Deserialize, Default)]
struct Fields<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    uuid: Option<&'a RawValue>,
    #[serde(rename = "parentUuid", borrow)]
    parent_uuid: Option<&'a RawValue>,
    #[serde(rename = "logicalParentUuid", borrow)]
    logical_parent_uuid: Option<&'a RawValue>,
    #[serde(borrow)]
    timestamp: Option<&'a RawValue>,
    #[serde(rename = "sessionId", borrow)]
    session_id: Option<&'a RawValue>,
    #[serde(borrow)]
    cwd: Option<&'a RawValue>,
    #[serde(rename = "isSidechain", borrow)]
    is_sidechain: Option<&'a RawValue>,
    #[serde(rename = "isMeta", borrow)]
    is_meta: Option<&'a RawValue>,
    #[serde(rename = "teamName", borrow)]
    team_name: Option<&'a RawValue>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    version: Option<&'a RawValue>,
    #[serde(borrow)]
    v: Option<&'a RawValue>,
    #[serde(rename = "parentId", borrow)]
    parent_id: Option<&'a RawValue>,
    #[serde(borrow)]
    lane: Option<&'a RawValue>,
    #[serde(rename = "leafId", borrow)]
    leaf_id: Option<&'a RawValue>,
    #[serde(rename = "createdAt", borrow)]
    created_at: Option<&'a RawValue>,
    #[serde(borrow)]
    namespace: Option<&'a RawValue>,
    #[serde(borrow)]
    key: Option<&'a RawValue>,
    #[serde(borrow)]
    value: Option<&'a RawValue>,
    #[serde(rename = "agentId", borrow)]
    agent_id: Option<&'a RawValue>,
    #[serde(rename = "sourceToolAssistantUUID", borrow)]
    source_tool_assistant: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    record_type: Option<&'a RawValue>,
}

/// A Codex `session_meta` payload's fields.
#[derive(Deserialize, Default)]
struct SessionMeta<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    cwd: Option<&'a RawValue>,
    #[serde(borrow)]
    model_provider: Option<&'a RawValue>,
}

fn text(raw: Option<&RawValue>) -> Option<String> {
    raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok())
}

/// Which format a file is in, from its first line: Claude Code's lines carry `sessionId` and
/// `uuid`/`parentUuid` or are its metadata lines, Codex's `{timestamp, type, payload}` (or, in
/// older rollouts, a first line `{id, timestamp, instructions}`), pi 0.84's header is
/// `{"kind":"header","version":4}` and pi 0.85's `{"v":4,"kind":"header"}`; `None` for anything
/// else (pi's v1–v3 JSONL among it).
pub fn detect(first_line: &[u8]) -> Option<Format> {
    let fields: Fields<'_> = serde_json::from_slice(trim(first_line)).ok()?;
    let ty = text(fields.ty);
    if ty.as_deref() == Some("session") {
        return None;
    }
    if text(fields.kind).as_deref() == Some("header") {
        if fields.v.is_some_and(|v| v.get() == "4") {
            return Some(Format::PiCommits);
        }
        if fields.version.is_some_and(|v| v.get() == "4") {
            return Some(Format::PiLanes);
        }
    }
    if fields.payload.is_some() && fields.timestamp.is_some() && ty.is_some() {
        return Some(Format::Codex);
    }
    if ty.is_none()
        && fields.id.is_some()
        && fields.timestamp.is_some()
        && fields.session_id.is_none()
    {
        // An older rollout's first line: `{id, timestamp, instructions, git?}`.
        return Some(Format::Codex);
    }
    if fields.session_id.is_some() || fields.uuid.is_some() || fields.parent_uuid.is_some() {
        return Some(Format::ClaudeCode);
    }
    if matches!(
        ty.as_deref(),
        Some("summary" | "custom-title" | "tag" | "file-history-snapshot")
    ) {
        return Some(Format::ClaudeCode);
    }
    None
}

/// `line` without the blanks JSON allows around a value.
fn trim(line: &[u8]) -> &[u8] {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = line.iter().position(|b| !blank(b)).unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |e| e + 1);
    &line[start..end]
}

/// One original line as the translation sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translated {
    /// The entry's id: the line's `uuid` (Claude Code) when it has a new one, else `L` and the
    /// line's number.
    pub id: String,
    /// The entry's parent id.
    pub parent: Option<String>,
    /// The pi entry line (no newline).
    pub line: Vec<u8>,
    /// A Claude Code transcript entry's part in the leaf rule ([`chain::leaf`]).
    pub claude: Option<Link>,
    /// The session id, working directory and time the line names, if any.
    pub session_id: Option<String>,
    /// The working directory the line names.
    pub cwd: Option<String>,
    /// The line's timestamp.
    pub timestamp: Option<String>,
    /// The main branch's leaf this line sets (pi's lanes and branch tips): an entry id, or
    /// `None` for the root position.
    pub leaf_hint: Option<Option<String>>,
}

/// Translates the lines of one file in order; the same lines give the same entries.
#[derive(Debug)]
pub struct Translator {
    format: Format,
    /// Ids given so far.
    ids: HashSet<String>,
    /// Claude `uuid`s seen so far, to the entry id each got.
    uuids: HashMap<String, String>,
    previous: Option<String>,
    previous_timestamp: Option<String>,
    line: u64,
    offset: u64,
}

impl Translator {
    pub fn new(format: Format) -> Translator {
        Translator {
            format,
            ids: HashSet::new(),
            uuids: HashMap::new(),
            previous: None,
            previous_timestamp: None,
            line: 0,
            offset: 0,
        }
    }

    /// The next line (its bytes without the LF): its entry, or why it is not a line of the
    /// format (not a JSON object, or for pi's commit log an array: malformed, or cut short).
    pub fn line(&mut self, raw: &[u8]) -> Result<Translated, LineError> {
        self.line += 1;
        let (line, offset) = (self.line, self.offset);
        self.offset += raw.len() as u64 + 1;
        let fail = |reason: String| LineError {
            line,
            byte_offset: offset,
            reason,
        };
        let core = trim(raw);
        let array = self.format == Format::PiCommits && core.first() == Some(&b'[');
        if core.first() != Some(&b'{') && !array {
            return Err(fail(format!(
                "not a {} line: a JSON object was expected",
                self.format.name()
            )));
        }
        let not_a_line =
            |e: serde_json::Error| fail(format!("not a {} line: {e}", self.format.name()));
        let info = if array {
            let writes: Vec<Fields<'_>> = serde_json::from_slice(core).map_err(not_a_line)?;
            commit_info(&writes)
        } else {
            let fields: Fields<'_> = serde_json::from_slice(core).map_err(not_a_line)?;
            match self.format {
                Format::ClaudeCode => claude_info(&fields),
                Format::Codex => codex_info(&fields),
                Format::PiLanes => lanes_info(&fields),
                Format::PiCommits => commit_info(std::slice::from_ref(&fields)),
            }
        };
        let id = match info.own_id.as_ref() {
            Some(u)
                if !u.is_empty()
                    && !self.ids.contains(u)
                    && crate::ids::check_id("entry", u).is_ok() =>
            {
                u.clone()
            }
            _ => {
                let mut id = format!("L{line}");
                while self.ids.contains(&id) {
                    id.push('_');
                }
                id
            }
        };
        let parent = match info.own_id {
            Some(_) => info.link.as_ref().and_then(|p| self.uuids.get(p)).cloned(),
            None => self.previous.clone(),
        };
        let stamp = info
            .timestamp
            .clone()
            .or_else(|| self.previous_timestamp.clone())
            .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned());
        let mut out = Vec::with_capacity(raw.len() + 128);
        out.extend_from_slice(b"{\"type\":\"custom\",\"customType\":");
        push_json_string(&mut out, &format!("{}.{}", self.format.name(), info.kind));
        out.extend_from_slice(b",\"id\":");
        push_json_string(&mut out, &id);
        out.extend_from_slice(b",\"parentId\":");
        match &parent {
            Some(p) => push_json_string(&mut out, p),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"timestamp\":");
        push_json_string(&mut out, &stamp);
        if core.len() == raw.len() {
            out.extend_from_slice(b",\"data\":");
            out.extend_from_slice(raw);
        } else {
            let original = std::str::from_utf8(raw).map_err(|_| fail("not UTF-8".to_owned()))?;
            out.extend_from_slice(b",\"text\":");
            push_json_string(&mut out, original);
        }
        out.push(b'}');
        self.ids.insert(id.clone());
        if let Some(u) = &info.own_id {
            self.uuids.entry(u.clone()).or_insert_with(|| id.clone());
        }
        self.previous = Some(id.clone());
        self.previous_timestamp = Some(stamp);
        // A leaf the line names, as the entry id it got (a pi entry id not seen is none).
        let leaf_hint = info
            .leaf_hint
            .map(|target| target.and_then(|t| self.uuids.get(&t).cloned()));
        Ok(Translated {
            id,
            parent,
            line: out,
            claude: info.claude,
            session_id: info.session_id,
            cwd: info.cwd,
            timestamp: info.timestamp,
            leaf_hint,
        })
    }
}

/// What a line says of itself, per format.
#[derive(Default)]
struct LineInfo {
    /// The line's type (the `customType`'s second part).
    kind: String,
    /// The id the line gives itself (Claude's `uuid`, a pi entry's `id`); lines without one
    /// follow the line before them.
    own_id: Option<String>,
    /// The id of the line's parent (Claude's `parentUuid` or `logicalParentUuid`, a pi entry's
    /// `parentId`).
    link: Option<String>,
    /// A Claude Code transcript entry's part in the leaf rule.
    claude: Option<Link>,
    session_id: Option<String>,
    cwd: Option<String>,
    timestamp: Option<String>,
    /// The line moves the main branch's leaf to this id (pi's lanes and branch tips).
    leaf_hint: Option<Option<String>>,
}

fn claude_info(fields: &Fields<'_>) -> LineInfo {
    let kind = text(fields.ty).unwrap_or_else(|| "line".to_owned());
    let claude = match text(fields.uuid) {
        Some(uuid) if chain::is_transcript_type(&kind) => {
            let (message, main) =
                chain::link_flags(&kind, fields.is_sidechain, fields.is_meta, fields.team_name);
            Some(Link {
                uuid,
                parent: text(fields.parent_uuid).filter(|p| !p.is_empty()),
                message,
                main,
            })
        }
        _ => None,
    };
    LineInfo {
        kind,
        own_id: text(fields.uuid),
        link: text(fields.parent_uuid).or_else(|| text(fields.logical_parent_uuid)),
        claude,
        session_id: text(fields.session_id),
        cwd: text(fields.cwd),
        timestamp: text(fields.timestamp),
        leaf_hint: None,
    }
}

fn codex_info(fields: &Fields<'_>) -> LineInfo {
    let kind = text(fields.ty);
    let meta: SessionMeta<'_> = match (kind.as_deref(), fields.payload) {
        (Some("session_meta"), Some(p)) => serde_json::from_str(p.get()).unwrap_or_default(),
        _ => SessionMeta::default(),
    };
    // An older rollout's first line: `{id, timestamp, instructions, git?}`.
    let legacy = fields.ty.is_none() && fields.id.is_some() && fields.timestamp.is_some();
    let kind = match (kind, legacy) {
        (Some(k), _) => k,
        (None, true) => "session_meta".to_owned(),
        (None, false) => "item".to_owned(),
    };
    LineInfo {
        kind,
        session_id: if legacy {
            text(fields.id)
        } else {
            text(meta.id)
        },
        cwd: text(meta.cwd),
        timestamp: text(fields.timestamp),
        ..LineInfo::default()
    }
}

/// A pi time: a number of milliseconds (as ISO 8601), or a string as it is.
fn pi_time(raw: Option<&RawValue>) -> Option<String> {
    let raw = raw?;
    match raw.get().parse::<f64>() {
        Ok(ms) if ms.is_finite() => Some(crate::time::format_ms(ms as i64)),
        _ => text(Some(raw)),
    }
}

fn lanes_info(fields: &Fields<'_>) -> LineInfo {
    let kind = text(fields.kind).unwrap_or_else(|| "line".to_owned());
    let main_lane = text(fields.lane).as_deref() == Some("main");
    match kind.as_str() {
        "header" => LineInfo {
            session_id: text(fields.id),
            cwd: text(fields.cwd),
            timestamp: pi_time(fields.created_at),
            kind,
            ..LineInfo::default()
        },
        "entry" => {
            let id = text(fields.id);
            LineInfo {
                leaf_hint: main_lane.then(|| id.clone()),
                own_id: id,
                link: text(fields.parent_id),
                timestamp: pi_time(fields.timestamp),
                kind,
                ..LineInfo::default()
            }
        }
        "lane" => LineInfo {
            leaf_hint: main_lane.then(|| text(fields.leaf_id)),
            kind,
            ..LineInfo::default()
        },
        _ => LineInfo {
            timestamp: pi_time(fields.timestamp),
            kind,
            ..LineInfo::default()
        },
    }
}

/// One commit of pi's commit log: its header, a single write, or an array of writes (its first
/// entry is the line's place in the tree; `pi.branch.tip` of `main` moves the leaf).
fn commit_info(writes: &[Fields<'_>]) -> LineInfo {
    let kinds: Vec<String> = writes.iter().filter_map(|w| text(w.kind)).collect();
    let kind = match (writes.len(), kinds.first()) {
        (1, Some(k)) => k.clone(),
        _ => "commit".to_owned(),
    };
    if kind == "header" {
        let header = &writes[0];
        return LineInfo {
            session_id: text(header.id),
            cwd: text(header.cwd),
            timestamp: pi_time(header.created_at),
            kind,
            ..LineInfo::default()
        };
    }
    let entry = writes
        .iter()
        .find(|w| text(w.kind).as_deref() == Some("entry"));
    let mut leaf_hint = None;
    for w in writes {
        if text(w.kind).as_deref() == Some("value")
            && text(w.namespace).as_deref() == Some("pi.branch.tip")
            && text(w.key).as_deref() == Some("main")
        {
            leaf_hint = Some(text(w.value));
        }
    }
    LineInfo {
        kind,
        own_id: entry.and_then(|e| text(e.id)),
        link: entry.and_then(|e| text(e.parent_id)),
        timestamp: entry.and_then(|e| pi_time(e.timestamp)),
        leaf_hint,
        ..LineInfo::default()
    }
}

/// Appends `s` as a JSON string.
fn push_json_string(out: &mut Vec<u8>, s: &str) {
    // serde_json writes a string infallibly into a Vec.
    if serde_json::to_writer(&mut *out, s).is_err() {
        out.extend_from_slice(b"\"\"");
    }
}

/// What a first pass over a file learns: what the header and the leaf need.
#[derive(Debug, Clone, Default)]
pub struct Survey {
    /// Lines read.
    pub lines: u64,
    /// The session id the lines name first.
    pub session_id: Option<String>,
    /// The working directory the lines name first.
    pub cwd: Option<String>,
    /// The first timestamp.
    pub first_timestamp: Option<String>,
    /// The last entry's id.
    pub last: Option<String>,
    /// Whether the file ends with a newline.
    pub final_newline: bool,
    /// Claude Code's transcript entries in order, with the entry id each got (the leaf rule).
    links: Vec<(Link, String)>,
    /// Every entry id given.
    ids: HashSet<String>,
    /// The last leaf a line set (pi's lanes and branch tips).
    hint: Option<Option<String>>,
    /// The file's format.
    format: Option<Format>,
}

impl Survey {
    pub fn new(format: Format) -> Survey {
        Survey {
            format: Some(format),
            ..Survey::default()
        }
    }

    /// Takes in one line's translation and the uuid it carried.
    pub fn add(&mut self, t: &Translated) {
        self.lines += 1;
        if self.session_id.is_none() {
            self.session_id.clone_from(&t.session_id);
        }
        if self.cwd.is_none() {
            self.cwd.clone_from(&t.cwd);
        }
        if self.first_timestamp.is_none() {
            self.first_timestamp.clone_from(&t.timestamp);
        }
        if let Some(link) = &t.claude {
            self.links.push((link.clone(), t.id.clone()));
        }
        self.ids.insert(t.id.clone());
        self.last = Some(t.id.clone());
        if let Some(hint) = &t.leaf_hint {
            self.hint = Some(hint.clone());
        }
    }

    /// The leaf: Claude Code's rule (the Agent SDK's, [`chain::leaf`]), Codex's (the last line), pi's (the `main` lane's or branch's last leaf);
    /// the last line when no message qualifies.
    pub fn leaf(&self) -> Option<String> {
        self.target().flatten()
    }

    /// [`Survey::leaf`], where `Some(None)` is the root position (a pi branch tip of null) and
    /// `None` an empty file.
    pub fn target(&self) -> Option<Option<String>> {
        if matches!(self.format, Some(Format::PiLanes | Format::PiCommits)) {
            if let Some(hint) = &self.hint {
                return Some(hint.clone());
            }
        }
        self.last.as_ref()?;
        Some(match self.format {
            Some(Format::ClaudeCode) => {
                let links: Vec<&Link> = self.links.iter().map(|(l, _)| l).collect();
                chain::leaf(&links)
                    .map(|i| self.links[i].1.clone())
                    .or_else(|| self.last.clone())
            }
            _ => self.last.clone(),
        })
    }

    /// The pi header line of the session: `id`, the first timestamp, the working directory
    /// (`fallback_cwd` when the lines name none), and in `metadata` the format, the file's name
    /// and whether it ended with a newline (what [`original_line`]'s reader needs).
    pub fn header(&self, id: &str, fallback_cwd: &str, file: &str) -> Vec<u8> {
        let format = self.format.map_or("unknown", Format::name);
        let mut out = Vec::new();
        out.extend_from_slice(b"{\"type\":\"session\",\"version\":3,\"id\":");
        push_json_string(&mut out, id);
        out.extend_from_slice(b",\"timestamp\":");
        push_json_string(
            &mut out,
            self.first_timestamp
                .as_deref()
                .unwrap_or("1970-01-01T00:00:00.000Z"),
        );
        out.extend_from_slice(b",\"cwd\":");
        let cwd = self
            .cwd
            .as_deref()
            .filter(|c| !c.is_empty())
            .unwrap_or(fallback_cwd);
        push_json_string(&mut out, if cwd.is_empty() { "/" } else { cwd });
        out.extend_from_slice(b",\"metadata\":{\"foreign\":{\"format\":");
        push_json_string(&mut out, format);
        out.extend_from_slice(b",\"file\":");
        push_json_string(&mut out, file);
        out.extend_from_slice(b",\"lines\":");
        out.extend_from_slice(self.lines.to_string().as_bytes());
        out.extend_from_slice(b",\"finalNewline\":");
        out.extend_from_slice(if self.final_newline {
            b"true"
        } else {
            b"false"
        });
        out.extend_from_slice(b"}}}");
        out
    }

    /// The leaf line that puts the session's leaf where the tool resumes (none for an empty
    /// file).
    pub fn leaf_line(&self) -> Option<Vec<u8>> {
        let (leaf, last) = (self.target()?, self.last.clone()?);
        let mut out = Vec::new();
        out.extend_from_slice(b"{\"type\":\"leaf\",\"id\":");
        let mut id = "resume".to_owned();
        while self.ids.contains(&id) {
            id.push('_');
        }
        push_json_string(&mut out, &id);
        out.extend_from_slice(b",\"parentId\":");
        push_json_string(&mut out, &last);
        out.extend_from_slice(b",\"timestamp\":");
        push_json_string(
            &mut out,
            self.first_timestamp
                .as_deref()
                .unwrap_or("1970-01-01T00:00:00.000Z"),
        );
        out.extend_from_slice(b",\"targetId\":");
        match &leaf {
            Some(leaf) => push_json_string(&mut out, leaf),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        Some(out)
    }
}

/// What a foreign session's header says of it: its format and whether its file ended with a
/// newline; `None` for a session that was not imported from another tool's file.
pub fn header_format(header: &str) -> Option<(Format, bool)> {
    #[derive(Deserialize)]
    struct Header<'a> {
        #[serde(borrow)]
        metadata: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Metadata<'a> {
        #[serde(borrow)]
        foreign: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Foreign {
        format: String,
        #[serde(rename = "finalNewline")]
        final_newline: bool,
    }
    let header: Header<'_> = serde_json::from_str(header).ok()?;
    let metadata: Metadata<'_> = serde_json::from_str(header.metadata?.get()).ok()?;
    let foreign: Foreign = serde_json::from_str(metadata.foreign?.get()).ok()?;
    Some((Format::from_name(&foreign.format)?, foreign.final_newline))
}

/// Whether an entry line is a transcript's message (Claude Code's `user`, `assistant` and
/// `system` lines, Codex's response items and compactions, pi's entries and commits), which the
/// tree view shows as it
/// shows pi's messages; the tools' other lines (titles, tags, snapshots, events, turn contexts)
/// are bookkeeping there, as pi's `custom` entries are.
pub fn is_message_line(line: &str) -> bool {
    // The translation writes every entry's first bytes so, the type its `customType`'s first
    // word: a prefix test, with no parse of the (perhaps large) line, as the tree view asks this
    // of every `custom` entry (a LangGraph checkpoint's too).
    const PREFIX: &str = "{\"type\":\"custom\",\"customType\":\"";
    let Some(rest) = line.strip_prefix(PREFIX) else {
        return false;
    };
    [
        "claude-code.user\"",
        "claude-code.assistant\"",
        "claude-code.system\"",
        "codex.response_item\"",
        "codex.item\"",
        "codex.message\"",
        "codex.compacted\"",
        "pi-lanes.entry\"",
        "pi-commits.entry\"",
        "pi-commits.commit\"",
    ]
    .iter()
    .any(|kind| rest.starts_with(kind))
}

/// The original line an entry of a foreign session keeps (no newline), byte for byte; `None`
/// for any other entry (a leaf line, or an entry appended since).
pub fn original_line(format: Format, entry: &str) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Kept<'a> {
        #[serde(rename = "customType")]
        custom_type: Option<String>,
        #[serde(borrow)]
        data: Option<&'a RawValue>,
        text: Option<String>,
    }
    let kept: Kept<'_> = serde_json::from_str(entry).ok()?;
    let prefix = format!("{}.", format.name());
    if !kept.custom_type?.starts_with(&prefix) {
        return None;
    }
    match (kept.data, kept.text) {
        (Some(raw), _) => Some(raw.get().as_bytes().to_vec()),
        (None, Some(text)) => Some(text.into_bytes()),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn translate(format: Format, lines: &[&str]) -> (Vec<Translated>, Survey) {
        let mut t = Translator::new(format);
        let mut survey = Survey::new(format);
        let mut out = Vec::new();
        for line in lines {
            let one = t.line(line.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            survey.add(&one);
            out.push(one);
        }
        (out, survey)
    }

    #[test]
    fn claude_lines_link_by_uuid_and_keep_their_bytes() {
        let lines = [
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","cwd":"/w","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[]}}"#,
            r#"{"type":"custom-title","customTitle":"T","sessionId":"s"}"#,
            r#"{"type":"user","uuid":"u2","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:02.000Z"}"#,
            "{\"type\":\"system\",\"uuid\":\"b\",\"parentUuid\":null,\"logicalParentUuid\":\"a1\"}\r",
            r#"{"type":"user","uuid":"u1","parentUuid":"b","isSidechain":true}"#,
        ];
        let (out, survey) = translate(Format::ClaudeCode, &lines);
        let ids: Vec<_> = out.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["u1", "a1", "L3", "u2", "b", "L6"]);
        let parents: Vec<_> = out.iter().map(|t| t.parent.as_deref()).collect();
        assert_eq!(
            parents,
            [
                None,
                Some("u1"),
                Some("a1"),
                Some("u1"),
                Some("a1"),
                Some("b")
            ]
        );
        // The rewind (u2 under u1) leaves a1 unreferenced but older; u2 is the leaf.
        assert_eq!(survey.leaf().as_deref(), Some("u2"));
        assert_eq!(survey.session_id.as_deref(), Some("s"));
        assert_eq!(survey.cwd.as_deref(), Some("/w"));
        for (t, line) in out.iter().zip(lines) {
            let entry = String::from_utf8(t.line.clone()).unwrap_or_default();
            let parsed: serde_json::Value = serde_json::from_str(&entry).unwrap_or_default();
            assert_eq!(parsed["type"], "custom");
            assert_eq!(
                original_line(Format::ClaudeCode, &entry).as_deref(),
                Some(line.as_bytes())
            );
            assert_eq!(original_line(Format::Codex, &entry), None);
        }
        assert!(out[2]
            .line
            .starts_with(b"{\"type\":\"custom\",\"customType\":\"claude-code.custom-title\""));
    }

    #[test]
    fn codex_lines_form_a_chain() {
        let lines = [
            r#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"session_meta","payload":{"id":"abc","cwd":"/repo"}}"#,
            r#"{"timestamp":"2026-01-01T00:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
            r#"{"timestamp":"2026-01-01T00:00:02.000Z","type":"event_msg","payload":{"type":"token_count"}}"#,
        ];
        assert_eq!(detect(lines[0].as_bytes()), Some(Format::Codex));
        let (out, survey) = translate(Format::Codex, &lines);
        let parents: Vec<_> = out.iter().map(|t| t.parent.as_deref()).collect();
        assert_eq!(parents, [None, Some("L1"), Some("L2")]);
        assert_eq!(survey.session_id.as_deref(), Some("abc"));
        assert_eq!(survey.cwd.as_deref(), Some("/repo"));
        assert_eq!(survey.leaf().as_deref(), Some("L3"));
    }

    #[test]
    fn formats_are_told_apart_and_bad_lines_are_refused() {
        assert_eq!(detect(br#"{"type":"session","version":3,"id":"x"}"#), None);
        assert_eq!(
            detect(br#"{"type":"user","uuid":"u","sessionId":"s"}"#),
            Some(Format::ClaudeCode)
        );
        assert_eq!(
            detect(br#"{"type":"summary","summary":"s","leafUuid":"u"}"#),
            Some(Format::ClaudeCode)
        );
        assert_eq!(
            detect(br#"{"id":"x","timestamp":"t","instructions":null}"#),
            Some(Format::Codex)
        );
        assert_eq!(detect(b"not json"), None);
        let mut t = Translator::new(Format::ClaudeCode);
        assert!(t.line(br#"{"type":"user"}"#).is_ok());
        let cut = t.line(br#"{"type":"user","uuid":"#);
        let Err(cut) = cut else {
            panic!("a cut line was taken: {cut:?}");
        };
        assert_eq!((cut.line, cut.byte_offset), (2, 16));
        assert!(
            cut.reason.contains("not a claude-code line"),
            "{}",
            cut.reason
        );
        assert!(t.line(b"[1]").is_err());
        assert!(t.line(b"").is_err());
    }

    #[test]
    fn the_header_names_the_format_and_the_final_newline() {
        let mut survey = Survey::new(Format::ClaudeCode);
        survey.final_newline = false;
        let header = String::from_utf8(survey.header("s1", "/home", "a.jsonl")).unwrap_or_default();
        assert_eq!(header_format(&header), Some((Format::ClaudeCode, false)));
        let parsed: serde_json::Value = serde_json::from_str(&header).unwrap_or_default();
        assert_eq!(parsed["cwd"], "/home");
        assert_eq!(
            header_format(r#"{"type":"session","version":3,"id":"x"}"#),
            None
        );
        assert_eq!(survey.leaf_line(), None);
    }
}
