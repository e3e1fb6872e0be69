"""grove in this process: the store opened by the extension module `grove_client._native`
(PyO3; built with cargo by `pip install tools/clients/python`), carrying the clients' calls
instead of HTTP. The module answers every route of docs/api.md by the server's own route table,
so a call's JSON, errors and streams are those of `grove serve`.

A store belongs to one process; within it, opens of one directory share the store (counted:
the last `close` flushes and closes it). When another process holds it, opening fails with a
`locked` `GroveError` naming the holder, unless the holder is a running `grove serve` (its
`serve.json` in the store directory names its socket) and `fallback` is `"server"` (the
default): then the caller gets that server's `unix:` URL to talk to instead."""

from __future__ import annotations

import json
import os
import pathlib
import re
import threading
from collections.abc import Iterator
from typing import Any, Optional, Union

from ._calls import Call
from ._transport import LineSplitter, decode, error_of, target
from .errors import GroveError

#: The URL form of a store opened in this process: `in-process:/path/to/store`.
IN_PROCESS = "in-process:"

_CODE = re.compile(r"^([a-z_]+): (.*)$", re.DOTALL)
_NAME = re.compile(r"^[\x20-\x7e]{1,64}$")

_lock = threading.Lock()
#: The stores open in this process, by directory: the native store and how many hold it.
_open: dict[str, list[Any]] = {}


def _native_error(error: Exception, where: str) -> GroveError:
    match = _CODE.match(str(error))
    if match is None:
        return GroveError("transport", 0, f"{where}: {error}")
    return GroveError(match.group(1), 0, match.group(2))


def _module() -> Any:
    try:
        from . import _native
    except ImportError as e:
        raise GroveError(
            "unavailable",
            0,
            f"grove's extension module is not built ({e}): install the package with pip from the "
            "checkout (`pip install tools/clients/python`), which builds it with cargo",
        ) from e
    return _native


def _serving(path: str) -> Optional[str]:
    """The `unix:` URL of the running server that holds the store at `path`, if one says so."""
    try:
        value = json.loads(pathlib.Path(path, "serve.json").read_text())
        pid, socket = value["pid"], value["socket"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(pid, int) or not isinstance(socket, str):
        return None
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return None
    return f"unix:{socket}"


class Embedded:
    """One client's hold on a store open in this process."""

    def __init__(self, path: str, store: Any, name: Optional[str]) -> None:
        self.path = path
        self.where = f"{IN_PROCESS}{path}"
        self._store: Any = store
        self._headers: list[tuple[str, str]] = [] if name is None else [("grove-client", name)]
        self._json_headers = [*self._headers, ("content-type", "application/json")]

    def _request(self, call: Call) -> tuple[str, list[tuple[str, str]], Optional[bytes]]:
        # The header lists are the extension's to read, never changed: shared between calls.
        if call.raw is not None:
            headers = [*self._headers, ("content-type", call.raw_type or "application/octet-stream")]
            return target(call), headers, call.raw
        if call.body is not None:
            return target(call), self._json_headers, json.dumps(call.body).encode()
        return target(call), self._headers, None

    def _live(self, call: Call) -> Any:
        store = self._store
        if store is None:
            raise GroveError("closed", 0, f"{call.method} {call.path} at {self.where}: the store was closed")
        return store

    def run(self, call: Call) -> Any:
        """A call's decoded answer (the whole body read)."""
        store = self._live(call)
        target, headers, body = self._request(call)
        try:
            status, content = store.request(call.method, target, headers, body)
        except RuntimeError as e:
            raise _native_error(e, f"{call.method} {call.path} at {self.where}") from e
        if status >= 400:
            raise error_of(call, status, content)
        return decode(call, content)

    def open_stream(self, call: Call) -> Any:
        """A call's answer whose body is read piece by piece (`read_piece`); an error answer raises."""
        store = self._live(call)
        target, headers, body = self._request(call)
        try:
            reply = store.stream(call.method, target, headers, body)
        except RuntimeError as e:
            raise _native_error(e, f"{call.method} {call.path} at {self.where}") from e
        if reply.status >= 400:
            content = b"".join(iter(lambda: self.read_piece(call, reply), b""))
            raise error_of(call, reply.status, content)
        return reply

    def read_piece(self, call: Call, reply: Any) -> bytes:
        """The next piece of a streamed body; b"" at its end."""
        try:
            piece = reply.read()
        except RuntimeError as e:
            raise _native_error(e, f"{call.method} {call.path} at {self.where}") from e
        return b"" if piece is None else bytes(piece)

    def lines(self, call: Call) -> Iterator[Any]:
        """A call's JSON-lines answer, value by value as the pieces arrive."""
        reply = self.open_stream(call)
        splitter = LineSplitter(call)
        try:
            while piece := self.read_piece(call, reply):
                yield from splitter.feed(piece)
            yield from splitter.end()
        finally:
            reply.close()

    def named(self, name: Optional[str]) -> Embedded:
        """Another hold on the same store, for a client of another name."""
        return attach(self.path, {}, name)

    def close(self) -> None:
        """Lets go of the store; the last hold flushes and closes it."""
        store, self._store = self._store, None
        if store is None:
            return
        with _lock:
            held = _open.get(self.path)
            if held is None or held[0] is not store:
                return
            held[1] -= 1
            if held[1] > 0:
                return
            del _open[self.path]
        store.close()


def attach(path: str, options: dict[str, Any], name: Optional[str]) -> Embedded:
    """A hold on the store at `path`, opened (with `options`) when this process has it not yet."""
    if name is not None and not _NAME.match(name):
        raise ValueError("a client name is 1 to 64 printable ASCII characters")
    path = os.path.abspath(path)
    with _lock:
        held = _open.get(path)
        if held is None:
            try:
                store = _module().NativeStore.open(path, **options)
            except RuntimeError as e:
                raise _native_error(e, f"opening {path}") from e
            held = [store, 0]
            _open[path] = held
        held[1] += 1
        return Embedded(path, held[0], name)


def held_by_url(url: Optional[str], name: Optional[str]) -> Optional[Embedded]:
    """A hold on the store that `url` (default `GROVE_URL`) names as `in-process:DIR`, if it does."""
    given = url if url is not None else os.environ.get("GROVE_URL")
    if given is None or not given.startswith(IN_PROCESS):
        return None
    return attach(given[len(IN_PROCESS) :], {}, name)


def open_or_serving(path: str, options: dict[str, Any], name: Optional[str], fallback: str) -> Union[Embedded, str]:
    """A hold on the store at `path`, or, when a running `grove serve` holds it and `fallback`
    is `"server"`, that server's `unix:` URL."""
    if fallback not in ("server", "error"):
        raise ValueError(f"fallback {fallback!r}: 'server' or 'error' expected")
    try:
        return attach(path, options, name)
    except GroveError as e:
        url = _serving(os.path.abspath(path)) if e.code == "locked" and fallback == "server" else None
        if url is None:
            raise
        return url
