"""LangGraph's checkpointer on grove: `GroveSaver` and `AsyncGroveSaver`, `BaseCheckpointSaver`s
of `langgraph-checkpoint` 4.x whose threads are grove sessions (docs/langgraph.md is the
mapping, shared with the TypeScript saver).

This module owns that mapping and may call only the server, through `GroveClient` and
`AsyncGroveClient`. Every operation is written once, as a generator that yields the requests
it needs (`_calls.Call`) and receives their answers (`_Saver`); the synchronous saver runs
them on `GroveClient`, the asyncio saver awaits them on `AsyncGroveClient`, so the two cannot
disagree.

A thread and checkpoint namespace is one session; a checkpoint is a `custom` entry whose id is
the checkpoint's and whose parent is its parent checkpoint, so time travel and `update_state`
branch the session like an edited question; pending writes are entries under their checkpoint,
appended without moving the leaf.
A checkpoint stores only the channels it changed, and an index naming the entry that holds
each of its channel versions, so reading a checkpoint costs a few requests whatever the
thread's length. The session's leaf is the latest checkpoint."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import random
import secrets
import time
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional, TypeVar, Union

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from . import _calls as c
from ._calls import Call
from .aio import AsyncGroveClient
from .client import GroveClient
from .errors import GroveError

CHECKPOINT = "langgraph.checkpoint"
WRITES = "langgraph.writes"
#: Between a checkpoint's id and the random tail of its writes entries' ids.
WRITES_MARK = "~w"
#: The suffix of the session a rewrite (prune, delete_for_runs) builds before it replaces one.
REWRITE = ".rewrite"
#: Entries whose blobs or index a saver keeps in memory (they never change).
CACHE_ENTRIES = 4096
#: About the most bytes of checkpoints (as read, and their values' bytes decoded) a saver keeps.
CACHE_BYTES = 64 * 1024 * 1024
#: How long writes wait for this saver's put of their checkpoint (LangGraph submits a step's
#: checkpoint and the next step's writes side by side), in seconds.
PUT_WAIT = 30.0
#: Writes whose checkpoint is not in the session (another process's put still on its way) are
#: tried again this many times, PAUSE apart, before they are stored under no parent.
ORPHAN_TRIES = 20
PAUSE = 0.025


class _Cache:
    """What a saver keeps of entries, which never change once written: at most `CACHE_ENTRIES`
    items and about `CACHE_BYTES`; when either is reached it starts over."""

    def __init__(self) -> None:
        self._items: dict[Any, Any] = {}
        self._bytes = 0

    def get(self, key: Any) -> Any:
        return self._items.get(key)

    def put(self, key: Any, value: Any, size: int) -> None:
        if size > CACHE_BYTES:
            return
        if len(self._items) >= CACHE_ENTRIES or self._bytes + size > CACHE_BYTES:
            self.clear()
        self._items[key] = value
        self._bytes += size

    def clear(self) -> None:
        self._items.clear()
        self._bytes = 0


def _size(entry: Entry) -> int:
    """About the memory an entry read from JSON holds: its blobs' text and a little more."""
    return 1024 + sum(len(b.get("data", "")) for b in entry["data"].get("blobs", {}).values())


def _index_size(index: dict[str, list[str]]) -> int:
    """About the memory a checkpoint's `channels` index holds."""
    return 256 + sum(64 + len(k) + sum(len(v) for v in vs) for k, vs in index.items())


@dataclass(frozen=True)
class _Pause:
    """A step's request to wait `seconds` before it goes on (its answer is None)."""

    seconds: float


T = TypeVar("T")
#: One saver operation: yields requests (or pauses), receives their answers, returns its result.
Step = Generator[Union[Call, _Pause], Any, T]
Entry = dict[str, Any]


def session_id(thread_id: str, ns: str) -> str:
    """The session of a thread and checkpoint namespace: `lg-` hex(thread) `-n` hex(ns)."""
    return f"{thread_prefix(thread_id)}{ns.encode().hex()}"


def thread_prefix(thread_id: str) -> str:
    """The prefix every session of a thread starts with."""
    return f"lg-{thread_id.encode().hex()}-n"


