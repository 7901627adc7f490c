#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_multirail.sh - Multi-Rail over two o2ib rails, in two soft-RoCE
# guests with two NICs each (RIG_RAILS=2: eth0/rxe0 on the rig's bridge,
# eth1/rxe1 on it too; docs/rdma-rig.md, docs/o2iblnd.md). Each node is a
# ulst node with an o2ib NI on each rail, in the same net:
#  1. A pings and discovers nothing by hand: its first brw to B's primary
#     NID discovers B's two NIDs, and 1 MiB PUTs then GETs (8 in flight,
#     data checked) go over both rails: each of A's rxe devices must have
#     carried at least a quarter of the RoCE packets (rxe's hardware
#     counters, read before and after);
#  2. a rail goes: B's eth1 is taken down under a stream of 1 MiB PUTs
#     (25 s, --keep-going). The stream goes on over the other rail: the
#     operations caught on the dead rail may fail (at most 16: what can
#     have been in flight there; they end when the RC retries or the
#     LND's timeout run out, and as in the kernel no PUT whose data may
#     have gone is resent), the rest complete. B's NI on that rail goes
#     down with its port (the device's PORT_ERR event), which B's ping
#     info tells. Then a new node (which learns B's NIDs afresh, B's
#     second one down) moves 32 checked 1 MiB PUTs to B.
#     B destroys its dead rail's QPs slowly, as soft-RoCE itself may (its
#     wait for the packets the downed NIC still holds): B's ulst has
#     tests/rdma/preload_slow_qp_destroy.c make each such destroy take
#     20 s, so that a node whose dead rail holds up its live one (B's
#     loop carries both NIs) fails both the stream and the new node's
#     PUTs, every time.
# The guests' rails share a subnet, with each address answered for and
# routed from its own NIC (tests/rdma/guest/init), as Lustre's Multi-Rail
# guide sets up rails in one subnet.
# Skips (77) as a user, without the rig's packages or kernel, or when the
# build has no o2ib LND.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$(date +%s.%N)
RIG_NEEDS_O2IB=1
export RIG_RAILS=2
# shellcheck source-path=SCRIPTDIR source=rig-test-start.sh
. "$HERE/rig-test-start.sh"

# LNet's transaction timeout, and the LND's: large enough that a TCG guest
# under a loaded sanitizer run makes its connections in time (a quarter of
# it); an operation caught on the dead rail ends sooner, when the RC
# transport's retries run out (about 13 s with rxe)
TX_TIMEOUT=10
O2IB_TIMEOUT=40
A1=$(rig_ip 1)
A2=$(rig_ip2 1)
B1=$(rig_ip 2)
B2=$(rig_ip2 2)
OPTS="-T $TX_TIMEOUT --o2ib-timeout $O2IB_TIMEOUT"
# The first runs' first GET (is B a ulst serve node?) also waits for A's
# discovery of B and the connections, which may each take the LND's
# connect bound (O2IB_TIMEOUT/4) there: a TSan run beside the suite's other
# tests once timed it out at TX_TIMEOUT. No rail fails in those runs, so
# they get a transaction timeout that covers it.
FIRST_OPTS="-T 60 --o2ib-timeout $O2IB_TIMEOUT"

# shellcheck disable=SC2016 # expanded in the guest
fns='# pkts DEV: the RoCE packets DEV sent and received (rxe'"'"'s counters)
pkts() { echo $(( $(cat /sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts) + $(cat /sys/class/infiniband/$1/ports/1/hw_counters/rcvd_pkts) )); }
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
. /lib/ulrig.sh
set -eu
$fns
ip addr show eth1 | grep -q "$A2" || { echo "no second rail"; exit 1; }
ulrig_wait_file b-serving 120
p0=\$(pkts rxe0) q0=\$(pkts rxe1)
for op in write read; do
	timeout 200 ulst --nid $A1@o2ib --nid $A2@o2ib $FIRST_OPTS brw \$op $B1@o2ib --size 1m --count 200 \\
		--concurrency 8 --check full --timeout 180 >/tmp/mr.log 2>&1 ||
		{ tail -n 20 /tmp/mr.log; ulrig_mark streaming; ulrig_mark a-done; exit 1; } # the marks B waits for
	echo "rails: \$(grep "^ulst brw .* done in" /tmp/mr.log)"
done
p1=\$(pkts rxe0) q1=\$(pkts rxe1)
echo "rails: packets on rxe0 \$((p1 - p0)), on rxe1 \$((q1 - q0))"
# 2: B's second rail goes down under a stream of PUTs
timeout 200 ulst --nid $A1@o2ib --nid $A2@o2ib $OPTS brw write $B1@o2ib --size 1m --count 1000000 \\
	--concurrency 8 --keep-going --timeout 25 >/host/down.log 2>&1 &
WP=\$!
ulrig_wait_grep "^ulst brw" /host/down.log 60 || true   # the checks below say what failed
sleep 3
ulrig_mark streaming
wait \$WP || true
grep "^ulst brw .* done in" /host/down.log | sed 's/^/rail down: /'
# a new node afterwards (the neighbour tables before it, shown if it fails:
# its first connection resolves B's address, ARP included)
cat /proc/net/arp >/tmp/neigh-before.txt 2>&1 || true
if timeout 100 ulst --nid $A1@o2ib --nid $A2@o2ib $OPTS brw write $B1@o2ib --size 1m --count 32 \\
	--concurrency 8 --check full --timeout 90 >/tmp/after.log 2>&1; then
	echo "after: \$(grep "^ulst brw .* done in" /tmp/after.log)"
