"""A real LangGraph graph (examples/langgraph_graph.py: a deterministic fake model and a tool) on
AsyncGroveSaver against the real server: the same turns on LangGraph's InMemorySaver give the
same state at every turn and the same history; `aupdate_state` from an earlier checkpoint
branches the thread; and the thread's session is a normal grove session (verify, tree, entries,
operations, the HTML view). Last, the race between the checkpoint and the writes LangGraph saves
at the same time, on the saver alone."""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from examples.langgraph_graph import TOOL_EVERY, build_graph, question, summary
from grove_client import AsyncGroveClient
from grove_client.langgraph import AsyncGroveSaver

from .conftest import Server

TURNS = 12
THREADS = 4
FORK = 6
_threads = itertools.count()

Graph = CompiledStateGraph[Any, Any, Any, Any]


def thread() -> tuple[RunnableConfig, str]:
    """A new thread's config and its grove session (docs/langgraph.md)."""
    thread_id = f"graph-{os.getpid()}-{next(_threads)}"
    return {"configurable": {"thread_id": thread_id}}, f"lg-{thread_id.encode().hex()}-n"


async def history(graph: Graph, config: RunnableConfig) -> list[str]:
    return [s.config["configurable"]["checkpoint_id"] async for s in graph.aget_state_history(config)]


async def messages(graph: Graph, config: RunnableConfig) -> list[AnyMessage]:
    state = await graph.aget_state(config)
    result: list[AnyMessage] = state.values["messages"]
    return result


async def test_the_graph_on_grove_matches_the_in_memory_saver_turn_by_turn(server: Server) -> None:
    # Several threads at once, each on its own saver and graph: more interleaving of the
    # checkpoints and writes that LangGraph saves in the background while a run goes on.
    savers = [AsyncGroveSaver(server.socket_url) for _ in range(THREADS)]
    try:
        await asyncio.gather(*(_the_same_turn_by_turn(build_graph(s), build_graph(InMemorySaver())) for s in savers))
    finally:
        for saver in savers:
            await saver.aclose()


