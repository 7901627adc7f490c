# SPDX-License-Identifier: MIT
# put_get_lib.sh - sourced by the install and package tests (tests/abi/).
#
# run_put_get LOG PROGRAM [ARGS...]: runs examples/put_get (built against an
# installed libulnet) on a free high port, retried on another when a
# concurrent test takes it, with `--accept all` (no privileged source port
# needed). Succeeds when it printed "data verified"; otherwise prints its
# output. Output goes to LOG.
run_put_get() {
	local log=$1 try port
	shift
	for try in 1 2 3 4 5; do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		if timeout 60 "$@" --port "$port" --accept all >"$log" 2>&1; then
			grep -qx "data verified" "$log" && return 0
			break
		fi
		grep -qF "in use" "$log" || break
	done
	cat "$log"
	return 1
}
