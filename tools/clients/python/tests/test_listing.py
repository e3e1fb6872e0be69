"""`list_sessions`'s filters (`GET /v1/sessions`, docs/api.md "Sessions") on GroveClient and
AsyncGroveClient: `cwd`, `name`, `label` and the created/updated times, paging a filtered listing
with `next`, and a time that does not read. Over the unix socket (with
GROVE_TRANSPORT=in-process, a store in this process) and over TCP. Every session of a test has
its own id prefix and working directory, and every listing is of that directory, so what other
tests write to the same store never appears."""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import pytest

from grove_client import AsyncGroveClient, GroveClient, GroveError

from .conftest import Server

RUN = uuid.uuid4().hex[:10]
_ids = itertools.count()


@pytest.fixture(params=["socket", "tcp"])
def url_token(request: pytest.FixtureRequest, server: Server) -> tuple[str, Optional[str]]:
    """The unix socket (or the in-process store) and the TCP listener with its token."""
    if request.param == "socket":
        return server.socket_url, None
    return server.tcp_url, server.token


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


@dataclass
class Fixture:
    """Five sessions, `a` to `e` (their ids in that order): `a` named, `b` with a labelled
    entry, `c` imported with a header of 2020 (created and last active then), `d` created now
    but last active in 2021, all four in `cwd`; `e` named too, in `other`."""

    cwd: str
    other: str
    label: str
    a: str
    b: str
    c: str
    d: str
    e: str


def make(prefix: str) -> Fixture:
    cwd = f"/listing/{uuid.uuid4()}"
    a, b, c, d, e = (f"{prefix}-{x}" for x in "abcde")
    return Fixture(cwd=cwd, other=f"{cwd}-other", label=f"keep-{RUN}", a=a, b=b, c=c, d=d, e=e)


def header(f: Fixture) -> str:
    return json.dumps({"type": "session", "version": 3, "id": f.c, "timestamp": "2020-06-01T00:00:00.000Z", "cwd": f.cwd}) + "\n"


def fixture(g: GroveClient) -> Fixture:
    f = make(f"py-listing-{os.getpid()}-{RUN}-{next(_ids)}")
    g.create_session(id=f.a, cwd=f.cwd)
    g.set_name(f.a, "Alpha Report")
    g.create_session(id=f.b, cwd=f.cwd)
    g.set_label(f.b, g.append(f.b, user("labelled")), f.label)
    assert g.import_session(header(f))["session"] == f.c
    g.create_session(id=f.d, cwd=f.cwd)
    g.append(f.d, user("old"), timestamp="2021-03-01T00:00:00Z")
    g.create_session(id=f.e, cwd=f.other)
    g.set_name(f.e, "alpha too")
    return f


def ids(g: GroveClient, f: Fixture, **filters: Any) -> list[str]:
    filters.setdefault("cwd", f.cwd)
    return [s["id"] for s in g.list_sessions(**filters)["sessions"]]


def test_cwd_name_and_label(url_token: tuple[str, Optional[str]]) -> None:
    url, token = url_token
    with GroveClient(url, token=token, name="py-listing") as g:
        f = fixture(g)
        assert ids(g, f) == [f.a, f.b, f.c, f.d]
        other = g.list_sessions(cwd=f.other)
        assert [s["id"] for s in other["sessions"]] == [f.e]
        assert other["sessions"][0]["cwd"] == f.other and other["next"] is None
        # A name contains the text, whatever its case.
        assert ids(g, f, name="ALPHA") == [f.a]
        assert ids(g, f, name="pha rep") == [f.a]
        assert ids(g, f, name="beta") == []
        assert ids(g, f, cwd=f.other, name="alpha") == [f.e]
        # A label is matched exactly.
        assert ids(g, f, label=f.label) == [f.b]
        assert ids(g, f, label=f.label[:-1]) == []
        # Every filter given must hold.
        assert ids(g, f, name="alpha", label=f.label) == []


