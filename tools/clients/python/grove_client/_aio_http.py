"""The asyncio client's HTTP: h11 (the HTTP/1.1 state machine under httpx) over asyncio's
streams, to the unix socket or over TCP, as the synchronous client's (`_http`): a call takes a
kept-alive connection from the client's idle ones (or opens one, at most `MAX_CONNECTIONS` in
use at once; more calls wait their turn) and gives it back once the answer was read to its end.
A kept-alive connection the server has closed meanwhile fails the next request sent on it before
any of an answer arrives: that request is sent again, once, on a new connection; nothing else is
sent twice. An answer that says `Connection: close` closes its connection."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Callable, Optional, TypeVar
from urllib.parse import urlsplit

import h11

from ._calls import Call
from ._http import MAX_IDLE, PIECE, Unanswered
from ._transport import Endpoint, LineSplitter, body, error_of, target, transport_error
from .errors import GroveError

#: The most connections a client has in use at once (as httpx's pool did).
MAX_CONNECTIONS = 100
#: The methods whose request says `content-length: 0` when it has no body (as httpx's).
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

_T = TypeVar("_T")


class _Connection:
    """One HTTP/1.1 connection: h11's state over an asyncio stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: Optional[float]) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.timeout = timeout
        #: Whether any byte of the current answer arrived.
        self.answered = False

    async def send(self, request: h11.Request, content: Optional[bytes]) -> None:
        h = self.h11
        data = h.send(request) or b""
        if content:
            data += h.send(h11.Data(data=content)) or b""
        data += h.send(h11.EndOfMessage()) or b""
        self.writer.write(data)
        await bounded(self.writer.drain(), self.timeout)

    async def next_event(self) -> Any:
        """The next event of the answer (`h11.Response`, `h11.Data`, `h11.EndOfMessage`, ...)."""
        h = self.h11
        while True:
            event = h.next_event()
            if event is not h11.NEED_DATA:
                return event
            try:
                data = await bounded(self.reader.read(PIECE), self.timeout)
            except ConnectionError as e:
                if not self.answered:
                    raise Unanswered(str(e)) from e
                raise
            if not data and not self.answered:
                raise Unanswered("the server closed the connection without answering")
            self.answered = True
            h.receive_data(data)

    async def response(self) -> h11.Response:
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Response):
                return event
            if not isinstance(event, h11.InformationalResponse):
                raise h11.RemoteProtocolError(f"an answer began with {event!r}")

    async def rest(self) -> bytes:
        """The rest of the answer's body, to its end."""
        pieces = []
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Data):
                pieces.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(pieces)
            else:
                raise h11.RemoteProtocolError(f"an answer's body broke off: {event!r}")

    def reusable(self) -> bool:
        """Whether the exchange is done and both sides keep the connection (readied for the next)."""
        h = self.h11
        if h.our_state is h11.DONE and h.their_state is h11.DONE:
            h.start_next_cycle()
            self.answered = False
            return not self.reader.at_eof()
        return False

    def close(self) -> None:
        self.writer.close()


async def bounded(step: Awaitable[_T], timeout: Optional[float]) -> _T:
    """`step`, within `timeout` seconds (None: no bound)."""
    if timeout is None:
        return await step
    try:
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(timeout):  # no task of its own, as wait_for makes
                return await step
        return await asyncio.wait_for(step, timeout)
    except asyncio.TimeoutError:
        raise TimeoutError(f"no answer within {timeout} s") from None


class _Lease:
    """A connection lent to one call, and whether its answer was read to its end."""

    __slots__ = ("conn", "response", "done")

    def __init__(self, conn: _Connection, response: h11.Response) -> None:
        self.conn = conn
        self.response = response
        self.done = False


