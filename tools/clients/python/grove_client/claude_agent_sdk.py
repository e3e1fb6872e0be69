"""The Claude Agent SDK's session storage on grove: `GroveSessionStore` implements the SDK's
`SessionStore` protocol (`append`, `load`, and the optional `list_sessions`,
`list_session_summaries`, `delete`, `list_subkeys`) with one grove session per transcript key
(docs/claude-agent-sdk.md is the mapping).

This module owns that mapping and may call only grove, through `AsyncGroveClient`, and the SDK's
own `fold_session_summary` (the summary sidecar's contents are the SDK's, never interpreted
here). The SDK is needed only for summaries (`pip install 'grove-client[claude-agent-sdk]'`).

The mapping, in short:
- A key (`project_key`, `session_id`, optional `subpath`) is the grove session
  `PREFIX-P-S[-U]`, each part the hex of its UTF-8 bytes (or, when that would make the id too
  long, `h` and the start of its SHA-256); the key itself is in the session's header metadata.
- An appended entry is a `custom` entry (`customType` `claude.entry`, the entry as `data`), a
  child of the one appended before it; its grove id is the entry's `uuid` when it has one, so
  `grove show SESSION UUID` finds it and a `uuid` appended again is ignored, as the SDK asks. An
  `append` is one atomic batch.
- A main transcript's summary (the SDK's `fold_session_summary` of everything appended) is a
  `custom` entry (`claude.summary`) closing each append's batch; its grove timestamp is the
  summary's `mtime` and the session's, as the SDK requires them on one clock."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from .aio import AsyncGroveClient
from .errors import GroveError

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionListSubkeysKey, SessionStoreEntry, SessionStoreListEntry, SessionSummaryEntry

#: The `customType` of an appended entry.
ENTRY = "claude.entry"
#: The `customType` of a main transcript's summary.
SUMMARY = "claude.summary"
#: The header metadata field naming the key.
FIELD = "claudeAgentSdk"
#: The longest hex part of a session id; a longer one is hashed.
LONGEST_PART = 120

JsonObject = dict[str, Any]


def _part(text: str) -> str:
    """A part of a session id: the hex of `text`, or `h` and 40 hex digits of its SHA-256."""
    data = text.encode()
    if len(data) * 2 <= LONGEST_PART:
        return data.hex()
    return "h" + hashlib.sha256(data).hexdigest()[:40]


def session_of(key: Any, prefix: str = "cc") -> str:
    """The grove session of a transcript key."""
    sid = f"{prefix}-{_part(key['project_key'])}-{_part(key['session_id'])}"
    subpath = key.get("subpath")
    return sid if subpath is None else f"{sid}-{_part(subpath)}"


def _summary(session_id: str, entry: JsonObject) -> SessionSummaryEntry:
    """The SDK's summary of a stored summary entry."""
    data = entry.get("data") or {}
    return cast("SessionSummaryEntry", {"session_id": session_id, "mtime": _ms(entry["timestamp"]), "data": data.get("data", {})})


