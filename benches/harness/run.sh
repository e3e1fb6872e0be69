#!/usr/bin/env bash
# The example harness's load through the Python and the TypeScript client at each durability
# (docs/benchmarks.md, "The example harness: 1,000 agent sessions at once"): for every durability,
# mode and client, a fresh store and a fresh release `grove serve` on a unix socket, one run of
# tools/clients/python/examples/harness.py or tools/clients/typescript/bench/harness.ts, the
# server's CPU (from /proc) and the client's (from /usr/bin/time); then a table of them all.
#
#   bash benches/harness/run.sh [--sessions 1000] [--turns 50] [--durability "none group sync"]
#                               [--modes "direct batch"] [--clients "python typescript"] [--out FILE]
#
# Needs the Python client's virtual environment (tools/clients/python/.venv, see its README) and
# the TypeScript client's node_modules (npm ci). --out FILE keeps the harnesses' JSON lines (written
# as each run ends).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sessions=1000 turns=50 durabilities="none group sync" modes="direct batch" clients="python typescript" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sessions) sessions=$2 ;;
    --turns) turns=$2 ;;
    --durability) durabilities=$2 ;;
    --modes) modes=$2 ;;
    --clients) clients=$2 ;;
    --out) out=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
py="$root/tools/clients/python/.venv/bin/python"
ts="$root/tools/clients/typescript"
[ -x "$py" ] || { echo "no $py: python3 -m venv .venv && .venv/bin/pip install -e . in tools/clients/python" >&2; exit 1; }
[ -d "$ts/node_modules" ] || { echo "no $ts/node_modules: npm ci in tools/clients/typescript" >&2; exit 1; }
cargo build --release -q -p grove-tools --manifest-path "$root/Cargo.toml"
(cd "$ts" && npx tsc -p tsconfig.bench.json)
G="$root/target/release/grove"
work=$(mktemp -d /tmp/grove-harness.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
results=${out:-$work/results.jsonl}
: > "$results"
tick=$(getconf CLK_TCK)
cpu() { awk -v t="$tick" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }
echo "$(date -u +%FT%TZ) $(git -C "$root" rev-parse --short HEAD) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for d in $durabilities; do
  for m in $modes; do
    for c in $clients; do
      store="$work/store" sock="$work/grove.sock"
      rm -rf "$store"
      "$G" --store "$store" --durability "$d" serve --socket "$sock" > "$work/serve.log" 2>&1 &
      pid=$!
      for _ in $(seq 100); do grep -q "^listening on" "$work/serve.log" && break; sleep 0.1; done
      grep -q "^listening on" "$work/serve.log" || { cat "$work/serve.log" >&2; exit 1; }
      args=(--url "unix:$sock" --sessions "$sessions" --turns "$turns" --mode "$m")
      if [ "$c" = python ]; then cmd=("$py" "$root/tools/clients/python/examples/harness.py" "${args[@]}")
      else cmd=(node "$ts/dist/bench/harness.js" "${args[@]}"); fi
      echo "== $d $m $c" >&2
      /usr/bin/time -f "%U %S" -o "$work/time" "${cmd[@]}" > "$work/report.json"
      server_cpu=$(cpu "$pid")
      kill -TERM "$pid"; wait "$pid" || true; pid=""
      store_bytes=$(du -sb "$store" | cut -f1)
      client_cpu=$(awk '{ print $1 + $2 }' "$work/time")
      python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
r.update(serverCpuSeconds=float(sys.argv[2]), clientCpuSeconds=float(sys.argv[3]), storeBytes=int(sys.argv[4]), load=sys.argv[5])
print(json.dumps(r))' "$work/report.json" "$server_cpu" "$client_cpu" "$store_bytes" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$results" >&2
    done
  done
done
python3 "$here/table.py" "$results"
