#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# relay_peers.sh [SECS]: someone else's relay beside ulnet's router. iperf3's
# 1 MiB stream on loopback, direct and then through haproxy (TCP mode, one
# thread), as bench_tcp's routed bandwidth is A -> R -> B beside A -> B:
#   haproxy_copy:   1 MiB buffers, no splice (haproxy reads and writes, as a
#                   ulnet router does)
#   haproxy_splice: 1 MiB pipes, option splice-auto (the kernel moves the
#                   pages, haproxy never touches them)
# Prints "<name> <value> GB/s" lines for bench/run.sh (NA for a run that
# failed, saying why on stderr); a line "# ..." and exit 0 when haproxy or
# iperf3 is missing (scripts/install-deps.sh installs both). Only
# 127.0.0.1, ports 52030-52031; every process it starts is stopped on exit.
# Not a test.
set -euo pipefail
secs=${1:-3}
[[ $secs =~ ^[1-9][0-9]{0,2}$ ]] || { echo "relay_peers.sh: SECS must be 1 to 999, got '$secs'" >&2; exit 2; }
PATH=$PATH:/usr/sbin:/sbin   # haproxy is in sbin, outside a user's PATH
for t in haproxy iperf3 python3; do
  command -v "$t" >/dev/null 2>&1 || { echo "# relay peers: $t not installed (scripts/install-deps.sh)"; exit 0; }
done
P_SRV=52030 P_RELAY=52031
work=$(mktemp -d /tmp/ulnet-relay-peers.XXXXXX)
srv='' hap=''
cleanup() {
  for p in $hap $srv; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# wait_port <port> <pid>: 0 once <pid> listens on 127.0.0.1:<port> (5 s at
# most), 1 if it died or time ran out. Asked of ss, not by connecting:
# iperf3 takes any connection for a test's control channel.
wait_port() {
  local i
  for ((i = 0; i < 50; i++)); do
    kill -0 "$2" 2>/dev/null || return 1
    ss -Hltnp "sport = :$1" 2>/dev/null | grep -q "pid=$2," && return 0
    sleep 0.1
  done
  return 1
}

# iperf3's server, alive for every run below (one client at a time)
iperf3 -s -B 127.0.0.1 -p $P_SRV >"$work/iperf3-server.log" 2>&1 &
srv=$!
wait_port $P_SRV "$srv" || { echo "relay_peers.sh: iperf3's server did not listen on $P_SRV" >&2; exit 1; }

# gbps <port>: the receiver's GB/s of one SECS-long 1 MiB-write stream; NA
# (and why, on stderr) when the run fails
gbps() {
  if timeout $((secs + 30)) iperf3 -c 127.0.0.1 -p "$1" -t "$secs" -l 1M -J > "$work/run.json" 2>&1 &&
     python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 8e9))' "$work/run.json" 2>/dev/null; then
    return 0
  fi
  echo "relay_peers.sh: iperf3 to port $1 failed: $(head -c 300 "$work/run.json")" >&2
  echo NA
}

# haproxy_cfg <name> <extra global lines> <extra listen lines>
# (noreuseport: a haproxy left from a killed run must make the bind fail,
# not share the port with this one)
haproxy_cfg() {
  cat > "$work/$1.cfg" <<EOF
global
    nbthread 1
    maxconn 64
    noreuseport
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
  # in the foreground (-db), so that it is our child: stopped and reaped
  # here, and by cleanup if this script is stopped
  haproxy -db -f "$work/$mode.cfg" >"$work/haproxy-$mode.log" 2>&1 &
  hap=$!
  if wait_port $P_RELAY "$hap"; then
    echo "haproxy_${mode}_bw_1MiB $(gbps $P_RELAY) GB/s"
  else
    echo "relay_peers.sh: haproxy ($mode) did not listen on $P_RELAY: $(head -c 300 "$work/haproxy-$mode.log")" >&2
    echo "haproxy_${mode}_bw_1MiB NA GB/s"
  fi
  kill "$hap" 2>/dev/null || true
  wait "$hap" 2>/dev/null || true
  hap=
done
