#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_peer_death.sh - an o2ib peer that dies under a stream of 1 MiB
# PUTs and GETs, in three soft-RoCE guests (docs/rdma-rig.md,
# docs/o2iblnd.md). A runs two ulst brw streams to B's ulst serve node (PUTs
# from A's address, GETs from a second one, 8 in flight each, data checked),
# and B dies under them three times:
#  1. kill: B's ulst is killed (-9): its kernel tears the connections down;
#  2. stop: B's ulst is stopped (SIGSTOP): its RDMA device still answers,
#     the node does not: A's messages wait for PUT_ACK, GET_DONE or credits
#     until A's LND times them out (which it logs);
#  3. freeze: B's guest is frozen (SIGSTOP to its qemu): nothing answers,
#     and A's sends fail at the RC transport's retry limit, or its LND
#     times them out, whichever comes first.
# Each time every operation of both streams must end (with an error) within
# the LND's tx timeout (O2IB_TIMEOUT: every node runs with ulst
# --o2ib-timeout 10, ko2iblnd's timeout; LNet's transaction timeout, for an
# ACK or REPLY that does not come, is the same) and a slack, counted from
# the death: brw ends once its operations in
# flight have; brw's own time limit would say so and fails the test. After
# each death A's address moves 1 MiB PUTs and GETs to and from a third
# node, C, with the data checked. B is resumed after each (after the
# freeze its ulst is killed: its network may not come back), and every
# guest powers off.
# Skips (77) as a user, without the rig's packages or kernel, or when the
# build has no o2ib LND.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$(date +%s.%N)
RIG_NEEDS_O2IB=1
# shellcheck source-path=SCRIPTDIR source=rig-test-start.sh
. "$HERE/rig-test-start.sh"

# the LND's tx timeout the nodes run with (ulst --o2ib-timeout; ko2iblnd's
# default is 50 s), and the slack on top of it: the 1 s tick, the
# connection's teardown (2 s), the last operations issued as B died, TCG
# (ASan builds included); LNet's transaction timeout (an ACK or REPLY that
# does not come) is the same
O2IB_TIMEOUT=10
SLACK=15
LIMIT=$((O2IB_TIMEOUT + SLACK))
TX_TIMEOUT=$O2IB_TIMEOUT

A=$(rig_ip 1)
B=$(rig_ip 2)
C=$(rig_ip 3)
A2=10.210.0.21   # A's second address: the GET stream's node