def thread_of(sid: str) -> Optional[tuple[str, str]]:
    """The thread and namespace of a LangGraph session id, or None for any other session."""
    if not sid.startswith("lg-") or "-n" not in sid[3:]:
        return None
    thread_hex, ns_hex = sid[3:].rsplit("-n", 1)
    try:
        return bytes.fromhex(thread_hex).decode(), bytes.fromhex(ns_hex).decode()
    except ValueError:
        return None


def checkpoint_of(entry_id: str) -> str:
    """The checkpoint an entry id names: itself, or the one a writes entry's id starts with."""
    return entry_id.split(WRITES_MARK, 1)[0]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _is(entry: Optional[Entry], kind: str) -> bool:
    return entry is not None and entry.get("type") == "custom" and entry.get("customType") == kind


def _thread(config: RunnableConfig) -> tuple[str, str]:
    configurable = config["configurable"]
    return str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", ""))


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


class _Saver:
    """The operations, as generators of requests; `serde` is the saver's serializer."""

    serde: SerializerProtocol

    def _init_caches(self) -> None:
        #: Checkpoint entries by (session, id): the ones this saver wrote or read.
        self._checkpoints = _Cache()
        #: The bytes of blobs by (session, entry, channel, version), decoded from base64.
        self._raw = _Cache()
        #: Checkpoints' `channels` indexes by (session, id).
        self._index = _Cache()
        #: Checkpoints (session, id) whose put is under way in this saver, with their count.
        self._putting: dict[tuple[str, str], int] = {}

    def _forget(self) -> None:
        self._checkpoints.clear()
        self._raw.clear()
        self._index.clear()

    # Reading

    def _entry(self, sid: str, eid: str, kept: bool = False) -> Step[Optional[Entry]]:
        """The entry `eid` of the session, or None; with `kept`, a checkpoint this saver holds
        is not read again (for an entry known to be in the session)."""
        if kept:
            held: Optional[Entry] = self._checkpoints.get((sid, eid))
            if held is not None:
                return held
        try:
            entry: Entry = yield c.get_entry(sid, eid, False)
        except GroveError as e:
            if e.code == "not_found":
                return None
            raise
        if _is(entry, CHECKPOINT):
            self._checkpoints.put((sid, eid), entry, _size(entry))
        return entry

    def _decoded(self, sid: str, holder: Optional[str], channel: str, blob: dict[str, Any]) -> bytes:
        """A blob's bytes; those of a blob of entry `holder` are kept."""
        if holder is None:
            return _unb64(blob["data"])
        key = (sid, holder, channel, blob["version"])
        raw: Optional[bytes] = self._raw.get(key)
        if raw is None:
            raw = _unb64(blob["data"])
            self._raw.put(key, raw, len(raw))
        return raw

    def _all(self, sid: str) -> Step[list[Entry]]:
        try:
            entries: list[Entry] = yield c.entries(sid, None, None)
        except GroveError as e:
            if e.code == "not_found":
                return []
            raise
        return entries

    def _session(self, sid: str) -> Step[Optional[Entry]]:
        """The session's summary (with its leaf), finishing a rewrite a crash interrupted."""
        try:
            summary: Entry = yield c.get_session(sid)
            return summary
        except GroveError as e:
            if e.code != "not_found":
                raise
        try:
            yield c.get_session(sid + REWRITE)
        except GroveError as e:
            if e.code == "not_found":
                return None
            raise
        jsonl: str = yield c.export_session(sid + REWRITE, "harness")
        yield from self._install(sid, jsonl)
        summary = yield c.get_session(sid)
        return summary

    def _install(self, sid: str, jsonl: str) -> Step[None]:
        """Imports `jsonl` (a rewrite's session) as `sid`, then drops the rewrite."""
        header, _, rest = jsonl.partition("\n")
        fields = json.loads(header)
        fields["id"] = sid
        yield c.import_session((json.dumps(fields) + "\n" + rest).encode())
        yield from self._drop(sid + REWRITE)

    def _drop(self, sid: str) -> Step[None]:
        try:
            yield c.delete_session(sid)
        except GroveError as e:
            if e.code != "not_found":
                raise
        self._forget()

    def _ensure(self, thread_id: str, ns: str) -> Step[tuple[str, Optional[str]]]:
        """The thread's session, created when missing, and its leaf."""
        sid = session_id(thread_id, ns)
        summary = yield from self._session(sid)
        if summary is not None:
            return sid, summary.get("leaf")
        metadata = {"langgraph": {"thread_id": thread_id, "checkpoint_ns": ns}}
        try:
            yield c.create_session({"id": sid, "metadata": metadata})
        except GroveError as e:
            # Created meanwhile by another writer: use it.
            if e.code != "invalid_argument":
                raise
            summary = yield from self._session(sid)
            if summary is None:
                raise
            return sid, summary.get("leaf")
        return sid, None

    def _sessions(self, prefix: str) -> Step[list[str]]:
        """The ids of the sessions starting with `prefix` (sessions are listed in id order)."""
        found: list[str] = []
        after: Optional[str] = prefix[:-1]
        while True:
            page: Entry = yield c.list_sessions(after, 1000)
            for s in page["sessions"]:
                sid = str(s["id"])
                if sid.startswith(prefix):
                    found.append(sid)
                elif sid > prefix:
                    return found
            after = page.get("next")
            if not after:
                return found

    def _threads(self, config: Optional[RunnableConfig]) -> Step[list[str]]:
        """The sessions a `list` config names: one namespace, every namespace of a thread, or
        every LangGraph session."""
        if config is None:
            sids = yield from self._sessions("lg-")
        elif config["configurable"].get("checkpoint_ns") is not None:
            thread_id, ns = _thread(config)
            summary = yield from self._session(session_id(thread_id, ns))
            sids = [session_id(thread_id, ns)] if summary is not None else []
        else:
            sids = yield from self._sessions(thread_prefix(str(config["configurable"]["thread_id"])))
        return [sid for sid in sids if thread_of(sid) is not None]

    def _writes(self, checkpoint_id: str, entries: Sequence[Entry]) -> list[tuple[str, str, Any]]:
        """The pending writes of a checkpoint among `entries`: for a (task, idx) written twice
        the first wins for idx >= 0, the last for the special channels (idx < 0)."""
        found: dict[tuple[str, int], tuple[str, str, tuple[str, bytes], str]] = {}
        for entry in entries:
            if not _is(entry, WRITES) or entry["data"]["checkpoint_id"] != checkpoint_id:
                continue
            d = entry["data"]
            for w in d["writes"]:
                key = (str(d["task_id"]), int(w["idx"]))
                if key[1] >= 0 and key in found:
                    continue
                found[key] = (key[0], w["channel"], (w["type"], _unb64(w["data"])), d.get("task_path", ""))
        order = sorted(found, key=lambda k: writes_sort_key(found[k][3], k[0], k[1]))
        return [(found[k][0], found[k][1], self.serde.loads_typed(found[k][2])) for k in order]

    def _values(self, sid: str, checkpoint: Checkpoint, entry: Entry, known: Optional[Sequence[Entry]]) -> Step[dict[str, Any]]:
        """The channel values of a checkpoint: from its own blobs, the entries its index names,
        or (when the index misses) the whole session (`known`, or read)."""
        data = entry["data"]
        index: dict[str, list[str]] = data.get("channels") or {}
        #: Each channel's blob and the entry holding it (None: found in `known`).
        blobs: dict[str, tuple[dict[str, Any], Optional[str]]] = {}
        missing: dict[str, str] = {}
        wanted: dict[str, dict[str, str]] = {}
        for channel, version in checkpoint["channel_versions"].items():
            v = str(version)
            own = data["blobs"].get(channel)
            if own is not None and own["version"] == v:
                blobs[channel] = (own, entry["id"])
            elif channel in index and index[channel][0] == v and known is None:
                wanted.setdefault(index[channel][1], {})[channel] = v
            else:
                missing[channel] = v
        for eid, channels in wanted.items():
            holder = yield from self._entry(sid, eid, kept=True)
            held = holder["data"]["blobs"] if _is(holder, CHECKPOINT) and holder is not None else {}
            for channel, v in channels.items():
                blob = held.get(channel)
                if blob is not None and blob["version"] == v:
                    blobs[channel] = (blob, eid)
                else:
                    missing[channel] = v
        if missing:
            every = known if known is not None else (yield from self._all(sid))
            by_version = _blob_map(every)
            for channel, v in missing.items():
                blob = by_version.get((channel, v))
                if blob is not None:
                    blobs[channel] = (blob, None)
        return {
            channel: self.serde.loads_typed((blob["type"], self._decoded(sid, holder, channel, blob)))
            for channel, (blob, holder) in blobs.items()
            if blob["type"] != "empty"
        }

    def _tuple(self, sid: str, entry: Entry, writes_from: Sequence[Entry], known: Optional[Sequence[Entry]]) -> Step[CheckpointTuple]:
        thread = thread_of(sid)
        assert thread is not None, sid
        thread_id, ns = thread
        data = entry["data"]
        checkpoint: Checkpoint = self.serde.loads_typed((data["type"], _unb64(data["checkpoint"])))
        values = yield from self._values(sid, checkpoint, entry, known)
        parent = data.get("parent")
        return CheckpointTuple(
            config=_config(thread_id, ns, entry["id"]),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed((data["metadata_type"], _unb64(data["metadata"]))),
            parent_config=_config(thread_id, ns, parent) if parent else None,
            pending_writes=self._writes(entry["id"], writes_from),
        )

    def _get_tuple(self, config: RunnableConfig) -> Step[Optional[CheckpointTuple]]:
        thread_id, ns = _thread(config)
        sid = session_id(thread_id, ns)
        wanted = get_checkpoint_id(config)
        entry: Optional[Entry] = None
        if wanted:
            entry = yield from self._entry(sid, wanted)
            if not _is(entry, CHECKPOINT):
                return None
        else:
            summary = yield from self._session(sid)
            if summary is None:
                return None
            leaf = summary.get("leaf")
            if leaf is not None:
                entry = yield from self._entry(sid, checkpoint_of(leaf), kept=True)
            if not _is(entry, CHECKPOINT):
                # The leaf was moved by hand (a label, a goto): the latest is the greatest id.
                every = yield from self._all(sid)
                checkpoints = [e for e in every if _is(e, CHECKPOINT)]
                if not checkpoints:
                    return None
                latest = max(checkpoints, key=lambda e: str(e["id"]))
                result = yield from self._tuple(sid, latest, every, every)
                return result
        assert entry is not None
        children: list[Entry] = yield c.children(sid, entry["id"])
        result = yield from self._tuple(sid, entry, children, None)
        return result

    def _list(
        self,
        config: Optional[RunnableConfig],
        filter: Optional[dict[str, Any]],
        before: Optional[RunnableConfig],
        limit: Optional[int],
    ) -> Step[list[CheckpointTuple]]:
        sids = yield from self._threads(config)
        wanted = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        found: list[CheckpointTuple] = []
        candidates: list[tuple[str, str, Entry, list[Entry]]] = []
        for sid in sids:
            every = yield from self._all(sid)
            for e in every:
                if not _is(e, CHECKPOINT):
                    continue
                if wanted and e["id"] != wanted:
                    continue
                if before_id and str(e["id"]) >= before_id:
                    continue
                candidates.append((str(e["id"]), sid, e, every))
        candidates.sort(key=lambda item: item[0], reverse=True)
        for _, sid, e, every in candidates:
            if limit is not None and len(found) >= limit:
                break
            if filter:
                d = e["data"]
                metadata = self.serde.loads_typed((d["metadata_type"], _unb64(d["metadata"])))
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            tup = yield from self._tuple(sid, e, every, every)
            found.append(tup)
        return found

    # Writing

    def _index_of(self, sid: str, checkpoint_id: str) -> Step[Optional[dict[str, list[str]]]]:
        """A checkpoint's `channels` index, or None when it is not in the session."""
        cached: Optional[dict[str, list[str]]] = self._index.get((sid, checkpoint_id))
        if cached is not None:
            return cached
        entry = yield from self._entry(sid, checkpoint_id)
        if not _is(entry, CHECKPOINT) or entry is None:
            return None
        index: dict[str, list[str]] = entry["data"].get("channels") or {}
        self._index.put((sid, checkpoint_id), index, _index_size(index))
        return index

    def _append(self, sid: str, entry: Entry, old_leaf: Optional[str]) -> Step[Entry]:
        """Appends a checkpoint's `entry` exactly (its parent dropped when not in the session)
        and keeps the leaf on the latest checkpoint; the entry as stored."""
        try:
            yield c.append_exact(sid, entry)
        except GroveError as e:
            if e.code == "invalid_entry" and entry["parentId"] is not None:
                entry = {**entry, "parentId": None}
                yield c.append_exact(sid, entry)
            else:
                raise
        latest = checkpoint_of(old_leaf) if old_leaf is not None else None
        if latest is not None and checkpoint_of(entry["id"]) < latest:
            yield c.set_leaf(sid, old_leaf, None)
        return entry

    def _put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Step[RunnableConfig]:
        thread_id, ns = _thread(config)
        key = (session_id(thread_id, ns), str(checkpoint["id"]))
        self._putting[key] = self._putting.get(key, 0) + 1
        try:
            result = yield from self._put_now(config, checkpoint, metadata, new_versions)
        finally:
            if self._putting[key] == 1:
                del self._putting[key]
            else:
                self._putting[key] -= 1
        return result

    def _put_now(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Step[RunnableConfig]:
        thread_id, ns = _thread(config)
        sid, leaf = yield from self._ensure(thread_id, ns)
        cid = str(checkpoint["id"])
        values: dict[str, Any] = checkpoint["channel_values"]
        rest = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        blobs: dict[str, dict[str, str]] = {}
        raw: dict[str, bytes] = {}
        for channel, version in new_versions.items():
            if channel in values:
                kind, data = self.serde.dumps_typed(values[channel])
                blobs[channel] = {"version": str(version), "type": kind, "data": _b64(data)}
                raw[channel] = data
            else:
                blobs[channel] = {"version": str(version), "type": "empty", "data": ""}
        parent = config["configurable"].get("checkpoint_id")
        parent_index = (yield from self._index_of(sid, parent)) if parent else None
        index: dict[str, list[str]] = {}
        for channel, version in checkpoint["channel_versions"].items():
            v = str(version)
            if channel in blobs and blobs[channel]["version"] == v:
                index[channel] = [v, cid]
            elif parent_index is not None and channel in parent_index and parent_index[channel][0] == v:
                index[channel] = parent_index[channel]
        kind, data = self.serde.dumps_typed(rest)
        mkind, mdata = self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))
        entry = {
            "type": "custom",
            "customType": CHECKPOINT,
            "id": cid,
            "parentId": parent if parent_index is not None else None,
            "timestamp": _now(),
            "data": {
                "type": kind,
                "checkpoint": _b64(data),
                "metadata_type": mkind,
                "metadata": _b64(mdata),
                "parent": parent,
                "blobs": blobs,
                "channels": index,
            },
        }
        try:
            stored = yield from self._append(sid, entry, leaf)
        except GroveError as e:
            # A checkpoint put twice (a retried request) is stored once.
            existing = yield from self._entry(sid, cid) if e.code == "invalid_argument" else _none()
            if not _is(existing, CHECKPOINT):
                raise
        else:
            # Kept as written: the next read of the latest state (LangGraph's next step) needs
            # neither the store nor base64.
            self._checkpoints.put((sid, cid), stored, _size(stored))
            for channel, data in raw.items():
                self._raw.put((sid, cid, channel, blobs[channel]["version"]), data, len(data))
        self._index.put((sid, cid), index, _index_size(index))
        return _config(thread_id, ns, cid)

    def _put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str) -> Step[None]:
        if not writes:
            return
        thread_id, ns = _thread(config)
        cid = str(config["configurable"]["checkpoint_id"])
        waited = 0.0
        while (session_id(thread_id, ns), cid) in self._putting and waited < PUT_WAIT:
            yield _Pause(PAUSE / 10)
            waited += PAUSE / 10
        sid, _ = yield from self._ensure(thread_id, ns)
        items = []
        for idx, (channel, value) in enumerate(writes):
            kind, data = self.serde.dumps_typed(value)
            items.append({"idx": WRITES_IDX_MAP.get(channel, idx), "channel": channel, "type": kind, "data": _b64(data)})
        entry = {
            "type": "custom",
            "customType": WRITES,
            "id": f"{cid}{WRITES_MARK}{secrets.token_hex(6)}",
            "parentId": cid,
            "timestamp": _now(),
            "data": {"checkpoint_id": cid, "task_id": task_id, "task_path": task_path, "writes": items},
        }
        # Beside the conversation: the leaf stays on the latest checkpoint, even one put meanwhile.
        for _ in range(ORPHAN_TRIES):
            try:
                yield c.append_exact(sid, entry, keep_leaf=True)
                return
            except GroveError as e:
                if e.code != "invalid_entry":
                    raise
            yield _Pause(PAUSE)
        yield c.append_exact(sid, {**entry, "parentId": None}, keep_leaf=True)

    def _delete_thread(self, thread_id: str) -> Step[None]:
        sids = yield from self._sessions(thread_prefix(thread_id))
        for sid in sids:
            yield from self._drop(sid)

    def _copy_thread(self, source: str, target: str) -> Step[None]:
        sids = yield from self._sessions(thread_prefix(source))
        for sid in sids:
            thread = thread_of(sid)
            if thread is None:
                continue
            jsonl: str = yield c.export_session(sid, "harness")
            header, _, rest = jsonl.partition("\n")
            fields = json.loads(header)
            fields["id"] = session_id(target, thread[1])
            fields["metadata"] = {"langgraph": {"thread_id": target, "checkpoint_ns": thread[1]}}
            yield c.import_session((json.dumps(fields) + "\n" + rest).encode())

    def _prune(self, thread_ids: Sequence[str], strategy: str) -> Step[None]:
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}: keep_latest or delete")
        for thread_id in thread_ids:
            sids = yield from self._sessions(thread_prefix(thread_id))
            for sid in sids:
                if thread_of(sid) is None:
                    continue
                if strategy == "delete":
                    yield from self._drop(sid)
                    continue
                every = yield from self._all(sid)
                ids = [str(e["id"]) for e in every if _is(e, CHECKPOINT)]
                if ids:
                    yield from self._rewrite(sid, every, {max(ids)})

    def _delete_for_runs(self, run_ids: Sequence[str]) -> Step[None]:
        runs = set(run_ids)
        if not runs:
            return
        sids = yield from self._threads(None)
        for sid in sids:
            every = yield from self._all(sid)
            keep: set[str] = set()
            dropped = False
            for e in every:
                if not _is(e, CHECKPOINT):
                    continue
                d = e["data"]
                metadata = self.serde.loads_typed((d["metadata_type"], _unb64(d["metadata"])))
                if metadata.get("run_id") in runs:
                    dropped = True
                else:
                    keep.add(str(e["id"]))
            if dropped:
                yield from self._rewrite(sid, every, keep)

    def _rewrite(self, sid: str, every: Sequence[Entry], keep: set[str]) -> Step[None]:
        """Replaces the session by one holding only the checkpoints in `keep` and their writes
        (docs/langgraph.md, "Deleting")."""
        if not keep:
            yield from self._drop(sid)
            return
        summary: Entry = yield c.get_session(sid)
        checkpoints = {str(e["id"]): e for e in every if _is(e, CHECKPOINT)}
        if set(checkpoints) == keep:
            return
        by_version = _blob_map(every)
        lines: list[Entry] = []
        for e in every:
            if _is(e, CHECKPOINT) and e["id"] in keep:
                d = e["data"]
                checkpoint = self.serde.loads_typed((d["type"], _unb64(d["checkpoint"])))
                blobs = {}
                for channel, version in checkpoint["channel_versions"].items():
                    blob = by_version.get((channel, str(version)))
                    if blob is not None:
                        blobs[channel] = blob
                parent = d.get("parent")
                while parent is not None and parent not in keep:
                    parent = checkpoints[parent]["data"].get("parent") if parent in checkpoints else None
                channels = {ch: [b["version"], e["id"]] for ch, b in blobs.items()}
                lines.append({**e, "parentId": parent, "data": {**d, "blobs": blobs, "channels": channels}})
            elif _is(e, WRITES) and e["data"]["checkpoint_id"] in keep:
                lines.append(e)
        latest = max(keep)
        leaf = [str(e["id"]) for e in lines if checkpoint_of(str(e["id"])) == latest][-1]
        lines.append({"type": "leaf", "id": f"{latest}~l{secrets.token_hex(6)}", "parentId": leaf, "timestamp": _now(), "targetId": leaf})
        header = {"type": "session", "version": 3, "id": sid + REWRITE, "timestamp": summary["created"], "cwd": summary.get("cwd") or ""}
        if summary.get("metadata") is not None:
            header["metadata"] = summary["metadata"]
        jsonl = "".join(json.dumps(line) + "\n" for line in [header, *lines])
        yield from self._drop(sid + REWRITE)
        yield c.import_session(jsonl.encode())
        yield from self._drop(sid)
        yield from self._install(sid, jsonl)


