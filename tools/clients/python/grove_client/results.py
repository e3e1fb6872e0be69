"""The typed answers of the client's routes that have one (`search`, `redact`, `redactions`,
`retention_plan`, `retain`, `retention_log`, `set_pinned`) and the retention policy they take;
the others are JSON objects as the server answers them (`JsonObject`)."""

from __future__ import annotations

from typing import Any, Literal, Optional, TypedDict, Union


class SearchHit(TypedDict):
    """One entry whose text matched (`GET /v1/search`, as `grove search --json` prints it)."""

    session: str
    #: The entry's id.
    entry: str
    #: Its place in the session's log (0 for the first record).
    seq: int
    #: The entry's `type`.
    type: str
    #: A message's role, else None.
    role: Optional[str]
    #: The entry's `timestamp`, or None when it has none.
    timestamp: Optional[str]
    #: BM25: higher is better.
    score: float
    #: Whether the entry is on its session's active path.
    active: bool
    #: Up to 160 characters of the entry's text around the best match.
    snippet: str
    #: `snippet` as HTML: `<mark>` around each match, the rest escaped.
    marked: str
    #: The matches' `[start, end)` byte offsets in `snippet`'s UTF-8.
    highlights: list[list[int]]


class SearchResults(TypedDict):
    """What `search` found, best first."""

    hits: list[SearchHit]
    #: Every match (the hits are the first `limit` of them).
    total: int
    #: Entries the index took in before this search.
    indexed: int


class Redaction(TypedDict):
    """A redaction (`POST .../redact`, `GET .../redactions`), as `grove redact --json` writes it:
    the values at `paths` of entry `entryId` read as `"[redacted]"` from then on."""

    #: The redacted entry.
    entryId: str
    #: The JSON pointers redacted (the entry's whole content: its content's pointer).
    paths: list[str]
    #: Why, as the redactor gave it.
    reason: str
    #: blake3 (hex) of the removed values.
    removed: str
    #: blake3 (hex) of the entry's line before this redaction.
    before: str
    #: blake3 (hex) of its line after.
    after: str
    #: The id of the leaf record that records it (it leaves the leaf where it is).
    recordId: str
    #: Who made it (the operation's actor).
    actor: Optional[str]
    #: When, in ms since the Unix epoch.
    timeMs: Optional[int]


class RetentionRule(TypedDict, total=False):
    """One rule of a `RetentionPolicy`: it selects the sessions whose id starts with `prefix`
    (every session without one) for which every condition it gives holds. At least one of
    `olderThan`, `largerThan` and `keepNewest` is needed (`invalid_argument` otherwise)."""

    #: Only sessions whose id starts with this.
    prefix: str
    #: Last activity (the timestamp of the session's last record, else its creation) older than
    #: an age (`30d`, `12h`) or before a time (`2026-01-01`, RFC 3339).
    olderThan: str
    #: The session's pi JSONL export larger than this: bytes, or `"10KB"`, `"5MB"`, `"1GB"`
    #: (powers of 1024).
    largerThan: Union[int, str]
    #: Beyond the newest N of the rule's sessions, by last activity.
    keepNewest: int
    #: Spare the sessions that have a label (default True).
    spareLabelled: bool


class RetentionPolicy(TypedDict):
    """A retention policy (`POST /v1/retain`): a session any rule selects goes, unless it is
    pinned (`set_pinned`) or has a label (for rules that spare labelled sessions, the default).
    A policy sent to the server archives nothing (an `archive` member is `invalid_argument`):
    archiving is the server's own policy (`grove serve --retain FILE`) or `grove retain --apply
    --archive DIR`."""

    rules: list[RetentionRule]


class RetentionItem(TypedDict):
    """One session a retention plan names."""

    session: str
    #: Its pi JSONL export's bytes.
    bytes: int
    entries: int
    #: Its last activity (RFC 3339), or None when unknown.
    lastActivity: Optional[str]
    #: Why it was selected: per rule that selected it, `rule N: ` and the conditions it met.
    reasons: list[str]
    #: Why it stays although selected: `pinned` or `labelled`; None when it goes.
    spared: Optional[Literal["pinned", "labelled"]]


class RetentionPlan(TypedDict):
    """What a retention policy removes now (`retention_plan`); nothing is changed."""

    #: The sessions that go.
    remove: list[RetentionItem]
    #: The sessions selected but spared (pinned or labelled).
    spared: list[RetentionItem]
    #: Bytes of the sessions that go (their exports).
    bytes: int


class RetentionRemoved(TypedDict):
    """A session a retention run removed."""

    session: str
    #: The archive written for it (None: none).
    archive: Optional[str]


class RetentionFailed(TypedDict):
    """A session a retention run could not remove (it stays), and why."""

    session: str
    error: str


class RetentionRun(RetentionPlan):
    """What an applied retention run did (`retain`): its plan, and what became of each session."""

    #: Its number in the store's operation log (`retention_log`).
    op: int
    removed: list[RetentionRemoved]
    failed: list[RetentionFailed]


class StoreOperation(TypedDict):
    """One operation of the store's operation log (`GET /v1/retain/log`): a retention run,
    recorded `started` (with its plan) before anything is deleted and `done` once it finished."""

    #: Its number, from 0.
    op: int
    #: `retain`.
    kind: str
    #: When it began (RFC 3339).
    time: str
    #: Who made it: the client's name (`server` without one), or `retention` for the server's
    #: schedule.
    actor: str
    #: `started` (still running, or interrupted by a crash) or `done`.
    status: str
    #: What it did: `plan` (`remove`, `spared`, `bytes`, `nowMs`; each item with
    #: `lastActivityMs`), `archive` (`{dir, format}` or None) and, once done, `removed` and
    #: `failed`.
    detail: dict[str, Any]


class PinState(TypedDict):
    """Whether a session is pinned (`PUT .../pin`): retention spares a pinned session."""

    session: str
    pinned: bool
