"""GroveClient and AsyncGroveClient against the real server: every route, over the unix socket
and over TCP with the token, with the server's error codes."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import random
import threading

import pytest

from grove_client import AsyncGroveClient, GroveClient, GroveError

from .conftest import Server

_ids = itertools.count()


def sid() -> str:
    return f"py-{os.getpid()}-{next(_ids)}"


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


def test_every_route_over_the_unix_socket(server: Server) -> None:
    with GroveClient(server.socket_url, name="py-agent") as g:
        assert g.health()["ok"] is True
        s = sid()
        summary = g.create_session(id=s, cwd="/w")
        assert summary["id"] == s
        assert g.get_session(s)["id"] == s
        a = g.append(s, user("one"))
        b, c = g.append_many(s, [user("two"), user("three")])
        assert g.leaf(s) == c
        assert [m["content"] for m in g.context(s)["messages"]] == ["one", "two", "three"]
        assert [e["id"] for e in g.branch(s)] == [a, b, c]
        assert [e["id"] for e in g.path(s, start=b)] == [a, b]
        assert [e["id"] for e in g.entries(s)] == [a, b, c]
        assert [e["id"] for e in g.children(s, a)] == [b]
        assert g.get_entry(s, b)["id"] == b
        assert g.proof(s, b)["entry"]["id"] == b
        moved = g.set_leaf(s, a)
        assert g.leaf(s) == a and moved
        d = g.append(s, user("four"))
        assert [m["content"] for m in g.context(s)["messages"]] == ["one", "four"]
        assert any(e["type"] == "leaf" for e in g.log(s))
        assert len(g.leaf_history(s)) >= 1
        label_id = g.set_label(s, a, "start")
        assert g.label(s, a) == "start" and g.labels(s)[a] == "start" and label_id
        g.set_name(s, "py session")
        assert g.name(s) == "py session"
        assert g.stats(s)
        tree = g.tree(s)
        assert tree
        # Operations: stamped with the client's name; a point in time; undo; seal.
        ops = g.operations(s)
        assert ops[-1]["kind"] == "append" and all(op["actor"] == "py-agent" for op in ops)
        then = g.context(s, at={"op": 1})
        assert [m["content"] for m in then["messages"]] == ["one", "two", "three"]
        undo = g.undo(s)
        assert undo["kind"] == "undo"
        seal = g.seal(s)
        assert g.check_seal(s, seal["digest"])["extends"] is True
        events = list(g.replay(s))
        assert events[0]["type"] == "start"
        assert sum(1 for e in events if e["type"] == "operation") == len(g.operations(s))
        # Appends with conditions, ids, batches.
        moved_on = g.append_if(s, "nope", user("x"))
        assert moved_on == {"appended": False, "leaf": g.leaf(s)}
        done = g.append_if(s, g.leaf(s), user("y"))
        assert done["appended"] is True and g.leaf(s) == done["id"]
        ids = g.fresh_ids(s, 3)
        assert len(set(ids)) == 3
        results = g.append_batch([{"session": s, "entry": user("batched")}])
        assert len(results) == 1
        # Export, import under another id, fork.
        text = g.export_session(s)
        header = json.loads(text.splitlines()[0])
        other = sid()
        header["id"] = other
        imported = g.import_session("\n".join([json.dumps(header), *text.splitlines()[1:]]) + "\n")
        assert imported["session"] == other
        fork = g.fork_session(s)
        assert fork["id"] != s
        # Turns and navigation.
        turn = g.begin_turn(s, ttl_ms=60_000)
        with pytest.raises(GroveError) as busy:
            g.set_leaf(s, a)
        assert busy.value.code == "busy" and busy.value.status == 409 and busy.value.retryable
        g.renew_turn(s, turn["lease"])
        g.end_turn(s, turn["lease"])
        nav = g.navigate(s, a, summarize=True, summary="what was tried", label="back")
        # A user message navigated to goes back to the editor; the leaf is its parent (the root).
        assert nav["editorText"] == "one" and nav["newLeafId"] is None, nav
        assert g.get_entry(s, nav["summaryEntryId"])["type"] == "branch_summary"
        assert "<html" in g.view().lower()
        assert g.verify()["ok"] is True
        # Base64 of 7,500 bytes that do not compress (an image's): stored as the bytes it decodes
        # to, behind a one-byte tag; "PPPP…" compresses to a few dozen bytes.
        own = base64.b64encode(random.Random(7).randbytes(7_500)).decode()
        g.append(other, user(own))
        g.append(other, user("P" * 10_000))
        g.delete_session(other)
        report = g.gc()
        removed = sorted(r["bytes"] for r in report["removed"])
        assert len(removed) == 2 and 10 < removed[0] < 100 and removed[1] == 7_500 + 1, removed
        with pytest.raises(GroveError) as missing:
            g.get_session(other)
        assert missing.value.code == "not_found" and missing.value.status == 404
        assert not missing.value.retryable


def test_tcp_needs_the_token_and_a_dead_server_is_a_transport_error(server: Server) -> None:
    with GroveClient(server.tcp_url, token=server.token) as g:
        assert g.health()["ok"] is True
    with GroveClient(server.tcp_url, token="wrong") as g, pytest.raises(GroveError) as e:
        g.health()
    assert e.value.code == "unauthorized" and e.value.status == 401 and not e.value.retryable
    with GroveClient("unix:/nonexistent/grove.sock") as g, pytest.raises(GroveError) as e:
        g.health()
    assert e.value.code == "transport" and e.value.retryable
    # The error names where the client looked: the socket path, or the URL.
    assert "GET /v1/health at unix:/nonexistent/grove.sock: " in e.value.message
    with GroveClient("http://127.0.0.1:1") as g, pytest.raises(GroveError) as e:
        g.health()
    assert e.value.code == "transport" and "at http://127.0.0.1:1: " in e.value.message
    with pytest.raises(ValueError):
        GroveClient("ftp://x")
    with pytest.raises(ValueError):
        GroveClient(server.socket_url, name="café")


async def test_the_asyncio_clients_transport_error_names_the_socket() -> None:
    async with AsyncGroveClient("unix:/nonexistent/async.sock") as g:
        with pytest.raises(GroveError) as e:
            await g.health()
    assert e.value.code == "transport" and "at unix:/nonexistent/async.sock: " in e.value.message


async def test_the_asyncio_client_and_a_followed_replay(server: Server) -> None:
    async with AsyncGroveClient(server.tcp_url, token=server.token, name="py-async") as g:
        s = sid()
        await g.create_session(id=s)
        first = await g.append(s, user("before"))
        assert (await g.context(s))["messages"][0]["content"] == "before"
        seen: list[dict[str, object]] = []

        async def follow() -> None:
            async for event in g.replay(s, from_op=1, until_op=2, follow=True):
                seen.append(event)

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.3)
        await g.append(s, user("live 1"))
        await g.append(s, user("live 2"))
        await asyncio.wait_for(follower, 30)
        assert [e["type"] for e in seen] == ["start", "operation", "record", "operation", "record"]
        assert seen[2]["context"]["keep"] == 1  # type: ignore[index]
        assert [e["id"] async for e in g.branch(s)][0] == first
        with pytest.raises(GroveError) as e:
            await g.undo(s, to_op=99)
        assert e.value.code == "not_found"


def test_a_follow_through_the_synchronous_client(server: Server) -> None:
    with GroveClient(server.socket_url) as g:
        s = sid()
        g.create_session(id=s)
        got: list[str] = []

        def follow() -> None:
            with GroveClient(server.socket_url) as f:
                for event in f.replay(s, follow=True, until_op=0):
                    got.append(str(event["type"]))

        t = threading.Thread(target=follow)
        t.start()
        g.append(s, user("one"))
        t.join(30)
        assert got == ["start", "operation", "record"]
