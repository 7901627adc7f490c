#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_ulnetd_opts.sh - the walk of ulnetd's own options: every option
# `ulnetd --help` lists must have a check below (one added without a check
# fails this test, and so does a check for an option the help no longer
# lists). Each check starts daemons with the option and without it and
# shows the difference through ulnetctl, a TCP connection, ss or the log;
# two whose effect needs more than a shell (--verify-peer-nid: a lying
# HELLO from a privileged port; --session-timeout: a console that goes
# quiet) are accepted here and name the C test that proves the effect,
# which must exist. An unknown option, or one without its value, is
# refused: exit 2, named. NIs are 127.0.11.x (a subnet no other test
# uses) on a high port. Needs no root (nothing is skipped for root
# reasons); exits 77 only if the binaries are missing.
set -u

# shellcheck disable=SC2034 # (ctl_lib.sh reads TAG, and PID_NAME through alive)
TAG=ulnetd-opts
# shellcheck source=tests/support/ctl_lib.sh
. "$(dirname "$0")/../support/ctl_lib.sh"
PORT=$((21001 + ($$ % 4000) * 2))
SRC=${ULNET_SRC:-$(dirname "$0")/../..}

# has FILE TEXT / hasnt FILE TEXT: a check on a daemon's log or an output
has() { CHECKS=$((CHECKS + 1)); grep -qF -- "$2" "$1" || fail "$3: '$2' not in: $(cat "$1")"; }
hasnt() { CHECKS=$((CHECKS + 1)); ! grep -qF -- "$2" "$1" || fail "$3: '$2' in: $(cat "$1")"; }

stop() { local p=PID_$1; kill -TERM "${!p}" 2>/dev/null; wait "${!p}" 2>/dev/null; }

# listens HOST PORT: a TCP connection is taken there
listens() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

# the options of the help, and those checked below
mapfile -t HELP_OPTS < <("$ULNETD" --help | grep -oE '^  --[a-z-]+' | sed 's/^  //' | sort -u)
CHECKED=(--help --ctl --config --foreground --daemon --log-level --syslog --accept-port
	 --accept-port-bulk --accept --accept-backlog --module-option --module-options --verify-peer-nid --pid
	 --selftest --session-timeout --metrics)
