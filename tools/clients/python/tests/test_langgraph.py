"""LangGraph's own conformance suite (langgraph-checkpoint-conformance) on both savers, against
the real server: every capability, base and extended, must pass. The suite drives the async
methods; the synchronous `GroveSaver` is run through it by an adapter that calls its methods
in a worker thread, so the suite checks the synchronous code paths too."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, Optional

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from grove_client import GroveClient
from grove_client.langgraph import AsyncGroveSaver, GroveSaver, session_id

from .conftest import Server


class _Threaded(BaseCheckpointSaver[str]):
    """The async methods of a synchronous saver, each run in a worker thread."""

    def __init__(self, inner: GroveSaver) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    async def aget_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        return await asyncio.to_thread(self.inner.get_tuple, config)

    async def alist(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: list(self.inner.list(config, filter=filter, before=before, limit=limit)))
        for tup in found:
            yield tup

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.inner.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        await asyncio.to_thread(self.inner.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.inner.delete_thread, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.inner.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(lambda: self.inner.prune(thread_ids, strategy=strategy))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.inner.delete_for_runs, run_ids)

    def get_next_version(self, current: Optional[str], channel: None) -> str:
        return self.inner.get_next_version(current, channel)


def _check(report: Any) -> None:
    report.print_report()
    tested = {cap for cap, result in report.results.items() if result.detected}
    assert tested == set(ALL_CAPABILITIES), f"capabilities not detected: {set(ALL_CAPABILITIES) - tested}"
    assert report.passed_all(), report.to_dict()


async def test_the_async_saver_passes_every_capability(server: Server) -> None:
    @checkpointer_test(name="grove-async")
    async def saver() -> AsyncIterator[AsyncGroveSaver]:
        yield AsyncGroveSaver(server.socket_url)

    _check(await validate(saver))


async def test_the_sync_saver_passes_every_capability(server: Server) -> None:
    @checkpointer_test(name="grove-sync")
    async def saver() -> AsyncIterator[_Threaded]:
        yield _Threaded(GroveSaver(server.tcp_url, token=server.token))

    _check(await validate(saver))


def _checkpoint(versions: dict[str, str], values: dict[str, Any]) -> Checkpoint:
    from langgraph.checkpoint.base import empty_checkpoint

    cp = empty_checkpoint()
    cp["channel_versions"] = dict(versions)
    cp["channel_values"] = dict(values)
    return cp


def test_a_thread_is_a_normal_session(server: Server) -> None:
    """Checkpoints are entries parented by their parent checkpoint, writes hang under theirs,
    a channel that did not change is read through the index from the entry that holds it,
    a checkpoint put from an old one branches, the leaf is the latest checkpoint, and the
    server's verification passes."""
    saver = GroveSaver(server.socket_url)
    root: RunnableConfig = {"configurable": {"thread_id": "normal session", "checkpoint_ns": ""}}
    c0 = saver.put(root, _checkpoint({"a": "1", "b": "1"}, {"a": "a0", "b": "b0"}), {"step": 0}, {"a": "1", "b": "1"})
    c1 = saver.put(c0, _checkpoint({"a": "2", "b": "1"}, {"a": "a1", "b": "b0"}), {"step": 1}, {"a": "2"})
    c2 = saver.put(c1, _checkpoint({"a": "3", "b": "1"}, {"a": "a2", "b": "b0"}), {"step": 2}, {"a": "3"})
    saver.put_writes(c2, [("a", "pending")], "task-1")
    ids = [c["configurable"]["checkpoint_id"] for c in (c0, c1, c2)]
    sid = session_id("normal session", "")
    with GroveClient(server.socket_url) as client:
        entries = list(client.entries(sid))
        assert [e["id"] for e in entries[:3]] == ids
        assert [e["parentId"] for e in entries[:3]] == [None, ids[0], ids[1]]
        assert list(entries[2]["data"]["blobs"]) == ["a"], "an unchanged channel is not stored again"
        assert entries[2]["data"]["channels"] == {"a": ["3", ids[2]], "b": ["1", ids[0]]}
        assert entries[3]["parentId"] == ids[2] and entries[3]["customType"] == "langgraph.writes"
        assert client.leaf(sid) == ids[2], "writes are appended beside the conversation"
        tree = client.tree(sid)
        assert [n["id"] for n in tree["nodes"] if n["onActivePath"]] == ids
    latest = saver.get_tuple(root)
    assert latest is not None and latest.config["configurable"]["checkpoint_id"] == ids[2]
    assert latest.checkpoint["channel_values"] == {"a": "a2", "b": "b0"}
    assert latest.pending_writes == [("task-1", "a", "pending")]
    # Time travel: a checkpoint from c0 is a sibling of c1, and the latest.
    c3 = saver.put(c0, _checkpoint({"a": "4", "b": "1"}, {"a": "edited", "b": "b0"}), {"step": 1}, {"a": "4"})
    latest = saver.get_tuple(root)
    assert latest is not None and latest.config == c3
    assert latest.checkpoint["channel_values"] == {"a": "edited", "b": "b0"}
    assert latest.parent_config == c0
    with GroveClient(server.socket_url) as client:
        assert sorted(e["id"] for e in client.children(sid, ids[0])) == sorted([ids[1], c3["configurable"]["checkpoint_id"]])
        assert client.verify()["ok"]
    history = [t.config["configurable"]["checkpoint_id"] for t in saver.list(root)]
    assert history == [c3["configurable"]["checkpoint_id"], *reversed(ids)]
    saver.close()


