#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_credits.sh - the o2ib LND's credits under more messages than a
# connection's queue depth, between two soft-RoCE guests (docs/rdma-rig.md,
# docs/o2iblnd.md): B is a ulst serve node with --peer-credits 2, A a ulst
# brw client with the default 8. A's CONNREQ (queue depth 8) is rejected
# MSG_QUEUE_SIZE and A connects again with B's 2. Then 32 operations in
# flight (brw --concurrency 32) of 1 KiB (IMMEDIATE) and 1 MiB (RDMA),
# PUT and GET, 64 each: all complete with the data checked (full), nothing
# fails, and A's LND logged (DEBUG) that messages waited for a credit:
# with 8 in flight from A's LNet and 2 credits per connection, a message
# waits whenever the LND enforces the credits.
# Both run with an LND timeout of 120 s, so that a connection has 30 s to
# be made (a quarter of it): in a loaded suite (-j2 beside an ASan test)
# A's connect once took over the default 12.5 s, and failed the run.
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
cat >"$RIG_SHARE/guest-1.sh" <<EOF
. /lib/ulrig.sh
set -eu
ulrig_wait_file serving 120
for sz in 1k 1m; do
	for op in write read; do
		echo "brw \$op size \$sz, 32 in flight"
		timeout 200 ulst -vv --nid $A@o2ib --o2ib-timeout 120 brw \$op $B@o2ib --size \$sz --count 64 \\
			--concurrency 32 --check full --timeout 180 >/tmp/brw.log 2>&1 ||
			{ grep -v "ulnet debug" /tmp/brw.log | tail -n 30; cat /tmp/brw.log >>/host/brw.log; exit 1; }
		grep "^ulst brw" /tmp/brw.log
		cat /tmp/brw.log >>/host/brw.log
	done
done
ulrig_mark brw-done
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
. /lib/ulrig.sh
set -eu
timeout 300 ulst -v --nid $B@o2ib --o2ib-timeout 120 --peer-credits 2 serve --duration 290 >/host/serve.log 2>&1 &
SPID=\$!
ulrig_wait_grep "ready on portal" /host/serve.log
ulrig_mark serving
ulrig_wait_file brw-done 280
kill \$SPID; wait \$SPID
tail -n 2 /host/serve.log
EOF

rig_run 2
n=$(grep -c "^ulst brw .*: 64 of 64 done in" "$(rig_log 1)" 2>/dev/null || true)
[[ ${n:-0} == 4 ]] || { echo "FAIL: ${n:-0} of 4 brw runs completed 64 of 64"; FAILS=$((FAILS + 1)); }
grep -q "SIGTERM: PUT 128 .*GET 128 .*check errors 0, errors 0" "$RIG_SHARE/serve.log" 2>/dev/null ||
	{ echo "FAIL: B's counters are not 128 PUTs, 128 GETs, no error: $(grep SIGTERM "$RIG_SHARE/serve.log" 2>/dev/null)"; FAILS=$((FAILS + 1)); }
# the queue depth was negotiated down to B's 2 (a MSG_QUEUE_SIZE rejection,
# then the connection with 2)
grep -q "established (active, queue depth 2[,)]" "$RIG_SHARE/brw.log" 2>/dev/null ||
	{ echo "FAIL: A's connection to B does not have queue depth 2"; FAILS=$((FAILS + 1)); }
# messages waited for credits: at least once in each run
stalls=$(grep -c "out of credits (queue depth 2)" "$RIG_SHARE/brw.log" 2>/dev/null || true)
if [[ ${stalls:-0} -lt 4 ]]; then
	echo "FAIL: A's LND logged ${stalls:-0} waits for credits (4 at least expected)"
	FAILS=$((FAILS + 1))
fi
if grep -hE "wrong data|(PUT|GET) [0-9]+ failed" "$RIG_SHARE/brw.log" "$RIG_SHARE/serve.log" 2>/dev/null | head -5 | grep .; then
	echo "FAIL: an operation failed or wrong data (above)"
	FAILS=$((FAILS + 1))
fi
rig_sanitizer_check
echo "A -> B (B's peer_credits 2), 32 in flight:"
grep -h "^ulst brw .* done in" "$(rig_log 1)" 2>/dev/null | sed 's/^/  /' || true
echo "  A's LND, its connections to B in the 4 runs:"
grep -h "queue depth" "$RIG_SHARE/brw.log" 2>/dev/null | grep -v "out of credits" | sed 's/.*o2iblnd: [^ ]* //' |
	sort | uniq -c | sed 's/^ */    /' || true
echo "  waits for credits logged: ${stalls:-0}; B: $(grep -h SIGTERM "$RIG_SHARE/serve.log" 2>/dev/null)"
echo "guests' run:     $(rig_secs "$RIG_T1" "$RIG_T2")s (start to both powered off)"
rig_verdict "$T0"
