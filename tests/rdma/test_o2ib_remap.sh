#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_remap.sh - the o2ib LND's registration cache against memory
# the application frees and maps again at the same address, between two
# soft-RoCE guests (docs/o2iblnd.md, "Memory registration"):
# prog_o2ib_remap (tests/rdma/prog_o2ib_remap.c) PUTs 64 KiB (RDMA) from
# a mapping, unlinks the MD, unmaps it and maps new pages at the same
# address, and PUTs again: the target must receive the new bytes; likewise
# a GET into remapped pages must land in the new ones. A buffer of a
# registered region (ulnet_mem_register) is registered once for two MDs,
# and again after ulnet_mem_deregister and a remap, the new bytes going.
# A registration kept past its MD would send the old pages' bytes and
# write into the old pages: this test fails on such a cache.
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
prog_o2ib_remap serve $A@o2ib 100 >/host/serve.log 2>&1 &
P=\$!
ulrig_wait_file init-done 120
kill \$P; wait \$P || true
grep -v "^lnd: " /host/serve.log
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
. /lib/ulrig.sh
set -eu
sleep 3
r=0
ulrig_retry 3 2 timeout 90 prog_o2ib_remap init $B@o2ib $A@o2ib >/host/init.log 2>&1 || r=\$?
ulrig_mark init-done
grep -v "^lnd: .*debug" /host/init.log | tail -n 30
exit \$r
EOF

rig_run 2
puts=$(grep "^put [0-9]" "$RIG_SHARE/serve.log" 2>/dev/null || true)
echo "the target received:"
sed 's/^/  /' <<<"$puts"
# the last 5 PUTs of the one try that passed (an earlier try may have failed
# before its first PUT: its connection not up yet)
got=$(awk '{ print $3 }' <<<"$puts" | tail -n 5 | tr '\n' ' ')
[[ $got == "a1 b2 a1 a1 d4 " ]] ||
	{ echo "FAIL: the target received '$got', not 'a1 b2 a1 a1 d4 ' (0xa1 after the remap: old pages sent)"; FAILS=$((FAILS + 1)); }
if grep -q "MIXED" "$RIG_SHARE/serve.log" 2>/dev/null; then
	echo "FAIL: a PUT's bytes were mixed"
	FAILS=$((FAILS + 1))
fi
grep -q "^init: ok" "$RIG_SHARE/init.log" 2>/dev/null ||
	{ echo "FAIL: the initiator's own checks (GETs into remapped pages) failed"; FAILS=$((FAILS + 1)); }
# the registrations the initiator's LND made: in the region, one for both
# PUTs (the MDs come and go, the promise holds); outside a region, a source
# again for the PUT after the remap
reg=$(sed -n '/^init: region$/,/^init: region: 2 PUTs done$/p' "$RIG_SHARE/init.log" 2>/dev/null |
	grep -c "o2iblnd: registered .*source, in a registered region" || true)
[[ ${reg:-0} == 1 ]] ||
	{ echo "FAIL: the region's buffer was registered ${reg:-0} times for 2 PUTs (1 expected)"; FAILS=$((FAILS + 1)); }
src=$(sed -n '1,/^init: PUTs sent/p' "$RIG_SHARE/init.log" 2>/dev/null | grep -c "o2iblnd: registered .*source" || true)
[[ ${src:-0} -ge 2 ]] ||
	{ echo "FAIL: the PUTs before and after the remap made ${src:-0} source registrations (2 expected)"; FAILS=$((FAILS + 1)); }
echo "registrations: ${src:-?} for the 2 PUTs around the remap, ${reg:-?} for the region's 2"
echo "the initiator said:"
grep -v "^lnd: " "$RIG_SHARE/init.log" 2>/dev/null | sed 's/^/  /' | tail -n 20 || true
rig_sanitizer_check
echo "guests' run:     $(rig_secs "$RIG_T1" "$RIG_T2")s (start to both powered off)"
rig_verdict "$T0"
