#!/usr/bin/env bash
# bench/rtt_rounds.sh - the busy-poll 8-byte round trip against UCX tag_lat,
# round by round: each round runs UCX (through ../shared/tools/anchors.sh,
# as `make bench` does) and ulnet (bench_tcp lat, ULNET_OPT_BUSY_POLL),
# seconds apart, UCX first in odd rounds and ulnet first in even ones (so
# that neither side always follows the other's exit), and prints both
# averages, both medians and their ratios; the last lines are the medians
# of the per-round ratios. More rounds than `make bench`'s three, for a
# figure this VM moves by 10-30% from minute to minute. Not a test.
#
# usage: bench/rtt_rounds.sh [build-dir] [rounds]
# env: RTT_SECS (seconds per ulnet run, default 1), BENCH_PORT base (23400)
set -euo pipefail
build=${1:-build}
rounds=${2:-12}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${ULNET_SHARED:-$root/../shared}
port=${BENCH_PORT:-23400}
work=$(mktemp -d /tmp/ulnet-rtt.XXXXXX)
trap 'rm -rf "$work"' EXIT

# run_ucx / run_ulnet: "<avg> <p50>" in us
run_ucx() {
  ONLY='^ucx_tag_lat_64B' REPS=1 REPS_SHORT=1 SKIP_INSTALL=1 \
    bash "$shared/tools/anchors.sh" 2>/dev/null |
    awk '$1 == "ucx_tag_lat_64B_rtt_avg" {a = $2} $1 == "ucx_tag_lat_64B_rtt_p50" {p = $2}
         END { if (a != "" && p != "") print a, p }'
}
run_ulnet() {
  BENCH_BUSY_POLL=1 BENCH_PORT=$((port + $1)) "$build/bin/bench_tcp" lat "${RTT_SECS:-1}" |
    awk '$1 == "ulnet_put_ack_rtt_8B_avg" {a = $2} $1 == "ulnet_put_ack_rtt_8B_p50" {p = $2}
         END { if (a != "" && p != "") print a, p }'
}

for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    ucx=$(run_ucx); ul=$(run_ulnet "$r")
  else
    ul=$(run_ulnet "$r"); ucx=$(run_ucx)
  fi
  if [ -z "$ucx" ] || [ -z "$ul" ]; then
    echo "round $r: ucx ${ucx:-NA}, ulnet ${ul:-NA}"
    continue
  fi
  echo "$r $ucx $ul" | awk '{ printf "round %d: avg ucx %.2f us, ulnet %.2f us, ratio %.2f | p50 ucx %.2f us, ulnet %.2f us, ratio %.2f\n",
                                    $1, $2, $4, $4 / $2, $3, $5, $5 / $3 }'
done | tee "$work/rounds" >&2
for k in avg p50; do
  awk -v k="$k" '/^round .*ratio/ { split($0, h, "|"); s = (k == "avg") ? h[1] : h[2];
                                     n = split(s, f, " "); print f[n] }' "$work/rounds" | sort -g |
    awk -v k="$k" '{v[NR] = $1} END { if (NR) printf "median per-round ratio ulnet/UCX (%s): %.2f over %d rounds (%.2f-%.2f)\n", k, v[int((NR + 1) / 2)], NR, v[1], v[NR] }'
done
