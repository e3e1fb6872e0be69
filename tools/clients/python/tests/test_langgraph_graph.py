"""A real LangGraph graph (examples/langgraph_graph.py: a deterministic fake model and a tool) on
AsyncGroveSaver against the real server: the same turns on LangGraph's InMemorySaver give the
same state at every turn and the same history; `aupdate_state` from an earlier checkpoint
branches the thread; and the thread's session is a normal grove session, through the server's
routes (verify, tree, entries, operations, the HTML view) and through grove's CLI once the
server has stopped (`grove verify`, `grove tree`, `grove log`, `grove export --html`). The race
of a checkpoint and its parent's writes saved at once is tested on the saver alone in
tests/test_langgraph.py."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import pathlib
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from examples.langgraph_graph import TOOL_EVERY, build_graph, question, summary
from grove_client import AsyncGroveClient
from grove_client.langgraph import AsyncGroveSaver

from .conftest import Server, grove_bin, serve

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


async def test_update_state_from_an_earlier_checkpoint_branches_a_normal_grove_session() -> None:
    # A server of its own: once the thread is written and read through the routes, the server
    # stops and grove's CLI opens its store (sled holds a store for one process at a time).
    with tempfile.TemporaryDirectory(prefix="lg-graph-") as tmp:
        directory = pathlib.Path(tmp)
        with serve(directory) as server:
            saver = AsyncGroveSaver(server.socket_url)
            try:
                branch = await _branch(server, build_graph(saver), build_graph(InMemorySaver()))
            finally:
                await saver.aclose()
        _the_cli_sees_the_branch(directory / "store", branch, directory / "thread.html")


@dataclass
class Branch:
    """What `_branch` made: the thread's session, the checkpoint `aupdate_state` started from,
    the one it wrote, the latest checkpoint before it, and the history after it (newest first)."""

    sid: str
    fork: str
    update: str
    old_latest: str
    history: list[str]


async def _branch(server: Server, grove: Graph, memory: Graph) -> Branch:
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
        assert await g.leaf(sid) == after[0], "the leaf is the latest checkpoint (writes keep the leaf)"
        operations = await g.operations(sid)
        assert len(operations) >= len(after)
        assert [o["op"] for o in operations] == sorted((o["op"] for o in operations), reverse=True)
        assert "<html" in (await g.view()).lower()
    return Branch(sid, fork_id, update_id, before[0], after)


def _grove(store: pathlib.Path, *args: str) -> str:
    done = subprocess.run([grove_bin(), "--store", str(store), *args], capture_output=True, text=True)
    assert done.returncode == 0, f"grove {' '.join(args)} failed ({done.returncode}): {done.stderr}"
    return done.stdout


def _the_cli_sees_the_branch(store: pathlib.Path, branch: Branch, html: pathlib.Path) -> None:
    """grove's own CLI on the store the server wrote: `verify`, `tree`, `log` and the HTML view
    of the thread's session, as of any session."""
    report = json.loads(_grove(store, "verify", "--json"))
    assert report["problems"] == [] and report["sessions"] >= 1, report
    assert json.loads(_grove(store, "verify", branch.sid, "--json"))["problems"] == []

    # The tree: the checkpoint `aupdate_state` started from has two checkpoint children, the old
    # branch's and the update's; the latest checkpoint is at the end of the update's branch.
    roots = json.loads(_grove(store, "tree", branch.sid, "--json"))
    children: dict[str, list[str]] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        children[node["id"]] = [c["id"] for c in node["children"]]
        stack.extend(node["children"])
    assert set(branch.history) <= set(children)
    checkpoints = set(branch.history)
    at_fork = [c for c in children[branch.fork] if c in checkpoints]
    assert len(at_fork) == 2 and branch.update in at_fork
    drawing = _grove(store, "tree", "--all", "--ascii", branch.sid).splitlines()
    assert len(drawing) >= len(children), "one line per entry, and a line per branch point"
    leaf_lines = [line.lstrip("| ").split() for line in drawing if line.lstrip("| ").startswith("@")]
    assert len(leaf_lines) == 1, leaf_lines
    [(_, short, kind, custom_type)] = leaf_lines
    assert branch.history[0].startswith(short) and (kind, custom_type) == ("custom:", "langgraph.checkpoint")
    assert "bookkeeping" in _grove(store, "tree", branch.sid), "without --all, custom entries are hidden"

    # The log: one operation per checkpoint and per writes entry at least, newest first, the
    # newest leaving the leaf on the latest checkpoint.
    operations = [json.loads(line) for line in _grove(store, "log", branch.sid, "--json").splitlines()]
    assert len(operations) >= len(branch.history)
    assert [o["op"] for o in operations] == list(range(len(operations) - 1, -1, -1))
    assert operations[0]["leafAfter"] == branch.history[0]
    assert any(o["leafAfter"] == branch.old_latest for o in operations)

    # The HTML view of the session: one page holding every checkpoint.
    _grove(store, "export", branch.sid, "--html", "-o", str(html))
    page = html.read_text()
    assert page.lstrip().lower().startswith("<!doctype html")
    assert all(c in page for c in branch.history)


async def test_the_latest_state_this_saver_wrote_is_read_without_the_store(server: Server) -> None:
    writer = AsyncGroveSaver(server.socket_url)
    config, _ = thread()
    graph = build_graph(writer)
    for turn in range(1, TOOL_EVERY + 2):
        await graph.ainvoke({"messages": [question(str(turn))]}, config)
    calls: list[str] = []
    run = writer.client._run

    async def recorded(call: Any) -> Any:
        calls.append(f"{call.method} {call.path}")
        return await run(call)

    writer.client._run = recorded  # type: ignore[method-assign]
    kept = await graph.aget_state(config)
    # The session's summary (its leaf) and the checkpoint's writes: no entry read, whether of
    # the checkpoint or of the ones holding its other channels' values.
    assert calls and not any("/entries/" in call for call in calls), calls
    # What another saver (nothing kept) reads from the store is the same.
    reader = AsyncGroveSaver(server.socket_url)
    read = await build_graph(reader).aget_state(config)
    assert summary(kept.values["messages"]) == summary(read.values["messages"])
    assert kept.config == read.config and kept.metadata == read.metadata
    assert kept.next == read.next and len(kept.values["messages"]) == 2 * (TOOL_EVERY + 1) + 2
    await writer.aclose()
    await reader.aclose()
