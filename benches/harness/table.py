"""The table of benches/harness/run.sh: one row per harness run (its JSON line), then the ratios
TypeScript / Python per durability and mode, and each client's none / sync per mode."""

import json
import sys


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    print("| durability | client | mode | entries | seconds | entries/s | sessions/s | append p50 | append p99 | server CPU / entry | client CPU / entry | load at the end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        n = r["entries"]
        print(
            f"| {r['durability']} | {r['client']} | {r['mode']} | {n:,} | {r['seconds']:.1f} | {r['entriesPerSecond']:,.0f} "
            f"| {r['sessionsPerSecond']:.2f} | {r['appendP50Ms']:.2f} ms | {r['appendP99Ms']:.2f} ms "
            f"| {r['serverCpuSeconds'] / n * 1e6:.0f} µs | {r['clientCpuSeconds'] / n * 1e6:.0f} µs | {r.get('load', '?')} |"
        )
    rate = {(r["durability"], r["client"], r["mode"]): r["entriesPerSecond"] for r in rows}
    print()
    for (d, c, m), value in rate.items():
        if c == "typescript" and (d, "python", m) in rate:
            print(f"- {d}, {m}: TypeScript / Python {value / rate[(d, 'python', m)]:.2f}×")
    for (d, c, m), value in rate.items():
        if d == "none" and (("sync", c, m)) in rate:
            print(f"- {c}, {m}: none / sync {value / rate[('sync', c, m)]:.2f}×")


if __name__ == "__main__":
    main()