# shellcheck disable=SC2016 # expanded in the guest
serve_fn='serve() { # NID LOG: a ulst serve node in the background (SPID)
	ulst --nid $1 --o2ib-timeout '"$O2IB_TIMEOUT"' serve --duration 500 >$2 2>&1 &
	SPID=$!
	ulrig_wait_grep "ready on portal" $2
}
'
# shellcheck disable=SC2016 # expanded in the guest
uptime_fn='now() { cut -d" " -f1 /proc/uptime; }
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
. /lib/ulrig.sh
set -eu
$uptime_fn
ip addr add $A2/24 dev eth0
# streams PHASE: a PUT stream from A and a GET stream from A2 to B, 1 MiB,
# 8 in flight each, far more operations than the phase lasts; an ACK or
# REPLY that does not come ends its operation after TX_TIMEOUT (-T)
streams() {
	timeout 300 ulst --nid $A@o2ib -T $TX_TIMEOUT --o2ib-timeout $O2IB_TIMEOUT brw write $B@o2ib --size 1m \\
		--count 1000000 --concurrency 8 --check full --timeout 280 >/host/w-\$1.log 2>&1 &
	WP=\$!
	timeout 300 ulst --nid $A2@o2ib -T $TX_TIMEOUT --o2ib-timeout $O2IB_TIMEOUT brw read $B@o2ib --size 1m \\
		--count 1000000 --concurrency 8 --check full --timeout 280 >/host/r-\$1.log 2>&1 &
	RP=\$!
	# both running (their first line), then 3 s of traffic
	ulrig_wait_grep "^ulst brw write" /host/w-\$1.log 60
	ulrig_wait_grep "^ulst brw read" /host/r-\$1.log 60
	sleep 3
}
# ended PHASE MARK: after B's death (MARK), how long each stream took to end
ended() {
	ulrig_wait_file \$2 300
	t0=\$(now)
	tw= tr=
	for i in \$(seq $(((LIMIT + 60) * 5))); do
		[ -n "\$tw" ] || kill -0 \$WP 2>/dev/null || tw=\$(now)
		[ -n "\$tr" ] || kill -0 \$RP 2>/dev/null || tr=\$(now)
		[ -n "\$tw" ] && [ -n "\$tr" ] && break
		sleep 0.2
	done
	rw=0; wait \$WP || rw=\$?
	rr=0; wait \$RP || rr=\$?
	echo "\$1: PUT stream ended \$(awk -v a=\$t0 -v b=\${tw:-9999} 'BEGIN { printf "%.1f", b - a }') s after, exit \$rw"
	echo "\$1: GET stream ended \$(awk -v a=\$t0 -v b=\${tr:-9999} 'BEGIN { printf "%.1f", b - a }') s after, exit \$rr"
	grep -h "ulst brw" /host/w-\$1.log /host/r-\$1.log | tail -n 6
}
# C: 1 MiB PUTs and GETs from A's address, checked
to_c() {
	for op in write read; do
		timeout 100 ulst --nid $A@o2ib --o2ib-timeout $O2IB_TIMEOUT brw \$op $C@o2ib --size 1m --count 8 --concurrency 4 \\
			--check full --timeout 90 >/tmp/c.log 2>&1 || { tail -n 20 /tmp/c.log; return 1; }
		echo "\$1: to C: \$(grep "^ulst brw .* done in" /tmp/c.log)"
	done
}
ulrig_wait_file c-serving 120
for ph in kill stop freeze; do
	ulrig_wait_file b-serving-\$ph 200
	streams \$ph
	ulrig_mark streaming-\$ph
	ended \$ph dead-\$ph
	to_c \$ph
	ulrig_mark a-done-\$ph
done
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
. /lib/ulrig.sh
set -eu
$serve_fn
serve $B@o2ib /host/serve-b-kill.log
ulrig_mark b-serving-kill
ulrig_wait_file streaming-kill 120
kill -9 \$SPID
ulrig_mark dead-kill
wait \$SPID || echo "kill: B's ulst serve: killed (\$?)"
ulrig_wait_file a-done-kill 200
serve $B@o2ib /host/serve-b-stop.log
ulrig_mark b-serving-stop
ulrig_wait_file streaming-stop 120
kill -STOP \$SPID
ulrig_mark dead-stop
ulrig_wait_file a-done-stop 200
kill -CONT \$SPID
kill \$SPID
wait \$SPID || echo "stop: B's ulst serve: exit \$?"
serve $B@o2ib /host/serve-b-freeze.log
ulrig_mark b-serving-freeze
# frozen by the host meanwhile, thawed once A is done. The guest's network
# does not always come back from the freeze (virtio-net's tx queue can stay
# stalled), and a shutdown would wait on it (the RDMA CM's disconnect
# retries): B's ulst goes with -9, unwaited for, and the guest powers off
ulrig_wait_file a-done-freeze 400
kill -9 \$SPID
EOF
cat >"$RIG_SHARE/guest-3.sh" <<EOF
. /lib/ulrig.sh
set -eu
$serve_fn
serve $C@o2ib /host/serve-c.log
ulrig_mark c-serving
ulrig_wait_file a-done-freeze 500
kill \$SPID; wait \$SPID
tail -n 2 /host/serve-c.log
EOF