def _none() -> Step[None]:
    return None
    yield  # a generator that asks nothing


def _blob_map(entries: Sequence[Entry]) -> dict[tuple[str, str], dict[str, Any]]:
    """Every channel version the checkpoints among `entries` hold."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for e in entries:
        if _is(e, CHECKPOINT):
            for channel, blob in e["data"]["blobs"].items():
                found[(channel, str(blob["version"]))] = blob
    return found


def _next_version(current: Optional[str]) -> str:
    if current is None:
        number = 0
    elif isinstance(current, int):
        number = current
    else:
        number = int(current.split(".")[0])
    return f"{number + 1:032}.{random.random():016}"


class GroveSaver(_Saver, BaseCheckpointSaver[str]):
    """LangGraph's synchronous checkpointer on a `grove serve` at `url` (`unix:/path` or
    `http://host:port`, default `GROVE_URL`; `token` default `GROVE_TOKEN`)."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *, serde: Optional[SerializerProtocol] = None) -> None:
        super().__init__(serde=serde)
        self._init_caches()
        self.client = GroveClient(url, token=token, name="langgraph")

    def _run(self, step: Step[T]) -> T:
        answer: Any = None
        error: Optional[GroveError] = None
        try:
            while True:
                call = step.throw(error) if error is not None else step.send(answer)
                error = None
                if isinstance(call, _Pause):
                    time.sleep(call.seconds)
                    answer = None
                    continue
                try:
                    answer = self.client._run(call)
                except GroveError as e:
                    error = e
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def close(self) -> None:
        self.client.close()

    def get_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        return self._run(self._get_tuple(config))

    def list(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> Iterator[CheckpointTuple]:
        yield from self._run(self._list(config, filter, before, limit))

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        return self._run(self._put(config, checkpoint, metadata, new_versions))

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        self._run(self._put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._run(self._delete_thread(thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._run(self._copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._run(self._prune(thread_ids, strategy))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._run(self._delete_for_runs(run_ids))

    def get_next_version(self, current: Optional[str], channel: None) -> str:
        return _next_version(current)


class AsyncGroveSaver(_Saver, BaseCheckpointSaver[str]):
    """LangGraph's asyncio checkpointer on a `grove serve` at `url` (`unix:/path` or
    `http://host:port`, default `GROVE_URL`; `token` default `GROVE_TOKEN`)."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *, serde: Optional[SerializerProtocol] = None) -> None:
        super().__init__(serde=serde)
        self._init_caches()
        self.client = AsyncGroveClient(url, token=token, name="langgraph")

    async def _run(self, step: Step[T]) -> T:
        answer: Any = None
        error: Optional[GroveError] = None
        try:
            while True:
                call = step.throw(error) if error is not None else step.send(answer)
                error = None
                if isinstance(call, _Pause):
                    await asyncio.sleep(call.seconds)
                    answer = None
                    continue
                try:
                    answer = await self.client._run(call)
                except GroveError as e:
                    error = e
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        await self.client.close()

    async def aget_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        return await self._run(self._get_tuple(config))

    async def alist(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for found in await self._run(self._list(config, filter, before, limit)):
            yield found

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        return await self._run(self._put(config, checkpoint, metadata, new_versions))

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        await self._run(self._put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._run(self._delete_thread(thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._run(self._copy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._run(self._prune(thread_ids, strategy))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._run(self._delete_for_runs(run_ids))

    def get_next_version(self, current: Optional[str], channel: None) -> str:
        return _next_version(current)
