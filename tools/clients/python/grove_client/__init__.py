"""The client of grove: `GroveClient` (synchronous) and `AsyncGroveClient` (asyncio) for every
route of docs/api.md, over a unix socket or TCP with a token to `grove serve`, or on a store
opened in this process (`open(path)`, `aio.open(path)`: the extension module `_native`), and
`GroveError`."""

from .aio import AsyncGroveClient
from .client import GroveClient, JsonObject, open
from .errors import GroveError
from .results import (
    PinState,
    Redaction,
    RetentionItem,
    RetentionPlan,
    RetentionPolicy,
    RetentionRule,
    RetentionRun,
    SearchHit,
    SearchResults,
    StoreOperation,
)

__all__ = [
    "AsyncGroveClient",
    "GroveClient",
    "GroveError",
    "JsonObject",
    "PinState",
    "Redaction",
    "RetentionItem",
    "RetentionPlan",
    "RetentionPolicy",
    "RetentionRule",
    "RetentionRun",
    "SearchHit",
    "SearchResults",
    "StoreOperation",
    "open",
]
