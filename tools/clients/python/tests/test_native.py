"""The store opened in this process (`grove_client.open`, the extension module): shared within
the process, refused to another with `locked` naming it, reached through its server when a
`grove serve` holds it, and every acknowledged append kept when an embedding process is killed."""

from __future__ import annotations

import asyncio
import json
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from typing import Any

import pytest

import grove_client
from grove_client import GroveError
from grove_client import aio as grove_aio

from .conftest import serve

#: A process embedding the store: opens it (sync durability), prints `open`, then appends to the
#: session one message after another, printing `{"id"}` for each acknowledged one, until killed.
EMBEDDER = """
import json, sys
import grove_client
client = grove_client.open(sys.argv[1], durability="sync", fallback="error")
print("open", flush=True)
i = 0
while True:
    entry_id = f"q{i}-" + sys.argv[3]
    client.append(sys.argv[2], {"role": "user", "content": f"append {i}"}, id=entry_id)
    print(json.dumps({"id": entry_id}), flush=True)
    i += 1
"""


def embedder(store: pathlib.Path, sid: str, tag: str) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", EMBEDDER, str(store), sid, tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if line != "open\n":
        child.kill()
        raise AssertionError(f"the embedding process did not open the store: {line!r} {child.stderr.read() if child.stderr else ''}")
    return child


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"durability": "fsync"}, 'durability "fsync"'),
        ({"backend": "rocksdb"}, 'backend "rocksdb"'),
        ({"lock_wait_seconds": -1.0}, 'lock_wait_seconds "-1"'),
    ],
)
def test_an_option_it_cannot_take_is_refused_by_name(tmp_path: pathlib.Path, options: dict[str, Any], named: str) -> None:
    with pytest.raises(GroveError) as refused:
        grove_client.open(str(tmp_path / "store"), **options)
    assert refused.value.code == "invalid_argument"
    assert named in str(refused.value)
    grove_client.open(str(tmp_path / "store"), durability="group").close()


def test_clients_of_this_process_share_the_store_and_the_last_closes_it(tmp_path: pathlib.Path) -> None:
    store = tmp_path / "store"
    first = grove_client.open(str(store))
    second = grove_client.open(str(store), name="second")
    assert first.where == f"in-process:{store}"
    sid = first.create_session()["id"]
    second.append(sid, {"role": "user", "content": "from the second"})
    first.close()
    assert "second" in [op["actor"] for op in second.operations(sid)]
    assert [e["message"]["content"] for e in second.entries(sid)] == ["from the second"]
    second.close()
    with pytest.raises(GroveError) as closed:
        second.leaf(sid)
    assert closed.value.code == "closed"
    with grove_client.open(str(store)) as again:
        assert len(again.context(sid)["messages"]) == 1


async def test_the_asyncio_client_in_process_streams_and_errs_as_the_server(tmp_path: pathlib.Path) -> None:
    client = grove_aio.open(str(tmp_path / "store"), durability="none")
    sid = (await client.create_session())["id"]
    await client.append_many(sid, [{"role": "user", "content": f"m{i} " + "x" * 300} for i in range(2000)])
    seen = 0
    async for _ in client.entries(sid):
        seen += 1
    assert seen == 2000
    with pytest.raises(GroveError) as missing:
        await client.get_entry(sid, "nope")
    assert (missing.value.code, missing.value.status) == ("not_found", 404)
    await client.close()


async def test_the_asyncio_client_runs_quick_reads_on_the_loops_thread(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = grove_aio.open(str(tmp_path / "store"), durability="none")
    sid = str((await client.create_session())["id"])
    first = await client.append(sid, {"role": "user", "content": "one", "timestamp": 1})
    handed: list[str] = []
    to_thread = asyncio.to_thread

    async def counted(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(func, "__name__", "?"))
        return await to_thread(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    # The quick reads: no hand-over to a thread, the same answers.
    assert (await client.get_session(sid))["id"] == sid
    assert await client.leaf(sid) == first
    assert (await client.get_entry(sid, first))["id"] == first
    assert [e["id"] async for e in client.children(sid, None)] == [first]
    with pytest.raises(GroveError) as missing:
        await client.get_entry(sid, "nope")
    assert missing.value.code == "not_found"
    assert handed == []
    # A write and a longer read go to a worker thread.
    await client.append(sid, {"role": "user", "content": "two", "timestamp": 2})
    assert [m["content"] for m in (await client.context(sid))["messages"]] == ["one", "two"]
    assert len(handed) == 2
    await client.close()


def test_another_process_gets_locked_naming_it_and_a_server_is_used_instead(tmp_path: pathlib.Path) -> None:
    store = tmp_path / "store"
    with grove_client.open(str(store)) as seed:
        sid = seed.create_session()["id"]
    child = embedder(store, sid, "lock")
    try:
        for fallback in ("error", "server"):  # no server holds it: nowhere to fall back to
            with pytest.raises(GroveError) as locked:
                grove_client.open(str(store), fallback=fallback)
            assert locked.value.code == "locked"
            assert f"process {child.pid}" in str(locked.value)
    finally:
        child.kill()
        child.wait()
    with tempfile.TemporaryDirectory() as tmp, serve(pathlib.Path(tmp)) as running:
        served = pathlib.Path(tmp) / "store"
        with pytest.raises(GroveError) as locked:
            grove_client.open(str(served), fallback="error")
        assert locked.value.code == "locked"
        with grove_client.open(str(served)) as client:
            assert client.where == running.socket_url
            new = client.create_session()["id"]
            assert isinstance(client.append(new, {"role": "user", "content": "through the server"}), str)


def test_every_append_a_killed_embedding_process_acknowledged_is_kept_once(tmp_path: pathlib.Path) -> None:
    store = tmp_path / "store"
    with grove_client.open(str(store)) as seed:
        sid = seed.create_session()["id"]
    acked: list[str] = []
    chance = random.Random(30)
    for cycle in range(20):
        child = embedder(store, sid, f"c{cycle}")
        time.sleep(0.02 + chance.random() * 0.2)
        child.kill()
        out, err = child.communicate()
        assert err == "" or "Traceback" not in err, err
        # A line the kill cut short was not acknowledged.
        for line in out.split("\n")[:-1]:
            acked.append(json.loads(line)["id"])
    with grove_client.open(str(store)) as client:
        ids = [e["id"] for e in client.entries(sid)]
        assert len(ids) == len(set(ids))
        missing = set(acked) - set(ids)
        assert not missing, f"acknowledged but missing: {sorted(missing)[:5]}"
        assert len(acked) > 20
        assert client.verify()["ok"]
