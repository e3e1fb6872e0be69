"""The synchronous client's connections (grove_client/_http.py): kept alive between calls,
shared by threads and by a stream being read, sent again once on a new connection when a
kept-alive one turns out closed before any of an answer arrived (a restarted server), never
sent again after part of an answer, and not kept when an answer says `Connection: close`."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import pathlib
import socketserver
import tempfile
import threading
import time
from collections.abc import AsyncGenerator, Generator, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any, cast

import pytest

from grove_client import AsyncGroveClient, GroveClient, GroveError

from .conftest import Server, serve


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


def test_a_server_restarted_between_two_calls_on_one_client() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp)
        with serve(directory) as first:
            g = GroveClient(first.socket_url)
            s = str(g.create_session()["id"])
            g.append(s, user("before"))
        # The client's kept-alive connection died with the server: the next call (a POST)
        # goes on a new connection to the new server, once.
        with serve(directory) as second, g:
            assert second.socket_url == g.where
            g.append(s, user("after"))
            assert [m["content"] for m in g.context(s)["messages"]] == ["before", "after"]
        # No server any more: a transport error naming the socket.
        with GroveClient(second.socket_url) as h, pytest.raises(GroveError) as e:
            h.health()
        assert e.value.code == "transport" and f"GET /v1/health at {second.socket_url}: " in e.value.message


def test_a_stopped_servers_client_gets_a_transport_error_naming_the_socket() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with serve(pathlib.Path(tmp)) as running:
            g = GroveClient(running.socket_url)
            assert g.health()["ok"] is True
        with g, pytest.raises(GroveError) as e:
            g.health()  # the kept-alive connection is gone, and so is the server
        assert e.value.code == "transport" and e.value.retryable
        assert f"GET /v1/health at {running.socket_url}: " in e.value.message


def test_threads_and_a_stream_being_read_share_one_client(server: Server) -> None:
    with GroveClient(server.tcp_url, token=server.token) as g:
        s = str(g.create_session()["id"])
        ids = [g.append(s, user(f"m{i}")) for i in range(5)]
        # Calls made while a stream is read take another connection.
        assert [(e["id"], g.get_entry(s, e["id"])["id"]) for e in g.branch(s)] == list(zip(ids, ids))
        # A stream left unread closes its connection; the client goes on.
        stream = cast(Generator[dict[str, Any], None, None], g.entries(s))
        assert next(stream)["id"] == ids[0]
        stream.close()
        assert g.leaf(s) == ids[-1]
        errors: list[BaseException] = []

        def work(n: int) -> None:
            try:
                for i in range(20):
                    assert g.get_entry(s, ids[(n + i) % 5])["id"] == ids[(n + i) % 5]
                    assert len(list(g.entries(s))) >= 5
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []


class _Counting:
    """An HTTP server that answers every request with `{"id": "e1"}`, keeping its connections
    alive or not as `mode` says, and counts the requests on each connection."""

    mode: str
    requests: list[int]  # the connection of each request
    url: str

    def configure(self, mode: str) -> None:
        self.mode = mode
        self.requests = []
        self._connections = itertools.count()

    def connection(self) -> int:
        return next(self._connections)


class _UnixFake(_Counting, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class _TcpFake(_Counting, socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Counting  # type: ignore[assignment]

    def setup(self) -> None:
        super().setup()
        self.number = self.server.connection()

    def do_GET(self) -> None:
        self.answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.answer()

    def answer(self) -> None:
        self.server.requests.append(self.number)
        mode = self.server.mode
        if mode == "stall":
            time.sleep(2)  # longer than the client waits
            return
        body = json.dumps({"id": "e1", "ok": True}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        if mode == "partial" and len(self.server.requests) > 1:
            # The head and part of the body, then the connection ends.
            self.send_header("content-length", str(len(body) + 100))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
            return
        self.send_header("content-length", str(len(body)))
        if mode == "close":
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(body)
        # "drop": the connection ends without the answer saying so (as a server that let an idle
        # kept-alive connection go); "close": it says so, yet the connection stays open (the
        # client must not send on it again).
        self.close_connection = mode == "drop"

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def fake(mode: str, transport: str) -> Iterator[_Counting]:
    """The fake server over `transport` ("unix" or "tcp"); its `url` is the client's."""
    with tempfile.TemporaryDirectory() as tmp:
        server: socketserver.BaseServer
        if transport == "unix":
            path = os.path.join(tmp, "fake.sock")
            server = _UnixFake(path, _Handler)
            server.url = f"unix:{path}"
        else:
            server = _TcpFake(("127.0.0.1", 0), _Handler)
            server.url = f"http://127.0.0.1:{server.server_address[1]}"
        assert isinstance(server, _Counting)
        server.configure(mode)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server
        finally:
            server.shutdown()
            server.server_close()
            thread.join(10)


TRANSPORTS = pytest.mark.parametrize("transport", ["unix", "tcp"])


