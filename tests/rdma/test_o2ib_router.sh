#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_router.sh - a ulnet router between a tcp net and an o2ib net, the
# classic LNet router's job, in three soft-RoCE guests (docs/rdma-rig.md,
# docs/o2iblnd.md, docs/routing.md): A has a tcp NI, B an o2ib NI, R both
# (on the same eth0) with routing on; A routes o2ib through R's tcp NID, B
# routes tcp through R's o2ib NID. LNet ping (GET/REPLY) and discovery
# (ping, then push: a PUT/ACK) go A -> B and B -> A through R; R counts them
# as routed traffic and both routes are up. Then bulk, between ulst nodes
# with their routes (ulst --routes) on a second address of A's and B's
# eth0 (A2@tcp, B2@o2ib; A's and B's ulnetd go on pinging R, which would
# otherwise report its NIs down, as no ulst node pings it every 2 s): B2
# serves, A2 runs brw write|read --check full of 0 B, 4 KiB, 64 KiB and
# 1 MiB to B2 through R; then A2 serves and B2 runs the same to A2. On the o2ib
# hop the 64 KiB and 1 MiB payloads go by RDMA to and from R's router
# buffers: R's LND wrote 1 MiB into B2's buffers (A2's PUTs, A2's REPLYs
# to B2's GETs) and B2's LND into R's (its PUTs, its REPLYs to A2's GETs), which
# their DEBUG logs show; R counts the routed bytes.
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
A2=10.210.0.21   # the ulst nodes' addresses
B2=10.210.0.23
# shellcheck disable=SC2016 # expanded in the guest
common='. /lib/ulrig.sh
set -eu
D=/tmp/ul; mkdir -p $D
ulnetd --ctl $D/ctl.sock --module-option lnet.alive_router_check_interval=2 \
	--module-option lnet.router_ping_timeout=2 $ULNETD_ARGS >/host/ulnetd-$ULRIG_ID.log 2>&1 &