else
	echo "after: failed:"; grep -E "o2iblnd|ulst brw" /tmp/after.log | tail -n 6
	echo "after: neighbours before:"; sed 's/^/after:   /' /tmp/neigh-before.txt
fi
ulrig_mark a-done
ulrig_diag >/host/diag-1.txt 2>&1 || true
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
. /lib/ulrig.sh
set -eu
ip addr show eth1 | grep -q "$B2" || { echo "no second rail"; exit 1; }
# destroying a QP of the rail that goes down takes 20 s (see above)
[ -f /ulnet/bin/preload_slow_qp_destroy.so ] || { echo "no preload_slow_qp_destroy.so in the build"; exit 1; }
LD_PRELOAD=/ulnet/bin/preload_slow_qp_destroy.so RIG_SLOW_QP_DESTROY_S=20 ASAN_OPTIONS=verify_asan_link_order=0 \
	ulst --nid $B1@o2ib --nid $B2@o2ib $OPTS serve --duration 500 >/host/serve.log 2>&1 &
SPID=\$!
ulrig_wait_grep "ready on portal" /host/serve.log
ulrig_mark b-serving
ulrig_wait_file streaming 200
ip link set eth1 down
echo "B: eth1 down"
ulrig_wait_file a-done 300
ulrig_diag \$SPID >/host/diag-2.txt 2>&1 || true
kill \$SPID; wait \$SPID
EOF

rig_run 2
L1=$(rig_log 1)
line=$(grep "^rails: packets on" "$L1" 2>/dev/null || true)
p=$(sed -n 's/.*rxe0 \([0-9]*\),.*/\1/p' <<<"$line")
q=$(sed -n 's/.*rxe1 \([0-9]*\)$/\1/p' <<<"$line")
if [[ -z $p || -z $q ]] || ((p + q == 0)) || ((p * 4 < p + q)) || ((q * 4 < p + q)); then
	echo "FAIL: the traffic did not go over both rails: '${line:-no line}' (a quarter each at least)"
	FAILS=$((FAILS + 1))
fi
grep -q "^after: ulst brw .*: 32 of 32 done in" "$L1" 2>/dev/null ||
	{ echo "FAIL: a new node's 32 PUTs to B after its rail's failure did not all complete"; FAILS=$((FAILS + 1)); }
n=$(grep -c "^rails: ulst brw .*: 200 of 200 done in" "$L1" 2>/dev/null || true)
[[ ${n:-0} == 2 ]] || { echo "FAIL: PUTs and GETs over two rails: ${n:-0} of 2 runs"; FAILS=$((FAILS + 1)); }
# the stream across the rail's failure (3 s before it, 22 s after): it went
# on, about 100 PUTs in 3 s before and several hundred after here, and
# what failed is at most what can have been in flight on the dead rail
# (8 at a time, twice over for the PUTs issued before its connections
# timed out)
done_n=$(sed -n 's/^rail down: ulst brw write .*: \([0-9]*\) of 1000000 done in.*/\1/p' "$L1" 2>/dev/null || true)
failed_n=$(sed -n 's/^rail down: ulst brw write .*, \([0-9]*\) failed$/\1/p' "$L1" 2>/dev/null || true)
if [[ -z $done_n || -z $failed_n ]] || ((done_n < 150 || failed_n > 16)); then
	echo "FAIL: the stream across the rail's failure: ${done_n:-?} PUTs done, ${failed_n:-?} failed" \
		"(at least 150 and at most 16 expected)"
	FAILS=$((FAILS + 1))
fi
# B saw its second rail's port go down (the device's event) and made that
# NI fatal, which its ping info tells its peers
grep -q "$B2@o2ib: link down: .*(interface link: RDMA port down)" "$RIG_SHARE/serve.log" 2>/dev/null ||
	{ echo "FAIL: B's NI $B2@o2ib was not taken down with its port"; FAILS=$((FAILS + 1)); }
rig_wrong_data_check
rig_sanitizer_check
echo "A:"
grep -A6 -E "^(rails|rail down|after): " "$L1" 2>/dev/null | sed 's/^/  /' || true
grep -h -E "o2iblnd|failed|health" "$RIG_SHARE/down.log" 2>/dev/null | head -12 | sed 's/^/  /' || true  # head may close the pipe early
echo "B:"
grep -h "link" "$RIG_SHARE/serve.log" 2>/dev/null | sed 's/^/  /' || true
if ((FAILS)); then
	echo "B's log:"
	sed 's/^/  /' "$RIG_SHARE/serve.log" 2>/dev/null || true
	for i in 1 2; do
		echo "guest $i at the end:"
		sed 's/^/  /' "$RIG_SHARE/diag-$i.txt" 2>/dev/null || true
	done
fi
echo "guests' run:     $(rig_secs "$RIG_T1" "$RIG_T2")s (start to both powered off)"
rig_verdict "$T0"
