"""`redact` and `redactions` (`POST .../redact`, `GET .../redactions`, docs/api.md "Operations")
on GroveClient and AsyncGroveClient: a value or an entry's whole content reads as "[redacted]"
in every read after, the redactions are listed and logged as operations, seals taken before
still hold, verify explains the changed lines, gc reports its redaction fields, and what cannot
be redacted is refused. Over the unix socket (with GROVE_TRANSPORT=in-process, a store in this
process) and over TCP. Secrets carry their test's tag, so what other tests write never matches."""

from __future__ import annotations

import itertools
import json
import os
import re
import uuid
from typing import Any

import pytest

from grove_client import AsyncGroveClient, GroveClient, GroveError, JsonObject, Redaction

from .conftest import Server

RUN = uuid.uuid4().hex[:10]
_ids = itertools.count()
HEX = re.compile(r"^[0-9a-f]{64}$")
MARKER = "[redacted]"


def sid() -> str:
    return f"py-redact-{os.getpid()}-{RUN}-{next(_ids)}"


def secret() -> str:
    return f"hunter2x{uuid.uuid4().hex[:10]}"


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(*texts: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": t} for t in texts], "timestamp": 2}


def content(entry: JsonObject) -> Any:
    return entry["message"]["content"]


def check_digests(r: Redaction) -> None:
    assert HEX.match(r["removed"]) and HEX.match(r["before"]) and HEX.match(r["after"]), r
    assert r["before"] != r["after"]
    assert isinstance(r["timeMs"], int) and isinstance(r["recordId"], str)


@pytest.fixture(params=["socket", "tcp"])
def url_token(request: pytest.FixtureRequest, server: Server) -> tuple[str, str | None]:
    """The unix socket (or the in-process store) and the TCP listener with its token."""
    if request.param == "socket":
        return server.socket_url, None
    return server.tcp_url, server.token


def test_redacts_by_path_and_whole_in_every_read(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g, GroveClient(url, token=token, name="py-redactor/1") as named:
        s = sid()
        g.create_session(id=s)
        hidden = secret()
        asked = g.append(s, user(f"my password is {hidden}"))
        answered = g.append(s, assistant(f"noted: {hidden}", "kept text"))
        last = g.append(s, user("nothing to hide"))
        assert hidden in g.export_session(s)
        assert sorted(h["entry"] for h in g.search(hidden, session=s)["hits"]) == sorted([asked, answered])
        seal = g.seal(s)
        verified_before = g.verify()

        by_path = named.redact(s, answered, "a password", path="/message/content/0/text")
        assert (by_path["entryId"], by_path["paths"], by_path["reason"], by_path["actor"]) == (
            answered, ["/message/content/0/text"], "a password", "py-redactor/1")
        check_digests(by_path)
        whole = g.redact(s, asked, reason="the whole message")
        assert (whole["entryId"], whole["paths"], whole["reason"], whole["actor"]) == (
            asked, ["/message/content"], "the whole message", "server")
        check_digests(whole)

        # Every read shows the marker, none the secret.
        entries = list(g.entries(s))
        assert [e["id"] for e in entries] == [asked, answered, last]
        assert content(entries[0]) == MARKER
        assert content(entries[1]) == [{"type": "text", "text": MARKER}, {"type": "text", "text": "kept text"}]
        assert hidden not in json.dumps(entries)
        assert g.get_entry(s, answered) == entries[1]
        assert g.context(s)["messages"] == [
            {"role": "user", "content": MARKER, "timestamp": 1},
            {"role": "assistant", "content": [{"type": "text", "text": MARKER}, {"type": "text", "text": "kept text"}], "timestamp": 2},
            user("nothing to hide"),
        ]
        exported = g.export_session(s)
        assert hidden not in exported and MARKER in exported
        assert hidden not in json.dumps(list(g.log(s)))
        assert g.search(hidden, session=s)["hits"] == []
        assert g.leaf(s) == last

        assert g.redactions(s) == [by_path, whole]
        newest, previous = g.operations(s, limit=2)
        assert (newest["op"], newest["kind"], newest["actor"], newest["leafBefore"], newest["leafAfter"], newest["firstId"]) == (
            4, "redact", "server", last, last, whole["recordId"])
        assert (previous["op"], previous["kind"], previous["actor"], previous["firstId"]) == (
            3, "redact", "py-redactor/1", by_path["recordId"])

        # The seal taken before still holds.
        assert g.check_seal(s, seal["digest"]) == {"extends": True, "operations": 3, "records": 3}
        verified = g.verify()
        assert verified["ok"] is True and verified["problems"] == []
        # Other tests share the server, and none redacts at the same time: this test's two records.
        assert verified["redacted"] - verified_before["redacted"] == 2


def test_whole_array_content_is_one_text_block_chained_on_an_earlier_redaction(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        s = sid()
        g.create_session(id=s)
        hidden = secret()
        eid = g.append(s, assistant(f"first {hidden}", f"second {hidden}"))
        first = g.redact(s, eid, "one", path="/message/content/1/text")
        second = g.redact(s, eid, "all of it")
        assert second["paths"] == ["/message/content"]
        assert second["before"] == first["after"]
        assert content(g.get_entry(s, eid)) == [{"type": "text", "text": MARKER}]
        assert hidden not in json.dumps(g.context(s))
        assert [r["reason"] for r in g.redactions(s)] == ["one", "all of it"]
        assert [op["kind"] for op in g.operations(s)] == ["redact", "redact", "append"]


def test_refuses_what_cannot_be_redacted(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        s = sid()
        g.create_session(id=s)
        eid = g.append(s, user("plain"))
        gone = g.append(s, user("gone"))
        g.redact(s, gone, "once")
        # (session, entry, reason, path, code, status)
        refusals: list[tuple[str, str, str, str | None, str, int]] = [
            (s, eid, "", None, "invalid_argument", 400),
            (s, "no-such-entry", "x", None, "not_found", 404),
            *((s, eid, "x", p, "invalid_argument", 400) for p in ["/id", "/parentId", "/type", "/timestamp", "/message/role"]),
            (s, eid, "x", "message/content", "invalid_argument", 400),
            (s, eid, "x", "/message/nothing", "invalid_argument", 400),
            (s, gone, "twice", None, "invalid_argument", 400),
            (s, gone, "twice", "/message/content", "invalid_argument", 400),
            (f"{s}-none", eid, "x", None, "not_found", 404),
        ]
        for session, entry, reason, path, code, status in refusals:
            with pytest.raises(GroveError) as e:
                g.redact(session, entry, reason, path=path)
            assert (e.value.code, e.value.status) == (code, status), (session, entry, path, e.value)
        for p in ["/id", "/message/role", "/message/nothing"]:
            with pytest.raises(GroveError) as e:
                g.redact(s, eid, "x", path=p)
            assert p in str(e.value), e.value
        with pytest.raises(GroveError) as e:
            g.redactions(f"{s}-none")
        assert (e.value.code, e.value.status) == ("not_found", 404)
        assert [r["reason"] for r in g.redactions(s)] == ["once"]
        assert len(g.operations(s)) == 3
        assert content(g.get_entry(s, eid)) == "plain"


def test_gc_reports_the_redaction_fields(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        s = sid()
        g.create_session(id=s)
        hidden = secret()
        eid = g.append(s, user(f"keep out {hidden}"))
        assert g.redactions(s) == []
        g.redact(s, eid, "before gc", path="/message/content")
        report = g.gc()
        # Every redaction was written when it was made: none is left for gc to finish. A running
        # store cannot rewrite its files: the redacted bytes may linger until then.
        assert report["redactionsApplied"] == 0
        assert report["rewriteDue"] is True
        assert isinstance(report["searchCompacted"], bool)
        assert isinstance(report["catalogueRowsRemoved"], int)
        assert content(g.get_entry(s, eid)) == MARKER
        assert hidden not in g.export_session(s)
        assert g.verify()["ok"] is True


async def test_the_asyncio_client(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    async with AsyncGroveClient(url, token=token, name="py-async-redactor") as g:
        s = sid()
        await g.create_session(id=s)
        hidden = secret()
        eid = await g.append(s, assistant(f"noted {hidden}", "kept"))
        seal = await g.seal(s)
        done = await g.redact(s, eid, "async", path="/message/content/0/text")
        assert (done["entryId"], done["paths"], done["actor"]) == (eid, ["/message/content/0/text"], "py-async-redactor")
        check_digests(done)
        assert content(await g.get_entry(s, eid)) == [{"type": "text", "text": MARKER}, {"type": "text", "text": "kept"}]
        assert hidden not in await g.export_session(s)
        assert [e async for e in g.entries(s)][0] == await g.get_entry(s, eid)
        assert await g.redactions(s) == [done]
        assert (await g.operations(s, limit=1))[0]["kind"] == "redact"
        assert (await g.check_seal(s, seal["digest"]))["extends"] is True
        with pytest.raises(GroveError) as e:
            await g.redact(s, eid, "")
        assert e.value.code == "invalid_argument"
        with pytest.raises(GroveError) as e:
            await g.redact(s, "no-such-entry", "x")
        assert e.value.code == "not_found"
        with pytest.raises(GroveError) as e:
            await g.redact(s, eid, "x", path="/id")
        assert e.value.code == "invalid_argument"
        report = await g.gc()
        assert report["redactionsApplied"] == 0 and report["rewriteDue"] is True
