"""`search` (`GET /v1/search`, docs/api.md "Search") on GroveClient and AsyncGroveClient: what
was appended is found at once, the filters, limit and total, the errors. Over the unix socket
(with GROVE_TRANSPORT=in-process, a store in this process) and over TCP. Every word carries its
test's tag, so what other tests write to the same store never matches."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable

import pytest

from grove_client import AsyncGroveClient, GroveClient, GroveError, SearchResults

from .conftest import Server

RUN = uuid.uuid4().hex[:10]
_ids = itertools.count()


@pytest.fixture
def w() -> Callable[[str], str]:
    """Words no other test writes: `base` and this test's tag."""
    tag = uuid.uuid4().hex[:10]
    return lambda base: f"{base}x{tag}"


def sid() -> str:
    return f"py-search-{os.getpid()}-{RUN}-{next(_ids)}"


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": 2}


def entries(found: SearchResults) -> list[str]:
    return sorted(hit["entry"] for hit in found["hits"])


@pytest.fixture(params=["socket", "tcp"])
def url_token(request: pytest.FixtureRequest, server: Server) -> tuple[str, str | None]:
    """The unix socket (or the in-process store) and the TCP listener with its token."""
    if request.param == "socket":
        return server.socket_url, None
    return server.tcp_url, server.token


def test_found_right_after_append_with_snippet_and_marks(url_token: tuple[str, str | None], w: Callable[[str], str]) -> None:
    url, token = url_token
    with GroveClient(url, token=token, name="py-search") as g:
        s = sid()
        g.create_session(id=s)
        pelican = w("pelican")
        assert g.search(pelican)["hits"] == []
        eid = g.append(s, user(f"The {pelican.upper()} crossed the <river> & the sea"))
        found = g.search(pelican)
        assert found["total"] == 1 and found["indexed"] >= 0
        [hit] = found["hits"]
        assert (hit["session"], hit["entry"], hit["seq"], hit["type"], hit["role"], hit["active"]) == (s, eid, 0, "message", "user", True)
        assert isinstance(hit["score"], float) and isinstance(hit["timestamp"], str)
        [[start, end]] = hit["highlights"]
        assert hit["snippet"].encode()[start:end].decode() == pelican.upper()
        assert f"<mark>{pelican.upper()}</mark>" in hit["marked"]
        assert "&lt;river&gt; &amp; the sea" in hit["marked"]


def test_filters_limit_and_total(url_token: tuple[str, str | None], w: Callable[[str], str]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        a, b = sid(), sid()
        g.create_session(id=a)
        g.create_session(id=b)
        kiwi = w("kiwi")
        asked = g.append(a, user(f"a {kiwi}"))
        answered = g.append(a, assistant(f"the {kiwi} answer"))
        summary = g.append(a, {"type": "branch_summary", "fromId": asked, "summary": f"left the {kiwi}"})
        other = g.append(b, user(f"another {kiwi} {kiwi}"))
        assert entries(g.search(kiwi)) == sorted([asked, answered, summary, other])
        assert entries(g.search(kiwi, session=b)) == [other]
        assert entries(g.search(kiwi, types=["user"])) == sorted([asked, other])
        assert entries(g.search(kiwi, types="assistant")) == [answered]
        assert entries(g.search(kiwi, session=a, types=["branch_summary", "user"])) == sorted([asked, summary])
        assert entries(g.search(kiwi, types=["compaction"])) == []
        assert len(g.search(kiwi, since="1d")["hits"]) == 4
        assert g.search(kiwi, since="2999-01-01")["hits"] == []
        red, blue = w("red"), w("blue")
        both = g.append(b, user(f"{red} {blue}"))
        g.append(b, user(f"{blue} only"))
        assert entries(g.search(f"{red} {blue}")) == [both]
        assert len(g.search(f"{red} OR {blue}")["hits"]) == 2
        assert entries(g.search(f'"{blue} {red}"')) == []
        everything = g.search(kiwi)
        two = g.search(kiwi, limit=2)
        assert two["total"] == 4 and [h["entry"] for h in two["hits"]] == [h["entry"] for h in everything["hits"][:2]]
        scores = [h["score"] for h in everything["hits"]]
        assert scores == sorted(scores, reverse=True)


def test_errors_are_grove_errors(url_token: tuple[str, str | None], w: Callable[[str], str]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        for query, options in [("", {}), ("  ", {}), (w("x"), {"limit": 0}), (w("x"), {"limit": 1001}), (w("x"), {"since": "yesterday"})]:
            with pytest.raises(GroveError) as e:
                g.search(query, **options)  # type: ignore[arg-type]
            assert (e.value.code, e.value.status) == ("invalid_argument", 400), (query, options)
        with pytest.raises(GroveError) as e:
            g.search(w("x"), session=f"no-such-{RUN}")
        assert (e.value.code, e.value.status) == ("not_found", 404)


async def test_the_asyncio_client(url_token: tuple[str, str | None], w: Callable[[str], str]) -> None:
    url, token = url_token
    async with AsyncGroveClient(url, token=token) as g:
        s = sid()
        await g.create_session(id=s)
        heron = w("heron")
        first, second = await g.append_many(s, [user(f"{heron} one"), assistant(f"{heron} two")])
        found = await g.search(heron)
        assert entries(found) == sorted([first, second]) and found["total"] == 2
        assert entries(await g.search(heron, session=s, types=["assistant"], limit=1)) == [second]
        with pytest.raises(GroveError) as e:
            await g.search(heron, limit=0)
        assert e.value.code == "invalid_argument"
        with pytest.raises(GroveError) as e:
            await g.search(heron, session=f"no-such-{RUN}")
        assert e.value.code == "not_found"
