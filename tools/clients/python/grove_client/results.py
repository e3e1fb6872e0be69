"""The typed answers of the client's routes that have one (`search`, `redact`, `redactions`);
the others are JSON objects as the server answers them (`JsonObject`)."""

from __future__ import annotations

from typing import Optional, TypedDict


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