UPID=$!
ulrig_wait_socket $D/ctl.sock
C="ulnetctl --ctl $D/ctl.sock"
'
# bulk through R (brw NID ROUTES TARGET): every size, PUT then GET, the
# data checked (full), at DEBUG (the LND's RDMA lines); a client that starts
# before its route is up fails at once and is tried again (3 tries, each
# failure shown: a wrong byte fails the test whatever the retries did)
# shellcheck disable=SC2016 # expanded in the guest
bulk='brw() {
	for sz in 0 4k 64k 1m; do
		for op in write read; do
			echo "brw $op size $sz"
			t=0
			until timeout 100 ulst -vv --nid $1 --routes "$2" brw $op $3 --size $sz \
				--count 8 --concurrency 4 --check full --timeout 90 >/tmp/brw.log 2>&1; do
				cat /tmp/brw.log >>/host/brw-$ULRIG_ID.log
				grep -v "ulnet debug" /tmp/brw.log | tail -n 20
				t=$((t + 1))
				[ $t -lt 3 ] || return 1
				echo "brw $op size $sz: try $((t + 1))"
				sleep 2
			done
			grep "^ulst brw" /tmp/brw.log
			cat /tmp/brw.log >>/host/brw-$ULRIG_ID.log
		done
	done
}
serve() { # NID ROUTES: a ulst serve node in the background (SPID), at DEBUG
	timeout 250 ulst -vv --nid $1 --routes "$2" serve --duration 240 >/host/serve-$ULRIG_ID.log 2>&1 &
	SPID=$!
	ulrig_wait_grep "ready on portal" /host/serve-$ULRIG_ID.log
}
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
ULNETD_ARGS=
$common
$bulk
\$C net add --net tcp --if eth0
\$C route add --net o2ib --gateway $R@tcp
ulrig_wait_file router-up 120
ulrig_retry 30 2 \$C ping $B@o2ib
\$C discover $B@o2ib
\$C route show -v
ulrig_mark a-done
ulrig_wait_file b-done 120
# bulk A2 -> B2 through R, then B2 -> A2
ip addr add $A2/24 dev eth0
ulrig_wait_file b-serving 120
brw $A2@tcp "o2ib $R@tcp" $B2@o2ib
ulrig_mark a-brw-done
ulrig_wait_file b-serve-down 120
serve $A2@tcp "o2ib $R@tcp"
ulrig_mark a-serving
ulrig_wait_file b-brw-done 240
kill \$SPID; wait \$SPID
tail -n 3 /host/serve-1.log
kill \$UPID; wait \$UPID
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
ULNETD_ARGS="--log-level debug"
$common
\$C net add --net tcp --if eth0
\$C net add --net o2ib --if eth0
# 2 large buffers (set before routing starts: the pool starts so) for 4
# bulk messages in flight each way: messages wait for one, those from B
# as a delayed o2ib receive (its PUT_ACK held back)
\$C set large_buffers 2
\$C set routing 1
sleep 6   # the start-up phase: 2 + 2 s
\$C routing show
ulrig_mark router-up
ulrig_wait_file a-done 150
ulrig_wait_file b-done 150
\$C stats show
ulrig_mark pings-counted
# the large pool resized live under the bulk, 1 and 3 buffers in turn: a
# buffer returned to a shrinking pool is freed, a growing one allocates
# anew (at an address malloc may give again: the LNDs' registrations of
# the freed one must go), and messages wait while it is small
(i=0; while [ ! -e /host/b-brw-done ] && [ \$i -lt 500 ]; do
	\$C set large_buffers 1; sleep 0.2; \$C set large_buffers 3; sleep 0.2; i=\$((i + 1))
done; echo "large pool resized \$i times") &
RES=\$!
ulrig_wait_file a-brw-done 240
ulrig_wait_file b-brw-done 240
wait \$RES
\$C stats show
\$C routing show
kill \$UPID; wait \$UPID
EOF
cat >"$RIG_SHARE/guest-3.sh" <<EOF
ULNETD_ARGS=
$common
$bulk
\$C net add --net o2ib --if eth0
\$C route add --net tcp --gateway $R@o2ib
ulrig_wait_file router-up 120
ulrig_retry 30 2 \$C ping $A@tcp
\$C discover $A@tcp
\$C route show -v
ulrig_mark b-done
ulrig_wait_file a-done 150
ulrig_wait_file pings-counted 60
ip addr add $B2/24 dev eth0
serve $B2@o2ib "tcp $R@o2ib"
ulrig_mark b-serving
ulrig_wait_file a-brw-done 240
kill \$SPID; wait \$SPID
tail -n 3 /host/serve-3.log
ulrig_mark b-serve-down
ulrig_wait_file a-serving 120
brw $B2@o2ib "tcp $R@o2ib" $A2@tcp
ulrig_mark b-brw-done
kill \$UPID; wait \$UPID
EOF

rig_run 3
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
# the bulk: R forwarded the payloads (8 PUTs and 8 GETs of each size each
# way: at least the 32 MiB of the 1 MiB ones), and the 1 MiB ones went by
# RDMA between R's router buffers and B: R wrote 16 (A's PUTs to B, A's
# REPLYs to B's GETs), B 16 (its PUTs to A, its REPLYs to A's GETs)
bytes=$(awk '$1 == "route_length:" { v = $2 } END { print v }' "$(rig_log 2)" 2>/dev/null || true)
if [[ -z $bytes || $bytes -lt $((32 * 1048576)) ]]; then
	echo "FAIL: R forwarded ${bytes:-no} payload bytes (at least 32 MiB expected)"
	FAILS=$((FAILS + 1))
fi
# the large pool (2 buffers, then 1 and 3 in turn) ran short, and every
# brw above still completed with its data checked (its mincredits, shown,
# starts again at each growth, as the kernel's)
minc=$(grep -A 4 "^ *large:$" "$(rig_log 2)" 2>/dev/null | awk '$1 == "mincredits:" { v = $2 } END { print v }')
nbuf=$(grep -A 4 "^ *large:$" "$(rig_log 2)" 2>/dev/null | awk '$1 == "nbuffers:" { v = $2 } END { print v }')
grep -q "large pool resized [1-9]" "$(rig_log 2)" 2>/dev/null ||
	{ echo "FAIL: R's large pool was not resized under the bulk"; FAILS=$((FAILS + 1)); }
