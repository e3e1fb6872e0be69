"""What one call costs the Python process that makes it: a small read (`leaf`) and a small append
(`append` of a short user message), each `--calls` times in a row after a tenth as many warm-up
calls, on the sync client, through a store opened in this process (the extension module) and
through a `grove serve` this script starts (unix socket), then on the asyncio client through the
same server, all at durability `none` (so that the cost measured is the call's, not a flush's).

For each it reports the latency of a call (median and 99th percentile, wall clock) and the CPU
time of this process per call (user + system over the loop, divided by the calls): in process,
that is all of the call's cost (the engine's work runs on the calling thread); through the
server, it is the client's share (the server's CPU is its own process's).

    cd tools/clients/python && .venv/bin/python -m examples.call_bench --out /tmp/calls.md

prints a markdown table. Build the extension with `pip install .` (a release build) for figures
worth comparing; an editable install's debug build is many times slower."""

from __future__ import annotations

import argparse
import asyncio
import sys
import pathlib
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grove_client
from grove_client import AsyncGroveClient, GroveClient

from . import serving

ROOT = pathlib.Path(__file__).resolve().parents[4]


@dataclass
class Cost:
    p50_us: float
    p99_us: float
    cpu_us: float


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(call: Callable[[], object], calls: int) -> Cost:
    for _ in range(max(1, calls // 10)):
        call()
    times = []
    clock = time.perf_counter_ns
    cpu0 = cpu_seconds()
    for _ in range(calls):
        t0 = clock()
        call()
        times.append(clock() - t0)
    cpu = (cpu_seconds() - cpu0) / calls
    times.sort()
    return Cost(statistics.median(times) / 1e3, times[min(len(times) - 1, int(len(times) * 0.99))] / 1e3, cpu * 1e6)


async def measure_async(call: Callable[[], Awaitable[object]], calls: int) -> Cost:
    for _ in range(max(1, calls // 10)):
        await call()
    times = []
    clock = time.perf_counter_ns
    cpu0 = cpu_seconds()
    for _ in range(calls):
        t0 = clock()
        await call()
        times.append(clock() - t0)
    cpu = (cpu_seconds() - cpu0) / calls
    times.sort()
    return Cost(statistics.median(times) / 1e3, times[min(len(times) - 1, int(len(times) * 0.99))] / 1e3, cpu * 1e6)


async def both_async(url: str, calls: int) -> dict[str, Cost]:
    async with AsyncGroveClient(url) as client:
        sid = str((await client.create_session())["id"])
        await client.append(sid, {"role": "user", "content": "first"})
        return {
            "read": await measure_async(lambda: client.leaf(sid), calls),
            "append": await measure_async(lambda: client.append(sid, {"role": "user", "content": "hello"}), calls),
        }


def both(client: GroveClient, calls: int) -> dict[str, Cost]:
    sid = str(client.create_session()["id"])
    client.append(sid, {"role": "user", "content": "first"})
    return {
        "read": measure(lambda: client.leaf(sid), calls),
        "append": measure(lambda: client.append(sid, {"role": "user", "content": "hello"}), calls),
    }


def serve(grove_bin: str, work: pathlib.Path) -> tuple[subprocess.Popen[str], str]:
    socket = work / "grove.sock"
    proc = serving.start([grove_bin, "--store", str(work / "served"), "--durability", "none", "serve", "--socket", str(socket)])
    return proc, f"unix:{socket}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--grove-bin", default=str(ROOT / "target" / "release" / "grove"), help="the grove binary (for the server)")
    parser.add_argument("--out", help="also write the markdown report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        embedded = grove_client.open(str(work / "embedded"), durability="none")
        try:
            in_process = both(embedded, args.calls)
        finally:
            embedded.close()
        proc, url = serve(args.grove_bin, work)
        try:
            with GroveClient(url) as client:
                served = both(client, args.calls)
            served_async = asyncio.run(both_async(url, args.calls))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    lines = [
        f"Python {'.'.join(map(str, sys.version_info[:3]))}, {args.calls:,} calls each after {max(1, args.calls // 10):,} warm-up, durability none; {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        "",
        "| call | in-process p50 / p99 | in-process CPU per call | server (unix) p50 / p99 | client CPU per call, server | asyncio client: p50 / p99 | asyncio client: CPU per call |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, key in [("small read: `leaf`", "read"), ("small append: `append`", "append")]:
        a, b, c = in_process[key], served[key], served_async[key]
        lines.append(
            f"| {name} | {a.p50_us:.1f} µs / {a.p99_us:.1f} µs | {a.cpu_us:.1f} µs | {b.p50_us:.0f} µs / {b.p99_us:.0f} µs | {b.cpu_us:.0f} µs"
            f" | {c.p50_us:.0f} µs / {c.p99_us:.0f} µs | {c.cpu_us:.0f} µs |"
        )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        pathlib.Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
