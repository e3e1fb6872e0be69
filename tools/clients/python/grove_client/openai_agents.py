"""The OpenAI Agents SDK's session memory on grove: `GroveSession` implements the SDK's `Session`
protocol (`get_items`, `add_items`, `pop_item`, `clear_session`) on one grove session, and keeps
named branches that persist, which the SDK's own `AdvancedSQLiteSession` keeps only as rows of
its own tables (docs/openai-agents.md is the mapping).

This module owns that mapping and may call only grove, through `AsyncGroveClient`. It does not
import the SDK: the protocol is structural, so `Runner.run(agent, input, session=GroveSession(...))`
takes it as it is.

The mapping, in short:
- An SDK session is the grove session `oa-` + the hex of the SDK's session id (any text; `oa.` +
  its SHA-256 when that would be too long).
- An item is a `custom` entry (`customType` `openai.agents.item`, the item as `data`), a child
  of the item before it; `add_items` appends a batch as one chain, atomically.
- The history is the items on the active path, root first: `pop_item` and `clear_session` move
  the leaf back (to the popped item's parent, to the root position) and never delete, so a
  popped or cleared item stays in the tree as a branch of its own, as grove keeps every edit.
- A branch is a name for a tip. Switching (or making one) writes one leaf record that moves the
  leaf to the branch's tip and names the branch it leaves and its tip then
  (`{"openaiAgents": {"branch", "left": {"branch", "tip"}}}`), so the branches, their tips and
  the current one are read back from the session's leaf history alone.

A `GroveSession` serializes its own writes (an `asyncio.Lock`); like the SDK's SQLite sessions, it
expects one writer per session at a time."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from .aio import AsyncGroveClient
from .errors import GroveError

#: The `customType` of an item entry.
ITEM = "openai.agents.item"
#: The field of a leaf record this module writes.
FIELD = "openaiAgents"
#: The branch a session starts on.
MAIN = "main"

JsonObject = dict[str, Any]


def session_of(sdk_session_id: str) -> str:
    """The grove session of an SDK session id: `oa-` and the id's UTF-8 bytes in hex, or, when
    that would be over grove's 256 bytes, `oa.` and the id's SHA-256 (as the TypeScript client)."""
    hex_id = f"oa-{sdk_session_id.encode().hex()}"
    if len(hex_id) <= 256:
        return hex_id
    return f"oa.{hashlib.sha256(sdk_session_id.encode()).hexdigest()}"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _is_item(entry: JsonObject) -> bool:
    return entry.get("type") == "custom" and entry.get("customType") == ITEM


def _is_user_message(item: Any) -> bool:
    """A user's message, as the SDK's `AdvancedSQLiteSession` counts turns."""
    return isinstance(item, dict) and item.get("role") == "user"


def _text_of(item: Any) -> str:
    """The text of a message item's content (a string, or the `text` of its parts)."""
    content = item.get("content") if isinstance(item, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


@dataclass
class Branches:
    """The branches of a session as its leaf history tells them: the current one and the tips
    of the others (the current branch's tip is the leaf)."""

    current: str = MAIN
    tips: dict[str, Optional[str]] = field(default_factory=dict)


class GroveSession:
    """The Agents SDK's `Session` on a grove session, with branches that persist.

    `client` is an `AsyncGroveClient`, or the URL to make one of (`unix:PATH`, `http://HOST:PORT`
    with `token`, or `in-process:DIR` for a store opened in this process); a client made here is
    closed by `close()`. `session_settings` is the SDK's `SessionSettings` (its `limit` bounds
    `get_items` when no limit is given). The grove session is made on the first write."""

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        client: Union[AsyncGroveClient, str, None] = None,
        *,
        token: Optional[str] = None,
        cwd: Optional[str] = None,
        session_settings: Any = None,
    ) -> None:
        self.session_id = session_id
        self.grove_session_id = session_of(session_id)
        self._owned = not isinstance(client, AsyncGroveClient)
        self.client = client if isinstance(client, AsyncGroveClient) else AsyncGroveClient(client, token=token, name="openai-agents")
        self._cwd = cwd
        self.session_settings = session_settings
        self._lock = asyncio.Lock()
        self._exists = False

    async def close(self) -> None:
        """Closes the client, when this session made it."""
        if self._owned:
            await self.client.close()

    # The SDK's protocol

    async def get_items(self, limit: Optional[int] = None) -> list[Any]:
        """The items of the history (the active path), root first; with `limit`, the latest
        `limit` of them (`limit` defaults to `session_settings.limit`)."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        items = [entry["data"] for entry in await self._path(None) if _is_item(entry)]
        if limit is None:
            return items
        if limit <= 0:
            return []
        return items[-limit:]

    async def add_items(self, items: Sequence[Any]) -> None:
        """Appends the items after the last one, as one chain, atomically."""
        if not items:
            return
        entries = [{"type": "custom", "customType": ITEM, "data": item} for item in items]
        async with self._lock:
            await self._ensure()
            await self.client.append_many(self.grove_session_id, entries)

    async def pop_item(self) -> Any:
        """Takes the latest item off the history and returns it (None when there is none). The
        leaf moves to its parent; the item stays in the tree, off the active path."""
        async with self._lock:
            path = await self._path(None)
            last = next((i for i in range(len(path) - 1, -1, -1) if _is_item(path[i])), None)
            if last is None:
                return None
            entry = path[last]
            await self.client.set_leaf(self.grove_session_id, entry.get("parentId"))
            return entry["data"]

    async def clear_session(self) -> None:
        """Empties the history: the session starts again at the root position on the branch
        `main`, and forgets the other branches' names. Nothing is deleted: the items stay in the
        tree and the leaf history says when it was cleared."""
        async with self._lock:
            if not await self._present():
                return
            await self._move(None, {"branch": MAIN, "cleared": True})

    # Branches

    async def branches(self) -> Branches:
        """The current branch and the other branches' tips, from the session's leaf history."""
        state = Branches()
        if not await self._present():
            return state
        async for record in self.client.log(self.grove_session_id, type="leaf"):
            mark = record.get(FIELD)
            if not isinstance(mark, dict) or not isinstance(mark.get("branch"), str):
                continue
            if mark.get("cleared"):
                state.tips.clear()
            left = mark.get("left")
            if isinstance(left, dict) and isinstance(left.get("branch"), str):
                state.tips[left["branch"]] = left.get("tip")
            state.current = mark["branch"]
            state.tips.pop(state.current, None)
        return state

    async def current_branch_id(self) -> str:
        """The name of the branch the history is on."""
        return (await self.branches()).current

    async def list_branches(self) -> list[JsonObject]:
        """Every branch: `{"branch_id", "tip", "is_current", "message_count", "user_turns"}`,
        the current one first, then by name."""
        state = await self.branches()
        leaf = await self.client.leaf(self.grove_session_id) if await self._present() else None
        tips: list[tuple[str, Optional[str], bool]] = [(state.current, leaf, True)]
        tips += [(name, tip, False) for name, tip in sorted(state.tips.items())]
        listed = []
        for name, tip, current in tips:
            items = [entry["data"] for entry in await self._path(tip) if _is_item(entry)] if tip is not None else []
            listed.append({
                "branch_id": name,
                "tip": tip,
                "is_current": current,
                "message_count": len(items),
                "user_turns": sum(1 for item in items if _is_user_message(item)),
            })
        return listed

    async def create_branch_from_turn(self, turn_number: int, branch_name: Optional[str] = None) -> str:
        """Makes a branch holding the history before the `turn_number`-th user message (from 1)
        of the current branch, and switches to it; returns its name (default
        `branch_from_turn_N_TIME`). The user message and what followed stay on the branch left."""
        async with self._lock:
            path = await self._path(None)
            turn = 0
            for entry in path:
                if _is_item(entry) and _is_user_message(entry["data"]):
                    turn += 1
                    if turn == turn_number:
                        return await self._branch_at(entry.get("parentId"), branch_name or f"branch_from_turn_{turn_number}_{int(time.time())}")
            raise ValueError(f"session {self.session_id}: there is no user turn {turn_number} on the current branch ({turn} turns)")

    async def create_branch_from_content(self, search_term: str, branch_name: Optional[str] = None) -> str:
        """`create_branch_from_turn` at the first user message of the current branch whose text
        contains `search_term`."""
        turn = 0
        for item in await self.get_items():
            if _is_user_message(item):
                turn += 1
                if search_term in _text_of(item):
                    return await self.create_branch_from_turn(turn, branch_name)
        raise ValueError(f"session {self.session_id}: no user message contains {search_term!r}")

    async def switch_to_branch(self, branch_id: str) -> None:
        """Makes `branch_id` the current branch: the history is its items again."""
        async with self._lock:
            state = await self.branches()
            if branch_id == state.current:
                return
            if branch_id not in state.tips:
                raise ValueError(f"session {self.session_id}: no branch {branch_id!r} (branches: {', '.join([state.current, *sorted(state.tips)])})")
            await self._move(state.tips[branch_id], {"branch": branch_id, "left": await self._leaving(state)})

    # Internals

    async def _branch_at(self, tip: Optional[str], name: str) -> str:
        state = await self.branches()
        if name == state.current or name in state.tips:
            raise ValueError(f"session {self.session_id}: a branch {name!r} exists already")
        await self._move(tip, {"branch": name, "left": await self._leaving(state)})
        return name

    async def _leaving(self, state: Branches) -> JsonObject:
        return {"branch": state.current, "tip": await self.client.leaf(self.grove_session_id)}

    async def _move(self, target: Optional[str], mark: JsonObject) -> None:
        """Moves the leaf to `target` with a leaf record carrying `mark`."""
        await self._ensure()
        sid = self.grove_session_id
        record = {
            "type": "leaf",
            "id": secrets.token_hex(8),
            "parentId": await self.client.leaf(sid),
            "timestamp": _now(),
            "targetId": target,
            FIELD: mark,
        }
        await self.client.append_exact(sid, record)

    async def _path(self, start: Optional[str]) -> list[JsonObject]:
        """The entries from the root to `start` (default the leaf); none for a session not made yet."""
        try:
            return [entry async for entry in self.client.path(self.grove_session_id, start)]
        except GroveError as error:
            if error.code == "not_found" and not self._exists and start is None:
                return []
            raise

    async def _present(self) -> bool:
        if self._exists:
            return True
        try:
            await self.client.get_session(self.grove_session_id)
        except GroveError as error:
            if error.code == "not_found":
                return False
            raise
        self._exists = True
        return True

    async def _ensure(self) -> None:
        """Makes the grove session when it is not there yet (a race with another maker is fine)."""
        if await self._present():
            return
        try:
            await self.client.create_session(
                id=self.grove_session_id,
                cwd=self._cwd,
                metadata={"openaiAgents": {"sessionId": self.session_id}},
            )
        except GroveError as error:
            if error.code != "invalid_argument" or not await self._present():
                raise
        self._exists = True
