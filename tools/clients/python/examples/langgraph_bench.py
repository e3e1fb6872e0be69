"""LangGraph on grove against LangGraph's SQLite checkpointer: the same real graph
(`examples/langgraph_graph.py`, a deterministic fake model and a tool) runs a long thread on
`AsyncGroveSaver` (on a fresh store opened in this process, or with `--transport server` through a
`grove serve` this script starts, over a unix socket) and
on `AsyncSqliteSaver` (`langgraph-checkpoint-sqlite`, a fresh database file), and on
`InMemorySaver` as the floor of the graph's own work.

At the marked turns it measures the bytes on disk (grove: the sum of the file sizes of the store
directory while the server runs, at the durability given, grove's default `sync`, on sled unless
`--backend redb`, `--compress` for sled's zstd page compression; SQLite: the database file and
its WAL) and the latency of `aget_state` (median and minimum of `--samples` calls after two
warm-up calls).
After the last turn it travels in time: `aget_state_history` of the whole thread, then
`aupdate_state` from the checkpoint at `--fork` (the last answer of that turn rewritten), and
`--branch-turns` more turns from there, which branch the thread; it checks that the latest state
follows the branch and that the old branch is still in the history. Then it stops the server and
runs `grove verify`, `grove tree --all` (a checkpoint is a custom entry, which `grove tree`
hides by default), `grove log` and `grove export --html` on the thread's session.

    cd tools/clients/python && .venv/bin/python -m examples.langgraph_bench --out /tmp/lg.md

prints a markdown report (and `--json PATH` writes the measurements). Each turn checks that it
started from the latest state, and the three threads must agree on their checkpoints and messages
at every mark."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from grove_client import aio as grove_aio
from grove_client.langgraph import AsyncGroveSaver

from . import serving
from .langgraph_graph import TOOL_EVERY, build_graph, question, summary

ROOT = pathlib.Path(__file__).resolve().parents[4]
THREAD = "bench"


def session_of(thread_id: str, ns: str = "") -> str:
    """The grove session of a LangGraph thread (docs/langgraph.md)."""
    return f"lg-{thread_id.encode().hex()}-n{ns.encode().hex()}"


def dir_bytes(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclass
class Mark:
    turn: int
    checkpoints: int
    messages: int
    bytes: Optional[int]
    get_state_s: float
    get_state_min_s: float
    turn_s: float  # median `ainvoke` of the turns since the previous mark


@dataclass
class Run:
    backend: str
    marks: list[Mark] = field(default_factory=list)
    history_s: float = 0.0
    history_checkpoints: int = 0
    update_state_s: float = 0.0
    branch_turn_s: float = 0.0
    branch_get_state_s: float = 0.0
    history_after_branch: int = 0
    bytes_after_branch: Optional[int] = None
    bytes_closed: Optional[int] = None
    total_s: float = 0.0
    cli: dict[str, str] = field(default_factory=dict)


@dataclass
class Backend:
    name: str
    saver: BaseCheckpointSaver[Any]
    size: Callable[[], Optional[int]]


async def median_time(call: Callable[[], Awaitable[object]], samples: int, warmup: int = 2) -> tuple[float, float]:
    for _ in range(warmup):
        await call()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


async def run(backend: Backend, args: argparse.Namespace) -> Run:
    graph = build_graph(backend.saver)
    config: RunnableConfig = {"configurable": {"thread_id": THREAD}}
    result = Run(backend.name)
    marks = sorted(set(args.marks) | {args.turns})
    fork_config: Optional[RunnableConfig] = None
    fork_messages: list[AnyMessage] = []
    turn_times: list[float] = []
    begin = time.perf_counter()

    async def get_state() -> object:
        return await graph.aget_state(config)

    async def history() -> list[Any]:
        return [s async for s in graph.aget_state_history(config)]

    for turn in range(1, args.turns + 1):
        start = time.perf_counter()
        out = await graph.ainvoke({"messages": [question(str(turn))]}, config)
        turn_times.append(time.perf_counter() - start)
        if len(out["messages"]) != 2 * turn + 2 * (turn // TOOL_EVERY):
            raise SystemExit(f"{backend.name}: turn {turn} started from a stale state")
        if turn == args.fork:
            snapshot = await graph.aget_state(config)
            fork_config, fork_messages = snapshot.config, snapshot.values["messages"]
        if turn in marks:
            median, low = await median_time(get_state, args.samples)
            snapshot = await graph.aget_state(config)
            step = snapshot.metadata["step"] if snapshot.metadata else -2
            result.marks.append(
                Mark(turn, step + 2, len(snapshot.values["messages"]), backend.size(), median, low, statistics.median(turn_times))
            )
            turn_times = []
            print(f"  {backend.name}: turn {turn}, {result.marks[-1]}", file=sys.stderr)
    last = await graph.aget_state(config)
    assert fork_config is not None

    # Time travel: the whole history, then a branch from the checkpoint at turn `--fork`.
    result.history_s, _ = await median_time(history, 3, warmup=1)
    snapshots = await history()
    result.history_checkpoints = len(snapshots)
    ids = [s.config["configurable"]["checkpoint_id"] for s in snapshots]
    assert ids == sorted(ids, reverse=True), "history is not newest first"
    assert ids[0] == last.config["configurable"]["checkpoint_id"]
    edited = fork_messages[-1]
    assert isinstance(edited, AIMessage)
    rewrite = AIMessage(content="(rewritten) " + str(edited.content), id=edited.id)
    start = time.perf_counter()
    await graph.aupdate_state(fork_config, {"messages": [rewrite]})
    result.update_state_s = time.perf_counter() - start
    branch_times = []
    for turn in range(1, args.branch_turns + 1):
        start = time.perf_counter()
        await graph.ainvoke({"messages": [question(f"b{turn}")]}, config)
        branch_times.append(time.perf_counter() - start)
    result.branch_turn_s = statistics.median(branch_times)
    result.branch_get_state_s, _ = await median_time(get_state, args.samples)
    branch = await graph.aget_state(config)
    got = summary(branch.values["messages"])
    want = summary(fork_messages[:-1] + [rewrite])
    assert got[: len(want)] == want, "the latest state does not follow the branch"
    humans = [m[1] for m in got[len(want) :] if m[0] == "human"]
    assert humans == [f"h-b{t}" for t in range(1, args.branch_turns + 1)], "the branch's turns are not the latest state"
    after = await history()
    result.history_after_branch = len(after)
    assert len(after) > len(snapshots)
    old = await graph.aget_state(last.config)
    assert summary(old.values["messages"]) == summary(last.values["messages"]), "the old branch is lost"
    assert last.config["configurable"]["checkpoint_id"] in {s.config["configurable"]["checkpoint_id"] for s in after}
    result.bytes_after_branch = backend.size()
    result.total_s = time.perf_counter() - begin
    return result


@asynccontextmanager
async def grove_backend(args: argparse.Namespace, work: pathlib.Path) -> AsyncIterator[Backend]:
    store, socket = work / "store", work / "grove.sock"
    proc = serving.start(
        [args.grove_bin, *grove_options(args), "--store", str(store), "--durability", args.durability, "serve", "--socket", str(socket)]
    )
    saver = AsyncGroveSaver(f"unix:{socket}")
    try:
        yield Backend("grove", saver, lambda: dir_bytes(store))
    finally:
        await saver.aclose()
        proc.terminate()
        proc.wait(timeout=120)


@asynccontextmanager
async def grove_in_process(args: argparse.Namespace, work: pathlib.Path) -> AsyncIterator[Backend]:
    """The saver on a store opened in this process (the extension module): the first open sets
    its options, the saver's `in-process:` URL shares it."""
    store = work / "store"
    holder = grove_aio.open(str(store), durability=args.durability, backend=args.backend, fallback="error")
    saver = AsyncGroveSaver(f"in-process:{store}")
    try:
        yield Backend("grove", saver, lambda: dir_bytes(store))
    finally:
        await saver.aclose()
        await holder.close()


