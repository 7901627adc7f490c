# SPDX-License-Identifier: MIT
# ctl_lib.sh - shared by the shell tests that drive ulnetd with ulnetctl
# (test_tools.sh, test_modopts.sh). Source it after setting TAG (the temp
# directory's name part). It checks the binaries (exit 77 if missing),
# makes $T, kills every daemon started and removes $T on exit, and gives:
#   fail MSG                       count a failure
#   ul_daemon NAME ULNETD-ARGS...  a daemon serving $T/NAME.sock (PID_NAME)
#   ul_daemon_in PREFIX NAME ARGS  the same run under PREFIX (ip netns exec NS)
#   ul_stop NAME                   SIGTERM it and wait
#   alive NAME                     fail if that daemon died
#   run NODE WANT_RC ARGS...       ulnetctl; stdout/stderr in OUT/ERR
#                                  (run as "${CTL_IN[@]}" ulnetctl: a test
#                                  sets CTL_IN=(ip netns exec NS) to run it
#                                  in a namespace, where its NIs then live)
BIN=${ULNET_BIN:-build/bin}
ULNETD=$BIN/ulnetd
CTL=$BIN/ulnetctl
if [[ ! -x $ULNETD || ! -x $CTL ]]; then
	echo "SKIP: $ULNETD or $CTL not built"
	exit 77
fi

T=$(mktemp -d "/tmp/ulnet-$TAG.XXXXXX")
PIDS=()
CTL_IN=()
FAILS=0
CHECKS=0
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.2
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	[[ -n ${KEEP_T:-} ]] && cp -r "$T" "$KEEP_T"; rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# ul_daemon_in "PREFIX..." NAME ULNETD-ARGS...: a daemon run under PREFIX
# (e.g. "ip netns exec NS"; empty: as is) serving $T/NAME.sock, its pid in
# PID_NAME, its output in $T/NAME.log
ul_daemon_in() {
	local -a pre
	read -r -a pre <<<"$1"
	local name=$2; shift 2
	"${pre[@]}" "$ULNETD" --ctl "$T/$name.sock" "$@" >"$T/$name.log" 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	eval "PID_$name=$pid"
	for _ in $(seq 100); do
		[[ -S $T/$name.sock ]] && return 0
		kill -0 "$pid" 2>/dev/null || { cat "$T/$name.log"; return 1; }
		sleep 0.05
	done
	return 1
}

# ul_daemon's daemons set up no Multi-Rail routing: an NI on one of the
# host's interfaces (the first one up, for a net without --if) must never
# change the host's routing (test_mrroute.sh tests it in a namespace)
ul_daemon() {
	local name=$1; shift
	ul_daemon_in "" "$name" --module-option ksocklnd.skip_mr_route_setup=1 "$@"
}

# ul_stop NAME: SIGTERM the daemon and wait for it
ul_stop() {
	local v=PID_$1
	kill -TERM "${!v}"
	wait "${!v}" 2>/dev/null
}

alive() {
	local pid_var=PID_$1
	kill -0 "${!pid_var}" 2>/dev/null || fail "daemon $1 died (after: $LAST)"
}

run() {
	local node=$1 want=$2; shift 2
	LAST="$*"
	CHECKS=$((CHECKS + 1))
	"${CTL_IN[@]}" "$CTL" --ctl "$T/$node.sock" "$@" >"$T/out" 2>"$T/err"
	local rc=$?
	OUT=$(cat "$T/out"); ERR=$(cat "$T/err")
	if [[ $rc != "$want" ]]; then
		fail "ulnetctl $* -> rc $rc, want $want"
		echo "  stdout: $OUT"; echo "  stderr: $ERR"
	fi
	alive "$node"
}
