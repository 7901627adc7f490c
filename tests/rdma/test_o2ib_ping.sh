#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_ping.sh - the o2ib LND between two soft-RoCE guests (docs/rdma-rig.md,
# docs/o2iblnd.md): ulnetd with "net add --net o2ib --if eth0" on each, LNet
# ping both ways and discovery over it, then ulst PUT/GET (brw write/read) of
# 0 B, 1 B, 1 KiB and 3 KiB (IMMEDIATE messages), 4 KiB, 64 KiB and 1 MiB
# (RDMA: PUT_REQ/PUT_ACK/PUT_DONE, GET_REQ/GET_DONE) with the payload
# checked, and 4 PUTs of one buffer registered once.
# Every node runs with ko2iblnd module options (ulnetd --module-option, ulst
# --o2ib-service/--o2ib-cksum): checksums on (each side sees the other's
# CONNREQ/CONNACK carry one, and every message is checked: the brw above
# pass only if they match), service port 18515 (not 987), timeout 20,
# keepalive 30, ntx 1024; net show -v prints them.
# Also: net show -v prints the o2ib lnd tunables; an o2ib tunable out of
# range (conns_per_peer 128) is refused naming it; with conns_per_peer 2 a
# node makes two connections to a new peer; a hostile peer
# (prog_o2ib_hostile: garbage CONNREQ, queue depth too large, a malformed
# message on a connection) is rejected / disconnected and logged, and the
# node still answers pings; two connections of one peer instance (what a
# connection race leaves when each side accepted the other's attempt) both
# stay up, as the kernel keeps both.
# Privileged ports: guest 2 runs with require_privileged_port=1. Guest 1's
# ulnetd connects from a port below 1024 (use_privileged_port's default)
# and is taken; with use_privileged_port=0 it is refused (REJECT_FATAL,
# logged by guest 2 with guest 1's NID); back at the default it is taken
# again.
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
# Both guests: ulnetd with an o2ib NI on eth0 (the rxe device's netdev),
# LNet ping both ways, discovery; then, ulnetd stopped (one o2ib listener
# per address: the service port), ulst serve / brw PUT and GET of IMMEDIATE
# sizes with the payload checked (--check full).
SVC=18515
MO="--module-option ko2iblnd.cksum=1 --module-option ko2iblnd.service=$SVC
--module-option ko2iblnd.timeout=20 --module-option ko2iblnd.keepalive=30
--module-option ko2iblnd.ntx=1024"
MO=${MO//$'\n'/ }
O2="--o2ib-service $SVC --o2ib-cksum"
common='. /lib/ulrig.sh
set -eu
ibv_devices | grep -q rxe0
D=/tmp/ulo2ib; mkdir -p $D
ulnetd --ctl $D/ctl.sock --log-level info '"$MO"' $MO_OWN >/host/ulnetd-$ULRIG_ID.log 2>&1 &
UPID=$!
ulrig_wait_socket $D/ctl.sock
C="ulnetctl --ctl $D/ctl.sock"
$C net add --net o2ib --if eth0
$C net show -v
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
MO_OWN=
$common
ulrig_mark ni-1
ulrig_wait_file ni-2 120
ulrig_retry 10 1 \$C ping $B@o2ib
\$C discover $B@o2ib
ulrig_mark pinged-1
ulrig_wait_file pinged-2 120
kill \$UPID; wait \$UPID # exits 0 on SIGTERM (a sanitizer report would not)
# guest 2 requires privileged ports: a ulnetd connecting from any port is
# refused, one at the default (below 1024) is taken
priv() { # NAME MODULE-OPTIONS...: a ulnetd pinging guest 2
	n=\$1; shift
	ulnetd --ctl \$D/\$n.sock --log-level debug $MO "\$@" >/host/ulnetd-\$n.log 2>&1 &
	P=\$!
	ulrig_wait_socket \$D/\$n.sock
	ulnetctl --ctl \$D/\$n.sock net add --net o2ib --if eth0
	r=0
	timeout 40 ulnetctl --ctl \$D/\$n.sock ping $B@o2ib --timeout 15 >/tmp/\$n.out 2>&1 || r=\$?
	sleep 1   # connections beside the ping's (conns_per_peer) come up too
	kill \$P; wait \$P
	echo "\$n: ping exit \$r"; cat /tmp/\$n.out
	return \$r
}
if priv unpriv --module-option ko2iblnd.use_privileged_port=0; then
	echo "FAIL: a ping from an unprivileged port was taken"; exit 1
fi
ulrig_retry 3 1 priv privileged
grep "bound to port" /host/ulnetd-privileged.log | head -1
# conns_per_peer 2: two connections to guest 2 at once, both established
ulrig_retry 3 1 priv cpp2 --module-option ko2iblnd.conns_per_peer=2
n=\$(grep -c "$B@o2ib conn#[0-9]*: established (active" /host/ulnetd-cpp2.log || true)
echo "conns_per_peer 2: \$n connections established to $B@o2ib"
[ "\$n" -ge 2 ] || { echo "FAIL: conns_per_peer 2 made \$n connections"; exit 1; }
ulrig_mark priv-done
ulrig_mark ulnetd-down-1
timeout 200 ulst -v $O2 --nid $A@o2ib serve --duration 190 >/host/serve.log 2>&1 &
SPID=\$!
sleep 2
ulrig_mark serving
ulrig_wait_file brw-done 190
kill \$SPID; wait \$SPID
cat /host/serve.log
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
MO_OWN="--module-option ko2iblnd.require_privileged_port=1"
$common
ulrig_mark ni-2
ulrig_wait_file ni-1 120
ulrig_retry 10 1 \$C ping $A@o2ib
\$C discover $A@o2ib
# an o2ib tunable out of range: refused, naming it
if \$C net add --net o2ib1 --if eth0 --conns-per-peer 128 >/tmp/cpp.out 2>&1; then
	echo "FAIL: conns_per_peer 128 accepted"; exit 1
fi
cat /tmp/cpp.out
grep -q "conns_per_peer" /tmp/cpp.out
# a misbehaving peer: garbage and bad CONNREQs rejected, a malformed
# message closes its connection; the node stays up; and two connections
# of one peer instance (a connection race's outcome) both stay up
prog_o2ib_hostile $B $A $SVC
ulrig_retry 5 1 \$C ping $A@o2ib
echo "ping after hostile: ok"
ulrig_mark pinged-2
ulrig_wait_file pinged-1 120
ulrig_wait_file priv-done 150
kill \$UPID; wait \$UPID # exits 0 on SIGTERM (a sanitizer report would not)
ulrig_wait_file ulnetd-down-1 60
ulrig_wait_file serving 60
for sz in 0 1 1k 3k 4k 64k 1m; do
	for op in write read; do
		echo "brw \$op size \$sz"
		ulrig_retry 3 1 timeout 60 ulst $O2 --nid $B@o2ib brw \$op $A@o2ib --size \$sz --count 20 --concurrency 4 --check full --timeout 30
	done
done
# the payloads that do not fit a message went by RDMA, and a buffer reused
# by 4 PUTs was registered once (DEBUG lines of the LND)
ulst -vv $O2 --nid $B@o2ib brw write $A@o2ib --size 64k --count 4 --concurrency 1 --check full --timeout 30 >/tmp/rdma.log 2>&1
ulst -vv $O2 --nid $B@o2ib brw read $A@o2ib --size 64k --count 4 --concurrency 1 --check full --timeout 30 >>/tmp/rdma.log 2>&1
grep -h "o2iblnd" /tmp/rdma.log | head -20
echo "PUT_ACKs handled: \$(grep -c "PUT_ACK: writing 65536 bytes" /tmp/rdma.log)"
echo "registrations: \$(grep -c "o2iblnd: registered" /tmp/rdma.log)"
[ "\$(grep -c "PUT_ACK: writing 65536 bytes" /tmp/rdma.log)" = 4 ]
[ "\$(grep -c "o2iblnd: registered" /tmp/rdma.log)" -le 3 ]
# a PUT's source is registered for local reads only (never remote-writable),
# a GET's sink for the peer's writes
grep -q "bytes, source[,)] " /tmp/rdma.log
grep -q "bytes, sink[,)] " /tmp/rdma.log
# the ulst nodes: on port $SVC, both checksumming (signed char: this kernel
# and ulnet agree on the form the other side's checksums were in)
grep -q "listening on $B:$SVC" /tmp/rdma.log
grep -q "checksums: ours on (signed char), the peer's on (signed char)" /tmp/rdma.log
ulrig_mark brw-done
EOF

rig_run 2
for i in 1 2; do
	grep -q "nid: 10.210.0.1$i@o2ib" "$(rig_log "$i")" 2>/dev/null ||
		{ echo "FAIL: guest $i: net show has no o2ib NID"; FAILS=$((FAILS + 1)); }
	grep -q "peercredits_hiw: 4" "$(rig_log "$i")" 2>/dev/null ||
		{ echo "FAIL: guest $i: net show -v has no o2ib lnd tunables"; FAILS=$((FAILS + 1)); }
	# the module options took effect: net show -v, the listener, checksums
	for want in "ntx: 1024" " timeout: 20"; do
		grep -q "$want" "$(rig_log "$i")" 2>/dev/null ||
			{ echo "FAIL: guest $i: net show -v lacks '$want'"; FAILS=$((FAILS + 1)); }
	done
	grep -q "listening on 10.210.0.1$i:$SVC" "$RIG_SHARE/ulnetd-$i.log" 2>/dev/null ||
		{ echo "FAIL: guest $i: ulnetd not listening on port $SVC"; FAILS=$((FAILS + 1)); }
	grep -q "keepalive 30 s, checksums on" "$RIG_SHARE/ulnetd-$i.log" 2>/dev/null ||
		{ echo "FAIL: guest $i: ulnetd's NI has not keepalive 30, checksums on"; FAILS=$((FAILS + 1)); }
	grep -q "checksums: ours on (signed char), the peer's on" "$RIG_SHARE/ulnetd-$i.log" 2>/dev/null ||
		{ echo "FAIL: guest $i: no connection with checksums both ways"; FAILS=$((FAILS + 1)); }
done
grep -q "primary nid: $A@o2ib" "$(rig_log 2)" 2>/dev/null ||
	{ echo "FAIL: guest 2's ping/discover of $A@o2ib shows no primary nid"; FAILS=$((FAILS + 1)); }
grep -q "primary nid: $B@o2ib" "$(rig_log 1)" 2>/dev/null ||
	{ echo "FAIL: guest 1's ping/discover of $B@o2ib shows no primary nid"; FAILS=$((FAILS + 1)); }
# privileged ports: guest 2 refused the unprivileged ulnetd, naming it
grep -q "rejecting connection request from $A@o2ib: the peer's source port is not privileged" \
	"$RIG_SHARE/ulnetd-2.log" 2>/dev/null ||
	{ echo "FAIL: guest 2 logged no refusal of an unprivileged port"; FAILS=$((FAILS + 1)); }
grep -q "bound to port 10[0-2][0-9]" "$RIG_SHARE/ulnetd-privileged.log" 2>/dev/null ||
	{ echo "FAIL: guest 1's ulnetd bound no privileged port"; FAILS=$((FAILS + 1)); }
if grep -q "bound to port" "$RIG_SHARE/ulnetd-unpriv.log" 2>/dev/null; then
	echo "FAIL: guest 1's ulnetd with use_privileged_port=0 bound a privileged port"
	FAILS=$((FAILS + 1))
fi
grep -q "malformed message" "$RIG_SHARE/ulnetd-1.log" 2>/dev/null ||
	{ echo "FAIL: guest 1's ulnetd logged no malformed message"; FAILS=$((FAILS + 1)); }
rig_sanitizer_check
echo "guest 1's ulnetd, o2iblnd lines:"
grep -h "o2iblnd" "$RIG_SHARE/ulnetd-1.log" 2>/dev/null | head -20 | sed 's/^/  /' || true
echo "guest 2:"
grep -E "ping exit|bound to port" "$(rig_log 1)" 2>/dev/null | sed 's/^/  /' || true
grep -E "brw|ping|hostile|primary nid|conns_per_peer|o2iblnd|registrations|PUT_ACKs" "$(rig_log 2)" 2>/dev/null | head -80 | sed 's/^/  /' || true
echo "guests' run:     $(rig_secs "$RIG_T1" "$RIG_T2")s (start to both powered off)"
rig_verdict "$T0"
