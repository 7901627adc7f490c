#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rig-rerun.sh TEST: runs the rig test TEST (ctest's command for every
# tests/rdma/test_*.sh). A test exits 75 when it failed and a guest's console
# shows an emulator fault (rig.sh's rig_emulator_faults: the emulated NIC's
# transmit queue stalled, which no program in the guest can cause or cure):
# it is then run again, saying so, up to twice more (the two-rail kernel test
# met two such faults in a row under TCG). A third 75 is a
# failure (exit 1), so a host where the emulator keeps failing fails the test
# rather than looping.
set -u
bash "$1"
rc=$?
for try in 2 3; do
	[[ $rc == 75 ]] || break
	echo "rig-rerun: $(basename "$1") failed beside an emulator fault (above): attempt $try of 3"
	bash "$1"
	rc=$?
done
if [[ $rc == 75 ]]; then
	echo "rig-rerun: an emulator fault in each of 3 attempts: FAIL"
	rc=1
fi
exit $rc
