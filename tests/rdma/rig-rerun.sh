#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rig-rerun.sh TEST: runs the rig test TEST (ctest's command for every
# tests/rdma/test_*.sh). A test exits 75 when it failed and a guest's console
# shows an emulator fault (rig.sh's rig_emulator_faults: the emulated NIC's
# transmit queue stalled, which no program in the guest can cause or cure):
# it is then run once more, saying so. A second 75 is a failure (exit 1), so a
# host where the emulator keeps failing fails the test rather than looping.
set -u
bash "$1"
rc=$?
if [[ $rc == 75 ]]; then
	echo "rig-rerun: $(basename "$1") failed beside an emulator fault (above): running it once more"
	bash "$1"
	rc=$?
	if [[ $rc == 75 ]]; then
		echo "rig-rerun: an emulator fault again: FAIL"
		rc=1
	fi
fi
exit $rc
