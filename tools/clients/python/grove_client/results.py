"""The typed answers of the client's routes that have one (`search`); the others are JSON
objects as the server answers them (`JsonObject`)."""

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