@asynccontextmanager
async def sqlite_backend(work: pathlib.Path) -> AsyncIterator[Backend]:
    db = work / "checkpoints.sqlite"

    def size() -> int:
        return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())

    async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
        yield Backend("sqlite", saver, size)


def grove_options(args: argparse.Namespace) -> list[str]:
    """The global options of every grove command of the run."""
    return ["--backend", args.backend, *(["--compress"] if args.compress else [])]


def grove_cli(args: argparse.Namespace, store: pathlib.Path, work: pathlib.Path) -> dict[str, str]:
    """`grove verify`, `tree`, `log` and `export --html` on the stopped server's store."""
    sid = session_of(THREAD)
    base = [args.grove_bin, *grove_options(args), "--store", str(store)]
    html = work / "thread.html"
    out: dict[str, str] = {}
    for name, extra in [
        ("verify", ["verify"]),
        ("tree --all", ["tree", "--all", sid]),
        ("log", ["log", sid]),
        ("export --html", ["export", sid, "--html", "-o", str(html)]),
    ]:
        proc = subprocess.run(base + extra, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"grove {name} failed ({proc.returncode}): {proc.stderr.strip()}")
        lines = proc.stdout.splitlines()
        out[name] = lines[0] if name == "verify" and lines else f"{len(lines):,} lines"
    out["export --html"] = f"a page of {size(html.stat().st_size)}"
    return out


