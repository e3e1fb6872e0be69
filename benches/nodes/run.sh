#!/usr/bin/env bash
# Several `grove serve` nodes over one PostgreSQL database (docs/benchmarks.md, "Many nodes on
# PostgreSQL"): appends/s and append latency of the TypeScript harness's agent sessions (direct
# mode, sync durability) written through 1, 2 and 3 nodes over a primary alone, then over the
# primary with a synchronous standby; next to one node on embedded sled and on redb. Then each
# case's nodes are restarted and the first context read of a sample of sessions is timed through
# them: a cold process's resume. Round trips per append come from the nodes' `/v1/health`.
#
#   bash benches/nodes/run.sh [--sessions 200] [--turns 20] [--nodes "1 2 3"]
#                             [--spread "session request"] [--resume 50] [--out FILE]
#
# `--spread request` sends each request to the next node in turn (a round-robin balancer), so
# every append meets a cache another node made stale; `session` keeps a session on one node.
# Starts its own PostgreSQL (Debian's package, as the postgres user when run as root) on two
# free loopback ports (the primary, then the standby) in a temporary folder, removed at the end.
# Needs the TypeScript client's node_modules (npm ci in tools/clients/typescript) and curl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sessions=200 turns=20 nodes="1 2 3" spreads="session request" resume=50 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sessions) sessions=$2 ;;
    --turns) turns=$2 ;;
    --nodes) nodes=$2 ;;
    --spread) spreads=$2 ;;
    --resume) resume=$2 ;;
    --out) out=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
ts="$root/tools/clients/typescript"
[ -d "$ts/node_modules" ] || { echo "no $ts/node_modules: npm ci in tools/clients/typescript" >&2; exit 1; }
cargo build --release -q -p grove-tools --manifest-path "$root/Cargo.toml"
(cd "$ts" && npx tsc -p tsconfig.bench.json)
G="$root/target/release/grove"
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r | head -1)
[ -x "$pgbin/initdb" ] || { echo "no PostgreSQL: apt-get install postgresql (or bash tools/pg-setup.sh)" >&2; exit 1; }
work=$(mktemp -d /tmp/grove-nodes.XXXXXX)
chmod 755 "$work"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
P1=$(free_port) P2=$(free_port)
while [ "$P2" = "$P1" ]; do P2=$(free_port); done
url="postgres://postgres@127.0.0.1:$P1/postgres"
pids=()
stop_nodes() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_nodes
  for d in standby primary; do
    [ -f "$work/$d/postmaster.pid" ] && as_pg "'$pgbin/pg_ctl' -D '$work/$d' -m immediate -w stop" >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT

pg_start() { # dir port
  as_pg "'$pgbin/pg_ctl' -D '$work/$1' -l '$work/$1.log' -w -t 120 start -o \"-p $2 -c listen_addresses=127.0.0.1 -k '$work' -c fsync=on -c synchronous_commit=on -c max_connections=200 -c wal_level=replica -c max_wal_senders=4\"" >/dev/null
}
mkdir -p "$work/primary"
[ "$(id -u)" = 0 ] && chown postgres "$work" "$work/primary"
as_pg "'$pgbin/initdb' -D '$work/primary' -U postgres -A trust -E UTF8 >'$work/initdb.log' 2>&1"
pg_start primary "$P1"
psql() { "$pgbin/psql" -h 127.0.0.1 -p "$P1" -U postgres -qAtc "$1" postgres; }

