"""Writes grove_client/client.py and grove_client/aio.py from one list of methods, so the
synchronous and the asyncio client have the same methods with the same signatures.

Run `python generate.py` after changing METHODS; tests/test_generated.py checks the files
are what this writes."""

from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).parent

# (name, parameters after self, call expression, return type, kind, doc); kind: "json" (one
# value), "lines" (an iterator of values as they arrive).
METHODS: list[tuple[str, str, str, str, str, str]] = [
    ("health", "", "c.health()", "JsonObject", "json", "The server's health: `ok`, `backend`, `durability`, `version`, `poisoned`."),
    ("verify", "", "c.verify()", "JsonObject", "json", "grove's verification of the whole store."),
    ("gc", "rewrite: bool = False", "c.gc(rewrite)", "JsonObject", "json", "Removes the payloads no session references, and lists them (`grove gc`). With `rewrite`,\n        a server of a store in a directory then rewrites its files (no page keeps a redacted\n        byte), pausing every request meanwhile; `invalid_state` where it cannot."),
    ("retention_plan", "policy: RetentionPolicy", "c.retention_plan(policy)", "RetentionPlan", "json", "What `policy` removes now (`POST /v1/retain`): the sessions that go (`remove`) and those\n        selected but spared (`spared`: pinned or labelled), each with its export's bytes, entries,\n        last activity and the rules that selected it. Nothing is changed. A policy without rules,\n        a rule without a condition, an age or size that does not read or an `archive` is\n        `invalid_argument`."),
    ("retain", "policy: RetentionPolicy", "c.retain(policy)", "RetentionRun", "json", "Applies `policy` now: deletes the sessions its plan removes, recorded in the store's\n        operation log (`retention_log`) before anything is deleted. The run: the plan's fields,\n        its `op`, the sessions `removed` and those that `failed` (they stay). Refused as\n        `retention_plan` refuses, with nothing changed."),
    ("retention_log", "", "c.retention_log()", "list[StoreOperation]", "json", "The store's operations (retention runs, the server's scheduled ones too), oldest first."),
    ("list_sessions", "after: Optional[str] = None, limit: Optional[int] = None, order: Optional[str] = None, *, cwd: Optional[str] = None, name: Optional[str] = None, label: Optional[str] = None, created_after: Optional[str] = None, created_before: Optional[str] = None, updated_after: Optional[str] = None, updated_before: Optional[str] = None", "c.list_sessions(after, limit, order, cwd=cwd, name=name, label=label, created_after=created_after, created_before=created_before, updated_after=updated_after, updated_before=updated_before)", "JsonObject", "json", "One page of sessions in id order (`order=\"desc\"`: from the last, newest first): `sessions`\n        and `next` (pass it as `after`, with the same order and filters). The filters, all of those\n        given must hold: `cwd` (exactly), `name` (text the name contains, case-insensitive),\n        `label` (an entry carries exactly this label), `created_after`/`created_before` and\n        `updated_after`/`updated_before` (a time, `2026-12-01` or `2026-12-01T10:00:00Z`, or how\n        long ago, `7d`; after includes its bound, before excludes it; updated is the last\n        record's timestamp, else the creation). A time that does not read is `invalid_argument`."),
    ("create_session", "id: Optional[str] = None, cwd: Optional[str] = None, metadata: Optional[JsonObject] = None", "c.create_session({'id': id, 'cwd': cwd, 'metadata': metadata})", "JsonObject", "json", "Creates a session; its summary."),
    ("get_session", "sid: str", "c.get_session(sid)", "JsonObject", "json", "A session's details."),
    ("delete_session", "sid: str", "c.delete_session(sid)", "None", "json", "Deletes a session (its payloads stay until `gc`)."),
    ("import_session", "jsonl: Union[str, bytes]", "c.import_session(jsonl.encode() if isinstance(jsonl, str) else jsonl)", "JsonObject", "json", "Imports a pi session JSONL file; its header names the session."),
    ("export_session", "sid: str, flavor: Optional[str] = None", "c.export_session(sid, flavor)", "str", "json", "The session as a pi JSONL file."),
    ("fork_session", "sid: str, entry: Optional[str] = None, position: Optional[str] = None, mode: Optional[str] = None, id: Optional[str] = None, cwd: Optional[str] = None", "c.fork_session(sid, {'entry': entry, 'position': position, 'mode': mode, 'id': id, 'cwd': cwd})", "JsonObject", "json", "Forks a session into a new one; the new one's summary."),
    ("append", "sid: str, entry: JsonObject, id: Optional[str] = None, timestamp: Optional[str] = None", "c.append(sid, entry, id, timestamp)", "str", "json", "Appends a child of the leaf (an entry with a `type`, or a message with a `role`); its id."),
    ("append_exact", "sid: str, entry: JsonObject, *, keep_leaf: bool = False", "c.append_exact(sid, entry, keep_leaf)", "JsonObject", "json", "Appends the caller's exact entry (pi's `appendEntry`): `id` and `leaf`. `keep_leaf`:\n        the leaf stays where it is (one operation, atomically)."),
    ("append_if", "sid: str, expected_leaf: Optional[str], entry: JsonObject", "c.append_if(sid, expected_leaf, entry)", "JsonObject", "json", "Appends only if the leaf is still `expected_leaf`; a moved leaf is a result, not an error."),
    ("append_many", "sid: str, entries: Sequence[JsonObject]", "c.append_many(sid, entries)", "list[str]", "json", "Appends a chain of entries atomically; their ids."),
    ("append_batch", "items: Sequence[JsonObject]", "c.append_batch(items)", "list[JsonObject]", "json", "Appends to many sessions in one request (`{session, entry}` items); one result per item."),
    ("fresh_ids", "sid: str, count: int", "c.fresh_ids(sid, count)", "list[str]", "json", "`count` entry ids unused in the session now."),
    ("entries", "sid: str, after: Optional[str] = None, limit: Optional[int] = None", "c.entries(sid, after, limit)", "JsonObject", "lines", "The tree entries in log order."),
    ("log", "sid: str, after: Optional[str] = None, limit: Optional[int] = None, type: Optional[str] = None", "c.log(sid, after, limit, type)", "JsonObject", "lines", "Entries and leaf records in log order."),
    ("get_entry", "sid: str, eid: str, log: bool = False", "c.get_entry(sid, eid, log)", "JsonObject", "json", "One entry (with `log`, leaf records too)."),
    ("proof", "sid: str, eid: str", "c.proof(sid, eid)", "JsonObject", "json", "An entry with its digest and path digest, checked by the server (`grove show`)."),
    ("children", "sid: str, parent: Optional[str] = None", "c.children(sid, parent)", "JsonObject", "lines", "The children of `parent`, or the roots."),
    ("branch", "sid: str, start: Optional[str] = None, at: Optional[At] = None", "c.branch(sid, start, at)", "JsonObject", "lines", "The branch from `start` (default the leaf) to the root or compaction, root first; `at`: as it stood then."),
    ("path", "sid: str, start: Optional[str] = None, at: Optional[At] = None", "c.path(sid, start, at)", "JsonObject", "lines", "The full path from `start` (default the leaf) to the root, root first."),
    ("context", "sid: str, leaf: Optional[str] = None, preset: Optional[str] = None, at: Optional[At] = None", "c.context(sid, leaf, preset, at)", "JsonObject", "json", "What the model sees: `messages`, `model`, `thinkingLevel`, `activeToolNames`."),
    ("tree", "sid: str, at: Optional[At] = None", "c.tree(sid, at)", "JsonObject", "json", "The session's tree."),
    ("labels", "sid: str", "c.labels(sid)", "JsonObject", "json", "Every label by its target id."),
    ("label", "sid: str, eid: str", "c.label(sid, eid)", "Optional[str]", "json", "The label of an entry, or None."),
    ("set_label", "sid: str, target_id: str, label: Optional[str]", "c.set_label(sid, target_id, label)", "str", "json", "Appends a label entry (None clears); its id."),
    ("set_pinned", "sid: str, pinned: bool", "c.set_pinned(sid, pinned)", "PinState", "json", "Pins the session (retention spares it, whatever the policy) or unpins it; `not_found`\n        for an unknown session."),
    ("name", "sid: str", "c.name(sid)", "Optional[str]", "json", "The session's name, or None."),
    ("set_name", "sid: str, name: str", "c.set_name(sid, name)", "str", "json", "Appends a session_info entry; its id."),
    ("stats", "sid: str", "c.stats(sid)", "JsonObject", "json", "Counts of the session."),
    ("leaf", "sid: str", "c.leaf(sid)", "Optional[str]", "json", "The active leaf, or None (the root position)."),
    ("set_leaf", "sid: str, target: Optional[str], lease: Optional[str] = None", "c.set_leaf(sid, target, lease)", "JsonObject", "json", "Moves the leaf (None: the root position); `lease`: the holder's own move."),
    ("leaf_history", "sid: str", "c.leaf_history(sid)", "list[JsonObject]", "json", "Every leaf record, in order."),
    ("operations", "sid: str, limit: Optional[int] = None", "c.operations(sid, limit)", "list[JsonObject]", "json", "The session's operations, newest first."),
    ("undo", "sid: str, to_op: Optional[int] = None", "c.undo(sid, to_op)", "JsonObject", "json", "Puts the leaf back before the last operation (or `to_op`); the undo operation."),
    ("redact", "sid: str, entry_id: str, reason: str, path: Optional[str] = None", "c.redact(sid, entry_id, reason, path)", "Redaction", "json", "Redacts the value at `path` (a JSON pointer such as `/message/content/0/text`) of entry\n        `entry_id`, or without `path` its whole content: it reads as `\"[redacted]\"` from then on\n        in every read, its bytes gone from the log; recorded as an operation of kind `redact` (the\n        leaf stays). `reason` must not be empty; what the tree reads (`/id`, `/message/role`, ...)\n        and a value already redacted are `invalid_argument`, an unknown entry `not_found`."),
    ("redactions", "sid: str", "c.redactions(sid)", "list[Redaction]", "json", "The session's redactions, oldest first."),
    ("seal", "sid: str", "c.seal(sid)", "JsonObject", "json", "The session's seal: `digest`, `records`, `operations`."),
    ("check_seal", "sid: str, digest: str", "c.check_seal(sid, digest)", "JsonObject", "json", "Whether the session still extends the seal `digest`."),
    ("replay", "sid: str, from_op: Optional[int] = None, until_op: Optional[int] = None, follow: bool = False", "c.replay(sid, from_op, until_op, follow)", "JsonObject", "lines", "The history in order: `start`, then each `operation` and its `record`s with their context change; `follow` waits for new ones."),
    ("begin_turn", "sid: str, ttl_ms: Optional[int] = None", "c.begin_turn(sid, ttl_ms)", "JsonObject", "json", "Takes the session's turn lease: `lease`, `ttlMs`."),
    ("renew_turn", "sid: str, lease: str", "c.renew_turn(sid, lease)", "JsonObject", "json", "Renews a turn lease."),
    ("end_turn", "sid: str, lease: str", "c.end_turn(sid, lease)", "None", "json", "Ends a turn lease."),
    ("navigate", "sid: str, target: str, summarize: Optional[bool] = None, summary: Optional[str] = None, instructions: Optional[str] = None, replace_instructions: Optional[bool] = None, label: Optional[str] = None, preset: Optional[str] = None", "c.navigate(sid, target, {'summarize': summarize, 'summary': summary, 'instructions': instructions, 'replaceInstructions': replace_instructions, 'label': label, 'preset': preset})", "JsonObject", "json", "pi's navigation to `target`, with an optional branch summary."),
    ("view", "", "c.view()", "str", "json", "The HTML view's page (it holds no data)."),
    ("search", "query: str, session: Optional[str] = None, types: Optional[Sequence[str]] = None, since: Optional[str] = None, limit: Optional[int] = None", "c.search(query, session, types, since, limit)", "SearchResults", "json", "The entries of every session whose text matches `query`, best first (`GET /v1/search`):\n        every word must occur unless joined by `OR`, `\"a phrase\"` in order. `session`: one session's\n        entries; `types`: entry types or message roles; `since`: a time or a duration before now\n        (`7d`); `limit`: 1 to 1000 (default 20). Anything appended before the call is found."),
]

