"""An example harness: many generated agent runs written concurrently through one `grove serve`.

    python examples/harness.py --url unix:/path/grove.sock --sessions 1000 --turns 50

Every session is created, then written as an agent writes it: per turn a user message, an
assistant message calling a tool, the tool's result and the assistant's final answer (pi's
message shapes, with usage), each appended when it is "produced", one awaited after the other.
All sessions run at once as asyncio tasks (at most `--concurrency` at a time) through ONE
`AsyncGroveClient`. The runs are generated from `--seed` by mulberry32 with the same rules as the
TypeScript harness (tools/clients/typescript/bench/agent-run.ts), so both write the same
messages.

`--mode direct` (the default) sends each append as its own request (`POST
/v1/sessions/{sid}/entries`), at most `--in-flight` (32) at once; `--mode batch` hands them to a small gatherer that sends the
appends pending at the same time as one `POST /v1/appends`, as the TypeScript client's
`AppendBatcher` does (one request and one flush for many sessions' appends).

It prints one JSON object: `client`, `mode`, `durability` (the server's), `sessions`, `turns`,
`entries`, `seconds` (from the first create to the last append), `entriesPerSecond`,
`sessionsPerSecond`, `appendP50Ms` and `appendP99Ms` (each append's wait as its session saw it,
queueing in the client included) and `verified` (sessions read back). Then it checks itself:
`--verify` sessions spread over the run are read back (the session's entry count and its
context) and compared with what was written; a mismatch is printed to stderr and the exit
status is 1. The harness starts no server: `--url` (default `GROVE_URL`) names one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections.abc import Awaitable, Sequence
from typing import Any, Optional

from grove_client import AsyncGroveClient, GroveError, JsonObject

MASK = 0xFFFFFFFF

#: Words the generated texts are made of.
WORDS = (
    "the file function test error value return build module session entry branch agent tool "
    "result check config path line change fix read write append server client store flush "
    "index token context message model cache batch commit update import export parse type"
).split()

TOOLS = ("read", "bash", "edit", "grep")

#: Messages per turn: user, assistant with a tool call, tool result, final assistant.
MESSAGES_PER_TURN = 4

#: 2026-01-01T00:00:00Z in milliseconds: the generated runs' first timestamp.
EPOCH_MS = 1_767_225_600_000


def imul(a: int, b: int) -> int:
    """JavaScript's `Math.imul`, on unsigned 32-bit values."""
    return (a * b) & MASK


class Rand:
    """mulberry32, bit for bit as tools/clients/typescript/test/random.ts."""

    def __init__(self, seed: int) -> None:
        self.state = (seed & MASK) or 0x9E3779B9

    def next(self) -> float:
        """A float in [0, 1)."""
        self.state = (self.state + 0x6D2B79F5) & MASK
        t = self.state
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & MASK
        return ((t ^ (t >> 14)) & MASK) / 4294967296

    def below(self, n: int) -> int:
        """An integer in [0, n) (`int` of the TypeScript Rand)."""
        return int(self.next() * n)

    def size(self, low: int, high: int) -> int:
        """A length in [low, high], small ones more often (r²)."""
        r = self.next()
        return low + int(r * r * (high - low))

    def hex(self, n: int) -> str:
        return "".join("0123456789abcdef"[self.below(16)] for _ in range(n))


def session_seed(seed: int, index: int) -> int:
    """The seed of session `index` of a run seeded `seed`."""
    return (seed ^ imul(index + 1, 0x9E3779B1)) & MASK


def corpus(size: int) -> str:
    """`size` characters of words, the same for every run (the texts are cut from it)."""
    r = Rand(CORPUS_SEED)
    out: list[str] = []
    total = 0
    while total < size:
        word = WORDS[r.below(len(WORDS))]
        out.append(word)
        total += len(word) + 1
    return " ".join(out)[:size]


CORPUS_SEED = 0x5EED
CORPUS = corpus(1 << 16)


def text(r: Rand, length: int) -> str:
    """`length` characters of the corpus from a random place: one draw, however long."""
    start = r.below(len(CORPUS) - length)
    return CORPUS[start : start + length]


def usage(r: Rand) -> JsonObject:
    input_tokens = 1000 + r.below(20000)
    output_tokens = 50 + r.below(2000)
    cache_read = r.below(50000)
    cost = {
        "input": input_tokens * 3 / 1e6,
        "output": output_tokens * 15 / 1e6,
        "cacheRead": cache_read * 0.3 / 1e6,
        "cacheWrite": 0,
    }
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"]
    return {
        "input": input_tokens,
        "output": output_tokens,
        "cacheRead": cache_read,
        "cacheWrite": 0,
        "totalTokens": input_tokens + output_tokens + cache_read,
        "cost": cost,
    }