((${#HELP_OPTS[@]} > 10)) || fail "ulnetd --help lists ${#HELP_OPTS[@]} options"
for o in "${HELP_OPTS[@]}"; do
	CHECKS=$((CHECKS + 1))
	[[ " ${CHECKED[*]} " == *" $o "* ]] || fail "ulnetd $o (in --help) has no check in $(basename "$0")"
done
for o in "${CHECKED[@]}"; do
	CHECKS=$((CHECKS + 1))
	[[ " ${HELP_OPTS[*]} " == *" $o "* ]] || fail "ulnetd $o is checked but not in --help"
done

# --- refused ------------------------------------------------------------------------
for bad in --bogus -x --pid --config; do
	CHECKS=$((CHECKS + 1))
	"$ULNETD" --ctl "$T/R.sock" "$bad" >"$T/R.log" 2>&1
	rc=$?
	[[ $rc == 2 ]] || fail "ulnetd $bad exited $rc, want 2"
	has "$T/R.log" "unrecognized or incomplete option '$bad'" "ulnetd $bad"
	[[ ! -e $T/R.sock ]] || fail "ulnetd $bad made its socket"
done

# --- --help (and -h): the usage, exit 0, nothing started ------------------------------
for h in --help -h; do
	CHECKS=$((CHECKS + 1))
	"$ULNETD" --ctl "$T/H.sock" "$h" >"$T/H.log" 2>&1 || fail "ulnetd $h exited $?"
	has "$T/H.log" "usage: ulnetd" "ulnetd $h"
	[[ ! -e $T/H.sock ]] || fail "ulnetd $h made its socket"
done

# --- --ctl: the control socket is there --------------------------------------------
ul_daemon C --accept none || fail "ulnetd --ctl did not start"
CHECKS=$((CHECKS + 1))
[[ -S $T/C.sock ]] || fail "--ctl $T/C.sock: no socket there"
run C 0 net show
stop C

# --- --config: its NIs are there at start ---------------------------------------------
printf 'net:\n- net type: tcp\n  local NI(s):\n  - nid: 127.0.11.2@tcp\n' >"$T/cfg.yaml"
ul_daemon G1 --accept none --config "$T/cfg.yaml" || fail "ulnetd --config did not start"
run G1 0 net show
has "$T/out" "nid: 127.0.11.2@tcp" "--config"
stop G1
ul_daemon G0 --accept none || fail "ulnetd did not start"
run G0 0 net show
hasnt "$T/out" "nid: 127.0.11.2@tcp" "without --config"
stop G0

# --- --daemon, --foreground: the process started goes, or stays ----------------------
# daemon_pid SOCK: the pid of the ulnetd serving SOCK
daemon_pid() {
	local p
	for p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "--ctl $1 " && { echo "${p#/proc/}"; return; }
	done
}
"$ULNETD" --ctl "$T/D.sock" --accept none --daemon >"$T/D.log" 2>&1
rc=$?
CHECKS=$((CHECKS + 1))
[[ $rc == 0 ]] || fail "ulnetd --daemon exited $rc: $(cat "$T/D.log")"
for _ in $(seq 100); do [[ -S $T/D.sock ]] && break; sleep 0.05; done
dpid=$(daemon_pid "$T/D.sock")
# shellcheck disable=SC2034 # (run D checks it is alive)
PID_D=${dpid:-0}
[[ -n $dpid ]] && PIDS+=("$dpid")
run D 0 net show
has "$T/out" "nid: 0@lo" "--daemon"
CHECKS=$((CHECKS + 1))
[[ -n $dpid && $dpid != "$$" ]] || fail "--daemon: no daemon serving $T/D.sock"
[[ -n $dpid ]] && kill -TERM "$dpid"
# the last of the two wins: --daemon --foreground stays in the foreground
ul_daemon F --accept none --daemon --foreground || fail "ulnetd --daemon --foreground did not start"
CHECKS=$((CHECKS + 1))
# shellcheck disable=SC2153 # (set by ul_daemon F)
kill -0 "$PID_F" 2>/dev/null || fail "--daemon --foreground: the process started is gone"
[[ $(daemon_pid "$T/F.sock") == "$PID_F" ]] || fail "--foreground: another process serves"
stop F

# --- --log-level, --syslog: what is logged, and where ------------------------------------
ul_daemon L1 --accept none --log-level info || fail "ulnetd --log-level info did not start"
stop L1
has "$T/L1.log" "ulnetd: info: listening on $T/L1.sock" "--log-level info"
ul_daemon L0 --accept none || fail "ulnetd did not start"
stop L0
hasnt "$T/L0.log" "info: listening" "without --log-level"
ul_daemon S1 --accept none --log-level info --syslog || fail "ulnetd --syslog did not start"
stop S1
hasnt "$T/S1.log" "info: listening" "--syslog (the log goes to syslog, not stderr)"

# --- --accept-port, --accept: where the NIs listen --------------------------------------
ul_daemon P1 --accept all --accept-port "$PORT" || fail "ulnetd --accept-port did not start"
run P1 0 net add --nid 127.0.11.2@tcp
CHECKS=$((CHECKS + 1))
listens 127.0.11.2 "$PORT" || fail "--accept all --accept-port $PORT: nothing listens there"
CHECKS=$((CHECKS + 1))
listens 127.0.11.2 $((PORT + 1)) && fail "without --accept-port-bulk something listens on $((PORT + 1))"
stop P1
# --accept-port-bulk: the NIs listen on the bulk port too ($PORT + 1: the
# pair this test took)
ul_daemon PB --accept all --accept-port "$PORT" --accept-port-bulk $((PORT + 1)) ||
	fail "ulnetd --accept-port-bulk did not start"
run PB 0 net add --nid 127.0.11.2@tcp
CHECKS=$((CHECKS + 1))
listens 127.0.11.2 $((PORT + 1)) || fail "--accept-port-bulk $((PORT + 1)): nothing listens there"
stop PB
# without --accept-port: the default port (988, or no NI at all without
# the privilege to bind it)
ul_daemon P0 --accept all || fail "ulnetd did not start"
run P0 "$(if [[ $(id -u) == 0 ]]; then echo 0; else echo 234; fi)" net add --nid 127.0.11.2@tcp
CHECKS=$((CHECKS + 1))
listens 127.0.11.2 "$PORT" && fail "without --accept-port something listens on $PORT"
stop P0
# without --accept: secure, which listens; --accept none does not
ul_daemon A0 --accept-port "$PORT" || fail "ulnetd did not start"
run A0 0 net add --nid 127.0.11.3@tcp
CHECKS=$((CHECKS + 1))
listens 127.0.11.3 "$PORT" || fail "without --accept (secure): nothing listens"
stop A0
ul_daemon A1 --accept none --accept-port "$PORT" || fail "ulnetd --accept none did not start"
run A1 0 net add --nid 127.0.11.3@tcp
CHECKS=$((CHECKS + 1))
listens 127.0.11.3 "$PORT" && fail "--accept none: something listens"
stop A1

# --- --accept-backlog: the listener's backlog (ss: Send-Q) -------------------------------
backlog() { ss -ltnH "sport = :$PORT" 2>/dev/null | awk '$4 == "'"$1:$PORT"'" { print $3 }'; }
if command -v ss >/dev/null 2>&1; then
	for bl in 32 ""; do
		ul_daemon B --accept all --accept-port "$PORT" ${bl:+--accept-backlog "$bl"} ||
			fail "ulnetd --accept-backlog '$bl' did not start"
		run B 0 net add --nid 127.0.11.4@tcp
		CHECKS=$((CHECKS + 1))
		got=$(backlog 127.0.11.4)
		[[ $got == "${bl:-127}" ]] || fail "--accept-backlog '$bl': backlog $got, want ${bl:-127}"
		stop B
	done
else
	echo "--accept-backlog: skipped, no ss"
fi

# --- --module-option, --module-options: ksocklnd's peer_credits ----------------------------
echo "options ksocklnd peer_credits=16" >"$T/mod.conf"
for how in "--module-option ksocklnd.peer_credits=16" "--module-options $T/mod.conf" ""; do
	# shellcheck disable=SC2086
	ul_daemon M --accept none $how || fail "ulnetd $how did not start"
	run M 0 net add --nid 127.0.11.5@tcp
	run M 0 net show -v
	CHECKS=$((CHECKS + 1))
	want=16
	[[ -n $how ]] || want=8
	grep -qF "peer_credits: $want" "$T/out" || fail "ulnetd '$how': peer_credits is not $want: $OUT"
	stop M
done

# --- --pid: the LNet PID its HELLO gives (a peer that expects 12345 refuses
# another, naming it) -------------------------------------------------------------------------
for pid in 4242 ""; do
	ul_daemon T --accept all --accept-port "$PORT" ${pid:+--pid "$pid"} ||
		fail "ulnetd --pid '$pid' did not start"
	ul_daemon U --accept none --accept-port "$PORT" || fail "ulnetd did not start"
	run T 0 net add --nid 127.0.11.6@tcp
	run U 0 net add --nid 127.0.11.7@tcp
	"$CTL" --ctl "$T/U.sock" ping --timeout 2 127.0.11.6@tcp >"$T/out" 2>&1
	rc=$?
	CHECKS=$((CHECKS + 1))
	if [[ -n $pid ]]; then
		[[ $rc != 0 ]] || fail "--pid $pid: a peer expecting 12345 took it"
		stop U
		has "$T/U.log" "pid 0x1092" "--pid 4242 (0x1092) in the refusing peer's log"
	else
		[[ $rc == 0 ]] || fail "without --pid: ping failed: $(cat "$T/out")"
		stop U
	fi
	stop T
done

# --- --selftest: an lst console gets answers; without, none -------------------------------
for st in --selftest ""; do
	ul_daemon V --accept all --accept-port "$PORT" $st || fail "ulnetd '$st' did not start"
	run V 0 net add --nid 127.0.11.8@tcp
	CHECKS=$((CHECKS + 1))
	SRPC_CONSOLE_WAIT_MS=3000 timeout 60 "$BIN/prog_srpc_console" 127.0.11.9@tcp "$PORT" \
		127.0.11.8@tcp >"$T/srpc.out" 2>&1
	rc=$?
	if [[ -n $st ]]; then
		[[ $rc == 0 ]] || fail "--selftest: the console failed: $(cat "$T/srpc.out")"
	else
		[[ $rc != 0 ]] || fail "without --selftest the console got answers"
	fi
	stop V
done

# --- --metrics: a scrape is answered there; without, nothing listens. A bad
# value exits 2 naming the option, a port in use 1 with the reason ---------------------------
# scrape HOST PORT: the body of GET /metrics
scrape() {
	timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3"
}
ul_daemon MX --accept none --metrics "127.0.11.11:$PORT" || fail "ulnetd --metrics did not start"
scrape 127.0.11.11 "$PORT" >"$T/mx.out" 2>&1
has "$T/mx.out" "ulnet_lnet_up 1" "--metrics 127.0.11.11:$PORT"
# the port is taken now: a second daemon is refused
CHECKS=$((CHECKS + 1))
"$ULNETD" --ctl "$T/MY.sock" --accept none --metrics "127.0.11.11:$PORT" >"$T/MY.log" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "ulnetd --metrics on a port in use exited $rc, want 1"
has "$T/MY.log" "cannot listen on --metrics 127.0.11.11:$PORT: Address already in use" "--metrics in use"
[[ ! -e $T/MY.sock ]] || fail "ulnetd --metrics on a port in use left its socket"
stop MX
ul_daemon M0 --accept none || fail "ulnetd did not start"
CHECKS=$((CHECKS + 1))
listens 127.0.11.11 "$PORT" && fail "without --metrics something listens on 127.0.11.11:$PORT"
stop M0
for bad in 127.0.11.11 127.0.11.11: :9100 127.0.11.11:0 127.0.11.11:65536 localhost:9100 ::1:9100 '[::1'; do
	CHECKS=$((CHECKS + 1))
	"$ULNETD" --ctl "$T/MB.sock" --metrics "$bad" >"$T/MB.log" 2>&1
	rc=$?
	[[ $rc == 2 ]] || fail "ulnetd --metrics '$bad' exited $rc, want 2"
	has "$T/MB.log" "bad value for --metrics: '$bad'" "--metrics '$bad'"
	[[ ! -e $T/MB.sock ]] || fail "ulnetd --metrics '$bad' made its socket"
done

# --- accepted here, their effect proved by a C test (which must exist) ----------------------
covered() { # OPTION FILE FUNCTION ULNETD-ARGS...
	local opt=$1 file=$2 fn=$3; shift 3
	CHECKS=$((CHECKS + 1))
	grep -q "^static void $fn(" "$SRC/$file" || fail "$opt: $file has no $fn()"
	ul_daemon W "$@" || fail "ulnetd $* did not start"
	run W 0 net add --nid 127.0.11.10@tcp
	stop W
}
covered --verify-peer-nid tests/integration/test_socklnd_proto.c test_verify_peer_nid \
	--accept none --verify-peer-nid
covered --session-timeout tests/unit/test_selftest_agent.c test_session_timeout \
	--accept none --selftest --session-timeout 30
# (and --session-timeout needs --selftest)
CHECKS=$((CHECKS + 1))
"$ULNETD" --ctl "$T/X.sock" --session-timeout 5 >"$T/X.log" 2>&1
[[ $? == 2 ]] || fail "--session-timeout without --selftest was taken"

echo "$CHECKS checks, $FAILS failures"
[[ $FAILS == 0 ]]