HEADER = '''"""{doc}

Generated by generate.py from its METHODS; do not edit by hand."""

from __future__ import annotations

{imports}
from typing import Any, Optional, Sequence, Union, cast

{transport}
#: A JSON object as the server answers it.
JsonObject = dict[str, Any]
'''

SYNC_IMPORTS = '''from . import _calls as c
from ._calls import At, Call
from ._http import Http
from .results import PinState, Redaction, RetentionPlan, RetentionPolicy, RetentionRun, SearchResults, StoreOperation
from ._native_transport import Embedded, held_by_url, open_or_serving
from ._transport import client_args, decode, error_of
'''

AIO_IMPORTS = '''from . import _calls as c
from ._aio_http import AsyncHttp
from ._calls import At, Call
from ._native_transport import Embedded, held_by_url, open_or_serving
from ._transport import LineSplitter, client_args, decode, error_of
from .results import PinState, Redaction, RetentionPlan, RetentionPolicy, RetentionRun, SearchResults, StoreOperation
'''


def method(name: str, params: str, call: str, ret: str, kind: str, doc: str, aio: bool) -> str:
    sig = f"self, {params}" if params else "self"
    if kind == "lines":
        it = "AsyncIterator" if aio else "Iterator"
        head = f"    {'async ' if aio else ''}def {name}({sig}) -> {it}[{ret}]:\n"
        body = f"        {'async ' if aio else ''}for value in self._lines({call}):\n            yield cast({ret}, value)\n"
        return head + f'        """{doc}"""\n' + body
    head = f"    {'async ' if aio else ''}def {name}({sig}) -> {ret}:\n"
    run = f"{'await ' if aio else ''}self._run({call})"
    body = f"        {run}\n" if ret == "None" else f"        return cast({ret}, {run})\n"
    return head + f'        """{doc}"""\n' + body


