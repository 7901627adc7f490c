#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_router.sh - a ulnet router between a tcp net and an o2ib net, the
# classic LNet router's job, in three soft-RoCE guests (docs/rdma-rig.md,
# docs/o2iblnd.md, docs/routing.md): A has a tcp NI, B an o2ib NI, R both
# (on the same eth0) with routing on; A routes o2ib through R's tcp NID, B
# routes tcp through R's o2ib NID. LNet ping (GET/REPLY) and discovery
# (ping, then push: a PUT/ACK) go A -> B and B -> A through R; R counts them
# as routed traffic and both routes are up.
# R's start-up phase (alive_router_check_interval + router_ping_timeout)
# is shortened to 4 s with ulnetd's module options.
# Skips (77) as a user, without the rig's packages or kernel, or when the
# build has no o2ib LND.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$(date +%s.%N)
RIG_NEEDS_O2IB=1
# shellcheck source-path=SCRIPTDIR source=rig-test-start.sh
. "$HERE/rig-test-start.sh"

A=$(rig_ip 1)
R=$(rig_ip 2)
B=$(rig_ip 3)
# shellcheck disable=SC2016 # expanded in the guest
common='. /lib/ulrig.sh
set -eu
D=/tmp/ul; mkdir -p $D
ulnetd --ctl $D/ctl.sock --module-option lnet.alive_router_check_interval=2 \
	--module-option lnet.router_ping_timeout=2 >/host/ulnetd-$ULRIG_ID.log 2>&1 &
UPID=$!
for i in $(seq 100); do [ -S $D/ctl.sock ] && break; sleep 0.1; done
C="ulnetctl --ctl $D/ctl.sock"
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
$common
\$C net add --net tcp --if eth0
\$C route add --net o2ib --gateway $R@tcp
ulrig_wait_file router-up 120
ulrig_retry 30 2 \$C ping $B@o2ib
\$C discover $B@o2ib
\$C route show -v
ulrig_mark a-done
ulrig_wait_file b-done 120
kill \$UPID; wait \$UPID
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
$common
\$C net add --net tcp --if eth0
\$C net add --net o2ib --if eth0
\$C set routing 1
sleep 6   # the start-up phase: 2 + 2 s
\$C routing show
ulrig_mark router-up
ulrig_wait_file a-done 150
ulrig_wait_file b-done 150
\$C stats show
kill \$UPID; wait \$UPID
EOF
cat >"$RIG_SHARE/guest-3.sh" <<EOF
$common
\$C net add --net o2ib --if eth0
\$C route add --net tcp --gateway $R@o2ib
ulrig_wait_file router-up 120
ulrig_retry 30 2 \$C ping $A@tcp
\$C discover $A@tcp
\$C route show -v
ulrig_mark b-done
ulrig_wait_file a-done 150
kill \$UPID; wait \$UPID
EOF

T1=$(date +%s.%N)
rig_up 3 || { echo "FAIL: rig_up"; exit 1; }
FAILS=0
if ! rig_wait; then
	echo "FAIL: guests did not power off in time"
	FAILS=$((FAILS + 1))
fi
T2=$(date +%s.%N)
rig_failed_guests 3
FAILS=$((FAILS + RIG_FAILED))
grep -q "primary nid: $B@o2ib" "$(rig_log 1)" 2>/dev/null ||
	{ echo "FAIL: A (tcp) did not discover $B@o2ib through the router"; FAILS=$((FAILS + 1)); }
grep -q "primary nid: $A@tcp" "$(rig_log 3)" 2>/dev/null ||
	{ echo "FAIL: B (o2ib) did not discover $A@tcp through the router"; FAILS=$((FAILS + 1)); }
for i in 1 3; do
	grep -q "state: up" "$(rig_log "$i")" 2>/dev/null ||
		{ echo "FAIL: guest $i's route through R is not up"; FAILS=$((FAILS + 1)); }
done
# two pings and two discoveries, each a request and its answer through R:
# at least 8 messages routed (a discovery that finds the peer's ping info
# fresh from the ping before it pushes without pinging again)
routed=$(awk '$1 == "route_count:" { print $2; exit }' "$(rig_log 2)" 2>/dev/null || true)
if [[ -z $routed || $routed -lt 8 ]]; then
	echo "FAIL: R routed ${routed:-no} messages (8 at least expected); its output:"
	sed 's/^/  | /' "$(rig_log 2)" 2>/dev/null | tail -n 60
	FAILS=$((FAILS + 1))
fi
if grep -l "Sanitizer" "$RIG_SHARE"/*.log 2>/dev/null; then
	echo "FAIL: a sanitizer report (above: the logs that have one)"
	FAILS=$((FAILS + 1))
fi
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
echo "R: route_count ${routed:-?}, $(awk '$1 == "route_length:" { print "route_length " $2; exit }' "$(rig_log 2)" 2>/dev/null)"
echo "guests' run:     $(secs "$T1" "$T2")s (start to all powered off)"
echo "whole test:      $(secs "$T0" "$(date +%s.%N)")s"
if [[ $FAILS != 0 ]]; then
	echo "FAIL: $FAILS"
	exit 1
fi
echo "PASS"