@TRANSPORTS
def test_a_connection_the_server_dropped_is_replaced_and_the_request_sent_once(transport: str) -> None:
    with fake("drop", transport) as server, GroveClient(server.url) as g:
        for _ in range(3):
            assert g.health()["ok"] is True
            assert g.append("s", user("x")) == "e1"
        # Each request arrived once, each on a connection of its own.
        assert server.requests == list(range(6))


@TRANSPORTS
def test_an_answer_saying_connection_close_closes_the_connection(transport: str) -> None:
    with fake("close", transport) as server, GroveClient(server.url) as g:
        for _ in range(3):
            assert g.append("s", user("x")) == "e1"
        assert server.requests == [0, 1, 2]


@TRANSPORTS
def test_a_request_is_not_sent_again_after_part_of_an_answer(transport: str) -> None:
    with fake("partial", transport) as server, GroveClient(server.url) as g:
        assert g.append("s", user("x")) == "e1"
        with pytest.raises(GroveError) as e:
            g.append("s", user("y"))  # on the kept-alive connection: the answer breaks off
        assert e.value.code == "transport" and f"at {server.url}: " in e.value.message
        assert server.requests == [0, 0]


def test_a_closed_client_refuses_calls(server: Server) -> None:
    g = GroveClient(server.tcp_url, token=server.token)
    assert g.health()["ok"] is True
    g.close()
    with pytest.raises(GroveError) as e:
        g.health()
    assert e.value.code == "closed"


# The asyncio client's connections (grove_client/_aio_http.py), the same way.


async def test_the_asyncio_client_across_a_server_restart() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp)
        with serve(directory) as first:
            g = AsyncGroveClient(first.socket_url)
            s = str((await g.create_session())["id"])
            await g.append(s, user("before"))
        with serve(directory):
            await g.append(s, user("after"))
            assert [m["content"] for m in (await g.context(s))["messages"]] == ["before", "after"]
        with pytest.raises(GroveError) as e:
            await g.health()
        await g.close()
        assert e.value.code == "transport" and f"GET /v1/health at {first.socket_url}: " in e.value.message


async def test_the_asyncio_client_shares_its_connections_among_tasks(server: Server) -> None:
    async with AsyncGroveClient(server.tcp_url, token=server.token) as g:
        s = str((await g.create_session())["id"])
        ids = [await g.append(s, user(f"m{i}")) for i in range(5)]
        assert [(e["id"], (await g.get_entry(s, e["id"]))["id"]) async for e in g.branch(s)] == list(zip(ids, ids))
        stream = cast(AsyncGenerator[dict[str, Any], None], g.entries(s))
        assert (await stream.__anext__())["id"] == ids[0]
        await stream.aclose()
        entries = await asyncio.gather(*(g.get_entry(s, ids[i % 5]) for i in range(300)))
        assert [e["id"] for e in entries] == [ids[i % 5] for i in range(300)]


@TRANSPORTS
async def test_the_asyncio_client_replaces_a_dropped_connection(transport: str) -> None:
    with fake("drop", transport) as server:
        async with AsyncGroveClient(server.url) as g:
            for _ in range(3):
                assert (await g.health())["ok"] is True
                assert await g.append("s", user("x")) == "e1"
        assert server.requests == list(range(6))


@TRANSPORTS
async def test_the_asyncio_client_honors_connection_close(transport: str) -> None:
    with fake("close", transport) as server:
        async with AsyncGroveClient(server.url) as g:
            for _ in range(3):
                assert await g.append("s", user("x")) == "e1"
        assert server.requests == [0, 1, 2]


@TRANSPORTS
async def test_the_asyncio_client_does_not_resend_after_part_of_an_answer(transport: str) -> None:
    with fake("partial", transport) as server:
        async with AsyncGroveClient(server.url) as g:
            assert await g.append("s", user("x")) == "e1"
            with pytest.raises(GroveError) as e:
                await g.append("s", user("y"))
        assert e.value.code == "transport" and f"at {server.url}: " in e.value.message
        assert server.requests == [0, 0]


async def test_the_asyncio_clients_timeout_and_close(server: Server) -> None:
    with fake("stall", "unix") as stalled:
        async with AsyncGroveClient(stalled.url, timeout=0.2) as g:
            with pytest.raises(GroveError) as e:
                await g.health()
        assert e.value.code == "transport" and f"GET /v1/health at {stalled.url}: " in e.value.message
    g = AsyncGroveClient(server.tcp_url, token=server.token)
    assert (await g.health())["ok"] is True
    await g.close()
    with pytest.raises(GroveError) as e:
        await g.health()
    assert e.value.code == "closed"


def test_a_timeout_is_a_transport_error_naming_the_socket() -> None:
    with fake("stall", "unix") as stalled, GroveClient(stalled.url, timeout=0.2) as g:
        with pytest.raises(GroveError) as e:
            g.health()
        assert e.value.code == "transport" and f"GET /v1/health at {stalled.url}: " in e.value.message
