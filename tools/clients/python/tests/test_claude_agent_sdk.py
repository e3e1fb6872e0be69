"""`GroveSessionStore` under the Claude Agent SDK: the SDK's own conformance suite for session
stores (`claude_agent_sdk.testing.run_session_store_conformance`, every contract, the optional
methods included), and the SDK's store helpers (list, info, messages, subagents, rename, tag,
fork, delete) run on grove and on the SDK's `InMemorySessionStore` with the same transcript,
their answers compared. Runs on both transports (GROVE_TRANSPORT=in-process makes the socket
fixture a store in this process)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pathlib
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from claude_agent_sdk import (
    InMemorySessionStore,
    get_session_messages,
    delete_session_via_store,
    fork_session_via_store,
    get_session_info_from_store,
    get_session_messages_from_store,
    get_subagent_messages_from_store,
    list_sessions_from_store,
    list_subagents_from_store,
    project_key_for_directory,
    rename_session_via_store,
    tag_session_via_store,
)
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionKey, SessionListSubkeysKey

from grove_client import AsyncGroveClient
from grove_client.claude_agent_sdk import GroveSessionStore, session_of

from .conftest import Server, grove_bin


@pytest.fixture
async def client(server: Server) -> AsyncIterator[AsyncGroveClient]:
    grove = AsyncGroveClient(server.socket_url)
    try:
        yield grove
    finally:
        await grove.close()


def fresh(client: AsyncGroveClient) -> GroveSessionStore:
    """A store of its own: a prefix no other store of the test run uses."""
    return GroveSessionStore(client, prefix=f"cc{uuid.uuid4().hex[:12]}")


async def test_the_sdks_conformance_suite_passes(client: AsyncGroveClient) -> None:
    await run_session_store_conformance(lambda: fresh(client))


def transcript(sid: str, cwd: str) -> list[Any]:
    """A main transcript as Claude Code writes one: a title, two turns with a tool call, a
    compaction boundary and a tag; `uuid`/`parentUuid` links, non-ASCII text."""
    ids = [str(uuid.uuid4()) for _ in range(7)]

    def line(kind: str, i: int, parent: int | None, content: Any, **extra: Any) -> dict[str, Any]:
        role = "user" if kind == "user" else "assistant"
        return {
            "type": kind, "uuid": ids[i], "parentUuid": None if parent is None else ids[parent],
            "sessionId": sid, "isSidechain": False, "timestamp": f"2026-01-01T00:00:0{i}.000Z", "cwd": cwd,
            "message": {"role": role, "content": content}, **extra,
        }

    return [
        line("user", 0, None, "Wie ist das Wetter in Zürich?"),
        line("assistant", 1, 0, [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Zürich"}}]),
        line("user", 2, 1, [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sonnig 😀"}]),
        line("assistant", 3, 2, [{"type": "text", "text": "Sonnig."}]),
        {"type": "custom-title", "customTitle": "Wetter", "sessionId": sid},
        {"type": "system", "subtype": "compact_boundary", "uuid": ids[4], "parentUuid": None, "logicalParentUuid": ids[3],
         "sessionId": sid, "timestamp": "2026-01-01T00:00:04.000Z", "cwd": cwd, "isSidechain": False, "content": "compacted"},
        line("user", 5, 4, "Und morgen?"),
        line("assistant", 6, 5, [{"type": "text", "text": "Regen."}]),
        {"type": "tag", "tag": "weather", "sessionId": sid},
    ]


def plain(value: Any) -> Any:
    """A helper's answer as plain data, for comparing two stores' answers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: plain(v) for k, v in dataclasses.asdict(value).items() if k not in ("last_modified", "mtime")}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k not in ("last_modified", "mtime")}
    return value


async def test_the_sdks_helpers_agree_with_its_in_memory_store(client: AsyncGroveClient) -> None:
    cwd = "/tmp/grove-claude-test"
    pk = project_key_for_directory(cwd)
    grove = fresh(client)
    memory = InMemorySessionStore()
    sid = str(uuid.uuid4())
    lines = transcript(sid, cwd)
    agent: list[Any] = [{"type": "user", "uuid": str(uuid.uuid4()), "parentUuid": None, "sessionId": sid, "isSidechain": True,
              "agentId": "a1", "timestamp": "2026-01-01T00:00:09.000Z", "message": {"role": "user", "content": "Sub task"}},
             {"type": "agent_metadata", "toolUseId": "toolu_9", "sessionId": sid}]
    for store in (grove, memory):
        for start in (0, 3, 5):  # batches, as the SDK's mirror sends them
            await store.append({"project_key": pk, "session_id": sid}, lines[start: {0: 3, 3: 5, 5: None}[start]])
        await store.append({"project_key": pk, "session_id": sid, "subpath": "subagents/agent-a1"}, agent)
        if store is grove:
            # A batch the SDK sent again after a timeout: its uuids are stored once.
            await store.append({"project_key": pk, "session_id": sid}, lines[5:7])
    assert await grove.load({"project_key": pk, "session_id": sid}) == lines

    async def answers(store: Any) -> list[Any]:
        found = [
            plain(await list_sessions_from_store(store, directory=cwd)),
            plain(await get_session_info_from_store(store, sid, directory=cwd)),
            plain(await get_session_messages_from_store(store, sid, directory=cwd)),
            plain(await get_session_messages_from_store(store, sid, directory=cwd, limit=2, offset=1)),
            plain(await list_subagents_from_store(store, sid, directory=cwd)),
            plain(await get_subagent_messages_from_store(store, sid, "a1", directory=cwd)),
        ]
        await rename_session_via_store(store, sid, "Das Wetter", directory=cwd)
        await tag_session_via_store(store, sid, "forecast", directory=cwd)
        found.append(plain(await get_session_info_from_store(store, sid, directory=cwd)))
        forked = await fork_session_via_store(store, sid, directory=cwd, up_to_message_id=lines[3]["uuid"], title="Kopie")
        copy = await store.load({"project_key": pk, "session_id": forked.session_id}) or []
        found.append([(e["type"], e.get("customTitle"), e.get("forkedFrom", {}).get("messageUuid")) for e in copy])
        # The fork's uuids and session id are fresh: compared as what they stand for.
        fresh_ids = {forked.session_id: "fork"} | {e["uuid"]: f"uuid {i}" for i, e in enumerate(copy) if "uuid" in e}
        found.append([
            {k: fresh_ids.get(v, v) if k in ("uuid", "session_id") else v for k, v in message.items()}
            for message in plain(await get_session_messages_from_store(store, forked.session_id, directory=cwd))
        ])
        await delete_session_via_store(store, sid, directory=cwd)
        found.append(await store.load({"project_key": pk, "session_id": sid}))
        found.append(sorted(s.summary for s in await list_sessions_from_store(store, directory=cwd)))
        return found

    on_grove = await answers(grove)
    assert on_grove == await answers(memory)
    # The messages after the compaction boundary, as the SDK walks parentUuid; the deleted session is gone.
    assert len(on_grove[2]) == 2 and on_grove[9] is None


