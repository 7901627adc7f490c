#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_link.sh - an o2ib NI's link between two soft-RoCE guests
# (docs/rdma-rig.md, docs/o2iblnd.md "Multi-Rail", docs/fault.md "Link
# faults"), ulnetd on both:
#  1. A's eth0 is down when its o2ib NI starts (rxe0's port down): the NI
#     is fatal within seconds (net show -v: status down, fatal_error 1),
#     from the port's state queried on the LND's tick; eth0 up again, the
#     device's PORT_ACTIVE event brings it back and A pings B.
#  2. ulnetctl fault link down on A's o2ib NI: A's connection to B closes
#     at once, A's ping of B fails at once (-ENETUNREACH, not after a
#     timeout), and B's ping of A fails (A rejects the connect request as
#     an NI not ready: B's ping says ECONNREFUSED);
#     fault link up: both pings work again.
# Skips (77) as a user, without the rig's packages or kernel, or when the
# build has no o2ib LND.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$(date +%s.%N)
RIG_NEEDS_O2IB=1
# shellcheck source-path=SCRIPTDIR source=rig-test-start.sh
. "$HERE/rig-test-start.sh"

A=$(rig_ip 1)
B=$(rig_ip 2)
common='. /lib/ulrig.sh
set -eu
D=/tmp/ulo2ib; mkdir -p $D
C="ulnetctl --ctl $D/ctl.sock"
start_ulnetd() {
	ulnetd --ctl $D/ctl.sock --log-level debug >/host/ulnetd-$ULRIG_ID.log 2>&1 &
	UPID=$!
	ulrig_wait_socket $D/ctl.sock
}
# state NID: "up fatal" of NID in net show -v (status up 1/down 0)
state() {
	$C net show -v 3 >/tmp/ns.out
	awk -v n="$1" '"'"'/ nid: / { cur = ($NF == n) } cur && / status: / { u = ($NF == "up") }
		cur && / fatal_error: / { f = $NF } END { print u + 0, f + 0 }'"'"' /tmp/ns.out
}
# wait_state NID "U F" SECS
wait_state() {
	for i in $(seq $(($3 * 10))); do [ "$(state $1)" = "$2" ] && return 0; sleep 0.1; done
	echo "$1: state $(state $1) after $3 s, not $2"; cat /tmp/ns.out; return 1
}
# timed_ping NID: ping with a 10 s timeout; prints "ping NID: exit R after M ms"
timed_ping() {
	t0=$(cut -d" " -f1 /proc/uptime); r=0
	$C ping $1 --timeout 10 >/tmp/ping.out 2>&1 || r=$?
	t1=$(cut -d" " -f1 /proc/uptime)
	echo "ping $1: exit $r after $(awk -v a=$t0 -v b=$t1 "BEGIN { printf \"%d\", (b - a) * 1000 }") ms"
	cat /tmp/ping.out
	return $r
}
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
$common
# 1. the port is down when the NI starts
ip link set eth0 down
start_ulnetd
\$C net add --net o2ib --if eth0
wait_state $A@o2ib "0 1" 10
echo "A: NI fatal with eth0 down at its start"
ip link set eth0 up
wait_state $A@o2ib "1 0" 30
echo "A: NI up again with eth0"
ulrig_wait_file ni-2 120
ulrig_retry 10 1 \$C ping $B@o2ib
# 2. a link fault: the connection to B closes, pings fail at once both ways
\$C fault link down --nid $A@o2ib
wait_state $A@o2ib "0 1" 5
if timed_ping $B@o2ib; then echo "FAIL: A's ping of B went through a link down"; exit 1; fi
ulrig_mark faulted-1
ulrig_wait_file pinged-2 60
\$C fault link up --nid $A@o2ib
wait_state $A@o2ib "1 0" 5
ulrig_retry 5 1 timed_ping $B@o2ib
ulrig_mark restored-1
ulrig_wait_file done-2 60
kill \$UPID; wait \$UPID # exits 0 on SIGTERM (a sanitizer report would not)
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
$common
start_ulnetd
\$C net add --net o2ib --if eth0
ulrig_mark ni-2
ulrig_wait_file faulted-1 120
if timed_ping $A@o2ib; then echo "FAIL: B's ping of A went through A's link down"; exit 1; fi
ulrig_mark pinged-2
ulrig_wait_file restored-1 60
ulrig_retry 5 1 timed_ping $A@o2ib
ulrig_mark done-2
kill \$UPID; wait \$UPID
EOF

rig_run 2
L1=$(rig_log 1)
L2=$(rig_log 2)
for want in "A: NI fatal with eth0 down at its start" "A: NI up again with eth0"; do
	grep -q "$want" "$L1" 2>/dev/null || { echo "FAIL: guest 1 did not say '$want'"; FAILS=$((FAILS + 1)); }
done
UL1=$RIG_SHARE/ulnetd-1.log
grep -q "$A@o2ib: link down: NI fatal, reported down (interface link: RDMA port " "$UL1" 2>/dev/null ||
	{ echo "FAIL: A's NI was not taken down with the port it started on"; FAILS=$((FAILS + 1)); }
grep -q "$A@o2ib: link up (interface link: RDMA port active)" "$UL1" 2>/dev/null ||
	{ echo "FAIL: A's NI did not come back with its port"; FAILS=$((FAILS + 1)); }
grep -q "$B@o2ib conn#[0-9]*: closing: link down" "$UL1" 2>/dev/null ||
	{ echo "FAIL: A's connection to B was not closed by the link fault"; FAILS=$((FAILS + 1)); }
# A's ping during the fault failed at once (a send on a dead link), not at
# its 10 s timeout
ms=$(sed -n "s/^ping $B@o2ib: exit [1-9][0-9]* after \([0-9]*\) ms$/\1/p" "$L1" 2>/dev/null | head -1)
if [[ -z $ms ]] || ((ms > 3000)); then
	echo "FAIL: A's ping of B during the link fault: failed after ${ms:-?} ms (at once expected)"
	FAILS=$((FAILS + 1))
fi
grep -q "failed to ping $B@o2ib: Network is unreachable" "$L1" 2>/dev/null ||
	{ echo "FAIL: A's ping of B during the link fault did not fail with ENETUNREACH"; FAILS=$((FAILS + 1)); }
grep -q "^ping $A@o2ib: exit [1-9]" "$L2" 2>/dev/null ||
	{ echo "FAIL: B's ping of A during A's link fault did not fail"; FAILS=$((FAILS + 1)); }
grep -q "^ping $A@o2ib: exit 0" "$L2" 2>/dev/null ||
	{ echo "FAIL: B's ping of A after the fault did not pass"; FAILS=$((FAILS + 1)); }
grep -q "^ping $B@o2ib: exit 0" "$L1" 2>/dev/null ||
	{ echo "FAIL: A's ping of B after the fault did not pass"; FAILS=$((FAILS + 1)); }
rig_sanitizer_check
echo "A:"
grep -E "^(A:|ping)" "$L1" 2>/dev/null | sed 's/^/  /' || true
grep -h -E "link (down|up)|closing" "$UL1" 2>/dev/null | head -10 | sed 's/^/  /' || true
echo "B:"
grep -E "^ping|failed to ping" "$L2" 2>/dev/null | sed 's/^/  /' || true
grep -h -E "reject|closing" "$RIG_SHARE/ulnetd-2.log" 2>/dev/null | head -6 | sed 's/^/  /' || true
echo "guests' run:     $(rig_secs "$RIG_T1" "$RIG_T2")s (start to both powered off)"
rig_verdict "$T0"