T1=$(date +%s.%N)
rig_up 3 || { echo "FAIL: rig_up"; exit 1; }
FAILS=0
# the freeze: B's qemu stopped once A's streams run, thawed when A is done
# (or gives up), each wait bounded
wait_mark() { # NAME SECS
	local n=$(($2 * 5))
	while [[ ! -e $RIG_SHARE/$1 ]] && ((n-- > 0)); do sleep 0.2; done
	[[ -e $RIG_SHARE/$1 ]]
}
if wait_mark streaming-freeze 500; then
	qp=$(rig_qemu_pid 2)
	if [[ -n $qp ]] && kill -STOP "$qp"; then
		: >"$RIG_SHARE/dead-freeze"
		echo "froze guest 2 (qemu $qp)"
		wait_mark a-done-freeze $((LIMIT + 200)) || echo "FAIL: A not done $((LIMIT + 200)) s after the freeze"
		kill -CONT "$qp" || true
	else
		echo "FAIL: cannot freeze guest 2 (qemu '${qp:-}')"
		FAILS=$((FAILS + 1))
	fi
else
	echo "FAIL: A's streams for the freeze never started"
	FAILS=$((FAILS + 1))
fi
if ! rig_wait; then
	echo "FAIL: guests did not power off in time"
	FAILS=$((FAILS + 1))
fi
T2=$(date +%s.%N)
rig_failed_guests 3
FAILS=$((FAILS + RIG_FAILED))
# every stream ended, with an error (B died), within LIMIT, not at brw's
# own time limit
for ph in kill stop freeze; do
	for kind in PUT GET; do
		line=$(grep "^$ph: $kind stream ended" "$(rig_log 1)" 2>/dev/null || true)
		t=$(awk '{ print $5 }' <<<"$line")
		rc=$(awk '{ print $NF }' <<<"$line")
		if [[ -z $line ]] || ! awk -v t="$t" -v l="$LIMIT" 'BEGIN { exit !(t <= l) }' || [[ $rc != 1 ]]; then
			echo "FAIL: $ph: the $kind stream: '${line:-no line}' (exit 1 within $LIMIT s expected)"
			FAILS=$((FAILS + 1))
		fi
	done
	if grep -h "timed out after" "$RIG_SHARE/w-$ph.log" "$RIG_SHARE/r-$ph.log" 2>/dev/null | grep .; then
		echo "FAIL: $ph: a stream reached brw's own time limit (above)"
		FAILS=$((FAILS + 1))
	fi
	n=$(grep -c "^$ph: to C: ulst brw .*: 8 of 8 done in" "$(rig_log 1)" 2>/dev/null || true)
	[[ ${n:-0} == 2 ]] || { echo "FAIL: $ph: A's PUTs and GETs to C afterwards: ${n:-0} of 2 runs"; FAILS=$((FAILS + 1)); }
done
# the stop was ended by the LND's tx timeout, in both streams, and the log
# says it was the peer that did not answer: B's device still acknowledged
# every send, so none was left uncompleted by A's device
for f in w-stop r-stop; do
	if ! grep -q "o2iblnd: .*timed out tx (.*, \(sent, waiting for the peer's answer\|queued\))" \
		"$RIG_SHARE/$f.log" 2>/dev/null; then
		echo "FAIL: stop: A's LND did not log a tx timed out waiting for the peer or queued ($f.log):"
		grep "timed out tx" "$RIG_SHARE/$f.log" 2>/dev/null | sed 's/^/  /'
		FAILS=$((FAILS + 1))
	fi
done
rig_wrong_data_check
rig_sanitizer_check
echo "A (limit $LIMIT s: the LND's timeout $O2IB_TIMEOUT + $SLACK):"
grep -E "^(kill|stop|freeze): " "$(rig_log 1)" 2>/dev/null | sed 's/^/  /' || true
for ph in kill stop freeze; do
	echo "A's LND, $ph:"
	cat "$RIG_SHARE/w-$ph.log" "$RIG_SHARE/r-$ph.log" 2>/dev/null | grep "o2iblnd" | head -6 | sed 's/^/  /'
done
echo "guests' run:     $(rig_secs "$T1" "$T2")s (start to all powered off)"
rig_verdict "$T0"
