#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# relay_peers.sh [SECS]: someone else's relay beside ulnet's router. iperf3's
# 1 MiB stream on loopback, direct and then through haproxy (TCP mode, one
# thread), as bench_tcp's routed bandwidth is A -> R -> B beside A -> B:
#   haproxy_copy:   1 MiB buffers, no splice (haproxy reads and writes, as a
#                   ulnet router does)
#   haproxy_splice: 1 MiB pipes, option splice-auto (the kernel moves the
#                   pages, haproxy never touches them)
# Prints "<name> <value> GB/s" lines for bench/run.sh; a line "# ..." and
# exit 0 when haproxy or iperf3 is missing (scripts/install-deps.sh installs
# both). Only 127.0.0.1, ports 52030-52031; every process it starts is
# stopped on exit. Not a test.
set -euo pipefail
secs=${1:-3}
case $secs in ''|*[!0-9]*) echo "relay_peers.sh: SECS must be a whole number, got '$secs'" >&2; exit 2 ;; esac
PATH=$PATH:/usr/sbin:/sbin   # haproxy is in sbin, outside a user's PATH
for t in haproxy iperf3 python3; do
  command -v "$t" >/dev/null 2>&1 || { echo "# relay peers: $t not installed (scripts/install-deps.sh)"; exit 0; }
done
P_SRV=52030 P_RELAY=52031
work=$(mktemp -d /tmp/ulnet-relay-peers.XXXXXX)
srv=
cleanup() {
  [ -f "$work/haproxy.pid" ] && kill "$(cat "$work/haproxy.pid")" 2>/dev/null || true
  [ -n "$srv" ] && kill "$srv" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# iperf3's server, alive for every run below (one client at a time)
iperf3 -s -B 127.0.0.1 -p $P_SRV >/dev/null 2>&1 &
srv=$!
sleep 0.5

# gbps <port>: the receiver's GB/s of one SECS-long 1 MiB-write stream
gbps() {
  timeout $((secs + 30)) iperf3 -c 127.0.0.1 -p "$1" -t "$secs" -l 1M -J > "$work/run.json"
  python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 8e9))' "$work/run.json"
}

# haproxy_cfg <name> <extra global lines> <extra listen lines>
haproxy_cfg() {
  cat > "$work/$1.cfg" <<EOF
global
    nbthread 1
    maxconn 64
    tune.bufsize 1048576
$2
defaults
    mode tcp
    timeout connect 5s
    timeout client $((secs + 30))s
    timeout server $((secs + 30))s
listen relay
    bind 127.0.0.1:$P_RELAY
$3
    server sink 127.0.0.1:$P_SRV
EOF
}
haproxy_cfg copy "    nosplice" ""
haproxy_cfg splice "    tune.pipesize 1048576" "    option splice-auto"

echo "haproxy_direct_bw_1MiB $(gbps $P_SRV) GB/s"
for mode in copy splice; do
  haproxy -f "$work/$mode.cfg" -D -p "$work/haproxy.pid"
  sleep 0.3
  echo "haproxy_${mode}_bw_1MiB $(gbps $P_RELAY) GB/s"
  kill "$(cat "$work/haproxy.pid")"
  rm -f "$work/haproxy.pid"
  sleep 0.3
done
