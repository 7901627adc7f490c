#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_keepalive.sh - keepalive NOOPs on an idle o2ib connection, and
# both nodes connecting at once, between two soft-RoCE guests
# (docs/rdma-rig.md, docs/o2iblnd.md). ulnetd on each with an o2ib NI,
# ko2iblnd.keepalive=2 and the log at DEBUG. Both ping each other at the
# same moment (the host says go once both NIs are up; each polls for it
# every 20 ms): the connects cross (a connection race, which the nid hash
# settles) or one side finds the other's connection already there; both
# pings answer. A reconnect after a race rejection that was on its way when
# the winner's connection came up is accepted and kept beside it, as the
# kernel keeps both (docs/o2iblnd.md): one or two connections. Then 8 s
# without traffic: each side sends NOOPs on its connections (at least 2,
# each after 2 s idle or more); pings both ways go over them afterwards
# without a new connection being made.
# Skips (77) as a user, without the rig's packages or kernel, or when the
# build has no o2ib LND.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$(date +%s.%N)
RIG_NEEDS_O2IB=1
# shellcheck source-path=SCRIPTDIR source=rig-test-start.sh
. "$HERE/rig-test-start.sh"

KEEPALIVE=2
A=$(rig_ip 1)
B=$(rig_ip 2)
# guest ID PEER: ulnetd, the NI, the simultaneous pings, the idle time, the
# pings again; the log's count of established connections after each round
guest() {
	cat <<EOF
. /lib/ulrig.sh
set -eu
D=/tmp/ulo2ib; mkdir -p \$D
L=/host/ulnetd-$1.log
ulnetd --ctl \$D/ctl.sock --log-level debug --module-option ko2iblnd.keepalive=$KEEPALIVE >\$L 2>&1 &
UPID=\$!
ulrig_wait_socket \$D/ctl.sock
C="ulnetctl --ctl \$D/ctl.sock"
\$C net add --net o2ib --if eth0
\$C net show | grep "nid:"
ulrig_mark ni-$1
# both start at once: when the host says go (9p, no cache: seen at once)
n=6000
while [ ! -e /host/go ] && [ \$n -gt 0 ]; do sleep 0.02; n=\$((n - 1)); done
[ -e /host/go ]
ulrig_retry 5 1 \$C ping $2@o2ib >/tmp/ping1.log
grep "primary nid" /tmp/ping1.log
ulrig_mark pinged-$1
ulrig_wait_file pinged-$((3 - $1)) 60
sleep 8   # idle: NOOPs every $KEEPALIVE s or so
echo "established after the race: \$(grep -c "established (" \$L)"
ulrig_mark idle-$1
ulrig_wait_file idle-$((3 - $1)) 60
\$C ping $2@o2ib | grep "primary nid"
ulrig_mark pinged2-$1
ulrig_wait_file pinged2-$((3 - $1)) 60
echo "established at the end: \$(grep -c "established (" \$L)"
kill \$UPID; wait \$UPID
EOF
}
guest 1 "$B" >"$RIG_SHARE/guest-1.sh"
guest 2 "$A" >"$RIG_SHARE/guest-2.sh"

T1=$(date +%s.%N)
rig_up 2 || { echo "FAIL: rig_up"; exit 1; }
FAILS=0
# go, once both NIs are up (at most 120 s)
for _ in $(seq 1200); do
	[[ -e $RIG_SHARE/ni-1 && -e $RIG_SHARE/ni-2 ]] && break
	sleep 0.1
done
: >"$RIG_SHARE/go"
if ! rig_wait; then
	echo "FAIL: guests did not power off in time"
	FAILS=$((FAILS + 1))
fi
T2=$(date +%s.%N)
rig_failed_guests 2
FAILS=$((FAILS + RIG_FAILED))
for i in 1 2; do
	log=$RIG_SHARE/ulnetd-$i.log
	grep -q "o2iblnd: listening on .*keepalive $KEEPALIVE s" "$log" 2>/dev/null ||
		{ echo "FAIL: guest $i: the NI does not run with keepalive $KEEPALIVE s"; FAILS=$((FAILS + 1)); }
	# keepalive NOOPs: after KEEPALIVE s idle or more, all on one connection
	noops=$(grep "NOOP posted" "$log" 2>/dev/null | awk -v k=$((KEEPALIVE * 1000)) '{ for (i = 1; i < NF; i++) if ($i == "idle" && $(i + 1) + 0 >= k) n++ } END { print n + 0 }')
	conns=$(grep "NOOP posted" "$log" 2>/dev/null | sed 's/.*o2iblnd: \([^:]*\): NOOP.*/\1/' | sort -u | wc -l)
	# no connection made after the race settled; one or two up
	n1=$(awk '/^established after the race:/ { print $NF }' "$(rig_log "$i")" 2>/dev/null)
	n2=$(awk '/^established at the end:/ { print $NF }' "$(rig_log "$i")" 2>/dev/null)
	if [[ $noops -lt 2 || $conns -lt 1 || $conns -gt 2 ]]; then
		echo "FAIL: guest $i: $noops keepalive NOOPs (2 at least expected) on $conns connections (1 or 2 expected)"
		FAILS=$((FAILS + 1))
	fi
	if [[ -z $n1 || $n1 != "${n2:-}" ]]; then
		echo "FAIL: guest $i: connections established: ${n1:-?} after the race, ${n2:-?} at the end"
		FAILS=$((FAILS + 1))
	fi
	NOOPS[i]=$noops
done
rig_sanitizer_check
echo "the simultaneous connects (both logs; a race shows as a rejection, reason 1):"
grep -hE "o2iblnd: .*(connecting|accepted|established|rejected|race|replaced)" \
	"$RIG_SHARE"/ulnetd-1.log "$RIG_SHARE"/ulnetd-2.log 2>/dev/null | sed 's/^/  /' | head -12
if grep -q "connection race (we win)" "$RIG_SHARE"/ulnetd-[12].log 2>/dev/null; then
	echo "  -> the connects crossed: a connection race, settled by the nid hash"
else
	echo "  -> the connects did not cross this time (one side found the other's connection)"
fi
echo "keepalive NOOPs: A ${NOOPS[1]:-?}, B ${NOOPS[2]:-?}; A's:"
grep -h "NOOP posted" "$RIG_SHARE/ulnetd-1.log" 2>/dev/null | sed 's/^/  /' | head -6 || true
echo "guests' run:     $(rig_secs "$T1" "$T2")s (start to both powered off)"
rig_verdict "$T0"
