#!/usr/bin/env bash
# bench/rtt_rounds.sh - the busy-poll 8-byte round trip against UCX tag_lat,
# round by round: each round runs UCX (through ../shared/tools/anchors.sh,
# as `make bench` does) and then ulnet (bench_tcp lat, ULNET_OPT_BUSY_POLL),
# seconds apart, and prints both averages and their ratio; the last line is
# the median of the per-round ratios. More rounds than `make bench`'s three,
# for a figure this VM moves by 10-30% from minute to minute. Not a test.
#
# usage: bench/rtt_rounds.sh [build-dir] [rounds]
# env: RTT_SECS (seconds per ulnet run, default 1), BENCH_PORT base (23400)
set -euo pipefail
build=${1:-build}
rounds=${2:-12}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${ULNET_SHARED:-$root/../shared}
port=${BENCH_PORT:-23400}

for r in $(seq 1 "$rounds"); do
  ucx=$(ONLY='^ucx_tag_lat_64B' REPS=1 REPS_SHORT=1 SKIP_INSTALL=1 \
        bash "$shared/tools/anchors.sh" 2>/dev/null | awk '$1 == "ucx_tag_lat_64B_rtt_avg" {print $2}')
  ul=$(BENCH_BUSY_POLL=1 BENCH_PORT=$((port + r)) "$build/bin/bench_tcp" lat "${RTT_SECS:-1}" |
       awk '$1 == "ulnet_put_ack_rtt_8B_avg" {print $2}')
  if [ -z "$ucx" ] || [ -z "$ul" ]; then
    echo "round $r: ucx ${ucx:-NA} us, ulnet ${ul:-NA} us"
    continue
  fi
  awk -v r="$r" -v u="$ucx" -v x="$ul" 'BEGIN { printf "round %d: ucx %.2f us, ulnet %.2f us, ratio %.2f\n", r, u, x, x / u }'
done | tee /dev/stderr | awk '$NF ~ /^[0-9.]+$/ && /ratio/ {print $NF}' | sort -g |
  awk '{v[NR] = $1} END { if (NR) printf "median per-round ratio ulnet/UCX: %.2f over %d rounds (%.2f-%.2f)\n", v[int((NR + 1) / 2)], NR, v[1], v[NR] }'