# ... among them bulk from B: o2ib receives the core delayed (PUT_REQs of
# 1 MiB whose PUT_ACK waited for a buffer)
delayed=$(grep -c "delayed receive (PUT_REQ, 1048576 bytes)" "$RIG_SHARE/ulnetd-2.log" 2>/dev/null || true)
[[ ${delayed:-0} -ge 1 ]] ||
	{ echo "FAIL: R delayed no o2ib receive of 1 MiB (a PUT_REQ waiting for a large buffer)"; FAILS=$((FAILS + 1)); }
wr_r=$(grep -c "PUT_ACK: writing 1048576 bytes" "$RIG_SHARE/ulnetd-2.log" 2>/dev/null || true)
wr_b=$(cat "$RIG_SHARE/brw-3.log" "$RIG_SHARE/serve-3.log" 2>/dev/null | grep -c "PUT_ACK: writing 1048576 bytes" || true)
if [[ ${wr_r:-0} -lt 16 || ${wr_b:-0} -lt 16 ]]; then
	echo "FAIL: RDMA writes of 1 MiB: R ${wr_r:-0}, B ${wr_b:-0} (16 each at least expected)"
	FAILS=$((FAILS + 1))
fi
# each of the 8 runs (4 sizes, write and read) whole once; a run that ended
# with requests still unanswered (ulst's --timeout) fails the test even if a
# later try passed: the retries are for a client whose route is not up yet,
# which fails at once, not for a message lost on the way
for i in 1 3; do
	n=$(grep -c "^ulst brw .* 8 of 8 done in" "$(rig_log "$i")" 2>/dev/null || true)
	[[ ${n:-0} == 8 ]] ||
		{ echo "FAIL: guest $i: ${n:-0} of 8 brw runs completed"; FAILS=$((FAILS + 1)); }
	if grep -q "^ulst brw .* [0-7] of 8 done in" "$(rig_log "$i")" 2>/dev/null; then
		echo "FAIL: guest $i: a brw run left requests unanswered; what it said:"
		grep -v "ulnet debug" "$(rig_log "$i")" | grep -B 25 "^ulst brw .* [0-7] of 8 done in" |
			sed 's/^/  | /' | tail -n 50
		# where the requests went: what R and the serving side warned of
		echo "  R's warnings and errors (ulnetd-2.log), then the server's (serve-$((4 - i)).log):"
		grep -hE "(warn|error): " "$RIG_SHARE/ulnetd-2.log" "$RIG_SHARE/serve-$((4 - i)).log" 2>/dev/null |
			grep -v "MR route setup" | sed 's/^/  | /' | tail -n 40
		FAILS=$((FAILS + 1))
	fi
done
if grep -h "wrong data" "$RIG_SHARE"/brw-*.log "$RIG_SHARE"/serve-*.log 2>/dev/null | head -5 | grep .; then
	echo "FAIL: wrong data (above), even if a later try passed"
	FAILS=$((FAILS + 1))
fi
rig_sanitizer_check
echo "R: route_count ${routed:-?} after the pings; route_length ${bytes:-?} after the bulk; 1 MiB RDMA writes: R ${wr_r:-?}, B ${wr_b:-?}; large buffers ${nbuf:-?}, mincredits ${minc:-?}, o2ib receives delayed ${delayed:-?}"
echo "A -> B, then B -> A:"
grep -h "^ulst brw .* done in" "$(rig_log 1)" "$(rig_log 3)" 2>/dev/null | sed 's/^/  /' || true
grep -h "try [0-9]" "$(rig_log 1)" "$(rig_log 3)" 2>/dev/null | sed 's/^/  retried: /' || true
echo "guests' run:     $(rig_secs "$RIG_T1" "$RIG_T2")s (start to all powered off)"
rig_verdict "$T0"
