"""Every route of `grove serve` (docs/api.md) as a `Call`: method, path, query, body and how
the answer is read. The synchronous and the asyncio client run the same calls, so the two
cannot disagree on a route."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Literal, Mapping, NamedTuple, Optional, Sequence, Union
from urllib.parse import quote

V1 = "/v1"

#: How an answer is read: one JSON value, JSON lines, text, or nothing (204).
Answer = Literal["json", "lines", "text", "none"]

#: A point in time: `{"op": N}` or `{"time": "RFC 3339"}`.
At = Mapping[str, Union[int, str]]


class Call(NamedTuple):
    """One call (immutable; a tuple, made in a fraction of a frozen dataclass's time: an
    in-process read takes microseconds)."""

    method: str
    path: str
    query: Optional[Mapping[str, Any]] = None
    body: Any = None
    raw: Optional[bytes] = None
    raw_type: Optional[str] = None
    answer: Answer = "json"
    pick: Optional[Callable[[Any], Any]] = None
    #: A read answered at once, in microseconds (a session's summary or leaf, one entry, one
    #: entry's children): in process, the asyncio client runs it on the event loop's thread,
    #: where handing it to a thread and back would cost more than the read.
    quick: bool = False


@lru_cache(maxsize=4096)
def seg(text: str) -> str:
    """One path segment, percent-encoded (remembered: a process calls on few sessions)."""
    return quote(text, safe="")


def session(sid: str, rest: str = "") -> str:
    return f"{V1}/sessions/{seg(sid)}{rest}"


def at_query(at: Optional[At]) -> dict[str, Any]:
    if at is None:
        return {}
    if "op" in at:
        return {"atOp": at["op"]}
    if "time" in at:
        return {"atTime": at["time"]}
    raise ValueError("a point in time is {'op': N} or {'time': 'RFC 3339'}")


def field(name: str) -> Callable[[Any], Any]:
    return lambda answer: answer[name]


def drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


# Server


def health() -> Call:
    return Call("GET", f"{V1}/health")


def verify() -> Call:
    return Call("POST", f"{V1}/verify")


def gc(rewrite: bool = False) -> Call:
    return Call("POST", f"{V1}/gc", query={"rewrite": "true"} if rewrite else None)


# Retention


def retention_plan(policy: Mapping[str, Any]) -> Call:
    return Call("POST", f"{V1}/retain", body={"policy": policy})


def retain(policy: Mapping[str, Any]) -> Call:
    return Call("POST", f"{V1}/retain", body={"policy": policy, "apply": True})


def retention_log() -> Call:
    return Call("GET", f"{V1}/retain/log", pick=field("operations"))


# Sessions


def list_sessions(
    after: Optional[str],
    limit: Optional[int],
    order: Optional[str] = None,
    cwd: Optional[str] = None,
    name: Optional[str] = None,
    label: Optional[str] = None,
    created_after: Optional[str] = None,
    created_before: Optional[str] = None,
    updated_after: Optional[str] = None,
    updated_before: Optional[str] = None,
) -> Call:
    """`GET /v1/sessions`: a page, and the filters (each optional, all of those given must hold)."""
    query = {
        "after": after,
        "limit": limit,
        "order": order,
        "cwd": cwd,
        "name": name,
        "label": label,
        "createdAfter": created_after,
        "createdBefore": created_before,
        "updatedAfter": updated_after,
        "updatedBefore": updated_before,
    }
    return Call("GET", f"{V1}/sessions", query=query)


def create_session(options: Mapping[str, Any]) -> Call:
    return Call("POST", f"{V1}/sessions", body=drop_none(options))


def get_session(sid: str) -> Call:
    return Call("GET", session(sid), quick=True)


def delete_session(sid: str) -> Call:
    return Call("DELETE", session(sid), answer="none")


def import_session(jsonl: bytes) -> Call:
    return Call("POST", f"{V1}/import", raw=jsonl, raw_type="application/x-ndjson")


def export_session(sid: str, flavor: Optional[str]) -> Call:
    return Call("GET", session(sid, "/export"), query={"flavor": flavor}, answer="text")


def fork_session(sid: str, options: Mapping[str, Any]) -> Call:
    return Call("POST", session(sid, "/fork"), body=drop_none(options))


# Appending


def append(sid: str, entry: Mapping[str, Any], id: Optional[str], timestamp: Optional[str]) -> Call:
    body = drop_none({"entry": entry, "id": id, "timestamp": timestamp})
    return Call("POST", session(sid, "/entries"), body=body, pick=field("id"))


def append_exact(sid: str, entry: Mapping[str, Any], keep_leaf: bool = False) -> Call:
    query = {"keepLeaf": "true" if keep_leaf else None}
    return Call("POST", session(sid, "/entries/exact"), query=query, body=entry)


def append_if(sid: str, expected_leaf: Optional[str], entry: Mapping[str, Any]) -> Call:
    return Call("POST", session(sid, "/entries/if"), body={"expectedLeaf": expected_leaf, "entry": entry})


def append_many(sid: str, entries: Sequence[Mapping[str, Any]]) -> Call:
    return Call("POST", session(sid, "/entries/many"), body={"entries": list(entries)}, pick=field("ids"))


def append_batch(items: Sequence[Mapping[str, Any]]) -> Call:
    return Call("POST", f"{V1}/appends", body={"appends": list(items)}, pick=field("results"))


def fresh_ids(sid: str, count: int) -> Call:
    return Call("POST", session(sid, "/ids"), body={"count": count}, pick=field("ids"))


# Reading


def entries(sid: str, after: Optional[str], limit: Optional[int]) -> Call:
    return Call("GET", session(sid, "/entries"), query={"after": after, "limit": limit}, answer="lines")


def log(sid: str, after: Optional[str], limit: Optional[int], type: Optional[str]) -> Call:
    query = {"after": after, "limit": limit, "type": type}
    return Call("GET", session(sid, "/log"), query=query, answer="lines")


def get_entry(sid: str, eid: str, log: bool) -> Call:
    return Call("GET", session(sid, f"/entries/{seg(eid)}"), query={"log": "true" if log else None}, quick=True)


def proof(sid: str, eid: str) -> Call:
    return Call("GET", session(sid, f"/entries/{seg(eid)}/proof"))


def children(sid: str, parent: Optional[str]) -> Call:
    return Call("GET", session(sid, "/children"), query={"parent": parent}, answer="lines", quick=True)


def branch(sid: str, start: Optional[str], at: Optional[At]) -> Call:
    return Call("GET", session(sid, "/branch"), query={"from": start, **at_query(at)}, answer="lines")


def path(sid: str, start: Optional[str], at: Optional[At]) -> Call:
    return Call("GET", session(sid, "/path"), query={"from": start, **at_query(at)}, answer="lines")


def context(sid: str, leaf: Optional[str], preset: Optional[str], at: Optional[At]) -> Call:
    query = {"leaf": leaf, "preset": preset, **at_query(at)}
    return Call("GET", session(sid, "/context"), query=query)


def tree(sid: str, at: Optional[At]) -> Call:
    return Call("GET", session(sid, "/tree"), query=at_query(at))


def labels(sid: str) -> Call:
    return Call("GET", session(sid, "/labels"))


def label(sid: str, eid: str) -> Call:
    return Call("GET", session(sid, f"/labels/{seg(eid)}"), pick=field("label"))


def set_label(sid: str, target_id: str, label: Optional[str]) -> Call:
    body = {"targetId": target_id, "label": label}
    return Call("POST", session(sid, "/labels"), body=body, pick=field("id"))


def set_pinned(sid: str, pinned: bool) -> Call:
    return Call("PUT", session(sid, "/pin"), body={"pinned": pinned})


def name(sid: str) -> Call:
    return Call("GET", session(sid, "/name"), pick=field("name"))


def set_name(sid: str, name: str) -> Call:
    return Call("PUT", session(sid, "/name"), body={"name": name}, pick=field("id"))


def stats(sid: str) -> Call:
    return Call("GET", session(sid, "/stats"))


# The leaf


def leaf(sid: str) -> Call:
    return Call("GET", session(sid, "/leaf"), pick=field("leaf"), quick=True)


def set_leaf(sid: str, target: Optional[str], lease: Optional[str]) -> Call:
    body: dict[str, Any] = {"target": target}
    if lease is not None:
        body["lease"] = lease
    return Call("PUT", session(sid, "/leaf"), body=body)


def leaf_history(sid: str) -> Call:
    return Call("GET", session(sid, "/leaf/history"))


# Operations


def operations(sid: str, limit: Optional[int]) -> Call:
    return Call("GET", session(sid, "/operations"), query={"limit": limit}, pick=field("operations"))


def undo(sid: str, to_op: Optional[int]) -> Call:
    return Call("POST", session(sid, "/undo"), body=drop_none({"toOp": to_op}))


def redact(sid: str, entry_id: str, reason: str, path: Optional[str]) -> Call:
    body = drop_none({"entryId": entry_id, "path": path, "reason": reason})
    return Call("POST", session(sid, "/redact"), body=body)


def redactions(sid: str) -> Call:
    return Call("GET", session(sid, "/redactions"), pick=field("redactions"))


def seal(sid: str) -> Call:
    return Call("GET", session(sid, "/seal"))


def check_seal(sid: str, digest: str) -> Call:
    return Call("POST", session(sid, "/seal/check"), body={"digest": digest})


def replay(sid: str, from_op: Optional[int], until_op: Optional[int], follow: bool) -> Call:
    query = {"fromOp": from_op, "untilOp": until_op, "follow": "true" if follow else None}
    return Call("GET", session(sid, "/replay"), query=query, answer="lines")


# Turns and navigation


def begin_turn(sid: str, ttl_ms: Optional[int]) -> Call:
    return Call("POST", session(sid, "/turns"), body=drop_none({"ttlMs": ttl_ms}))


def renew_turn(sid: str, lease: str) -> Call:
    return Call("POST", session(sid, f"/turns/{seg(lease)}/renew"))


def end_turn(sid: str, lease: str) -> Call:
    return Call("DELETE", session(sid, f"/turns/{seg(lease)}"), answer="none")


def navigate(sid: str, target: str, options: Mapping[str, Any]) -> Call:
    return Call("POST", session(sid, "/navigate"), body={"target": target, **drop_none(options)})


def view() -> Call:
    return Call("GET", "/view", answer="text")


# Search


def search(query: str, session: Optional[str], types: Optional[Sequence[str]], since: Optional[str], limit: Optional[int]) -> Call:
    """`GET /v1/search`; `types` a list (or one type as a string), sent comma-separated."""
    kinds = None if types is None else types if isinstance(types, str) else ",".join(types)
    return Call("GET", f"{V1}/search", query={"q": query, "session": session, "type": kinds, "since": since, "limit": limit})
