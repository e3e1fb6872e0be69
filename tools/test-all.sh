#!/usr/bin/env bash
# Runs every test of the repository: the Rust workspace, then the TypeScript and the Python client
# against the real `grove serve` (its npm dev dependencies, pi's packages among them, come from the npm
# registry). Needs cargo, node 22.19 or later with npm (pi's packages require it), PostgreSQL
# (installed and started by tools/pg-setup.sh when GROVE_TEST_PG is not set), and chromium for
# the HTML page's browser tests (test/view.test.ts; `apt-get install chromium` on Debian).
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
# Each phase's heading says how long the run has taken so far (CI must stay under 45 minutes).
started=$(date +%s)
phase() { echo "== $1 (at $(( $(date +%s) - started )) s)"; }
# The temporary files of every test (Rust's tempfile, node's and Python's tmpdir) go to a folder of
# this run, removed when it ends; what a test left there is named first, so a leak is seen.
run_tmp="$(mktemp -d "${TMPDIR:-/tmp}/grove-test-run.XXXXXX")"
export TMPDIR="$run_tmp"
leftovers() {
  local left
  left="$(ls -A "$run_tmp" 2>/dev/null | head -n 20)"
  if [ -n "$left" ]; then
    echo "test-all: the tests left these in their temporary folder (removed now):"
    printf '  %s\n' $left
  fi
  rm -rf "$run_tmp"
}
# What this run started is stopped when it ends, and what it made is removed.
stops=""
trap 'eval "$stops" >/dev/null 2>&1 || true; leftovers' EXIT
# PostgreSQL for the postgres backend's tests (tools/pg-setup.sh: Debian's package, a cluster of its
# own on 127.0.0.1:55432, started as the postgres user). The tests of several grove nodes
# (serve::cluster) start a primary and a synchronous standby of their own with the same package
# (grove_tests::pg_cluster). Under CI these tests fail without it.
if [ -z "${GROVE_TEST_PG:-}" ]; then
  if pg_env="$(bash tools/pg-setup.sh)"; then
    eval "$pg_env"
    # A server this run started is stopped when it ends.
    if [ -n "${GROVE_TEST_PG_STARTED:-}" ]; then
      stops="bash tools/pg-setup.sh stop;"
    fi
  else
    echo "PostgreSQL could not be started: the postgres backend's tests skip (and fail under CI)"
  fi
fi
# A second PostgreSQL server and a three-member etcd cluster for the sharding test
# (tests/tests/serve/shard.rs; docs/scale-out.md). Under CI that test fails without them.
if [ -z "${GROVE_TEST_PG2:-}" ]; then
  if pg2_env="$(GROVE_PG_DIR=/tmp/grove-pg2 GROVE_PG_PORT=55433 bash tools/pg-setup.sh)"; then
    eval "$(printf '%s\n' "$pg2_env" | sed 's/GROVE_TEST_PG/GROVE_TEST_PG2/')"
    if [ -n "${GROVE_TEST_PG2_STARTED:-}" ]; then
      stops="${stops:-} GROVE_PG_DIR=/tmp/grove-pg2 bash tools/pg-setup.sh stop;"
    fi
  else
    echo "A second PostgreSQL server could not be started: the sharding test skips (and fails under CI)"
  fi
fi
if [ -z "${GROVE_TEST_ETCD:-}" ]; then
  if etcd_env="$(bash tools/etcd-setup.sh)"; then
    eval "$etcd_env"
    if [ -n "${GROVE_TEST_ETCD_STARTED:-}" ]; then
      stops="${stops:-} bash tools/etcd-setup.sh stop;"
    fi
  else
    echo "etcd could not be started: the sharding test skips (and fails under CI)"
  fi
fi
export GROVE_TEST_PG2="${GROVE_TEST_PG2:-}" GROVE_TEST_ETCD="${GROVE_TEST_ETCD:-}"
phase "Rust, the embedded core alone (grove-engine and grove-tools --no-default-features)"
{ cargo clippy -p grove-engine -p grove-tools --all-targets --no-default-features -- -D warnings \
  && cargo test -p grove-engine -p grove-tools --no-default-features --lib --bins; } || status=1
phase "Rust (cargo test --workspace)"
cargo test --workspace || status=1

# chromium for the browser tests: Debian's package when it is missing and apt-get can install it.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
  && [ -z "${CHROMIUM_BIN:-}" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi

phase "TypeScript client (tools/clients/typescript)"
# The workspace's own build of the binary (the one `cargo test --workspace` made: features unified
# over the workspace, so nothing is compiled again).
cargo build -q --workspace --bins
export GROVE_BIN="$PWD/target/debug/grove"
(
  cd tools/clients/typescript
  npm ci --no-audit --no-fund
  # The Claude Agent SDK for its store's test, apart: without its optional dependencies, the
  # Claude Code binaries (hundreds of MB), which the test does not run.
  (cd test/claude-agent-sdk && npm ci --omit=optional --no-audit --no-fund)
  # The native addon (napi-rs) in the dev profile: the tests' build.
  GROVE_NATIVE_DEBUG=1 npm run build:native
  echo "(the native addon built at $(( $(date +%s) - started )) s)"
  npx tsc --noEmit -p .
  NO_COLOR=1 CI=1 npx vitest run
  # The transport-neutral tests again, on a store opened in each test process (openStore).
  GROVE_TRANSPORT=in-process NO_COLOR=1 CI=1 npx vitest run test/client.test.ts test/listing.test.ts \
    test/differential.test.ts test/harness.test.ts test/langgraph.test.ts test/operations.test.ts \
    test/pi.test.ts test/replay.test.ts test/openai-agents.test.ts test/pi-storage.test.ts test/pi-lanes.test.ts \
    test/search.test.ts test/pi-search.test.ts test/redact.test.ts test/retain.test.ts \
    test/claude-agent-sdk/claude-agent-sdk.test.ts
) || status=1
# The bindings' own code has no unsafe: only what napi-rs's and PyO3's macros generate.
if grep -rnw unsafe tools/clients/typescript/native/src tools/clients/python/native/src; then
  echo "the native modules' code names unsafe"
  status=1
fi
phase "Python client (tools/clients/python)"
(
  cd tools/clients/python
  # Its own virtual environment; Debian's python3 may need python3-venv for it.
  if ! python3 -m venv .venv >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv .venv
  fi
  # maturin builds the extension module (grove_client._native) with cargo: the dev profile,
  # the tests' build.
  MATURIN_PEP517_ARGS="--profile dev" .venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
  .venv/bin/python -m mypy --strict grove_client && .venv/bin/python -m mypy tests examples
  .venv/bin/python -m pytest -q -p no:cacheprovider
  # Again with the tests' unix-socket client on a store in the test process (in-process:DIR).
  GROVE_TRANSPORT=in-process .venv/bin/python -m pytest -q -p no:cacheprovider
) || status=1
phase "The clients' README install steps (tools/clients/readme-steps.sh)"
bash tools/clients/readme-steps.sh || status=1
phase "done"
exit "$status"
