"""Where the server is (`unix:/path` or `http://host:port`, like `GROVE_URL`), the headers every
request carries, and turning an error answer into a `GroveError`."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Optional, Union

import httpx

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


def request_args(call: Call) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if call.query:
        args["params"] = {k: _param(v) for k, v in call.query.items() if v is not None}
    if call.raw is not None:
        args["content"] = call.raw
        args["headers"] = {"content-type": call.raw_type or "application/octet-stream"}
    elif call.body is not None:
        args["content"] = json.dumps(call.body).encode()
        args["headers"] = {"content-type": "application/json"}
    return args


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


def client_args(url: Optional[str], token: Optional[str], name: Optional[str], timeout: Optional[float]) -> dict[str, Any]:
    base, socket = endpoint(url)
    return {
        "where": f"unix:{socket}" if socket else base,
        "base_url": base,
        "headers": headers(token, name),
        "timeout": httpx.Timeout(timeout),
        "socket": socket,
    }
