#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_shutdown.sh - an o2ib node shut down on purpose while 1 MiB
# RDMA is in flight, both ways, in two soft-RoCE guests (docs/rdma-rig.md,
# docs/o2iblnd.md):
#  1. the target goes: A streams 1 MiB PUTs (8 in flight, data checked) to
#     B's ulst serve, and B's serve gets SIGTERM: its node goes down while
#     A's RDMA writes land in its buffers. B must exit 0 (counters printed)
#     within STOP_LIMIT, and A's stream must end, with an error, within
#     LIMIT (B's disconnects fail A's operations at once; the LND's tx
#     timeout is the bound);
#  2. the initiator goes: B serves again, A streams 1 MiB GETs (B writes
#     into A's buffers) and A's brw gets SIGTERM: it must exit 1 with its
#     summary ("stopped by SIGTERM") within STOP_LIMIT;
#  3. afterwards A, a new incarnation, moves 16 PUTs and 16 GETs of 1 MiB to
#     and from B with the data checked, and B's serve exits 0 on SIGTERM.
# A sanitizer build's report in any log fails the test (rig_sanitizer_check).
# Skips (77) as a user, without the rig's packages or kernel, or when the
# build has no o2ib LND.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$(date +%s.%N)
RIG_NEEDS_O2IB=1
# shellcheck source-path=SCRIPTDIR source=rig-test-start.sh
. "$HERE/rig-test-start.sh"

# LNet's transaction timeout bounds a PUT whose ACK is still to come; the
# LND's is larger, because a connection must be made within a quarter of
# it (5 s at least): a TCG guest under a loaded sanitizer run took more
# than 5 s once. LIMIT adds the slack on top (the 1 s tick, teardown, TCG
# and sanitizer builds); STOP_LIMIT is how long a node given SIGTERM may
# take to be gone
TX_TIMEOUT=10
O2IB_TIMEOUT=40
LIMIT=$((TX_TIMEOUT + 15))
STOP_LIMIT=15

A=$(rig_ip 1)
B=$(rig_ip 2)
OPTS="-T $TX_TIMEOUT --o2ib-timeout $O2IB_TIMEOUT"

# shellcheck disable=SC2016 # expanded in the guest
fns='now() { cut -d" " -f1 /proc/uptime; }
since() { awk -v a=$1 -v b=$(now) "BEGIN { printf \"%.1f\", b - a }"; }
# gone PID SECS: wait (bounded) for PID to exit; its status in RC, or 999
gone() {
	for i in $(seq $(($2 * 5))); do kill -0 $1 2>/dev/null || break; sleep 0.2; done
	if kill -0 $1 2>/dev/null; then RC=999; kill -9 $1; else RC=0; wait $1 || RC=$?; fi
}
# started LOG: wait (bounded) for brw'"'"'s first line, then 3 s of traffic
started() {
	ulrig_wait_grep "^ulst brw" $1 60
	sleep 3
}
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
. /lib/ulrig.sh
set -eu
$fns
ulrig_wait_file b-serving-1 120
timeout 300 ulst --nid $A@o2ib $OPTS brw write $B@o2ib --size 1m --count 1000000 \\
	--concurrency 8 --check full --timeout 280 >/host/w.log 2>&1 &
WP=\$!
started /host/w.log
ulrig_mark a-streaming-1
ulrig_wait_file b-stopped 120
t0=\$(now)
gone \$WP $((LIMIT + 60))
echo "target stop: A's PUT stream ended \$(since \$t0) s after, exit \$RC"
tail -n 3 /host/w.log
ulrig_wait_file b-serving-2 120
timeout 300 ulst --nid $A@o2ib $OPTS brw read $B@o2ib --size 1m --count 1000000 \\
	--concurrency 8 --check full --timeout 280 >/host/r.log 2>&1 &
RP=\$!
started /host/r.log
t0=\$(now)
kill -TERM \$RP
gone \$RP $((STOP_LIMIT + 60))
echo "initiator stop: A's GET stream ended \$(since \$t0) s after its SIGTERM, exit \$RC"
tail -n 3 /host/r.log
for op in write read; do
	timeout 100 ulst --nid $A@o2ib $OPTS brw \$op $B@o2ib --size 1m --count 16 --concurrency 4 \\
		--check full --timeout 90 >/tmp/after.log 2>&1 || { tail -n 20 /tmp/after.log; exit 1; }
	echo "after: \$(grep "^ulst brw .* done in" /tmp/after.log)"
