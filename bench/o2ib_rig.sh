#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# o2ib_rig.sh - the o2ib LND's overhead beside the verbs tools, in the
# soft-RoCE rig (tests/rdma/, docs/rdma-rig.md), in one run on the same two
# guests (issue 18's benchmarks; figures, not a test):
#   1 MiB PUT bandwidth (ulst brw write, 4 in flight) against ib_write_bw
#     (perftest, 1 MiB writes);
#   8 B PUT+ACK round trip (ulst brw write, 1 in flight: time per operation)
#     against ibv_rc_pingpong (8 B, usec/iter).
# Under emulation (TCG here) the absolute numbers mean little; the ratios
# show the LND's overhead over raw verbs. Root; the build's bin/ must have
# the o2ib LND. Usage: bench/o2ib_rig.sh [BUILD] (default build).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
export ULNET_BIN=$BUILD/bin ULNET_BUILD=$BUILD ULNET_SRC=$ROOT
HERE=$ROOT/tests/rdma
grep -aq o2iblnd "$ULNET_BIN/ulnetd" || { echo "o2ib_rig: $ULNET_BIN has no o2ib LND (ULNET_O2IB)" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR source=../tests/rdma/rig-test-start.sh
. "$HERE/rig-test-start.sh"

A=$(rig_ip 1)
B=$(rig_ip 2)
# shellcheck disable=SC2016 # expanded in the guest
common='. /lib/ulrig.sh
set -eu
gid=$(ulrig_gid_index)
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
$common
ulrig_mark pp-ready
timeout 120 ibv_rc_pingpong -d rxe0 -g "\$gid" -s 8 -n 2000
ulrig_mark bw-ready
timeout 60 ib_write_bw -d rxe0 -x "\$gid" -F -p 18516 -D 6 -f 2 -s 1048576 --report_gbits
timeout 300 ulst --nid $A@o2ib serve --duration 290 >/host/serve.log 2>&1 &
SPID=\$!
sleep 2
ulrig_mark serving
ulrig_wait_file brw-done 290
kill \$SPID; wait \$SPID || true
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
$common
ulrig_wait_file pp-ready 60
ulrig_retry 20 0.5 timeout 120 ibv_rc_pingpong -d rxe0 -g "\$gid" -s 8 -n 2000 $A
ulrig_wait_file bw-ready 60
ulrig_retry 20 0.5 timeout 60 ib_write_bw -d rxe0 -x "\$gid" -F -p 18516 -D 6 -f 2 -s 1048576 --report_gbits $A
ulrig_wait_file serving 60
ulrig_retry 3 1 timeout 200 ulst --nid $B@o2ib brw write $A@o2ib --size 1m --count 200 --concurrency 4 --timeout 180
ulrig_retry 3 1 timeout 200 ulst --nid $B@o2ib brw write $A@o2ib --size 8 --count 2000 --concurrency 1 --timeout 180
ulrig_mark brw-done
EOF

rig_up 2 || { echo "o2ib_rig: rig_up failed" >&2; exit 1; }
rig_wait || echo "o2ib_rig: guests did not power off in time" >&2
L=$(rig_log 2)
for i in 1 2; do
	[[ $(rig_rc "$i") == 0 ]] || { echo "o2ib_rig: guest $i failed:" >&2; tail -n 30 "$(rig_log "$i")" >&2; exit 1; }
done
# "2000 iters in 1.23 seconds = 615.00 usec/iter"
pp_us=$(awk '/usec\/iter/ { print $(NF-1); exit }' "$L")
# the line under "#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] ..."
bw_gbit=$(awk '/BW average/ { getline; print $4; exit }' "$L")
# "ulst brw write N: 200 of 200 done in 7.123 s: 28 RPC/s, 28.08 MiB/s"
bw_mib=$(grep -E "ulst brw write .* 200 of 200 done" "$L" | awk '{ print $(NF-1) }' | head -1)
lat=$(grep -E "ulst brw write .* 2000 of 2000 done in" "$L" | sed 's/.*done in \([0-9.]*\) s.*/\1/' | head -1)
awk -v pp="$pp_us" -v g="$bw_gbit" -v m="$bw_mib" -v t="$lat" -v accel="$RIG_ACCEL" 'BEGIN {
	ib_mib = g * 1e9 / 8 / 1048576
	us = t * 1e6 / 2000
	printf "# soft-RoCE rig (%s), two guests, one run\n", accel
	printf "ulnet_o2ib_put_bw_1MiB %.2f MiB/s | ib_write_bw_1MiB %.2f MiB/s (%.3f Gb/s) ratio %.2f\n", m, ib_mib, g, (ib_mib > 0 ? m / ib_mib : 0)
	printf "ulnet_o2ib_put_ack_rtt_8B %.1f us | ibv_rc_pingpong_8B %.1f us/iter ratio %.2f\n", us, pp, (pp > 0 ? us / pp : 0)
}'