def _ms(timestamp: str) -> int:
    """Epoch milliseconds of a grove timestamp (ISO 8601, UTC)."""
    return int(datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


def _uuid(entry: Any) -> Optional[str]:
    """An entry's `uuid`, when it has a non-empty one."""
    uuid = entry.get("uuid") if isinstance(entry, dict) else None
    return uuid if isinstance(uuid, str) and uuid else None


def _unique(entries: Sequence[Any]) -> list[Any]:
    """`entries` without those whose `uuid` came earlier among them."""
    seen: set[str] = set()
    kept = []
    for entry in entries:
        uuid = _uuid(entry)
        if uuid is not None:
            if uuid in seen:
                continue
            seen.add(uuid)
        kept.append(entry)
    return kept


class GroveSessionStore:
    """The Claude Agent SDK's `SessionStore` on grove.

    `client` is an `AsyncGroveClient`, or the URL to make one of (`unix:PATH`, `http://HOST:PORT`
    with `token`, or `in-process:DIR`); a client made here is closed by `close()`. `prefix`
    (letters and digits, default `cc`) begins every session id this store makes, so that
    several stores can share one grove store. Pass it to the SDK as
    `ClaudeAgentOptions(session_store=GroveSessionStore(...))`."""

    def __init__(self, client: Union[AsyncGroveClient, str, None] = None, *, token: Optional[str] = None, prefix: str = "cc") -> None:
        if not prefix.isascii() or not prefix.isalnum():
            raise ValueError(f"prefix {prefix!r}: letters and digits only")
        self.prefix = prefix
        self._owned = not isinstance(client, AsyncGroveClient)
        self.client = client if isinstance(client, AsyncGroveClient) else AsyncGroveClient(client, token=token, name="claude-agent-sdk")
        # A lock per session being appended to, with its number of users: it goes with its last.
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    async def close(self) -> None:
        """Closes the client, when this store made it."""
        if self._owned:
            await self.client.close()

    # The required methods

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Appends `entries` after those appended before, in one atomic batch. An entry whose
        `uuid` is stored already (a retried batch) is left out, as the SDK's contract asks."""
        if not entries:
            return
        sid = session_of(key, self.prefix)
        lock, users = self._locks.get(sid, (asyncio.Lock(), 0))
        self._locks[sid] = (lock, users + 1)
        try:
            async with lock:
                await self._append(sid, key, entries)
        finally:
            lock, users = self._locks[sid]
            if users == 1:
                del self._locks[sid]
            else:
                self._locks[sid] = (lock, users - 1)

    async def _append(self, sid: str, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """One append, its session's lock held."""
        if not await self._exists(sid):
            await self._create(sid, key)
        news = _unique(entries)
        try:
            await self.client.append_many(sid, await self._batch(sid, key, news))
        except GroveError as error:
            if error.code != "invalid_argument":
                raise
            # Some uuid is stored already (a batch the SDK sent again): append the rest.
            news = [entry for entry in news if not await self._stored(sid, _uuid(entry))]
            if news:
                await self.client.append_many(sid, await self._batch(sid, key, news))

    async def load(self, key: SessionKey) -> Optional[list[SessionStoreEntry]]:
        """Every entry appended under `key`, in order; None for a key never appended to."""
        sid = session_of(key, self.prefix)
        try:
            return [cast("SessionStoreEntry", entry["data"]) async for entry in self.client.entries(sid) if entry.get("customType") == ENTRY]
        except GroveError as error:
            if error.code == "not_found":
                return None
            raise

    # The optional methods

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """The main transcripts of a project: `{"session_id", "mtime"}` (the last append's time,
        epoch ms)."""
        listed: list[SessionStoreListEntry] = []
        for sid in await self._ids(f"{self.prefix}-{_part(project_key)}-"):
            if sid.count("-") != 2:
                continue
            found = await self._last(sid)
            if found is not None:
                meta, last = found
                listed.append({"session_id": meta["sessionId"], "mtime": _ms(last["timestamp"])})
        return listed

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The summaries of a project's main transcripts, as the last append left them, with
        their `mtime`."""
        summaries: list[SessionSummaryEntry] = []
        for sid in await self._ids(f"{self.prefix}-{_part(project_key)}-"):
            if sid.count("-") != 2:
                continue
            found = await self._last(sid)
            if found is not None and found[1].get("customType") == SUMMARY:
                summaries.append(_summary(found[0]["sessionId"], found[1]))
        return summaries

    async def delete(self, key: SessionKey) -> None:
        """Deletes a transcript; a main transcript's key deletes its subagents' too."""
        sid = session_of(key, self.prefix)
        doomed = [sid]
        if key.get("subpath") is None:
            doomed += await self._ids(f"{sid}-")
        for one in doomed:
            try:
                await self.client.delete_session(one)
            except GroveError as error:
                if error.code != "not_found":
                    raise

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths stored under a main transcript's key."""
        subkeys = []
        for sid in await self._ids(f"{session_of(key, self.prefix)}-"):
            try:
                meta = (await self.client.get_session(sid)).get("metadata") or {}
            except GroveError as error:
                if error.code == "not_found":
                    continue
                raise
            subpath = meta.get(FIELD, {}).get("subpath")
            if isinstance(subpath, str):
                subkeys.append(subpath)
        return subkeys

    # Internals

    async def _batch(self, sid: str, key: Any, entries: list[Any]) -> list[JsonObject]:
        """The grove entries of an append: the entries, then (for a main transcript) the summary."""
        batch: list[JsonObject] = []
        for entry in entries:
            grove: JsonObject = {"type": "custom", "customType": ENTRY, "data": entry}
            uuid = _uuid(entry)
            if uuid is not None:
                grove["id"] = uuid
            batch.append(grove)
        if key.get("subpath") is None:
            batch.append({"type": "custom", "customType": SUMMARY, "data": await self._folded(sid, key, entries)})
        return batch

    async def _stored(self, sid: str, eid: Optional[str]) -> bool:
        if eid is None:
            return False
        try:
            await self.client.get_entry(sid, eid)
        except GroveError as error:
            if error.code == "not_found":
                return False
            raise
        return True

    async def _folded(self, sid: str, key: Any, entries: list[Any]) -> JsonObject:
        """What the summary entry after `entries` holds: the `data` of the SDK's fold of the last
        summary (whose `session_id` is the key's and `mtime` the stored summary's timestamp)."""
        from claude_agent_sdk import fold_session_summary

        found = await self._last(sid)
        prev = None
        if found is not None and found[1].get("customType") == SUMMARY:
            prev = _summary(key["session_id"], found[1])
        return {"data": fold_session_summary(prev, key, entries)["data"]}

    async def _last(self, sid: str) -> Optional[tuple[JsonObject, JsonObject]]:
        """The session's key (its header's) and last entry; None when it is gone or empty."""
        try:
            details = await self.client.get_session(sid)
            leaf = details.get("leaf")
            if leaf is None:
                return None
            return (details.get("metadata") or {}).get(FIELD, {}), await self.client.get_entry(sid, leaf)
        except GroveError as error:
            if error.code == "not_found":
                return None
            raise

    async def _ids(self, prefix: str) -> list[str]:
        """The ids of the sessions whose id begins with `prefix`, in order."""
        found: list[str] = []
        after: Optional[str] = prefix
        while after is not None:
            page = await self.client.list_sessions(after=after, limit=1000)
            for summary in page["sessions"]:
                if not summary["id"].startswith(prefix):
                    return found
                found.append(summary["id"])
            after = page.get("next")
        return found

    async def _exists(self, sid: str) -> bool:
        try:
            await self.client.get_session(sid)
        except GroveError as error:
            if error.code == "not_found":
                return False
            raise
        return True

    async def _create(self, sid: str, key: Any) -> None:
        meta = {"projectKey": key["project_key"], "sessionId": key["session_id"]}
        if key.get("subpath") is not None:
            meta["subpath"] = key["subpath"]
        try:
            await self.client.create_session(id=sid, metadata={FIELD: meta})
        except GroveError as error:
            # Made meanwhile by another writer: fine.
            if error.code != "invalid_argument" or not await self._exists(sid):
                raise
