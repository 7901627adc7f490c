#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_ctl_security.sh - the control socket of an ordinary user cannot be
# hijacked: ulnetd run as a user without XDG_RUNTIME_DIR uses
# /tmp/ulnet-$UID, and refuses that directory when another user made it (or
# it is writable by others); ulnetctl refuses a socket another user swapped
# in, and never prints that user's reply.
# Plays two made-up users (uids picked per run, no passwd entry needed) with
# setpriv, so it needs root: as an ordinary user it says so and exits 77.
set -u

BIN=${ULNET_BIN:-build/bin}
ULNETD=$BIN/ulnetd
CTL=$BIN/ulnetctl
if [[ ! -x $ULNETD || ! -x $CTL ]]; then
	echo "SKIP: $ULNETD or $CTL not built"
	exit 77
fi
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: needs root (plays two other users with setpriv)"
	exit 77
fi
if ! command -v setpriv >/dev/null; then
	echo "SKIP: setpriv (util-linux) not installed"
	exit 77
fi

# victim and attacker: uids no test of another run uses at the same time
VUID=$((61000 + ($$ % 2000) * 2))
AUID=$((VUID + 1))
RUN=/tmp/ulnet-$VUID
T=$(mktemp -d /tmp/ulnet-sec.XXXXXX)
chmod 0755 "$T"
PIDS=()
FAILS=0
CHECKS=0
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.2
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$T" "$RUN"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
check() { CHECKS=$((CHECKS + 1)); }

# asuser UID CMD...: run as that user, no XDG_RUNTIME_DIR, HOME=/, at most 20 s
asuser() {
	local uid=$1; shift
	timeout 20 setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		env -u XDG_RUNTIME_DIR HOME=/ "$@"
}
if ! asuser "$VUID" test -x "$ULNETD"; then
	echo "SKIP: $ULNETD is not executable by another user (a private build tree)"
	exit 77
fi

rm -rf "$RUN"

# 1. the attacker made /tmp/ulnet-$VUID, mode 0777: ulnetd refuses it
mkdir "$RUN"; chown "$AUID:$AUID" "$RUN"; chmod 0777 "$RUN"
check
asuser "$VUID" "$ULNETD" >"$T/1.log" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "ulnetd accepted a runtime directory of uid $AUID (exit $rc)"
grep -qF "the directory $RUN is owned by uid $AUID" "$T/1.log" ||
	fail "no clear refusal naming $RUN and its owner: $(cat "$T/1.log")"
[[ ! -e $RUN/ulnetd.sock ]] || fail "a socket was created in the attacker's directory"

# 2. the user's own directory, but writable by others: refused too
chown "$VUID:$VUID" "$RUN"; chmod 0777 "$RUN"
check
asuser "$VUID" "$ULNETD" >"$T/2.log" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "ulnetd accepted a runtime directory of mode 0777 (exit $rc)"
grep -qF "the directory $RUN has mode 0777, writable by group or others" "$T/2.log" ||
	fail "no clear refusal naming the mode: $(cat "$T/2.log")"

# 3. a symlink in its place: refused, not followed
rmdir "$RUN"; mkdir -m 0700 "$T/real"; chown "$VUID:$VUID" "$T/real"; ln -s "$T/real" "$RUN"
check
asuser "$VUID" "$ULNETD" >"$T/3.log" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "ulnetd followed a symlinked runtime directory (exit $rc)"
grep -qF "$RUN is a symbolic link" "$T/3.log" || fail "no clear symlink refusal: $(cat "$T/3.log")"
rm -f "$RUN"

# 4. no directory: created 0700, and the user's ulnetctl finds the daemon
asuser "$VUID" "$ULNETD" >"$T/4.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [[ -S $RUN/ulnetd.sock ]] && break; sleep 0.05; done
check
[[ $(stat -c '%a %u' "$RUN" 2>/dev/null) == "700 $VUID" ]] ||
	fail "runtime directory is '$(stat -c '%a %u' "$RUN" 2>&1)', want '700 $VUID'"
check
asuser "$VUID" "$CTL" global show >"$T/out" 2>"$T/err" || fail "ulnetctl as the user: $(cat "$T/err")"
grep -qF "transaction_timeout" "$T/out" || fail "global show printed: $(cat "$T/out")"
kill -TERM "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null

# 5. the attacker swaps in a socket of their own that answers "exit 0":
# the user's ulnetctl refuses it (owner), prints nothing of the reply
if command -v python3 >/dev/null; then
	rm -rf "$RUN"; mkdir -m 0777 "$RUN"; chown "$AUID:$AUID" "$RUN"
	cat >"$T/fake.py" <<-'EOF'
	import os, socket, struct, sys
	path = sys.argv[1]
	s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
	s.bind(path); os.chmod(path, 0o777); s.listen(4); s.settimeout(3)
	open(sys.argv[2], "w").close()
	try:
	    c, _ = s.accept()
	except OSError:
	    sys.exit(0)
	c.settimeout(2)
	try:
	    got = c.recv(65536)
	except OSError:
	    got = b""
	open(sys.argv[2], "w").write(str(len(got)))
	out = b"hijacked: 1\n"
	c.sendall(b"ULR1" + struct.pack("<II", 0, len(out)) + out + struct.pack("<I", 0))
	c.close()
	EOF
	asuser "$AUID" python3 "$T/fake.py" "$RUN/ulnetd.sock" "$T/fake.got" 2>"$T/fake.err" &
	FPID=$!
	PIDS+=("$FPID")
	# the attacker's side writes into $T: let it
	chmod 0777 "$T"
	for _ in $(seq 100); do [[ -e $T/fake.got ]] && break; sleep 0.05; done
	check
	asuser "$VUID" "$CTL" net show >"$T/out" 2>"$T/err"
	rc=$?
	[[ $rc == 255 ]] || fail "ulnetctl talked to the attacker's socket (exit $rc)"
	grep -qF "refusing ulnetd at $RUN/ulnetd.sock: the socket $RUN/ulnetd.sock is owned by uid $AUID" "$T/err" ||
		fail "no clear refusal: $(cat "$T/err")"
	grep -qF "hijacked" "$T/out" && fail "ulnetctl printed the attacker's reply"
	check
	[[ ! -s $T/fake.got ]] || fail "the attacker read $(cat "$T/fake.got") bytes of the request"
	kill "$FPID" 2>/dev/null; wait "$FPID" 2>/dev/null
	chmod 0755 "$T"
else
	echo "SKIP (part 5): python3 not installed, no fake server"
fi

echo "$CHECKS checks, $FAILS failures"
[[ $FAILS == 0 ]]
