"""The client of `grove serve`: `GroveClient` (synchronous) and `AsyncGroveClient` (asyncio)
for every route of docs/api.md, over a unix socket or TCP with a token, and `GroveError`."""

from .aio import AsyncGroveClient
from .client import GroveClient, JsonObject
from .errors import GroveError

__all__ = ["AsyncGroveClient", "GroveClient", "GroveError", "JsonObject"]