def assistant(r: Rand, content: list[JsonObject], stop: str, timestamp: int) -> JsonObject:
    return {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": usage(r),
        "stopReason": stop,
        "timestamp": timestamp,
    }


def agent_turn(r: Rand, index: int, turn: int) -> list[JsonObject]:
    """The four messages of turn `turn` of session `index`, in the order they are produced."""
    at = EPOCH_MS + index * 3_600_000 + turn * 60_000
    tool = TOOLS[r.below(len(TOOLS))]
    call_id = f"toolu_{r.hex(16)}"
    user = {"role": "user", "content": [{"type": "text", "text": text(r, r.size(40, 600))}], "timestamp": at}
    call = assistant(
        r,
        [
            {"type": "text", "text": text(r, r.size(40, 400))},
            {"type": "toolCall", "id": call_id, "name": tool, "arguments": {"path": f"src/{text(r, 12).replace(' ', '_')}.rs"}},
        ],
        "toolUse",
        at + 5_000,
    )
    result = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool,
        "content": [{"type": "text", "text": text(r, r.size(200, 4000))}],
        "isError": r.below(20) == 0,
        "timestamp": at + 6_000,
    }
    final = assistant(r, [{"type": "text", "text": text(r, r.size(100, 2000))}], "stop", at + 15_000)
    return [user, call, result, final]


def agent_run(seed: int, index: int, turns: int) -> list[JsonObject]:
    """Every message of session `index`, in order."""
    r = Rand(session_seed(seed, index))
    return [m for turn in range(turns) for m in agent_turn(r, index, turn)]


def session_id(prefix: str, index: int) -> str:
    return f"{prefix}{index:06d}"


class AppendGatherer:
    """Gathers the appends made at the same time into `POST /v1/appends` requests, one in flight
    at a time (what the TypeScript client's `AppendBatcher` does): each `append` resolves to its
    own entry's id or raises its own `GroveError`."""

    def __init__(self, client: AsyncGroveClient, max_items: int = 1000) -> None:
        self._client = client
        self._max = max_items
        self._queue: list[tuple[JsonObject, asyncio.Future[str]]] = []
        self._sender: Optional[asyncio.Task[None]] = None

    def append(self, sid: str, entry: JsonObject) -> asyncio.Future[str]:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._queue.append(({"session": sid, "entry": entry}, future))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())
        return future

    async def _send(self) -> None:
        try:
            await asyncio.sleep(0)  # the appends made in this turn of the loop go out together
            while self._queue:
                batch = self._queue[: self._max]
                del self._queue[: self._max]
                try:
                    results = await self._client.append_batch([item for item, _ in batch])
                    if len(results) != len(batch):
                        raise GroveError("invalid_response", 200, f"{len(batch)} appends sent, {len(results)} results")
                except GroveError as e:
                    for _, future in batch:
                        future.set_exception(e)
                    continue
                for (_, future), result in zip(batch, results):
                    if "id" in result:
                        future.set_result(str(result["id"]))
                    else:
                        future.set_exception(GroveError(str(result["code"]), int(result["status"]), str(result["message"])))
        finally:
            self._sender = None


class Requests:
    """Sends the requests of `direct` mode, at most `in_flight` at once, each on a connection of
    the client's while it is in flight. (httpx's pool, under the asyncio client until 2026-12,
    spent CPU in proportion to the requests queued in it times its connections on every request
    it started or ended, so a thousand requests handed to it at once cost far more than the same
    requests queued here: encode/httpcore#1035.)"""

    def __init__(self, client: AsyncGroveClient, in_flight: int) -> None:
        self._client = client
        self._gate = asyncio.Semaphore(in_flight)

    async def create(self, sid: str) -> None:
        async with self._gate:
            await self._client.create_session(id=sid, cwd=f"/work/{sid}")

    async def append(self, sid: str, entry: JsonObject) -> str:
        async with self._gate:
            return await self._client.append(sid, entry)


