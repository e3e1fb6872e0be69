#!/usr/bin/env bash
# Starts a PostgreSQL server for grove's tests and prints its URL (the value of GROVE_TEST_PG).
#
#   eval "$(bash tools/pg-setup.sh)"    # exports GROVE_TEST_PG (and GROVE_TEST_PG_STARTED=1 when it
#                                       # started the server)
#   bash tools/pg-setup.sh stop         # stops the server of that folder and removes the folder
#   bash tools/pg-setup.sh install      # only installs the package when missing; prints its bin
#                                       # folder (the tests of a primary with a standby,
#                                       # grove_tests::pg_cluster, start their own servers with it)
#
# Uses Debian's postgresql package (installed with apt-get when missing, as root), a cluster of its
# own in $GROVE_PG_DIR (default /tmp/grove-pg, made anew), listening on 127.0.0.1:$GROVE_PG_PORT
# (default 55432) and on a unix socket in that folder, trusting local connections. PostgreSQL refuses
# to run as root, so as root initdb and the server run as the `postgres` user. A server already
# answering on the port is used as it is. Progress goes to stderr; stdout is only the export line.
set -euo pipefail

dir="${GROVE_PG_DIR:-/tmp/grove-pg}"
port="${GROVE_PG_PORT:-55432}"
url="postgres://postgres@127.0.0.1:${port}/postgres"

bin=""
for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  if [ -x "$candidate/initdb" ]; then bin="$candidate"; break; fi
done
if [ -z "$bin" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "pg-setup: PostgreSQL is not installed and apt-get (as root) is not available to install it" >&2
    exit 1
  fi
  echo "pg-setup: installing Debian's postgresql" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$candidate/initdb" ]; then bin="$candidate"; break; fi
  done
fi
[ -n "$bin" ] || { echo "pg-setup: no initdb after installing postgresql" >&2; exit 1; }

if [ "${1:-}" = install ]; then
  echo "$bin"
  exit 0
fi

if [ "${1:-}" = stop ]; then
  stop() {
    if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi
  }
  if [ -f "$dir/data/postmaster.pid" ]; then
    stop "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop" >&2 || true
  fi
  # The folder is this script's own (made anew at start): nothing of it is kept.
  rm -rf "$dir"
  exit 0
fi

as_pg() {
  if [ "$(id -u)" = 0 ]; then
    su postgres -s /bin/sh -c "$*"
  else
    sh -c "$*"
  fi
}

if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
  echo "pg-setup: a server already answers on port $port" >&2
else
  rm -rf "$dir"
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_pg "'$bin/initdb' -D '$dir/data' -U postgres -A trust --no-sync -E UTF8 >'$dir/initdb.log' 2>&1" || {
    cat "$dir/initdb.log" >&2; exit 1; }
  as_pg "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 60 start \
    -o \"-p $port -c listen_addresses=127.0.0.1 -k '$dir' -c max_connections=200 -c fsync=on\"" >&2 || {
    cat "$dir/server.log" >&2; exit 1; }
  echo "export GROVE_TEST_PG_STARTED=1"
fi
echo "export GROVE_TEST_PG='$url'"
