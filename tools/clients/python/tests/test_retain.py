"""Retention (`retention_plan`, `retain`, `retention_log`, `set_pinned`: `POST /v1/retain`,
`GET /v1/retain/log`, `PUT .../pin`, docs/api.md "Retention") on GroveClient and
AsyncGroveClient: a plan names the sessions a policy removes and changes nothing, a label or a
pin spares a session, a run deletes the rest and is recorded in the store's operation log, and a
policy that does not read is refused. Over the unix socket (with GROVE_TRANSPORT=in-process, a
store in this process) and over TCP. Every test's sessions are under a prefix of its own, and
every rule names it, so the sessions other tests write never match.

Last activity is the timestamp of a session's last record: the tests give their appends
timestamps (in 2024, seconds apart) so the order by activity is theirs, not the clock's."""

from __future__ import annotations

import itertools
import os
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, cast

import pytest

from grove_client import (
    AsyncGroveClient,
    GroveClient,
    GroveError,
    RetentionItem,
    RetentionPlan,
    RetentionPolicy,
    RetentionRule,
)

from .conftest import Server

RUN = uuid.uuid4().hex[:10]
_ids = itertools.count()
BEYOND_1 = "rule 0: beyond the newest 1"


def prefix() -> str:
    """A prefix no other test's session has."""
    return f"py-ret-{os.getpid()}-{RUN}-{next(_ids)}-"


def at(seconds: float) -> str:
    """`seconds` after 2024-01-01T00:00:00Z, as an entry's timestamp: long before the tests run."""
    t = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms(seconds: float) -> int:
    return int((datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)).timestamp() * 1000)


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


def ids(items: list[RetentionItem]) -> list[str]:
    return sorted(i["session"] for i in items)


def item(items: list[RetentionItem], session: str) -> RetentionItem:
    found = [i for i in items if i["session"] == session]
    assert len(found) == 1, (session, items)
    return found[0]


def check_bytes(plan: RetentionPlan) -> None:
    assert plan["bytes"] == sum(i["bytes"] for i in plan["remove"])


def keep_newest(p: str, n: int = 1, **more: Any) -> RetentionPolicy:
    rule = cast(RetentionRule, {"prefix": p, "keepNewest": n, **more})
    return {"rules": [rule]}


def check_gone(g: GroveClient, sid: str) -> None:
    with pytest.raises(GroveError) as e:
        g.get_session(sid)
    assert (e.value.code, e.value.status) == ("not_found", 404)


@pytest.fixture(params=["socket", "tcp"])
def url_token(request: pytest.FixtureRequest, server: Server) -> tuple[str, str | None]:
    """The unix socket (or the in-process store) and the TCP listener with its token."""
    if request.param == "socket":
        return server.socket_url, None
    return server.tcp_url, server.token


