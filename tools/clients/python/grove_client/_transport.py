"""Where the server is (`unix:/path` or `http://host:port`, like `GROVE_URL`), the headers every
request carries, a call's request target, and reading answers: an error answer as a
`GroveError`, a whole answer's value, JSON lines as they arrive."""

from __future__ import annotations

import json
import os
import re
from typing import Any, NamedTuple, Optional, Union
from urllib.parse import urlencode

from ._calls import Call
from .errors import GroveError

#: A `Grove-Client` name: 1 to 64 printable ASCII characters.
_NAME = re.compile(r"^[\x20-\x7e]{1,64}$")


def endpoint(url: Optional[str]) -> tuple[str, Optional[str]]:
    """The base URL of `url` and, for a unix socket, its path. `None`: `GROVE_URL`."""
    url = url if url is not None else os.environ.get("GROVE_URL")
    if not url:
        raise ValueError("no server address: pass url= or set GROVE_URL (unix:/path or http://host:port)")
    if url.startswith("unix:"):
        path = url[len("unix:") :]
        if path.startswith("//"):
            path = path[2:] if path.startswith("///") else path
        if not path:
            raise ValueError(f"grove url {url!r} names no socket")
        return "http://localhost", path
    if url.startswith("http://"):
        return url.rstrip("/"), None
    raise ValueError(f"grove url {url!r} is neither unix:PATH nor http://HOST:PORT")


def headers(token: Optional[str], name: Optional[str]) -> dict[str, str]:
    token = token if token is not None else (os.environ.get("GROVE_TOKEN") or None)
    out = {}
    if token:
        out["authorization"] = f"Bearer {token}"
    if name is not None:
        if not _NAME.match(name):
            raise ValueError("a client name is 1 to 64 printable ASCII characters")
        out["grove-client"] = name
    return out


def target(call: Call) -> str:
    """The call's path with its query (`None` values left out, booleans as `true`/`false`)."""
    if not call.query:
        return call.path
    params = {k: _param(v) for k, v in call.query.items() if v is not None}
    return f"{call.path}?{urlencode(params)}" if params else call.path


def body(call: Call) -> tuple[Optional[bytes], Optional[str]]:
    """The call's request body and its content type (`None`, `None`: no body)."""
    if call.raw is not None:
        return call.raw, call.raw_type or "application/octet-stream"
    if call.body is not None:
        return json.dumps(call.body).encode(), "application/json"
    return None, None


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def error_of(call: Call, status: int, body: Union[bytes, str]) -> GroveError:
    try:
        answer = json.loads(body)
        return GroveError(str(answer["code"]), status, str(answer["message"]))
    except (ValueError, KeyError, TypeError):
        text = body if isinstance(body, str) else body.decode("utf-8", "replace")
        return GroveError("invalid_response", status, f"{call.method} {call.path}: {text[:200]}")


def transport_error(call: Call, error: Exception, where: str) -> GroveError:
    """A failure to reach the server at `where` (`unix:/path` or the base URL) or to read its
    answer: the message names the address, the call and the cause."""
    return GroveError("transport", 0, f"{call.method} {call.path} at {where}: {error}")


def parse_line(call: Call, line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError as e:
        raise GroveError("invalid_response", 200, f"{call.method} {call.path}: a line is not JSON: {e}") from e


def decode(call: Call, body: Union[bytes, str]) -> Any:
    """A whole answer's value: `bytes` from HTTP, `str` from the extension (already text)."""
    if call.answer == "none":
        return None
    if call.answer == "text":
        return body if isinstance(body, str) else body.decode("utf-8")
    if call.answer == "lines":
        text = body if isinstance(body, str) else body.decode("utf-8")
        return [parse_line(call, line) for line in text.splitlines() if line.strip()]
    try:
        value = json.loads(body) if body else None
    except ValueError as e:
        raise GroveError("invalid_response", 200, f"{call.method} {call.path}: not JSON: {e}") from e
    return call.pick(value) if call.pick else value


class Endpoint(NamedTuple):
    """What a client of `grove serve` needs to reach it."""

    #: `unix:PATH` or the base URL: what transport errors name.
    where: str
    #: `http://localhost` for a unix socket, else the server's base URL.
    base_url: str
    #: The unix socket's path, or None for TCP.
    socket: Optional[str]
    #: The headers every request carries (the token, the client's name).
    headers: dict[str, str]
    #: Seconds each wait for the server may take; None: no bound.
    timeout: Optional[float]


def client_args(url: Optional[str], token: Optional[str], name: Optional[str], timeout: Optional[float]) -> Endpoint:
    base, socket = endpoint(url)
    return Endpoint(f"unix:{socket}" if socket else base, base, socket, headers(token, name), timeout)


class LineSplitter:
    """JSON values of the lines of a body that arrives in pieces."""

    def __init__(self, call: Call) -> None:
        self._call = call
        self._pending = b""

    def feed(self, piece: bytes) -> list[Any]:
        data = self._pending + piece
        lines = data.split(b"\n")
        self._pending = lines.pop()
        return [parse_line(self._call, line.decode("utf-8")) for line in lines if line.strip()]

    def end(self) -> list[Any]:
        rest, self._pending = self._pending, b""
        return [parse_line(self._call, rest.decode("utf-8"))] if rest.strip() else []
