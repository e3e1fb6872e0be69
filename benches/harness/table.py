"""The table of benches/harness/run.sh: one row per harness run (its JSON line), then the ratios
TypeScript / Python per durability and mode, batch / direct per client and durability, and each
client's none / sync per mode."""

import json
import sys


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    print(
        "| durability | client | mode | entries | seconds | entries/s | sessions/s | append p50 | append p99 "
        "| server CPU (per entry) | client CPU (per entry) | store | load at the end |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        n = r["entries"]
        server, client = r["serverCpuSeconds"], r["clientCpuSeconds"]
        print(
            f"| {r['durability']} | {r['client']} | {r['mode']} | {n:,} | {r['seconds']:.1f} | {r['entriesPerSecond']:,.0f} "
            f"| {r['sessionsPerSecond']:.2f} | {r['appendP50Ms']:,.0f} ms | {r['appendP99Ms']:,.0f} ms "
            f"| {server:.1f} s ({server / n * 1e6:.0f} µs) | {client:.1f} s ({client / n * 1e6:.0f} µs) "
            f"| {r['storeBytes'] / 2**20:.0f} MiB | {r.get('load', '?')} |"
        )
    rate = {(r["durability"], r["client"], r["mode"]): r["entriesPerSecond"] for r in rows}
    print()
    for (d, c, m), value in rate.items():
        if c == "typescript" and (d, "python", m) in rate:
            print(f"- {d}, {m}: TypeScript / Python {value / rate[(d, 'python', m)]:.2f}×")
    for (d, c, m), value in rate.items():
        if m == "batch" and (d, c, "direct") in rate:
            print(f"- {d}, {c}: batch / direct {value / rate[(d, c, 'direct')]:.2f}×")
    for (d, c, m), value in rate.items():
        if d == "none" and ("sync", c, m) in rate:
            print(f"- {c}, {m}: none / sync {value / rate[('sync', c, m)]:.2f}×")


if __name__ == "__main__":
    main()