async def _the_same_turn_by_turn(grove: Graph, memory: Graph) -> None:
    config, _ = thread()
    for turn in range(1, TURNS + 1):
        for graph in (grove, memory):
            await graph.ainvoke({"messages": [question(str(turn))]}, config)
        on_grove, in_memory = await grove.aget_state(config), await memory.aget_state(config)
        assert summary(on_grove.values["messages"]) == summary(in_memory.values["messages"]), f"turn {turn}"
        assert on_grove.next == in_memory.next == () and on_grove.metadata == in_memory.metadata, f"turn {turn}"
        assert len(await history(grove, config)) == len(await history(memory, config)), f"turn {turn}"
    state = summary(await messages(grove, config))
    assert len(state) == 2 * TURNS + 2 * (TURNS // TOOL_EVERY)
    assert [m[1] for m in state if m[0] == "human"] == [f"h-{t}" for t in range(1, TURNS + 1)]
    assert [m[0] for m in state].count("tool") == TURNS // TOOL_EVERY
    assert state[-1][0] == "ai" and state[-1][2].startswith(f"Answer {TURNS} to h-{TURNS}: ")
    ids = await history(grove, config)
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
    assert ids[0] == (await grove.aget_state(config)).config["configurable"]["checkpoint_id"]


async def test_update_state_from_an_earlier_checkpoint_branches_a_normal_grove_session(server: Server) -> None:
    saver = AsyncGroveSaver(server.socket_url)
    try:
        await _branch(server, build_graph(saver), build_graph(InMemorySaver()))
    finally:
        await saver.aclose()


async def _branch(server: Server, grove: Graph, memory: Graph) -> None:
    config, sid = thread()
    fork: dict[str, RunnableConfig] = {}
    for turn in range(1, TURNS + 1):
        for name, graph in (("grove", grove), ("memory", memory)):
            await graph.ainvoke({"messages": [question(str(turn))]}, config)
            if turn == FORK:
                fork[name] = (await graph.aget_state(config)).config
    before = await history(grove, config)
    old_latest = await grove.aget_state(config)
    at_fork = await messages(grove, fork["grove"])
    assert len(at_fork) < len(old_latest.values["messages"])

    # Rewrite the answer of turn FORK (same message id: add_messages replaces it), then go on.
    answer = at_fork[-1]
    assert isinstance(answer, AIMessage)
    rewrite = AIMessage(content="rewritten: " + str(answer.content), id=answer.id)
    updated = {}
    for name, graph in (("grove", grove), ("memory", memory)):
        updated[name] = await graph.aupdate_state(fork[name], {"messages": [rewrite]})
        for label in ("b1", "b2"):
            await graph.ainvoke({"messages": [question(label)]}, config)

    latest = summary(await messages(grove, config))
    assert latest == summary(await messages(memory, config))
    assert latest[: len(at_fork)] == summary(at_fork[:-1] + [rewrite])
    assert [m[1] for m in latest[len(at_fork) :] if m[0] == "human"] == ["h-b1", "h-b2"]
    assert "h-7" not in {m[1] for m in latest}
    after = await history(grove, config)
    assert len(after) == len(await history(memory, config))
    assert set(before) < set(after), "the old branch's checkpoints are still listed"
    assert after == sorted(after, reverse=True)
    assert summary(await messages(grove, old_latest.config)) == summary(old_latest.values["messages"])

    # The thread's session, read through the server's routes as any grove session is.
    fork_id = fork["grove"]["configurable"]["checkpoint_id"]
    update_id = updated["grove"]["configurable"]["checkpoint_id"]
    async with AsyncGroveClient(server.socket_url, name="test") as g:
        report = await g.verify()
        assert report["ok"] is True and not report["problems"], report
        kinds = {e["id"]: e.get("customType") async for e in g.entries(sid)}
        checkpoints = {i for i, kind in kinds.items() if kind == "langgraph.checkpoint"}
        assert checkpoints == set(after)
        tree = await g.tree(sid)
        nodes = tree["nodes"]
        by_id = {n["id"]: n for n in nodes}
        branch_children = [nodes[i]["id"] for i in by_id[fork_id]["children"] if nodes[i]["id"] in checkpoints]
        assert len(branch_children) == 2 and update_id in branch_children
        old_child = next(c for c in branch_children if c != update_id)
        assert by_id[update_id]["onActivePath"] is True and by_id[old_child]["onActivePath"] is False
        assert by_id[after[0]]["onActivePath"] is True and by_id[before[0]]["onActivePath"] is False
        assert await g.leaf(sid) in {after[0]} | {i for i in kinds if i.startswith(after[0] + "~w")}
        operations = await g.operations(sid)
        assert len(operations) >= len(after)
        assert [o["op"] for o in operations] == sorted((o["op"] for o in operations), reverse=True)
        assert "<html" in (await g.view()).lower()


async def test_a_checkpoint_and_the_writes_saved_at_the_same_time_leave_the_newest_latest(server: Server) -> None:
    # LangGraph's async loop saves a step's writes and the next checkpoint concurrently (both
    # submitted in the background); whatever order their requests land in, the thread's latest
    # checkpoint must be the newest one. (What the graph tests above hit now and then.)
    saver = AsyncGroveSaver(server.socket_url)
    lost = []
    try:
        for round in range(20):
            config: RunnableConfig = {"configurable": {"thread_id": f"race-{os.getpid()}-{next(_threads)}", "checkpoint_ns": ""}}
            first = empty_checkpoint()
            first_config = await saver.aput(config, first, {"step": 0}, {})
            second = create_checkpoint(first, None, 1)
            await asyncio.gather(
                saver.aput(first_config, second, {"step": 1}, {}),
                saver.aput_writes(first_config, [("messages", "x")], "task"),
            )
            latest = await saver.aget_tuple(config)
            assert latest is not None
            if latest.config["configurable"]["checkpoint_id"] != second["id"]:
                lost.append(round)
    finally:
        await saver.aclose()
    assert not lost, f"the latest checkpoint went back to its parent in rounds {lost}"
