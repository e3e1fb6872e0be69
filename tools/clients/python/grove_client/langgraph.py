"""LangGraph checkpoints on grove (work in progress): `AsyncGroveSaver`, a `BaseCheckpointSaver`
whose threads are grove sessions.

A thread and checkpoint namespace is one session (id `lg-` + hex(thread_id) + `-n` +
hex(namespace), grove's session ids being `[A-Za-z0-9._-]`); a checkpoint is a `custom` entry
(`customType` `langgraph.checkpoint`) whose id is the checkpoint's id and whose parent is its
parent checkpoint, so time travel and `update_state` from an old checkpoint branch the session
like an edited question does; pending writes are `langgraph.writes` entries under their
checkpoint. Channel values are stored only for the channels a checkpoint changed (its
`new_versions`), each as its serializer's bytes in base64, which grove keeps once by content
when large (its payload store)."""

from __future__ import annotations

import base64
import datetime
from collections.abc import AsyncIterator, Sequence
from typing import Any, Optional

from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langchain_core.runnables import RunnableConfig

from .aio import AsyncGroveClient
from .errors import GroveError

CHECKPOINT = "langgraph.checkpoint"
WRITES = "langgraph.writes"


def session_id(thread_id: str, ns: str) -> str:
    return f"lg-{thread_id.encode().hex()}-n{ns.encode().hex()}"


