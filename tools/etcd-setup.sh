#!/usr/bin/env bash
# Starts a three-member etcd cluster on loopback for grove's sharding test and prints its client
# URLs (the value of GROVE_TEST_ETCD).
#
#   eval "$(bash tools/etcd-setup.sh)"    # exports GROVE_TEST_ETCD (and GROVE_TEST_ETCD_STARTED=1
#                                         # when it started the cluster)
#   bash tools/etcd-setup.sh stop         # stops the members of that folder and removes it
#
# Uses Debian's etcd-server package (installed with apt-get when `etcd` is missing, as root). The
# members keep their data in $GROVE_ETCD_DIR (default /tmp/grove-etcd, made anew) and listen on
# 127.0.0.1: clients on $GROVE_ETCD_PORT, +2, +4 (default 52379, 52381, 52383), peers on the port
# after each. A cluster already answering on the first port is used as it is. Progress goes to
# stderr; stdout is only the export lines.
set -euo pipefail

dir="${GROVE_ETCD_DIR:-/tmp/grove-etcd}"
base="${GROVE_ETCD_PORT:-52379}"

# Stops the members this script started in $dir (by their pid files) and waits for them to exit.
stop_members() {
  local pids=""
  for pidfile in "$dir"/*.pid; do
    [ -f "$pidfile" ] || continue
    pids="$pids $(cat "$pidfile")"
    rm -f "$pidfile"
  done
  [ -n "$pids" ] || return 0
  kill $pids 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 $pids 2>/dev/null || return 0
    sleep 0.2
  done
  kill -9 $pids 2>/dev/null || true
}

if [ "${1:-}" = stop ]; then
  stop_members
  # The folder is this script's own (made anew at start): nothing of it is kept.
  rm -rf "$dir"
  exit 0
fi

if ! command -v etcd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "etcd-setup: etcd is not installed and apt-get (as root) is not available to install it" >&2
    exit 1
  fi
  echo "etcd-setup: installing Debian's etcd-server" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
fi
command -v etcd >/dev/null 2>&1 || { echo "etcd-setup: no etcd after installing etcd-server" >&2; exit 1; }

urls=""
cluster=""
for i in 0 1 2; do
  client=$((base + 2 * i))
  peer=$((client + 1))
  urls="${urls:+$urls,}http://127.0.0.1:$client"
  cluster="${cluster:+$cluster,}m$i=http://127.0.0.1:$peer"
done

# GET /health through bash's /dev/tcp (no curl on a bare Debian).
healthy() {
  timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 && printf 'GET /health HTTP/1.0\r\nHost: etcd\r\n\r\n' >&3 \
    && grep -q '\"health\":\"true\"' <&3" 2>/dev/null
}

if healthy "$base"; then
  echo "etcd-setup: a cluster already answers on port $base" >&2
else
  stop_members
  rm -rf "$dir"
  mkdir -p "$dir"
  for i in 0 1 2; do
    client=$((base + 2 * i))
    peer=$((client + 1))
    # setsid: the members outlive this script, in a session of their own.
    setsid etcd --name "m$i" --data-dir "$dir/m$i" \
      --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token grove-test \
      >"$dir/m$i.log" 2>&1 </dev/null &
    echo $! >"$dir/m$i.pid"
  done
  for _ in $(seq 1 120); do
    healthy "$base" && break
    sleep 0.5
  done
  healthy "$base" || { echo "etcd-setup: the cluster did not become healthy" >&2; tail -n 20 "$dir"/m*.log >&2; exit 1; }
  echo "export GROVE_TEST_ETCD_STARTED=1"
fi
echo "export GROVE_TEST_ETCD='$urls'"