def test_an_older_checkpoint_does_not_take_the_leaf(server: Server) -> None:
    """The latest checkpoint is the greatest id, also when one with a smaller id is put later
    or writes go to an older one."""
    saver = GroveSaver(server.socket_url)
    root: RunnableConfig = {"configurable": {"thread_id": "order", "checkpoint_ns": ""}}
    new = _checkpoint({"a": "1"}, {"a": "new"})
    old = _checkpoint({"a": "1"}, {"a": "old"})
    old["id"], new["id"] = sorted([old["id"], new["id"]])
    saver.put(root, new, {}, {"a": "1"})
    c_old = saver.put(root, old, {}, {"a": "1"})
    saver.put_writes(c_old, [("a", "w")], "t")
    latest = saver.get_tuple(root)
    assert latest is not None and latest.checkpoint["id"] == new["id"]
    assert latest.checkpoint["channel_values"] == {"a": "new"}
    saver.close()


async def test_writes_saved_beside_the_next_checkpoint_leave_it_the_latest(server: Server) -> None:
    """LangGraph saves a step's writes and the next checkpoint side by side: whichever lands
    first, in one saver or two (two processes), the next checkpoint stays the latest and the
    writes stay under theirs."""
    one, other = AsyncGroveSaver(server.socket_url), AsyncGroveSaver(server.socket_url)
    try:
        for round, (put_by, write_by) in enumerate([(one, one)] * 10 + [(one, other)] * 10):
            config: RunnableConfig = {"configurable": {"thread_id": f"beside {round}", "checkpoint_ns": ""}}
            first = _checkpoint({"a": "1"}, {"a": "first"})
            first_config = await one.aput(config, first, {"step": 0}, {"a": "1"})
            second = _checkpoint({"a": "2"}, {"a": "second"})
            if round % 2:
                # The writes land last, as a slow request would.
                await put_by.aput(first_config, second, {"step": 1}, {"a": "2"})
                await write_by.aput_writes(first_config, [("a", "w")], "task")
            else:
                await asyncio.gather(
                    put_by.aput(first_config, second, {"step": 1}, {"a": "2"}),
                    write_by.aput_writes(first_config, [("a", "w")], "task"),
                )
            latest = await other.aget_tuple(config)
            assert latest is not None and latest.checkpoint["id"] == second["id"], round
            earlier = await other.aget_tuple(first_config)
            assert earlier is not None and earlier.pending_writes == [("task", "a", "w")], round
    finally:
        await one.aclose()
        await other.aclose()


async def test_writes_that_arrive_before_their_checkpoint_end_up_under_it(server: Server) -> None:
    """Writes for a checkpoint whose put is still on its way: in the same saver they wait for
    the put; from another saver (another process) they are tried again until it lands."""
    one, other = AsyncGroveSaver(server.socket_url), AsyncGroveSaver(server.socket_url)
    try:
        for round, writer in enumerate([one] * 5 + [other] * 5):
            config: RunnableConfig = {"configurable": {"thread_id": f"early {round}", "checkpoint_ns": ""}}
            first_config = await one.aput(config, _checkpoint({"a": "1"}, {"a": "first"}), {}, {"a": "1"})
            second = _checkpoint({"a": "2"}, {"a": "second"})
            second_config: RunnableConfig = {"configurable": {**first_config["configurable"], "checkpoint_id": second["id"]}}

            async def put_late() -> None:
                await asyncio.sleep(0.1 if writer is other else 0)
                await one.aput(first_config, second, {}, {"a": "2"})

            put = asyncio.ensure_future(put_late())
            await asyncio.sleep(0)
            await writer.aput_writes(second_config, [("a", "early")], "task")
            await put
            latest = await other.aget_tuple(config)
            assert latest is not None and latest.checkpoint["id"] == second["id"], round
            assert latest.pending_writes == [("task", "a", "early")], round
    finally:
        await one.aclose()
        await other.aclose()


def test_prune_keeps_every_value_the_latest_needs(server: Server) -> None:
    """keep_latest leaves one checkpoint holding every channel it reads (also those an earlier,
    pruned checkpoint held) and its writes; a rewrite a crash interrupted is finished by the
    next reader."""
    saver = GroveSaver(server.socket_url)
    root: RunnableConfig = {"configurable": {"thread_id": "prune", "checkpoint_ns": ""}}
    c0 = saver.put(root, _checkpoint({"a": "1", "b": "1"}, {"a": "a0", "b": "b0"}), {"step": 0}, {"a": "1", "b": "1"})
    c1 = saver.put(c0, _checkpoint({"a": "2", "b": "1"}, {"a": "a1", "b": "b0"}), {"step": 1}, {"a": "2"})
    saver.put_writes(c1, [("a", "w1")], "t1")
    saver.prune(["prune"])
    sid = session_id("prune", "")
    with GroveClient(server.socket_url) as client:
        entries = list(client.entries(sid))
        assert [e["customType"] for e in entries] == ["langgraph.checkpoint", "langgraph.writes"]
        assert entries[0]["id"] == c1["configurable"]["checkpoint_id"] and entries[0]["parentId"] is None
        assert sorted(entries[0]["data"]["blobs"]) == ["a", "b"]
        assert client.leaf(sid) == entries[1]["id"]
        assert client.verify()["ok"]
        # A crash after the old session was deleted and before the new one took its id.
        jsonl = client.export_session(sid)
        header, _, rest = jsonl.partition("\n")
        client.import_session(json.dumps({**json.loads(header), "id": f"{sid}.rewrite"}) + "\n" + rest)
        client.delete_session(sid)
    latest = saver.get_tuple(root)
    assert latest is not None and latest.config == c1
    assert latest.checkpoint["channel_values"] == {"a": "a1", "b": "b0"}
    assert latest.pending_writes == [("t1", "a", "w1")]
    with GroveClient(server.socket_url) as client:
        ids = [s["id"] for s in client.list_sessions()["sessions"]]
        assert sid in ids and f"{sid}.rewrite" not in ids
    saver.close()