class AsyncHttp:
    """The connections of one asyncio client to `grove serve`."""

    def __init__(self, server: Endpoint) -> None:
        self.where = server.where
        self._timeout = server.timeout
        self._prefix = ""
        self._open: Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
        if server.socket is not None:
            path = server.socket
            host = "localhost"
            self._open = lambda: asyncio.open_unix_connection(path)
        else:
            url = urlsplit(server.base_url)
            hostname, port = url.hostname or "localhost", url.port or 80
            host = url.netloc
            self._prefix = url.path.rstrip("/")
            self._open = lambda: asyncio.open_connection(hostname, port)
        self._headers = [(b"host", host.encode()), *((k.encode(), v.encode()) for k, v in server.headers.items())]
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self._closed = False

    async def run(self, call: Call) -> tuple[int, bytes]:
        """The status and the whole body of the call's answer."""
        async with self._exchange(call) as lease:
            content = await lease.conn.rest()
            lease.done = True
            return lease.response.status_code, content

    async def lines(self, call: Call) -> AsyncIterator[Any]:
        """The values of the call's JSON-lines answer as its pieces arrive; an error answer raises."""
        async with self._exchange(call) as lease:
            conn = lease.conn
            if lease.response.status_code >= 400:
                content = await conn.rest()
                lease.done = True
                raise error_of(call, lease.response.status_code, content)
            splitter = LineSplitter(call)
            while True:
                event = await conn.next_event()
                if isinstance(event, h11.Data):
                    for value in splitter.feed(event.data):
                        yield value
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    raise h11.RemoteProtocolError(f"an answer's body broke off: {event!r}")
            lease.done = True
            for value in splitter.end():
                yield value

    @contextlib.asynccontextmanager
    async def _exchange(self, call: Call) -> AsyncIterator[_Lease]:
        """A turn of the client's connections: the call sent, its answer's head read; the
        connection given back (kept if the answer was read to its end) when the turn ends."""
        await bounded(self._slots.acquire(), self._timeout)
        try:
            conn, response = await self._send(call)
            lease = _Lease(conn, response)
            try:
                yield lease
            except (OSError, h11.ProtocolError) as e:
                raise transport_error(call, e, self.where) from e
            finally:
                self._give_back(conn, lease.done)
        finally:
            self._slots.release()

    async def close(self) -> None:
        """Closes the idle connections; those in use close when their answer is done."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        for conn in idle:
            try:
                await conn.writer.wait_closed()
            except OSError:
                pass

    async def _send(self, call: Call) -> tuple[_Connection, h11.Response]:
        """Sends the call; its answer's status and headers. A request that failed on a kept-alive
        connection before any of an answer arrived goes again on a new connection."""
        if self._closed:
            raise GroveError("closed", 0, f"{call.method} {call.path} at {self.where}: the client was closed")
        content, content_type = body(call)
        headers = self._headers.copy()
        if content_type is not None:
            headers.append((b"content-type", content_type.encode()))
        if content or call.method in _BODY_METHODS:
            headers.append((b"content-length", b"%d" % len(content or b"")))
        request = h11.Request(method=call.method, target=self._prefix + target(call), headers=headers)
        for first in (True, False):
            conn = self._take() if first else None
            reused = conn is not None
            sent = False
            try:
                if conn is None:
                    reader, writer = await bounded(self._open(), self._timeout)
                    conn = _Connection(reader, writer, self._timeout)
                await conn.send(request, content)
                sent = True
                return conn, await conn.response()
            except (OSError, h11.ProtocolError) as e:
                if conn is not None:
                    conn.close()
                # Before the answer, the connection's end shows as any ConnectionError while
                # sending (a broken pipe, a reset) or, once sent, as `Unanswered`.
                if first and reused and isinstance(e, Unanswered if sent else ConnectionError):
                    continue
                raise transport_error(call, e, self.where) from e
            except BaseException:
                if conn is not None:
                    conn.close()
                raise
        raise AssertionError("unreachable")

    def _take(self) -> Optional[_Connection]:
        """An idle connection whose server has not closed it as far as is known, if any."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.reader.at_eof() and not conn.writer.is_closing():
                return conn
            conn.close()
        return None

    def _give_back(self, conn: _Connection, done: bool) -> None:
        if done and conn.reusable() and not self._closed and len(self._idle) < MAX_IDLE:
            self._idle.append(conn)
        else:
            conn.close()