def test_created_and_updated_times(url_token: tuple[str, Optional[str]]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        f = fixture(g)
        assert ids(g, f, created_before="2022-01-01") == [f.c]
        assert ids(g, f, created_after="2022-01-01") == [f.a, f.b, f.d]
        assert ids(g, f, created_after="1h") == [f.a, f.b, f.d]
        assert ids(g, f, created_before="1h") == [f.c]
        # After includes its bound, before excludes it.
        assert ids(g, f, created_after="2020-06-01T00:00:00Z", created_before="2020-06-02") == [f.c]
        assert ids(g, f, created_after="2020-06-01T00:00:01Z", created_before="2022-01-01") == []
        # Updated: the last record's timestamp, else the creation time.
        assert ids(g, f, updated_before="2021-01-01") == [f.c]
        assert ids(g, f, updated_after="2021-03-01T00:00:00Z") == [f.a, f.b, f.d]
        assert ids(g, f, updated_before="2021-03-01T00:00:00Z") == [f.c]
        assert ids(g, f, updated_after="2021-01-01", updated_before="2022-01-01") == [f.d]
        assert ids(g, f, updated_after="1d") == [f.a, f.b]
        assert ids(g, f, updated_after="2w", created_after="1h", name="alpha") == [f.a]


def test_paging_a_filtered_listing(url_token: tuple[str, Optional[str]]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        f = fixture(g)

        def walk(order: str) -> list[list[str]]:
            pages: list[list[str]] = []
            after: Optional[str] = None
            while True:
                # The existing positional parameters first: after, limit, order.
                page = g.list_sessions(after, 1, order, cwd=f.cwd, created_after="1h")
                pages.append([s["id"] for s in page["sessions"]])
                if page["next"] is None:
                    return pages
                assert page["next"] == page["sessions"][0]["id"]
                after = page["next"]

        assert walk("asc") == [[f.a], [f.b], [f.d]]
        assert walk("desc") == [[f.d], [f.b], [f.a]]
        two = g.list_sessions(limit=2, cwd=f.cwd, updated_after="1d")
        assert [s["id"] for s in two["sessions"]] == [f.a, f.b] and two["next"] is None


def test_a_time_that_does_not_read(url_token: tuple[str, Optional[str]]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        cwd = f"/listing/{uuid.uuid4()}"
        with pytest.raises(GroveError) as bad:
            g.list_sessions(cwd=cwd, created_after="later")
        assert (bad.value.code, bad.value.status) == ("invalid_argument", 400)
        assert "createdAfter" in str(bad.value)
        calls: list[tuple[str, Callable[[], object]]] = [
            ("createdBefore", lambda: g.list_sessions(cwd=cwd, created_before="7 days")),
            ("updatedAfter", lambda: g.list_sessions(cwd=cwd, updated_after="7 days")),
            ("updatedBefore", lambda: g.list_sessions(cwd=cwd, updated_before="7 days")),
        ]
        for parameter, call in calls:
            with pytest.raises(GroveError) as bad:
                call()
            assert bad.value.code == "invalid_argument" and parameter in str(bad.value)


async def test_the_asyncio_client(url_token: tuple[str, Optional[str]]) -> None:
    url, token = url_token
    f = make(f"py-listing-aio-{os.getpid()}-{RUN}-{next(_ids)}")
    async with AsyncGroveClient(url, token=token) as g:
        await g.create_session(id=f.a, cwd=f.cwd)
        await g.set_name(f.a, "Alpha Report")
        await g.create_session(id=f.b, cwd=f.cwd)
        await g.set_label(f.b, await g.append(f.b, user("labelled")), f.label)
        await g.import_session(header(f))
        await g.create_session(id=f.d, cwd=f.cwd)
        await g.append(f.d, user("old"), timestamp="2021-03-01T00:00:00Z")

        async def listed(**filters: Any) -> list[str]:
            return [s["id"] for s in (await g.list_sessions(cwd=f.cwd, **filters))["sessions"]]

        assert await listed() == [f.a, f.b, f.c, f.d]
        assert await listed(name="alpha") == [f.a]
        assert await listed(label=f.label) == [f.b]
        assert await listed(created_before="1h") == [f.c]
        assert await listed(updated_after="2021-01-01", updated_before="2022-01-01") == [f.d]
        first = await g.list_sessions(None, 1, "desc", cwd=f.cwd, updated_after="1d")
        assert [s["id"] for s in first["sessions"]] == [f.b] and first["next"] == f.b
        rest = await g.list_sessions(first["next"], 1, "desc", cwd=f.cwd, updated_after="1d")
        assert [s["id"] for s in rest["sessions"]] == [f.a] and rest["next"] is None
        with pytest.raises(GroveError) as bad:
            await g.list_sessions(cwd=f.cwd, created_after="later")
        assert bad.value.code == "invalid_argument" and "createdAfter" in str(bad.value)