async def test_entries_are_grove_entries_found_by_uuid(client: AsyncGroveClient) -> None:
    store = fresh(client)
    key: SessionKey = {"project_key": "p", "session_id": "s"}
    lines = transcript("s", "/x")
    await store.append(key, lines)
    await store.append(key, lines[:2] + [{"type": "tag", "tag": "again"}])  # two stored, one new
    await store.append(key, [lines[0], lines[0]])  # nothing new
    loaded = await store.load(key)
    assert loaded == lines + [{"type": "tag", "tag": "again"}]
    sid = session_of(key, store.prefix)
    entry = await client.get_entry(sid, lines[1]["uuid"])
    assert entry["data"] == lines[1] and entry["customType"] == "claude.entry"
    details = await client.get_session(sid)
    assert details["metadata"] == {"claudeAgentSdk": {"projectKey": "p", "sessionId": "s"}}


async def test_long_keys_are_hashed_into_a_session_id(client: AsyncGroveClient) -> None:
    store = fresh(client)
    key: SessionKey = {"project_key": "-" + "x" * 250, "session_id": str(uuid.uuid4()), "subpath": "subagents/" + "y" * 100}
    sid = session_of(key, store.prefix)
    assert len(sid) <= 256 and sid.count("-") == 3
    entries: list[Any] = [{"type": "x", "n": 1}]
    await store.append(key, entries)
    assert await store.load(key) == [{"type": "x", "n": 1}]
    main: SessionListSubkeysKey = {"project_key": key["project_key"], "session_id": key["session_id"]}
    assert await store.list_subkeys(main) == ["subagents/" + "y" * 100]
    with pytest.raises(ValueError, match="letters and digits"):
        GroveSessionStore(client, prefix="c-c")


def test_the_example_runs(tmp_path: pathlib.Path) -> None:
    example = pathlib.Path(__file__).resolve().parents[1] / "examples" / "claude_agent_sdk_quickstart.py"
    done = subprocess.run([sys.executable, str(example), str(tmp_path / "store")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "claude session: 4 messages, fork: 2 messages, 2 sessions listed\n"


FOREIGN = pathlib.Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "foreign" / "claude-code"


@pytest.mark.parametrize("project", ["-home-user-work-demo", "-home-user-work-tools"])
def test_the_context_of_an_imported_transcript_is_the_sdks_conversation(
    project: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`grove import --format claude-code` then `grove context`: the messages are exactly what
    the SDK's `get_session_messages` reads from the same file (its leaf, its chain stopping at
    the compaction boundary, the parallel tool calls and results put back, meta and sidechain
    lines left out), and the session's leaf is the SDK's."""
    config = tmp_path / "claude"
    projects = config / "projects"
    projects.mkdir(parents=True)
    source = FOREIGN / project
    shutil.copytree(source, projects / project)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    store = tmp_path / "store"
    report = subprocess.run([grove_bin(), "--store", str(store), "import", "--format", "claude-code", str(source)],
                            check=True, capture_output=True, text=True).stdout
    # "FILE: session ID (N entries, leaf LEAF)"
    leaves = dict(re.findall(r"session (\S+) \(\d+ entries, leaf (\S+)\)", report))
    sessions = [p.stem for p in source.glob("*.jsonl")]
    assert sessions
    for sid in sessions:
        expected = get_session_messages(sid)
        assert expected, f"the SDK reads no messages from {sid}"
        out = subprocess.run([grove_bin(), "--store", str(store), "context", sid, "--json"],
                             check=True, capture_output=True, text=True).stdout
        got = json.loads(out)["messages"]
        assert got == [m.message for m in expected], sid
        assert leaves[sid] == expected[-1].uuid, sid


async def test_concurrent_appends_keep_order_and_leave_no_lock_behind(client: AsyncGroveClient) -> None:
    """Appends to one key wait for each other (their order kept); a session's lock goes with its
    last append, so a long-lived store does not grow with every session it ever wrote."""
    store = fresh(client)
    sid = str(uuid.uuid4())
    key: SessionKey = {"project_key": "p", "session_id": sid}
    uuids = [str(uuid.uuid4()) for _ in range(8)]
    batches: list[list[Any]] = [[{"type": "user", "uuid": u, "sessionId": sid}] for u in uuids]
    await asyncio.gather(*(store.append(key, b) for b in batches))
    loaded = await store.load(key)
    assert loaded is not None
    assert [e["uuid"] for e in loaded] == uuids
    assert store._locks == {}
