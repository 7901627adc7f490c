#!/usr/bin/env bash
# make bench: ulnet's benchmarks and, in the same run, the peers' figures
# from ../shared/tools/anchors.sh; prints one line per figure with ulnet's
# value, each anchor's and the ratios. Figures, not pass/fail tests.
#
# env: BENCH_SECS (per ulnet figure, default 3), REPS (ulnet repetitions,
#      median reported, default 3), NO_ANCHORS=1 (ulnet figures only),
#      ANCHORS_FILE=<saved anchors.sh output> (reuse instead of re-running),
#      BENCH_MANUAL_TOO=0 (skip the manual-progress lines),
#      BENCH_BUSY_POLL_TOO=0 (skip the busy-poll line).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${ULNET_SHARED:-$root/../shared}
secs=${BENCH_SECS:-3}
reps=${REPS:-3}
work=$(mktemp -d /tmp/ulnet-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "# ulnet bench $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) CPUs, kernel $(uname -r)"

echo "## core (in-process, loopback LND)"
"$build/bin/bench_core" | tee "$work/core.txt"

# Anchors first or from a file; only the rows we compare against.
if [ "${NO_ANCHORS:-0}" != 1 ]; then
  if [ -n "${ANCHORS_FILE:-}" ]; then
    cp "$ANCHORS_FILE" "$work/anchors.txt"
  else
    echo "## anchors (../shared/tools/anchors.sh, selected rows; takes a few minutes)"
    ONLY='^(tcp_stream_1MiB$|ucx_tag_bw_1MiB|tcp_rtt_64B_avg|tcp_rtt_64B_spin|ucx_tag_lat_64B|tcp_msgrate_64B_sockperf)' \
      REPS=${ANCHOR_REPS:-3} bash "$shared/tools/anchors.sh" > "$work/anchors.txt" 2>"$work/anchors.log" || true
  fi
fi
anchor() { [ -f "$work/anchors.txt" ] && awk -v n="$1" '$1 == n {print $2}' "$work/anchors.txt" | head -1 || true; }

echo "## ulnet over TCP loopback (two processes, $reps runs of ${secs}s each, median)"
for r in $(seq 1 "$reps"); do
  BENCH_PORT=$((21988 + r)) "$build/bin/bench_tcp" all "$secs" >> "$work/tcp.txt" || echo "# run $r failed" >&2
done
med() { awk -v n="$1" '$1 == n {print $2}' "$work/tcp.txt" | sort -g | awk '{a[NR]=$1} END{ if (NR) print a[int((NR+1)/2)] }'; }

line() { # name value unit anchorname... ; ratio = ulnet / anchor
  local name=$1 val=$2 unit=$3; shift 3
  local out="$name $val $unit"
  for a in "$@"; do
    local av; av=$(anchor "$a")
    if [ -n "$av" ] && [ -n "$val" ] && [ "$av" != NA ]; then
      out+=" | $a $av $unit ratio $(awk -v x="$val" -v y="$av" 'BEGIN{ if (y > 0) printf "%.2f", x/y; else print "NA" }')"
    else
      out+=" | $a NA"
    fi
  done
  echo "$out"
}
line ulnet_put_bw_1MiB        "$(med ulnet_put_bw_1MiB)"        GB/s  tcp_stream_1MiB ucx_tag_bw_1MiB
line ulnet_put_ack_rtt_8B_avg "$(med ulnet_put_ack_rtt_8B_avg)" us    tcp_rtt_64B_avg ucx_tag_lat_64B_rtt_avg
line ulnet_put_ack_rtt_8B_p50 "$(med ulnet_put_ack_rtt_8B_p50)" us    tcp_rtt_64B_p50 ucx_tag_lat_64B_rtt_p50
line ulnet_put_rate_64B       "$(med ulnet_put_rate_64B)"       msg/s tcp_msgrate_64B_sockperf
line ulnet_put_rate_64B_batch "$(med ulnet_put_rate_64B_batch)" msg/s tcp_msgrate_64B_sockperf
# The UCX-like model: no progress thread, each process's one thread spins on
# ulnet_progress() while it waits (ULNET_OPT_MANUAL_PROGRESS), as
# ucx_perftest's worker is progressed by its caller.
if [ "${BENCH_MANUAL_TOO:-1}" = 1 ]; then
  for r in $(seq 1 "$reps"); do
    BENCH_MANUAL=1 BENCH_PORT=$((21960 + r)) "$build/bin/bench_tcp" all "$secs" >> "$work/manual.txt" || echo "# manual run $r failed" >&2
  done
  medm() { awk -v n="$1" '$1 == n {print $2}' "$work/manual.txt" | sort -g | awk '{a[NR]=$1} END{ if (NR) print a[int((NR+1)/2)] }'; }
  line ulnet_put_bw_1MiB_manual        "$(medm ulnet_put_bw_1MiB)"        GB/s  tcp_stream_1MiB ucx_tag_bw_1MiB
  line ulnet_put_ack_rtt_8B_avg_manual "$(medm ulnet_put_ack_rtt_8B_avg)" us    tcp_rtt_64B_spin_avg ucx_tag_lat_64B_rtt_avg
  line ulnet_put_ack_rtt_8B_p50_manual "$(medm ulnet_put_ack_rtt_8B_p50)" us    tcp_rtt_64B_spin_p50 ucx_tag_lat_64B_rtt_p50
  line ulnet_put_rate_64B_manual       "$(medm ulnet_put_rate_64B)"       msg/s tcp_msgrate_64B_sockperf
  line ulnet_put_rate_64B_batch_manual "$(medm ulnet_put_rate_64B_batch)" msg/s tcp_msgrate_64B_sockperf
fi
if [ "${BENCH_BUSY_POLL_TOO:-1}" = 1 ]; then
  BENCH_BUSY_POLL=1 BENCH_PORT=21987 "$build/bin/bench_tcp" lat "$secs" > "$work/busy.txt" || true
  v=$(awk '$1 == "ulnet_put_ack_rtt_8B_avg" {print $2}' "$work/busy.txt")
  line ulnet_put_ack_rtt_8B_avg_busypoll "$v" us tcp_rtt_64B_spin_avg ucx_tag_lat_64B_rtt_avg
fi
echo "# ratios: bandwidth and rate higher is better; round trip lower is better"
