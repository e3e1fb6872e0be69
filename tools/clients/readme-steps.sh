#!/usr/bin/env bash
# Runs the install steps of the clients' READMEs exactly as written (the sh block after the line
# `<!-- install steps: ... -->` in tools/clients/typescript/README.md and
# tools/clients/python/README.md), each in a fresh temporary project folder with GROVE set to this
# checkout, against a `grove serve` this script starts; then checks what the example printed.
# So the README's steps and examples cannot rot. Needs npm, node, python3 with venv, cargo, the
# network (npm's and PyPI's registries) and the grove binary ($GROVE_BIN, default
# target/debug/grove). The native modules are built in the workspace's dev profile here
# (GROVE_NATIVE_DEBUG=1, MATURIN_PEP517_ARGS="--profile dev"): the same code, minutes sooner on
# CI's two cores than the release build a user's install makes.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${GROVE_BIN:-$root/target/debug/grove}"
work="$(mktemp -d "${TMPDIR:-/tmp}/grove-readme.XXXXXX")"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work" "$root"/tools/clients/typescript/grove-client-*.tgz
}
trap cleanup EXIT

"$bin" serve --store "$work/store" --socket "$work/store/grove.sock" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
  [ -S "$work/store/grove.sock" ] && break
  sleep 0.1
done
[ -S "$work/store/grove.sock" ] || { echo "readme-steps: grove serve did not start:"; cat "$work/serve.log"; exit 1; }
export GROVE_URL="unix:$work/store/grove.sock"

# The sh block following the marker line of README $1.
steps() {
  awk '/^<!-- install steps:/ { marked = 1; next }
       marked && /^```sh$/ { inside = 1; next }
       inside && /^```$/ { exit }
       inside { print }' "$1"
}

status=0
for client in typescript python; do
  readme="$root/tools/clients/$client/README.md"
  block="$(steps "$readme")"
  if [ -z "$block" ]; then
    echo "readme-steps: no install steps in $readme"
    status=1
    continue
  fi
  project="$work/project-$client"
  mkdir -p "$project"
  echo "== $client: the install steps of tools/clients/$client/README.md in $project"
  if ! out="$(cd "$project" && GROVE="$root" GROVE_NATIVE_DEBUG=1 MATURIN_PEP517_ARGS="--profile dev" \
    bash -euo pipefail -c "$block" 2>&1)"; then
    printf '%s\n' "$out"
    echo "readme-steps: the $client steps failed"
    status=1
    continue
  fi
  printf '%s\n' "$out" | tail -n 5
  # Each example's branch (in this process, then through the server): the question, then the
  # question asked again (the answer is on the other branch).
  examples="$(printf '%s\n' "$block" | grep -cE '^(node|\.venv/bin/python|python3?) (server_)?quickstart\.(mjs|py)( |$)' || true)"
  printed="$(printf '%s\n' "$out" | grep -cE '^session .*: 2 messages in the context' || true)"
  if [ "$printed" -ne "$examples" ] || [ "$examples" -lt 1 ]; then
    echo "readme-steps: $printed of the $client README's $examples examples printed the branch's 2 messages"
    status=1
  fi
  # The LangGraph example: two turns, then time travel to the first and another question.
  if printf '%s\n' "$block" | grep -q 'langgraph_quickstart\.py' \
    && ! printf '%s\n' "$out" | grep -q '^thread quickstart: 4 messages'; then
    echo "readme-steps: the $client LangGraph example did not print its thread's 4 messages"
    status=1
  fi
  # The OpenAI Agents SDK example: two turns, a branch from before the second, a question there.
  if printf '%s\n' "$block" | grep -q 'openai_agents_quickstart\.py' \
    && ! printf '%s\n' "$out" | grep -q "^session quickstart: 4 items, 2 branches, last answer: '11 characters'"; then
    echo "readme-steps: the $client OpenAI Agents SDK example did not print its branch's 4 items"
    status=1
  fi
done
exit "$status"
