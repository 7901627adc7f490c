#!/usr/bin/env bash
# bench/ab.sh - interleaved A/B of two bench_tcp binaries: on this VM the
# speed drifts 20-40% over minutes, so A and B alternate run by run and
# each prints its sorted values (compare the medians). Not a test.
#
# usage: bench/ab.sh A_BINARY B_BINARY PAIRS MODE FIGURE [VAR=value...]
#   e.g. bench/ab.sh /tmp/old/bench_tcp build/bin/bench_tcp 6 lat \
#        ulnet_put_ack_rtt_8B_avg BENCH_MANUAL=1
# env: AB_SECS (seconds per run, default 1), BENCH_PORT (default 23988)
set -euo pipefail
[ $# -ge 5 ] || { sed -n '6,9p' "$0" >&2; exit 2; }
a=$1 b=$2 pairs=$3 mode=$4 fig=$5
shift 5
for _ in $(seq 1 "$pairs"); do
  for v in A B; do
    bin=$a
    [ "$v" = B ] && bin=$b
    x=$(env BENCH_PORT="${BENCH_PORT:-23988}" "$@" "$bin" "$mode" "${AB_SECS:-1}" 2>/dev/null |
        awk -v f="$fig" '$1 == f {print $2}')
    echo "$v ${x:-NA}"
  done
done | awk '{v[$1] = v[$1] " " $2} END {for (k in v) print k ":" v[k]}' | sort |
while read -r k rest; do
  echo "$k $(echo "$rest" | tr ' ' '\n' | sort -g | tr '\n' ' ')"
done
