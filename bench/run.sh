#!/usr/bin/env bash
# make bench: ulnet's benchmarks and, in the same run, the peers' figures
# from ../shared/tools/anchors.sh; prints one line per figure with ulnet's
# value, each anchor's and the ratios. Figures, not pass/fail tests.
#
# The run is ROUNDS rounds; each round measures figure by figure, the
# figure's anchors and then ulnet in each mode, so that both sides of a
# ratio sample the same seconds (this VM's speed drifts by 20-40% over an
# hour, and by 10-20% from one minute to the next). Each line gives
# the medians over the rounds, their ratio, and the median of the ratios
# taken round by round ("paired": the figure least moved by drift).
#
# env: BENCH_SECS (per ulnet figure, default 3), REPS (rounds, default 3),
#      NO_ANCHORS=1 (ulnet figures only),
#      ANCHORS_FILE=<saved anchors.sh output> (used for every round instead
#      of re-measuring), BENCH_MANUAL_TOO=0 (skip the manual-progress lines),
#      BENCH_BUSY_POLL_TOO=0 (skip the busy-poll line), BENCH_O2IB_RIG=0 (skip
#      the o2ib LND beside ib_write_bw and ibv_rc_pingpong in the rig).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${ULNET_SHARED:-$root/../shared}
secs=${BENCH_SECS:-3}
rounds=${REPS:-3}
work=$(mktemp -d /tmp/ulnet-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "# ulnet bench $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) CPUs, kernel $(uname -r)"

echo "## core (in-process, loopback LND)"
"$build/bin/bench_core" | tee "$work/core.txt"

echo "## ulnet over TCP loopback (two processes) beside the anchors: $rounds rounds, each figure by figure (its anchors, then ulnet), ${secs}s per ulnet run"
# anchors_for <round> <row regex>: the selected anchors rows, appended
anchors_for() {
  [ "${NO_ANCHORS:-0}" = 1 ] && return 0
  if [ -n "${ANCHORS_FILE:-}" ]; then
    [ -f "$work/anchors.$1" ] || cp "$ANCHORS_FILE" "$work/anchors.$1"
    return 0
  fi
  ONLY=$2 REPS=1 REPS_SHORT=1 bash "$shared/tools/anchors.sh" >> "$work/anchors.$1" 2>>"$work/anchors.log" || true
}
# ulnet_for <round> <file prefix> <mode> [VAR=value...]: one bench_tcp run, appended
ulnet_for() {
  local r=$1 pfx=$2 mode=$3; shift 3
  env "$@" BENCH_PORT=$((21900 + (port_seq++ % 80))) "$build/bin/bench_tcp" "$mode" "$secs" >> "$work/$pfx.$r" ||
    echo "# round $r: $pfx $mode run failed" >&2
}
port_seq=0
# floor_for <round> bw|lat: bench_relay (relays with no LNet in them) and,
# for bw, haproxy (bench/relay_peers.sh), appended to floor.<round>
floor_for() {
  "$build/bin/bench_relay" "$2" "$secs" >> "$work/floor.$1" ||
    echo "# round $1: bench_relay $2 failed" >&2
  if [ "$2" = bw ]; then
    "$root/bench/relay_peers.sh" "$secs" >> "$work/floor.$1" ||
      echo "# round $1: relay_peers.sh failed" >&2
  fi
}
# Each round measures figure by figure: a figure's anchors, then ulnet's
# runs of that figure, so both sides of a ratio are seconds apart, not a
# minute (a whole round of anchors first left ratios open to the drift).
for r in $(seq 1 "$rounds"); do
  echo "# round $r: bandwidth (anchors, then ulnet)" >&2
  anchors_for "$r" '^(tcp_stream_1MiB$|ucx_tag_bw_1MiB)'
  ulnet_for "$r" tcp bw
  [ "${BENCH_ROUTED_TOO:-1}" = 1 ] && ulnet_for "$r" routed bw BENCH_ROUTED=1
  # the floor under the routed figure: bare relays and haproxy, same round
  [ "${BENCH_ROUTED_TOO:-1}" = 1 ] && floor_for "$r" bw
  [ "${BENCH_MANUAL_TOO:-1}" = 1 ] && ulnet_for "$r" manual bw BENCH_MANUAL=1
  echo "# round $r: round trip (anchors, then ulnet)" >&2
  anchors_for "$r" '^(tcp_rtt_64B_avg|tcp_rtt_64B_p50|tcp_rtt_64B_spin|ucx_tag_lat_64B)'
  ulnet_for "$r" tcp lat
  [ "${BENCH_ROUTED_TOO:-1}" = 1 ] && ulnet_for "$r" routedlat lat BENCH_ROUTED=1
  [ "${BENCH_ROUTED_TOO:-1}" = 1 ] && ulnet_for "$r" routedidle lat BENCH_ROUTED=1 BENCH_IDLE_PEERS=1000
  [ "${BENCH_ROUTED_TOO:-1}" = 1 ] && floor_for "$r" lat
  [ "${BENCH_MANUAL_TOO:-1}" = 1 ] && ulnet_for "$r" manual lat BENCH_MANUAL=1
  [ "${BENCH_BUSY_POLL_TOO:-1}" = 1 ] && ulnet_for "$r" busy lat BENCH_BUSY_POLL=1
  echo "# round $r: message rate (anchors, then ulnet)" >&2
  anchors_for "$r" '^tcp_msgrate_64B_sockperf'
  ulnet_for "$r" tcp rate
  [ "${BENCH_MANUAL_TOO:-1}" = 1 ] && ulnet_for "$r" manual rate BENCH_MANUAL=1
done

# vals <file prefix> <figure name>: one line per round, "round value"
vals() {
  for r in $(seq 1 "$rounds"); do
    [ -f "$work/$1.$r" ] || continue
    awk -v n="$2" -v r="$r" '$1 == n && $2 ~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/ {print r, $2; exit}' "$work/$1.$r"
  done
}
median() { sort -g | awk '{a[NR]=$1} END{ if (NR) print a[int((NR+1)/2)] }'; }

# line <label> <ulnet file prefix> <figure> <unit> <anchor>...
line() {
  local label=$1 pfx=$2 fig=$3 unit=$4; shift 4
  local mine val out
  mine=$(vals "$pfx" "$fig")
  val=$(echo "$mine" | awk 'NF {print $2}' | median)
  out="$label ${val:-NA} $unit"
  for a in "$@"; do
    local theirs av ratio paired
    theirs=$(vals anchors "$a")
    av=$(echo "$theirs" | awk 'NF {print $2}' | median)
    if [ -n "$av" ] && [ -n "$val" ]; then
      ratio=$(awk -v x="$val" -v y="$av" 'BEGIN{ if (y > 0) printf "%.2f", x/y; else print "NA" }')
      paired=$(join <(echo "$mine") <(echo "$theirs") | awk '$3 > 0 {printf "%.4f\n", $2/$3}' | median)
      out+=" | $a $av $unit ratio $ratio paired ${paired:+$(printf '%.2f' "$paired")}"
    else
      out+=" | $a NA"
    fi
  done
  echo "$out"
}

line ulnet_put_bw_1MiB        tcp ulnet_put_bw_1MiB        GB/s  tcp_stream_1MiB ucx_tag_bw_1MiB
line ulnet_put_ack_rtt_8B_avg tcp ulnet_put_ack_rtt_8B_avg us    tcp_rtt_64B_avg ucx_tag_lat_64B_rtt_avg
line ulnet_put_ack_rtt_8B_p50 tcp ulnet_put_ack_rtt_8B_p50 us    tcp_rtt_64B_p50 ucx_tag_lat_64B_rtt_p50
line ulnet_put_rate_64B       tcp ulnet_put_rate_64B       msg/s tcp_msgrate_64B_sockperf
line ulnet_put_rate_64B_batch tcp ulnet_put_rate_64B_batch msg/s tcp_msgrate_64B_sockperf
# The UCX-like model: no progress thread, each process's one thread spins on
# ulnet_progress() while it waits (ULNET_OPT_MANUAL_PROGRESS), as
# ucx_perftest's worker is progressed by its caller.
if [ "${BENCH_MANUAL_TOO:-1}" = 1 ]; then
  line ulnet_put_bw_1MiB_manual        manual ulnet_put_bw_1MiB        GB/s  tcp_stream_1MiB ucx_tag_bw_1MiB
  line ulnet_put_ack_rtt_8B_avg_manual manual ulnet_put_ack_rtt_8B_avg us    tcp_rtt_64B_spin_avg ucx_tag_lat_64B_rtt_avg
  line ulnet_put_ack_rtt_8B_p50_manual manual ulnet_put_ack_rtt_8B_p50 us    tcp_rtt_64B_spin_p50 ucx_tag_lat_64B_rtt_p50
  line ulnet_put_rate_64B_manual       manual ulnet_put_rate_64B       msg/s tcp_msgrate_64B_sockperf
  line ulnet_put_rate_64B_batch_manual manual ulnet_put_rate_64B_batch msg/s tcp_msgrate_64B_sockperf
fi
if [ "${BENCH_BUSY_POLL_TOO:-1}" = 1 ]; then
  line ulnet_put_ack_rtt_8B_avg_busypoll busy ulnet_put_ack_rtt_8B_avg us tcp_rtt_64B_spin_avg ucx_tag_lat_64B_rtt_avg
fi
# rel <label> <file prefix> <figure> <unit> <base prefix> <base figure>:
# a ulnet figure as a ratio to another ulnet figure of the same rounds
rel() {
  local label=$1 pfx=$2 fig=$3 unit=$4 bpfx=$5 bfig=$6 mine base val bv
  mine=$(vals "$pfx" "$fig"); base=$(vals "$bpfx" "$bfig")
  val=$(echo "$mine" | awk 'NF {print $2}' | median)
  bv=$(echo "$base" | awk 'NF {print $2}' | median)
  if [ -n "$val" ] && [ -n "$bv" ]; then
    echo "$label $val $unit | $bfig ($bpfx) $bv ratio $(awk -v x="$val" -v y="$bv" 'BEGIN{printf "%.2f", x/y}') paired $(join <(echo "$mine") <(echo "$base") | awk '$3 > 0 {printf "%.4f\n", $2/$3}' | median | xargs printf '%.2f')"
  else
    echo "$label NA"
  fi
}
# Routed: three processes on loopback, A -> router R -> B (BENCH_ROUTED=1),
# beside A -> B direct in the same rounds; R's CPU time per GiB forwarded
# beside one memcpy of a GiB.
if [ "${BENCH_ROUTED_TOO:-1}" = 1 ]; then
  rel ulnet_routed_put_bw_1MiB routed ulnet_put_bw_1MiB GB/s tcp ulnet_put_bw_1MiB
  rel ulnet_routed_put_ack_rtt_8B_avg routedlat ulnet_put_ack_rtt_8B_avg us tcp ulnet_put_ack_rtt_8B_avg
  rel ulnet_router_cpu_per_GiB routed router_cpu_per_GiB s routed memcpy_1GiB
  rel ulnet_routed_rtt_1000_idle_peers routedidle ulnet_put_ack_rtt_8B_avg us routedlat ulnet_put_ack_rtt_8B_avg
  # The floor: the same three-process shapes with no LNet at all, each as a
  # ratio to its own direct run of the same rounds (bench_relay.c,
  # relay_peers.sh). A routed ratio below these is the machine's, not the
  # router's; the routed figures themselves beside them follow.
  echo "# the floor: relays with no LNet in them, each beside its own direct run"
  rel relay_copy_bw_1MiB floor relay_copy_bw_1MiB GB/s floor relay_direct_bw_1MiB
  rel relay_splice_bw_1MiB floor relay_splice_bw_1MiB GB/s floor relay_direct_bw_1MiB
  rel haproxy_copy_bw_1MiB floor haproxy_copy_bw_1MiB GB/s floor haproxy_direct_bw_1MiB
  rel haproxy_splice_bw_1MiB floor haproxy_splice_bw_1MiB GB/s floor haproxy_direct_bw_1MiB
  rel relay_spin_rtt_avg floor relay_spin_rtt_avg us floor relay_direct_rtt_avg
  rel relay_copy_cpu_per_GiB floor relay_copy_cpu_per_GiB s routed memcpy_1GiB
  rel relay_splice_cpu_per_GiB floor relay_splice_cpu_per_GiB s routed memcpy_1GiB
  # ulnet's routed figures against the relays' in absolute terms
  rel ulnet_routed_put_bw_1MiB routed ulnet_put_bw_1MiB GB/s floor haproxy_copy_bw_1MiB
  rel ulnet_routed_put_bw_1MiB routed ulnet_put_bw_1MiB GB/s floor relay_copy_bw_1MiB
  rel ulnet_routed_put_ack_rtt_8B_avg routedlat ulnet_put_ack_rtt_8B_avg us floor relay_spin_rtt_avg
fi
echo "# ratios: bandwidth and rate higher is better; round trip lower is better"
echo "# paired: the median of the round-by-round ratios"
# The o2ib LND beside raw verbs (ib_write_bw, ibv_rc_pingpong) in the
# soft-RoCE rig, one run (bench/o2ib_rig.sh): root and a build with the LND.
if [ "${BENCH_O2IB_RIG:-1}" = 1 ]; then
  if [ "$(id -u)" = 0 ] && grep -aq o2iblnd "$build/bin/ulnetd" 2>/dev/null; then
    bench/o2ib_rig.sh "$build" 2>"$work/o2ib_rig.err" | grep -v '^rig' || { echo "# o2ib rig failed:"; tail -n 5 "$work/o2ib_rig.err"; }
  else
    echo "# o2ib rig: skipped (needs root and a build with the o2ib LND, ULNET_O2IB)"
  fi
fi