def thread_of(sid: str) -> Optional[tuple[str, str]]:
    if not sid.startswith("lg-") or "-n" not in sid[3:]:
        return None
    thread_hex, ns_hex = sid[3:].rsplit("-n", 1)
    try:
        return bytes.fromhex(thread_hex).decode(), bytes.fromhex(ns_hex).decode()
    except ValueError:
        return None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AsyncGroveSaver(BaseCheckpointSaver[str]):
    """LangGraph's checkpointer on a `grove serve` (`url`, default `GROVE_URL`)."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = AsyncGroveClient(url, token=token, name="langgraph")

    # Storage

    async def _ensure(self, thread_id: str, ns: str) -> str:
        sid = session_id(thread_id, ns)
        try:
            await self.client.get_session(sid)
        except GroveError as e:
            if e.code != "not_found":
                raise
            await self.client.create_session(id=sid, metadata={"langgraph": {"thread_id": thread_id, "checkpoint_ns": ns}})
        return sid

    async def _records(self, sid: str) -> list[dict[str, Any]]:
        try:
            return [e async for e in self.client.entries(sid) if e.get("type") == "custom"]
        except GroveError as e:
            if e.code == "not_found":
                return []
            raise

    def _tuple(self, thread_id: str, ns: str, records: list[dict[str, Any]], cp: dict[str, Any]) -> CheckpointTuple:
        data = cp["data"]
        checkpoint: Checkpoint = self.serde.loads_typed((data["type"], _unb64(data["checkpoint"])))
        blobs: dict[tuple[str, str], Any] = {}
        for r in records:
            if r.get("customType") == CHECKPOINT:
                for channel, blob in r["data"]["blobs"].items():
                    blobs[(channel, blob["version"])] = blob
        values: dict[str, Any] = {}
        for channel, version in checkpoint["channel_versions"].items():
            blob = blobs.get((channel, str(version)))
            if blob is not None and blob["type"] != "empty":
                values[channel] = self.serde.loads_typed((blob["type"], _unb64(blob["data"])))
        writes: dict[tuple[str, int], tuple[str, str, Any, str]] = {}
        for r in records:
            if r.get("customType") == WRITES and r["data"]["checkpoint_id"] == cp["id"]:
                d = r["data"]
                for w in d["writes"]:
                    writes[(d["task_id"], w["idx"])] = (d["task_id"], w["channel"], (w["type"], _unb64(w["data"])), d["task_path"])
        from langgraph.checkpoint.base import writes_sort_key

        ordered = [writes[k] for k in sorted(writes, key=lambda k: writes_sort_key(writes[k][3], *k))]
        parent = data.get("parent")
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cp["id"]}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed((data["metadata_type"], _unb64(data["metadata"]))),
            parent_config=(
                {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}} if parent else None
            ),
            pending_writes=[(t, c, self.serde.loads_typed(v)) for t, c, v, _ in ordered],
        )

    # BaseCheckpointSaver

    async def aget_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        records = await self._records(session_id(thread_id, ns))
        checkpoints = [r for r in records if r.get("customType") == CHECKPOINT]
        wanted = get_checkpoint_id(config)
        if wanted:
            found = [r for r in checkpoints if r["id"] == wanted]
        else:
            found = sorted(checkpoints, key=lambda r: r["id"])[-1:]
        return self._tuple(thread_id, ns, records, found[0]) if found else None

    async def alist(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[CheckpointTuple]:
        threads: list[tuple[str, str]] = []
        want_ns = config["configurable"].get("checkpoint_ns") if config else None
        page: dict[str, Any] = {}
        while True:
            answer = await self.client.list_sessions(after=page.get("next"), limit=500)
            for s in answer["sessions"]:
                t = thread_of(s["id"])
                if t is None:
                    continue
                if config and t[0] != config["configurable"]["thread_id"]:
                    continue
                if want_ns is not None and t[1] != want_ns:
                    continue
                threads.append(t)
            if not answer.get("next"):
                break
            page = answer
        wanted = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        for thread_id, ns in threads:
            records = await self._records(session_id(thread_id, ns))
            checkpoints = sorted((r for r in records if r.get("customType") == CHECKPOINT), key=lambda r: r["id"], reverse=True)
            for cp in checkpoints:
                if wanted and cp["id"] != wanted:
                    continue
                if before_id and cp["id"] >= before_id:
                    continue
                found = self._tuple(thread_id, ns, records, cp)
                if filter and not all(found.metadata.get(k) == v for k, v in filter.items()):
                    continue
                if limit is not None:
                    if limit <= 0:
                        return
                    limit -= 1
                yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        sid = await self._ensure(thread_id, ns)
        c = checkpoint.copy()
        values: dict[str, Any] = c.pop("channel_values")  # type: ignore[misc]
        blobs = {}
        for channel, version in new_versions.items():
            if channel in values:
                kind, data = self.serde.dumps_typed(values[channel])
                blobs[channel] = {"version": str(version), "type": kind, "data": _b64(data)}
            else:
                blobs[channel] = {"version": str(version), "type": "empty", "data": ""}
        kind, data = self.serde.dumps_typed(c)
        mkind, mdata = self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))
        parent = config["configurable"].get("checkpoint_id")
        existing = {r["id"] for r in await self._records(sid)}
        entry = {
            "type": "custom",
            "customType": CHECKPOINT,
            "id": checkpoint["id"],
            "parentId": parent if parent in existing else None,
            "timestamp": _now(),
            "data": {
                "type": kind,
                "checkpoint": _b64(data),
                "metadata_type": mkind,
                "metadata": _b64(mdata),
                "parent": parent,
                "blobs": blobs,
            },
        }
        if checkpoint["id"] not in existing:
            await self.client.append_exact(sid, entry)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = config["configurable"]["checkpoint_id"]
        sid = await self._ensure(thread_id, ns)
        records = await self._records(sid)
        stored = {
            (r["data"]["task_id"], w["idx"])
            for r in records
            if r.get("customType") == WRITES and r["data"]["checkpoint_id"] == checkpoint_id
            for w in r["data"]["writes"]
        }
        items = []
        for idx, (channel, value) in enumerate(writes):
            key = (task_id, WRITES_IDX_MAP.get(channel, idx))
            if key[1] >= 0 and key in stored:
                continue
            kind, data = self.serde.dumps_typed(value)
            items.append({"idx": key[1], "channel": channel, "type": kind, "data": _b64(data)})
        if not items:
            return
        ids = {r["id"] for r in records}
        (eid,) = await self.client.fresh_ids(sid, 1)
        await self.client.append_exact(
            sid,
            {
                "type": "custom",
                "customType": WRITES,
                "id": eid,
                "parentId": checkpoint_id if checkpoint_id in ids else None,
                "timestamp": _now(),
                "data": {"checkpoint_id": checkpoint_id, "task_id": task_id, "task_path": task_path, "writes": items},
            },
        )

    async def adelete_thread(self, thread_id: str) -> None:
        prefix = f"lg-{thread_id.encode().hex()}-n"
        after = None
        doomed = []
        while True:
            answer = await self.client.list_sessions(after=after, limit=500)
            doomed += [s["id"] for s in answer["sessions"] if s["id"].startswith(prefix)]
            after = answer.get("next")
            if not after:
                break
        for sid in doomed:
            await self.client.delete_session(sid)

    def get_next_version(self, current: Optional[str], channel: None) -> str:
        import random

        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"