done
ulrig_mark a-done
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
. /lib/ulrig.sh
set -eu
$fns
serve() { # LOG: a ulst serve node in the background (SPID)
	ulst --nid $B@o2ib $OPTS serve --duration 500 >\$1 2>&1 &
	SPID=\$!
	ulrig_wait_grep "ready on portal" \$1
}
serve /host/serve-1.log
ulrig_mark b-serving-1
ulrig_wait_file a-streaming-1 120
t0=\$(now)
kill -TERM \$SPID
gone \$SPID $((STOP_LIMIT + 60))
echo "target stop: B's serve ended \$(since \$t0) s after its SIGTERM, exit \$RC"
ulrig_mark b-stopped
tail -n 2 /host/serve-1.log
serve /host/serve-2.log
ulrig_mark b-serving-2
ulrig_wait_file a-done 300
t0=\$(now)
kill -TERM \$SPID
gone \$SPID $((STOP_LIMIT + 60))
echo "end: B's serve ended \$(since \$t0) s after its SIGTERM, exit \$RC"
tail -n 2 /host/serve-2.log
EOF

rig_run 2
L1=$(rig_log 1)
L2=$(rig_log 2)
# check_line LOG PATTERN LIMIT RC WHAT: the line "PATTERN T s after..., exit
# RC'" is there, with T <= LIMIT and the exit status RC
check_line() {
	local line t rc
	line=$(grep "^$2" "$1" 2>/dev/null || true)
	t=$(sed -n 's/.* ended \([0-9.]*\) s after.*/\1/p' <<<"$line")
	rc=$(awk '{ print $NF }' <<<"$line")
	if [[ -z $line || -z $t ]] || ! awk -v t="$t" -v l="$3" 'BEGIN { exit !(t <= l) }' || [[ $rc != "$4" ]]; then
		echo "FAIL: $5: '${line:-no line}' (exit $4 within $3 s expected)"
		FAILS=$((FAILS + 1))
	fi
}
check_line "$L2" "target stop: B's serve" "$STOP_LIMIT" 0 "B's serve stopped under A's PUTs"
check_line "$L1" "target stop: A's PUT stream" "$LIMIT" 1 "A's PUTs after B's stop"
check_line "$L1" "initiator stop: A's GET stream" "$STOP_LIMIT" 1 "A's brw stopped under its GETs"
check_line "$L2" "end: B's serve" "$STOP_LIMIT" 0 "B's serve stopped at the end"
grep -q "^ulst serve: $B@o2ib: SIGTERM: PUT [1-9]" "$RIG_SHARE/serve-1.log" 2>/dev/null ||
	{ echo "FAIL: B's first serve counted no PUT before its SIGTERM"; FAILS=$((FAILS + 1)); }
grep -q "^ulst brw: stopped by SIGTERM: [1-9][0-9]* of 1000000 done" "$RIG_SHARE/r.log" 2>/dev/null ||
	{ echo "FAIL: A's brw read did not say it was stopped by SIGTERM after some GETs"; FAILS=$((FAILS + 1)); }
if grep -h "timed out after" "$RIG_SHARE/w.log" "$RIG_SHARE/r.log" 2>/dev/null | grep .; then
	echo "FAIL: a stream reached brw's own time limit (above)"
	FAILS=$((FAILS + 1))
fi
n=$(grep -c "^after: ulst brw .*: 16 of 16 done in" "$L1" 2>/dev/null || true)
[[ ${n:-0} == 2 ]] || { echo "FAIL: A's PUTs and GETs to B afterwards: ${n:-0} of 2 runs"; FAILS=$((FAILS + 1)); }
rig_wrong_data_check
rig_sanitizer_check
echo "A (limit $LIMIT s for a stream whose target goes, $STOP_LIMIT s for a node to go):"
grep -E "^(target stop|initiator stop|after): " "$L1" 2>/dev/null | sed 's/^/  /' || true
echo "B:"
grep -E "^(target stop|end): " "$L2" 2>/dev/null | sed 's/^/  /' || true
grep -h "o2iblnd" "$RIG_SHARE/w.log" "$RIG_SHARE/r.log" "$RIG_SHARE"/serve-*.log 2>/dev/null | head -8 | sed 's/^/  /' || true  # head may close the pipe early
echo "guests' run:     $(rig_secs "$RIG_T1" "$RIG_T2")s (start to both powered off)"
rig_verdict "$T0"