socks=()
start_nodes() { # count, then the store options
  local n=$1; shift
  socks=()
  for k in $(seq "$n"); do
    local sock="$work/node$k.sock"
    rm -f "$sock"
    "$G" "$@" --durability sync serve --socket "$sock" > "$work/node$k.log" 2>&1 &
    pids+=($!)
    socks+=("$sock")
  done
  for k in $(seq "$n"); do
    for _ in $(seq 300); do grep -q "^listening on" "$work/node$k.log" && break; sleep 0.1; done
    grep -q "^listening on" "$work/node$k.log" || { cat "$work/node$k.log" >&2; exit 1; }
  done
}
trips() { # the nodes' round trips, summed (0 for an embedded store)
  local sum=0
  for sock in "${socks[@]}"; do
    local t
    t=$(curl -s --unix-socket "$sock" http://grove/v1/health | python3 -c 'import json, sys; print(json.load(sys.stdin).get("roundTrips") or 0)')
    sum=$((sum + t))
  done
  echo "$sum"
}
urls() { local IFS=,; local u=(); for s in "${socks[@]}"; do u+=("unix:$s"); done; echo "${u[*]}"; }

results=${out:-$work/results.jsonl}
: > "$results"
echo "$(date -u +%FT%TZ) $(git -C "$root" rev-parse --short HEAD) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
case_no=0
run_case() { # label count spread, then the store options
  local label=$1 n=$2 spread=$3; shift 3
  case_no=$((case_no + 1))
  local prefix="c${case_no}-"
  echo "== $label, $n node(s), spread $spread" >&2
  start_nodes "$n" "$@"
  local before after
  before=$(trips)
  node "$ts/dist/bench/harness.js" --url "$(urls)" --spread "$spread" --sessions "$sessions" --turns "$turns" \
    --prefix "$prefix" --verify 0 > "$work/write.json"
  after=$(trips)
  stop_nodes
  start_nodes "$n" "$@"
  node "$ts/dist/bench/harness.js" --url "$(urls)" --spread "$spread" --sessions "$sessions" --turns "$turns" \
    --prefix "$prefix" --verify "$resume" --resume > "$work/resume.json"
  stop_nodes
  python3 -c 'import json, sys
w = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
trips = int(sys.argv[5]) - int(sys.argv[4])
print(json.dumps({"store": sys.argv[3], "nodes": w["nodes"], "spread": w["spread"], "entries": w["entries"],
  "entriesPerSecond": w["entriesPerSecond"], "appendP50Ms": w["appendP50Ms"], "appendP99Ms": w["appendP99Ms"],
  "roundTripsPerAppend": round(trips / w["entries"], 3) if trips else None,
  "resumed": r["verified"], "resumeP50Ms": r["resumeP50Ms"], "resumeP99Ms": r["resumeP99Ms"], "load": sys.argv[6]}))' \
    "$work/write.json" "$work/resume.json" "$label" "$before" "$after" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$results" >&2
}

run_case sled 1 session --store "$work/sled"
run_case redb 1 session --store "$work/redb" --backend redb
for n in $nodes; do
  for spread in $spreads; do
    [ "$n" = 1 ] && [ "$spread" != session ] && continue
    run_case postgres "$n" "$spread" --backend postgres --pg "$url" --pg-table "grove_c$((case_no + 1))"
  done
done
# The synchronous standby: a base backup of the primary, streaming, named in the primary's
# synchronous_standby_names, so that a commit returns once the standby has it.
as_pg "'$pgbin/pg_basebackup' -h 127.0.0.1 -p $P1 -U postgres -D '$work/standby' -R -X stream" >/dev/null
as_pg "echo \"primary_conninfo = 'host=127.0.0.1 port=$P1 user=postgres application_name=grove_standby'\" >> '$work/standby/postgresql.auto.conf'"
pg_start standby "$P2"
psql "ALTER SYSTEM SET synchronous_standby_names = 'grove_standby'" && psql "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 300); do [ "$(psql "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'grove_standby'")" = sync ] && break; sleep 0.1; done
[ "$(psql "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'grove_standby'")" = sync ] || { echo "the standby is not synchronous" >&2; exit 1; }
for n in $nodes; do
  run_case "postgres+standby" "$n" session --backend postgres --pg "$url" --pg-table "grove_c$((case_no + 1))"
done
python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
base = next((r for r in rows if r["store"] == "sled"), None)
print("| store | nodes | spread | appends/s | × sled | append p50 / p99 ms | round trips / append | resume p50 / p99 ms |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    ratio = f'{r["entriesPerSecond"] / base["entriesPerSecond"]:.2f}×' if base else ""
    trips = "" if r["roundTripsPerAppend"] is None else f'{r["roundTripsPerAppend"]:.2f}'
    print(f'| {r["store"]} | {r["nodes"]} | {r["spread"]} | {r["entriesPerSecond"]:,.0f} | {ratio} | '
          f'{r["appendP50Ms"]:.2f} / {r["appendP99Ms"]:.2f} | {trips} | {r["resumeP50Ms"]:.2f} / {r["resumeP99Ms"]:.2f} |')
PY