def test_plans_spares_the_labelled_and_the_pinned_applies_and_logs(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g, GroveClient(url, token=token, name="py-retainer/1") as named:
        p = prefix()
        a, b, c, d = (f"{p}{x}" for x in "abcd")
        first: dict[str, str] = {}
        for i, s in enumerate([a, b, c, d]):
            g.create_session(id=s)
            first[s] = g.append(s, user(f"turn of {s}"), timestamp=at(i + 1))
        policy = keep_newest(p)
        log_before = g.retention_log()

        # d is the newest by last activity: the other three go.
        plan = g.retention_plan(policy)
        assert ids(plan["remove"]) == [a, b, c]
        assert plan["spared"] == []
        check_bytes(plan)
        for i, s in enumerate([a, b, c]):
            it = item(plan["remove"], s)
            assert (it["entries"], it["lastActivity"], it["reasons"], it["spared"]) == (1, at(i + 1), [BEYOND_1], None)
            assert it["bytes"] > 0
        # A plan changes nothing.
        assert [g.get_session(s)["id"] for s in [a, b, c, d]] == [a, b, c, d]
        assert g.retention_log() == log_before
        assert g.retention_plan(policy) == plan

        # A label is a record: b's last activity is now, the newest of the four.
        g.set_label(b, first[b], "keep")
        assert ids(g.retention_plan(policy)["remove"]) == [a, c, d]
        # Written to again at an earlier time, b is selected again, and spared for its label.
        g.append(b, user("later"), timestamp=at(2.5))
        labelled = g.retention_plan(policy)
        assert ids(labelled["remove"]) == [a, c]
        assert ids(labelled["spared"]) == [b]
        spared_b = item(labelled["spared"], b)
        assert (spared_b["spared"], spared_b["entries"], spared_b["lastActivity"], spared_b["reasons"]) == ("labelled", 3, at(2.5), [BEYOND_1])
        assert spared_b["bytes"] > item(plan["remove"], b)["bytes"]
        check_bytes(labelled)
        # A rule that does not spare labelled sessions takes it.
        not_sparing = keep_newest(p, spareLabelled=False)
        assert ids(g.retention_plan(not_sparing)["remove"]) == [a, b, c]

        # A pin spares a session whatever the rule (a pin is not activity: a keeps its time).
        assert g.set_pinned(a, True) == {"session": a, "pinned": True}
        pinned = g.retention_plan(policy)
        assert ids(pinned["remove"]) == [c]
        assert ids(pinned["spared"]) == [a, b]
        spared_a = item(pinned["spared"], a)
        assert (spared_a["spared"], spared_a["lastActivity"], spared_a["reasons"]) == ("pinned", at(1), [BEYOND_1])
        assert item(pinned["spared"], b)["spared"] == "labelled"
        not_sparing_pinned = g.retention_plan(not_sparing)
        assert ids(not_sparing_pinned["remove"]) == [b, c]
        assert [(i["session"], i["spared"]) for i in not_sparing_pinned["spared"]] == [(a, "pinned")]
        # Unpinned, it goes again; pinned again, it stays.
        assert g.set_pinned(a, False) == {"session": a, "pinned": False}
        assert ids(g.retention_plan(policy)["remove"]) == [a, c]
        g.set_pinned(a, True)
        assert [g.get_session(s)["id"] for s in [a, b, c, d]] == [a, b, c, d]

        # Applied: c goes, the rest stay.
        done = named.retain(policy)
        assert ids(done["remove"]) == [c]
        assert done["spared"] == pinned["spared"]
        assert done["bytes"] == item(pinned["remove"], c)["bytes"]
        assert done["removed"] == [{"session": c, "archive": None}]
        assert done["failed"] == []
        assert isinstance(done["op"], int)
        check_gone(g, c)
        assert [g.get_session(s)["id"] for s in [a, b, d]] == [a, b, d]
        after = g.retention_plan(policy)
        assert (after["remove"], after["bytes"], ids(after["spared"])) == ([], 0, [a, b])

        # The run is the store's last operation, done, by the client that asked.
        log = g.retention_log()
        assert log[: len(log_before)] == log_before
        assert [o["op"] for o in log] == sorted(o["op"] for o in log)
        last = log[-1]
        assert (last["op"], last["kind"], last["status"], last["actor"]) == (done["op"], "retain", "done", "py-retainer/1")
        datetime.fromisoformat(last["time"].replace("Z", "+00:00"))
        detail = last["detail"]
        assert detail["removed"] == done["removed"]
        assert detail["failed"] == [] and detail["archive"] is None
        assert [(i["session"], i["lastActivityMs"]) for i in detail["plan"]["remove"]] == [(c, ms(3))]
        assert sorted((i["session"], i["spared"]) for i in detail["plan"]["spared"]) == [(a, "pinned"), (b, "labelled")]
        assert detail["plan"]["bytes"] == done["bytes"]
        assert isinstance(detail["plan"]["nowMs"], int)

        # Applied again: nothing left to remove, and the run is logged all the same.
        again = g.retain(policy)
        assert (again["remove"], again["removed"], again["failed"], again["bytes"], again["op"]) == ([], [], [], 0, done["op"] + 1)
        newest = g.retention_log()[-1]
        assert (newest["op"], newest["kind"], newest["status"], newest["actor"]) == (done["op"] + 1, "retain", "done", "server")


def test_selects_by_age_and_size_every_condition_of_a_rule_any_rule(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        p = prefix()
        old, big, small = f"{p}old", f"{p}big", f"{p}small"
        for s in [old, big, small]:
            g.create_session(id=s)
        g.append(old, user("long ago"), timestamp=at(1))
        g.append(big, user("x" * 8000))
        g.append(small, user("now"))

        def plan(*rules: RetentionRule) -> RetentionPlan:
            return g.retention_plan({"rules": list(rules)})

        aged = plan({"prefix": p, "olderThan": "30d"})
        assert ids(aged["remove"]) == [old]
        assert item(aged["remove"], old)["reasons"] == [f"rule 0: last active {at(1)}"]
        assert ids(plan({"prefix": p, "olderThan": "2025-01-01"})["remove"]) == [old]
        assert plan({"prefix": p, "olderThan": "2023-01-01T00:00:00Z"})["remove"] == []

        sized = plan({"prefix": p, "largerThan": 4000})
        assert ids(sized["remove"]) == [big]
        big_item = item(sized["remove"], big)
        assert big_item["bytes"] > 8000
        assert big_item["reasons"] == [f"rule 0: {big_item['bytes']} bytes"]
        assert sized["bytes"] == big_item["bytes"]
        assert ids(plan({"prefix": p, "largerThan": "4KB"})["remove"]) == [big]
        assert plan({"prefix": p, "largerThan": "1MB"})["remove"] == []

        # Every condition of a rule must hold; any rule selects.
        assert plan({"prefix": p, "olderThan": "30d", "largerThan": 4000})["remove"] == []
        both = plan({"prefix": p, "olderThan": "30d"}, {"prefix": p, "largerThan": 4000})
        assert ids(both["remove"]) == [big, old]
        assert item(both["remove"], big)["reasons"] == [f"rule 1: {big_item['bytes']} bytes"]
        twice = plan({"prefix": p, "olderThan": "30d"}, {"prefix": f"{p}o", "keepNewest": 0})
        assert item(twice["remove"], old)["reasons"] == [f"rule 0: last active {at(1)}", "rule 1: beyond the newest 0"]
        # The prefix bounds a rule's sessions (and keepNewest counts among them).
        assert ids(plan({"prefix": f"{p}b", "keepNewest": 0})["remove"]) == [big]
        assert plan({"prefix": f"{p}zzz", "keepNewest": 0})["remove"] == []
        assert [g.get_session(s)["id"] for s in [old, big, small]] == [old, big, small]


def test_refuses_a_policy_that_does_not_read(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    with GroveClient(url, token=token) as g:
        p = prefix()
        s = f"{p}a"
        g.create_session(id=s)
        g.append(s, user("stay"), timestamp=at(1))
        log_before = g.retention_log()
        # (policy, code, part of the message)
        refusals: list[tuple[dict[str, Any], str, str]] = [
            ({"rules": [{"prefix": p}]}, "invalid_argument", "no condition"),
            ({"rules": []}, "invalid_argument", "at least one rule"),
            ({"rules": [{"prefix": p, "keepNewest": 0}], "archive": {"dir": "/tmp/grove-archive"}}, "invalid_argument", "archives nothing"),
            ({"rules": [{"prefix": p, "olderThan": "soon"}]}, "invalid_argument", "soon"),
            ({"rules": [{"prefix": p, "olderThan": "2999-01-01"}]}, "invalid_argument", "future"),
            ({"rules": [{"prefix": p, "largerThan": "10 parsecs"}]}, "invalid_argument", "not a size"),
            ({"rules": [{"prefix": p, "largerThan": True}]}, "invalid_argument", "not a size"),
            ({"rules": [{"prefix": p, "keepNewest": 0, "newest": 1}]}, "invalid_request", "newest"),
            ({"rules": [{"prefix": p, "keepNewest": -1}]}, "invalid_request", "-1"),
            ({"rule": []}, "invalid_request", "rule"),
        ]
        for policy, code, part in refusals:
            # Planned and applied alike.
            for call in (g.retention_plan, g.retain):
                with pytest.raises(GroveError) as e:
                    call(cast(RetentionPolicy, policy))
                assert (e.value.code, e.value.status) == (code, 400), (policy, e.value)
                assert part in str(e.value), (policy, e.value)

        with pytest.raises(GroveError) as e:
            g.set_pinned(f"{p}none", True)
        assert (e.value.code, e.value.status) == ("not_found", 404)
        assert g.get_session(s)["id"] == s
        assert g.retention_log() == log_before
        assert ids(g.retention_plan(keep_newest(p, 0))["remove"]) == [s]


async def test_the_asyncio_client(url_token: tuple[str, str | None]) -> None:
    url, token = url_token
    async with AsyncGroveClient(url, token=token, name="py-async-retainer") as g:
        p = prefix()
        a, b, c = (f"{p}{x}" for x in "abc")
        for i, s in enumerate([a, b, c]):
            await g.create_session(id=s)
            await g.append(s, user(f"turn of {s}"), timestamp=at(i + 1))
        policy = keep_newest(p)
        plan = await g.retention_plan(policy)
        assert ids(plan["remove"]) == [a, b]
        assert item(plan["remove"], a)["lastActivity"] == at(1)
        check_bytes(plan)
        assert (await g.get_session(a))["id"] == a
        assert await g.set_pinned(a, True) == {"session": a, "pinned": True}
        pinned = await g.retention_plan(policy)
        assert (ids(pinned["remove"]), [(i["session"], i["spared"]) for i in pinned["spared"]]) == ([b], [(a, "pinned")])

        done = await g.retain(policy)
        assert done["removed"] == [{"session": b, "archive": None}] and done["failed"] == []
        with pytest.raises(GroveError) as e:
            await g.get_session(b)
        assert e.value.code == "not_found"
        assert (await g.get_session(a))["id"] == a
        last = (await g.retention_log())[-1]
        assert (last["op"], last["kind"], last["status"], last["actor"]) == (done["op"], "retain", "done", "py-async-retainer")
        assert last["detail"]["removed"] == done["removed"]

        with pytest.raises(GroveError) as e:
            await g.retention_plan({"rules": [{"prefix": p}]})
        assert (e.value.code, e.value.status) == ("invalid_argument", 400)
        with pytest.raises(GroveError) as e:
            await g.retain(cast(RetentionPolicy, {"rules": [{"prefix": p, "keepNewest": 0}], "archive": {"dir": "/tmp/x"}}))
        assert e.value.code == "invalid_argument"
        with pytest.raises(GroveError) as e:
            await g.set_pinned(f"{p}none", True)
        assert (e.value.code, e.value.status) == ("not_found", 404)
        # Nothing refused was done.
        assert (await g.retention_log())[-1] == last
        assert (await g.get_session(a))["id"] == a
