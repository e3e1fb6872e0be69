"""The client has a call for every route the server serves (tools/src/serve/routes/mod.rs,
ROUTES, which a Rust test checks against docs/api.md)."""

from __future__ import annotations

import inspect
import pathlib
import re

from grove_client import _calls

ROOT = pathlib.Path(__file__).resolve().parents[4]
NAMES = {"sid": "SID", "eid": "EID", "lease": "LEASE"}


def served() -> set[tuple[str, str]]:
    text = (ROOT / "tools" / "src" / "serve" / "routes" / "mod.rs").read_text()
    start = text.index("pub const ROUTES")
    block = text[start : text.index("};", start)]
    return {(m.upper(), p) for m, p in re.findall(r'^\s*(Get|Post|Put|Delete) "([^"]+)"', block, re.M)}


def called() -> set[tuple[str, str]]:
    out = set()
    for name, fn in inspect.getmembers(_calls, inspect.isfunction):
        if fn.__module__ != _calls.__name__ or inspect.signature(fn).return_annotation != "Call":
            continue
        params = inspect.signature(fn).parameters
        args: list[object] = [NAMES[p] if p in NAMES else _default(p) for p in params]
        call = fn(*args)
        path = call.path
        for key, dummy in NAMES.items():
            path = path.replace(dummy, "{" + key + "}")
        out.add((call.method, path))
    return out


def _default(param: str) -> object:
    return {"entry": {}, "entries": [], "items": [], "options": {}, "count": 1, "jsonl": b"", "digest": "d",
            "target": "T", "target_id": "T", "name": "n", "follow": False, "log": False}.get(param)


def test_every_served_route_has_a_call() -> None:
    calls = called()
    # A GET of `entries/exact`, `entries/if` and `entries/many` reads the entry of that id.
    missing = {
        (m, p)
        for m, p in served()
        if (m, p) not in calls and not (m == "GET" and re.fullmatch(r"/v1/sessions/\{sid\}/entries/(exact|if|many)", p))
    }
    assert not missing, f"routes without a client call: {sorted(missing)}"
    # The HTML view's page is served outside the API's routes (no token).
    extra = {("GET", "/v1/sessions/{sid}/entries/{eid}"), ("GET", "/view")}
    assert calls <= served() | extra, sorted(calls - served())