SYNC_CORE = '''

def open(path: str, *, name: Optional[str] = None, fallback: str = "server", **options: Any) -> GroveClient:
    """A client of the store at `path` opened in this process (made when missing; see
    `grove_client._native_transport` for a store another process holds). `options`:
    `durability` ("sync", the default, "group" or "none"), `backend` ("sled" or "redb"), `cache_bytes`,
    `payload_threshold`, `lock_wait_seconds`, `read_only`."""
    held = open_or_serving(path, options, name, fallback)
    if isinstance(held, str):
        return GroveClient(held, name=name)
    return GroveClient._over(held)


class GroveClient:
    """A synchronous client of `grove serve` (docs/api.md): `url` is `unix:/path/to/socket` or
    `http://host:port` (default `GROVE_URL`), or `in-process:/path/to/store` for the store opened
    in this process (as `open(path)`); `token` the bearer token of a TCP listener (default
    `GROVE_TOKEN`), `name` the `Grove-Client` the server stamps operations with. `timeout` (s)
    bounds each wait for the server; None, the default, waits as long as it takes (a followed
    replay waits for writes)."""

    _native: Optional[Embedded] = None

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, name: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self._native = held_by_url(url, name)
        if self._native is not None:
            self._where: str = self._native.where
            return
        server = client_args(url, token, name, timeout)
        self._where = server.where
        self._http = Http(server)

    @classmethod
    def _over(cls, native: Embedded) -> GroveClient:
        client = cls.__new__(cls)
        client._native = native
        client._where = native.where
        return client

    @property
    def where(self) -> str:
        """Where calls go: `unix:PATH`, `http://HOST:PORT`, or `in-process:DIR`."""
        return self._where

    def close(self) -> None:
        """Closes the connections; a client of a store in this process lets go of it (the last
        one flushes and closes it)."""
        if self._native is not None:
            self._native.close()
            return
        self._http.close()

    def __enter__(self) -> GroveClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, call: Call) -> Any:
        if self._native is not None:
            return self._native.run(call)
        status, content = self._http.run(call)
        if status >= 400:
            raise error_of(call, status, content)
        return decode(call, content)

    def _lines(self, call: Call) -> Iterator[Any]:
        if self._native is not None:
            yield from self._native.lines(call)
            return
        yield from self._http.lines(call)

'''

