"""The example harness (examples/harness.py) on a small load against the real server: what it
reports, what the sessions hold when read back independently, and that its self-check fails when
a session holds something else than was written."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import uuid

from examples import harness
from grove_client import AsyncGroveClient, GroveClient

from .conftest import Server

HARNESS = pathlib.Path(__file__).resolve().parents[1] / "examples" / "harness.py"
ROLES = ["user", "assistant", "toolResult", "assistant"]


def prefix() -> str:
    return f"t{uuid.uuid4().hex[:8]}-"


def check_sessions(server: Server, pre: str, sessions: int, turns: int) -> None:
    """Every session of the run holds exactly its generated messages, in order."""
    with GroveClient(server.socket_url) as g:
        ids = [s["id"] for s in g.list_sessions(after=pre, limit=sessions + 10)["sessions"] if s["id"].startswith(pre)]
        assert ids == [harness.session_id(pre, i) for i in range(sessions)]
        # From the last, before a cursor past the run's ids ("~" sorts after them).
        newest = g.list_sessions(after=pre + "~", limit=sessions, order="desc")["sessions"]
        assert [s["id"] for s in newest] == ids[::-1]
        for i, sid in enumerate(ids):
            assert g.get_session(sid)["entries"] == 4 * turns
            messages = g.context(sid)["messages"]
            assert [m["role"] for m in messages] == ROLES * turns
            for call, result in zip(messages[1::4], messages[2::4]):
                assert call["content"][1]["id"] == result["toolCallId"]
            assert messages == harness.agent_run(7, i, turns)


def test_harness_cli_writes_every_session(server: Server) -> None:
    pre = prefix()
    out = subprocess.run(
        [sys.executable, str(HARNESS), "--url", server.socket_url, "--sessions", "20", "--turns", "3", "--seed", "7",
         "--concurrency", "8", "--prefix", pre, "--verify", "5"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["client"] == "python" and report["mode"] == "direct"
    assert (report["sessions"], report["turns"], report["entries"], report["verified"]) == (20, 3, 240, 5)
    assert report["entriesPerSecond"] > 0 and report["appendP99Ms"] >= report["appendP50Ms"] > 0
    check_sessions(server, pre, 20, 3)


async def test_harness_batch_mode_writes_every_session(server: Server) -> None:
    pre = prefix()
    report, problems = await harness.run(server.socket_url, 20, 3, 7, 20, "batch", pre, 20)
    assert problems == []
    assert (report["mode"], report["entries"], report["verified"]) == ("batch", 240, 20)
    check_sessions(server, pre, 20, 3)


async def test_self_check_finds_a_session_that_differs(server: Server) -> None:
    pre = prefix()
    _, problems = await harness.run(server.socket_url, 3, 2, 7, 3, "direct", pre, 3)
    assert problems == []
    async with AsyncGroveClient(server.socket_url) as g:
        await g.append(harness.session_id(pre, 1), {"role": "user", "content": "one more", "timestamp": 1})
        problems = await harness.verify(g, pre, 7, 2, [0, 1, 2])
        assert problems == [f"{pre}000001: 9 entries, 8 written", f"{pre}000001: 9 context messages, 8 written"]
        # Same count, other content: seed 8 wrote other messages.
        problems = await harness.verify(g, pre, 8, 2, [0])
        assert problems == [f"{pre}000000: context message 0 (user) differs from the one written"]


def test_generated_run_is_deterministic_and_shaped() -> None:
    run = harness.agent_run(1, 0, 50)
    assert run == harness.agent_run(1, 0, 50) and run != harness.agent_run(1, 1, 50)
    assert len(run) == 200 and [m["role"] for m in run[:4]] == ROLES
    assert run[1]["stopReason"] == "toolUse" and run[3]["stopReason"] == "stop"
    assert all(m["usage"]["totalTokens"] > 0 for m in run if m["role"] == "assistant")
    # mulberry32 as the TypeScript harness's Rand (test/random.ts): its first values for seed 1.
    r = harness.Rand(1)
    assert [r.below(1 << 30) for _ in range(3)] == [673315516, 2937458, 566341946]
    # Features of one generated run, pinned on both sides (test/harness.test.ts), so that the two
    # generators stay equal.
    pinned = harness.agent_run(3, 5, 2)
    assert sum(len(m["content"][0]["text"]) for m in pinned) == 5689
    assert [m["toolCallId"] for m in pinned if m["role"] == "toolResult"] == ["toolu_5ed24671d5e9c3ce", "toolu_eacfeba3928eb68b"]
    assert pinned[7]["usage"]["cost"]["total"] == 0.0674256