def size(n: Optional[int]) -> str:
    if n is None:
        return "—"
    return f"{n / 1024:,.0f} KiB" if n < 10 * 1024 * 1024 else f"{n / 1024 / 1024:,.1f} MiB"


def ms(s: float) -> str:
    return f"{s * 1000:,.2f} ms" if s < 1 else f"{s:,.2f} s"


def ms_min(s: float, low: float) -> str:
    return f"{ms(s)} ({low * 1000:,.2f})"


def ratio(a: Optional[float], b: Optional[float]) -> str:
    return f"{a / b:.2f}×" if a is not None and b else "—"


def report(runs: dict[str, Run], args: argparse.Namespace) -> str:
    grove, sqlite, memory = runs["grove"], runs["sqlite"], runs["memory"]
    lines = [
        f"LangGraph {args.turns} turns on one thread, `aget_state` median (min) of {args.samples} calls; "
        f"grove {'in this process' if args.transport == 'in-process' else 'through grove serve'} on {args.backend}{' with --compress' if args.compress else ''}, durability `{args.durability}`; {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end.",
        "",
        "| turn | checkpoints | messages | grove bytes | SQLite bytes | grove / SQLite | grove `aget_state` | SQLite `aget_state` | in memory `aget_state` | grove / SQLite | grove turn | SQLite turn | in memory turn |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g, s, m in zip(grove.marks, sqlite.marks, memory.marks):
        lines.append(
            f"| {g.turn} | {g.checkpoints} | {g.messages} | {size(g.bytes)} | {size(s.bytes)} | {ratio(g.bytes, s.bytes)} "
            f"| {ms_min(g.get_state_s, g.get_state_min_s)} | {ms_min(s.get_state_s, s.get_state_min_s)} | {ms_min(m.get_state_s, m.get_state_min_s)} | {ratio(g.get_state_s, s.get_state_s)} "
            f"| {ms(g.turn_s)} | {ms(s.turn_s)} | {ms(m.turn_s)} |"
        )
    lines += [
        "",
        f"| time travel after turn {args.turns} | grove | SQLite | in memory | grove / SQLite |",
        "|---|---|---|---|---|",
        f"| `aget_state_history`, {grove.history_checkpoints} checkpoints | {ms(grove.history_s)} | {ms(sqlite.history_s)} | {ms(memory.history_s)} | {ratio(grove.history_s, sqlite.history_s)} |",
        f"| `aupdate_state` from the checkpoint of turn {args.fork} | {ms(grove.update_state_s)} | {ms(sqlite.update_state_s)} | {ms(memory.update_state_s)} | {ratio(grove.update_state_s, sqlite.update_state_s)} |",
        f"| a turn on the branch (median of {args.branch_turns}) | {ms(grove.branch_turn_s)} | {ms(sqlite.branch_turn_s)} | {ms(memory.branch_turn_s)} | {ratio(grove.branch_turn_s, sqlite.branch_turn_s)} |",
        f"| `aget_state` on the branch | {ms(grove.branch_get_state_s)} | {ms(sqlite.branch_get_state_s)} | {ms(memory.branch_get_state_s)} | {ratio(grove.branch_get_state_s, sqlite.branch_get_state_s)} |",
        f"| bytes after the branch | {size(grove.bytes_after_branch)} | {size(sqlite.bytes_after_branch)} | — | {ratio(grove.bytes_after_branch, sqlite.bytes_after_branch)} |",
        f"| bytes after closing (grove: store closed) | {size(grove.bytes_closed)} | {size(sqlite.bytes_closed)} | — | {ratio(grove.bytes_closed, sqlite.bytes_closed)} |",
        f"| whole run | {ms(grove.total_s)} | {ms(sqlite.total_s)} | {ms(memory.total_s)} | {ratio(grove.total_s, sqlite.total_s)} |",
        "",
        f"History after the branch: {grove.history_after_branch} checkpoints on grove, {sqlite.history_after_branch} on SQLite, "
        f"{memory.history_after_branch} in memory. grove's CLI on the thread's session `{session_of(THREAD)}`:",
        "",
    ]
    lines += [f"- `grove {name}`: {what}" for name, what in grove.cli.items()]
    return "\n".join(lines) + "\n"


async def main(args: argparse.Namespace) -> None:
    runs: dict[str, Run] = {}
    with tempfile.TemporaryDirectory(prefix="lgbench-") as tmp:
        work = pathlib.Path(tmp)
        (work / "grove").mkdir()
        (work / "sqlite").mkdir()
        opened = grove_in_process if args.transport == "in-process" else grove_backend
        async with opened(args, work / "grove") as backend:
            runs["grove"] = await run(backend, args)
        store = work / "grove" / "store"
        runs["grove"].bytes_closed = dir_bytes(store)
        runs["grove"].cli = grove_cli(args, store, work)
        async with sqlite_backend(work / "sqlite") as backend:
            runs["sqlite"] = await run(backend, args)
            sqlite_size = backend.size
        runs["sqlite"].bytes_closed = sqlite_size()
        runs["memory"] = await run(Backend("memory", InMemorySaver(), lambda: None), args)
    want = [(m.turn, m.checkpoints, m.messages) for m in runs["memory"].marks]
    for name in ("grove", "sqlite"):
        got = [(m.turn, m.checkpoints, m.messages) for m in runs[name].marks]
        if got != want:
            raise SystemExit(f"{name}'s thread differs from the in-memory one: (turn, checkpoints, messages) {got} != {want}")
    text = report(runs, args)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({k: asdict(v) for k, v in runs.items()}, indent=2))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--grove-bin", default=str(ROOT / "target" / "release" / "grove"), help="the grove binary")
    parser.add_argument("--transport", default="in-process", choices=["in-process", "server"], help="grove in this process (the default) or through `grove serve` over a unix socket")
    parser.add_argument("--durability", default="sync", choices=["none", "group", "sync"], help="grove's durability (default: grove's own, sync)")
    parser.add_argument("--backend", default="sled", choices=["sled", "redb"], help="grove's backend (default sled)")
    parser.add_argument("--compress", action="store_true", help="sled's zstd page compression (grove --compress)")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--marks", type=lambda s: [int(x) for x in s.split(",")], default=[10, 100, 200], help="turns to measure at, comma-separated")
    parser.add_argument("--samples", type=int, default=50, help="aget_state calls per measurement")
    parser.add_argument("--fork", type=int, default=100, help="the turn whose checkpoint is updated (the branch point)")
    parser.add_argument("--branch-turns", type=int, default=5)
    parser.add_argument("--out", help="also write the markdown report here")
    parser.add_argument("--json", help="write the measurements as JSON here")
    args = parser.parse_args()
    if not pathlib.Path(args.grove_bin).exists():
        parser.error(f"no grove binary at {args.grove_bin}: cargo build --release -p grove-tools")
    if not 0 < args.fork <= args.turns:
        parser.error("--fork must be a turn of the run")
    if args.compress and args.backend != "sled":
        parser.error("--compress is sled's")
    if args.compress and args.transport == "in-process":
        parser.error("--compress makes a store with `grove serve`: give --transport server")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
