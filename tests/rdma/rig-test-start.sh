# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# rig-test-start.sh - sourced first by every rig test (tests/rdma/test_*.sh),
# with HERE set to tests/rdma: the checks that skip the test (77, saying
# why: no o2ib LND in the build when RIG_NEEDS_O2IB=1, ULNET_RDMA_RIG=skip,
# not root, the rig's packages cannot be installed, no guest kernel), then
# the packages, rig.sh and rig_init.
# A failed rig_init fails the test.
# RIG_NEEDS_O2IB=1: the test runs the o2ib LND: skip when the build has none
if [[ ${RIG_NEEDS_O2IB:-0} == 1 && -n ${ULNET_BIN:-} && -x ${ULNET_BIN:-}/ulnetd ]] &&
	! grep -aq "o2iblnd" "$ULNET_BIN/ulnetd"; then
	echo "SKIP: this build has no o2ib LND (ULNET_O2IB)"
	exit 77
fi
if [[ ${ULNET_RDMA_RIG:-} == skip ]]; then
	echo "SKIP: ULNET_RDMA_RIG=skip"
	exit 77
fi
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: needs root (netns, taps, packages)"
	exit 77
fi
deps_log=$(mktemp "${TMPDIR:-/tmp}/ulrig-deps.XXXXXX")
if ! "$HERE/rig-deps.sh" >"$deps_log" 2>&1; then
	echo "SKIP: cannot install the rig's packages (tests/rdma/rig-deps.sh):"
	tail -n 5 "$deps_log"
	rm -f "$deps_log"
	exit 77
fi
rm -f "$deps_log"

# shellcheck source-path=SCRIPTDIR source=rig.sh
. "$HERE/rig.sh"
rc=0
rig_init || rc=$?
if [[ $rc == 77 ]]; then
	echo "SKIP: no guest kernel (no mirror and none cached in $RIG_DIR)"
	exit 77
fi
[[ $rc == 0 ]] || { echo "FAIL: rig_init ($rc)"; exit 1; }