async def write_session(
    requests: Requests,
    gatherer: Optional[AppendGatherer],
    sid: str,
    messages: Sequence[JsonObject],
    latencies: list[float],
) -> None:
    """Creates the session and appends its messages one after the other, timing each (the wait
    its session sees, from the call to the answer)."""
    await requests.create(sid)
    for message in messages:
        start = time.perf_counter()
        pending: Awaitable[str] = gatherer.append(sid, message) if gatherer else requests.append(sid, message)
        await pending
        latencies.append(time.perf_counter() - start)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (nearest rank) of sorted values; 0 for none."""
    if not sorted_values:
        return 0.0
    rank = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[rank]


def sample(sessions: int, count: int) -> list[int]:
    """`count` session indexes spread evenly over the run, the first and last among them."""
    if count <= 0 or sessions == 0:
        return []
    if count >= sessions:
        return list(range(sessions))
    return sorted({round(k * (sessions - 1) / (count - 1)) for k in range(count)} if count > 1 else {0})


async def verify(client: AsyncGroveClient, prefix: str, seed: int, turns: int, indexes: Sequence[int]) -> list[str]:
    """Reads back the sessions of `indexes`; one line per difference from what was written."""
    problems: list[str] = []
    for index in indexes:
        sid = session_id(prefix, index)
        written = agent_run(seed, index, turns)
        summary = await client.get_session(sid)
        if summary.get("entries") != len(written):
            problems.append(f"{sid}: {summary.get('entries')} entries, {len(written)} written")
        messages: list[Any] = (await client.context(sid))["messages"]
        if len(messages) != len(written):
            problems.append(f"{sid}: {len(messages)} context messages, {len(written)} written")
            continue
        for k, (read, wrote) in enumerate(zip(messages, written)):
            if read != wrote:
                problems.append(f"{sid}: context message {k} ({wrote['role']}) differs from the one written")
                break
    return problems


async def run(
    url: Optional[str],
    sessions: int,
    turns: int,
    seed: int,
    concurrency: int,
    mode: str,
    prefix: str,
    verify_count: int,
    in_flight: int = 32,
) -> tuple[JsonObject, list[str]]:
    """Runs the load and the self-check: the report and the problems found (none: passed)."""
    runs = [agent_run(seed, i, turns) for i in range(sessions)]
    latencies: list[float] = []
    limit = asyncio.Semaphore(concurrency)
    async with AsyncGroveClient(url, name="python-harness") as client:
        durability = (await client.health())["durability"]
        gatherer = AppendGatherer(client) if mode == "batch" else None
        requests = Requests(client, in_flight)

        async def one(index: int) -> None:
            async with limit:
                await write_session(requests, gatherer, session_id(prefix, index), runs[index], latencies)

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(sessions)))
        seconds = time.perf_counter() - start
        indexes = sample(sessions, verify_count)
        problems = await verify(client, prefix, seed, turns, indexes)
    latencies.sort()
    entries = sum(len(r) for r in runs)
    report: JsonObject = {
        "client": "python",
        "mode": mode,
        "durability": durability,
        "sessions": sessions,
        "turns": turns,
        "entries": entries,
        "seconds": round(seconds, 3),
        "entriesPerSecond": round(entries / seconds, 1),
        "sessionsPerSecond": round(sessions / seconds, 2),
        "appendP50Ms": round(quantile(latencies, 0.5) * 1000, 3),
        "appendP99Ms": round(quantile(latencies, 0.99) * 1000, 3),
        "inFlight": in_flight if mode == "direct" else 1,
        "verified": len(indexes),
    }
    return report, problems


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--url", default=None, help="unix:PATH or http://HOST:PORT (default: GROVE_URL)")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=0, help="sessions in flight at once (default: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=("direct", "batch"), default="direct")
    parser.add_argument("--prefix", default=None, help="session ids are PREFIX + a 6-digit index (default: h{seed}-)")
    parser.add_argument("--verify", type=int, default=20, help="sessions read back and checked at the end")
    parser.add_argument("--in-flight", type=int, default=32, help="direct mode: requests in flight at once")
    args = parser.parse_args(argv)
    if args.sessions < 0 or args.turns < 0 or args.concurrency < 0:
        parser.error("--sessions, --turns and --concurrency take a number >= 0")
    report, problems = asyncio.run(
        run(
            args.url,
            args.sessions,
            args.turns,
            args.seed,
            args.concurrency or max(1, args.sessions),
            args.mode,
            args.prefix if args.prefix is not None else f"h{args.seed}-",
            args.verify,
            max(1, args.in_flight),
        )
    )
    print(json.dumps(report))
    for problem in problems:
        print(f"harness: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