AIO_CORE = '''

def open(path: str, *, name: Optional[str] = None, fallback: str = "server", **options: Any) -> AsyncGroveClient:
    """An asyncio client of the store at `path` opened in this process, as `grove_client.open`
    (its calls run on a worker thread, the extension releasing the GIL while it waits)."""
    held = open_or_serving(path, options, name, fallback)
    if isinstance(held, str):
        return AsyncGroveClient(held, name=name)
    return AsyncGroveClient._over(held)


class AsyncGroveClient:
    """The asyncio client of `grove serve`: the methods of `GroveClient`, awaited (streams are
    async iterators). `url`, `token`, `name` and `timeout` as for `GroveClient`."""

    _native: Optional[Embedded] = None

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, name: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self._native = held_by_url(url, name)
        if self._native is not None:
            self._where: str = self._native.where
            return
        server = client_args(url, token, name, timeout)
        self._where = server.where
        self._http = AsyncHttp(server)

    @classmethod
    def _over(cls, native: Embedded) -> AsyncGroveClient:
        client = cls.__new__(cls)
        client._native = native
        client._where = native.where
        return client

    @property
    def where(self) -> str:
        """Where calls go: `unix:PATH`, `http://HOST:PORT`, or `in-process:DIR`."""
        return self._where

    async def close(self) -> None:
        """Closes the connections; a client of a store in this process lets go of it (the last
        one flushes and closes it)."""
        if self._native is not None:
            await asyncio.to_thread(self._native.close)
            return
        await self._http.close()

    async def __aenter__(self) -> AsyncGroveClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, call: Call) -> Any:
        if self._native is not None:
            if call.quick:
                return self._native.run(call)
            return await asyncio.to_thread(self._native.run, call)
        status, content = await self._http.run(call)
        if status >= 400:
            raise error_of(call, status, content)
        return decode(call, content)

    async def _lines(self, call: Call) -> AsyncIterator[Any]:
        native = self._native
        if native is not None:
            if call.quick:
                for value in native.run(call):
                    yield value
                return
            reply = await asyncio.to_thread(native.open_stream, call)
            splitter = LineSplitter(call)
            try:
                while piece := await asyncio.to_thread(native.read_piece, call, reply):
                    for value in splitter.feed(piece):
                        yield value
                for value in splitter.end():
                    yield value
            finally:
                reply.close()
            return
        async for value in self._http.lines(call):
            yield value

'''


def render(aio: bool) -> str:
    doc = "The asyncio client of `grove serve`." if aio else "The synchronous client of `grove serve`."
    imports = "import asyncio\nfrom collections.abc import AsyncIterator" if aio else "from collections.abc import Iterator"
    out = HEADER.format(doc=doc, imports=imports, transport=AIO_IMPORTS if aio else SYNC_IMPORTS)
    out += AIO_CORE if aio else SYNC_CORE
    out += "\n".join(method(*m, aio=aio) for m in METHODS)
    return out


def main() -> None:
    for name, aio in [("client.py", False), ("aio.py", True)]:
        target = HERE / "grove_client" / name
        text = render(aio)
        if "--check" in sys.argv:
            if target.read_text() != text:
                sys.exit(f"{target} is not what generate.py writes: run python generate.py")
        else:
            target.write_text(text)


if __name__ == "__main__":
    main()
