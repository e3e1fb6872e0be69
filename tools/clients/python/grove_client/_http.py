"""The synchronous client's HTTP: the standard library's `http.client`, over the unix socket or
TCP. A call takes a kept-alive connection from the client's idle ones (or opens one) and gives it
back once the answer was read to its end, so a client may be shared by threads and may make
calls while one of its streams is being read. A kept-alive connection the server has closed
meanwhile (it restarted, or it let an idle connection go) fails the next request sent on it
before any of an answer arrives: that request is sent again, once, on a new connection. Nothing
else is sent twice: a connection that broke off after part of an answer is a `transport` error.
An answer that says `Connection: close` closes its connection."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, Optional, Union
from urllib.parse import urlsplit

from ._calls import Call
from ._transport import Endpoint, LineSplitter, body, error_of, target, transport_error
from .errors import GroveError

if TYPE_CHECKING:
    from http.client import _DataType

#: The most idle connections a client keeps (as httpx's pool did).
MAX_IDLE = 20
#: The most bytes of a streamed answer read at once.
PIECE = 65536


class Unanswered(ConnectionError):
    """The connection ended before the first byte of the answer: the server had closed it (a
    kept-alive connection it let go), or it was reset."""


class _Response(http.client.HTTPResponse):
    def begin(self) -> None:
        # Whether any of the answer arrived is what decides a retry: look at its first byte (the
        # read the status line needs anyway) before `http.client` parses it.
        try:
            first = self.fp.peek(1)
        except ConnectionError as e:
            raise Unanswered(str(e)) from e
        if not first:
            raise Unanswered("the server closed the connection without answering")
        super().begin()


class _Connection(http.client.HTTPConnection):
    """`http.client`'s connection, writing a request's head and body at once (`http.client`
    writes them apart: a second system call, and a server woken twice)."""

    response_class = _Response
    _joined = False
    _head: Optional[bytes] = None

    def send_request(self, method: str, url: str, content: Optional[bytes], headers: dict[str, str]) -> None:
        self._joined = bool(content)
        try:
            self.request(method, url, content, headers)
        finally:
            self._joined = False
            self._head = None

    def send(self, data: Union[_DataType, str]) -> None:
        if self._joined and isinstance(data, bytes):
            if self._head is None:
                self._head = data  # the head: it goes with the body, next
                return
            data, self._head = self._head + data, None
        super().send(data)


class _TcpConnection(_Connection):
    pass


class _UnixConnection(_Connection):
    """An HTTP connection over the unix socket at `socket_path`."""

    def __init__(self, socket_path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class Http:
    """The connections of one synchronous client to `grove serve`."""

    def __init__(self, server: Endpoint) -> None:
        self.where = server.where
        timeout = server.timeout
        self._prefix = ""
        self._connect: Callable[[], _Connection]
        if server.socket is not None:
            path = server.socket
            self._connect = lambda: _UnixConnection(path, timeout)
        else:
            url = urlsplit(server.base_url)
            host, port = url.hostname or "localhost", url.port
            self._prefix = url.path.rstrip("/")
            self._connect = lambda: _TcpConnection(host, port, timeout=timeout)
        self._headers = server.headers
        self._typed: dict[str, dict[str, str]] = {}
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def run(self, call: Call) -> tuple[int, bytes]:
        """The status and the whole body of the call's answer."""
        conn, response = self._send(call)
        try:
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as e:
            raise transport_error(call, e, self.where) from e
        finally:
            self._give_back(conn, response)

    def lines(self, call: Call) -> Iterator[Any]:
        """The values of the call's JSON-lines answer as its pieces arrive; an error answer raises."""
        conn, response = self._send(call)
        try:
            if response.status >= 400:
                raise error_of(call, response.status, response.read())
            splitter = LineSplitter(call)
            while piece := response.read1(PIECE):
                yield from splitter.feed(piece)
            if response.length:
                raise http.client.IncompleteRead(b"", response.length)
            yield from splitter.end()
        except (OSError, http.client.HTTPException) as e:
            raise transport_error(call, e, self.where) from e
        finally:
            self._give_back(conn, response)

    def close(self) -> None:
        """Closes the idle connections; those in use close when their answer is done."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _send(self, call: Call) -> tuple[_Connection, http.client.HTTPResponse]:
        """Sends the call; its answer with the status and headers read. A request that failed on a
        kept-alive connection before any of an answer arrived goes again on a new connection."""
        path = self._prefix + target(call)
        content, content_type = body(call)
        headers = self._headers if content_type is None else self._with_type(content_type)
        for first in (True, False):
            conn, reused = self._take(call, fresh=not first)
            sent = False
            try:
                conn.send_request(call.method, path, content, headers)
                sent = True
                return conn, conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                # Before the answer, the connection's end shows as any ConnectionError while
                # sending (a broken pipe, a reset) or, once sent, as `Unanswered`.
                if first and reused and isinstance(e, Unanswered if sent else ConnectionError):
                    continue
                raise transport_error(call, e, self.where) from e
            except BaseException:
                conn.close()
                raise
        raise AssertionError("unreachable")

    def _with_type(self, content_type: str) -> dict[str, str]:
        headers = self._typed.get(content_type)
        if headers is None:
            headers = {**self._headers, "content-type": content_type}
            self._typed[content_type] = headers
        return headers

    def _take(self, call: Call, fresh: bool) -> tuple[_Connection, bool]:
        """An idle connection (`True`: kept alive from an earlier call) or, with `fresh` or none
        idle, a new one (connected when the request is sent)."""
        with self._lock:
            if self._closed:
                raise GroveError("closed", 0, f"{call.method} {call.path} at {self.where}: the client was closed")
            if self._idle and not fresh:
                return self._idle.pop(), True
        return self._connect(), False

    def _give_back(self, conn: _Connection, response: http.client.HTTPResponse) -> None:
        """Keeps the connection for the next call if its answer was read to the end and the
        server keeps it open; closes it otherwise."""
        if response.isclosed() and not response.will_close:
            with self._lock:
                if not self._closed and len(self._idle) < MAX_IDLE:
                    self._idle.append(conn)
                    return
        response.close()
        conn.close()
