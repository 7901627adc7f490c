#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_demo.sh - the README demo (scripts/demo.sh), bounded in time, with its
# key output checked: ping YAML of 127.0.0.3@tcp, discovery Multi-Rail, peer
# show -v, stats, and put_get's "data verified". Two demos run at once (each
# picks its own port on the shared 127.0.0.2-5). As root the demo also runs
# as an unprivileged user (nobody) from a world-readable copy of the build,
# where it must choose a high port and accept=all.
set -u

BIN=${ULNET_BIN:-build/bin}
SRC=${ULNET_SRC:-.}
DEMO=$SRC/scripts/demo.sh
for b in ulnetd ulnetctl put_get; do
	[[ -x $BIN/$b ]] || { echo "SKIP: $BIN/$b not built"; exit 77; }
done
[[ -r $DEMO ]] || { echo "SKIP: $DEMO missing"; exit 77; }

T=$(mktemp -d /tmp/ulnet-demotest.XXXXXX)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# check LOG: the demo's key output
check() {
	local log=$1 what=$2 t
	for t in "ping:" "primary nid: 127.0.0.3@tcp" "discover:" "Multi-Rail: true" \
		 "peer:" "nid: 127.0.0.3@tcp" "put_ack_samples:" "statistics:" "send_count:" \
		 "data verified" "demo: done"; do
		grep -qF -- "$t" "$log" || fail "$what: output lacks '$t'"
	done
	# discover's answer says Multi-Rail: true for the peer
	awk '/^discover:/ { d = 1 } d && /Multi-Rail: true/ { ok = 1 } END { exit !ok }' "$log" ||
		fail "$what: discover did not report Multi-Rail: true"
	grep -qF "MISMATCH" "$log" && fail "$what: put_get data mismatch"
}

# --- as this user, two demos at once --------------------------------------------
timeout 120 bash "$DEMO" "$(dirname "$BIN")" >"$T/d1.log" 2>&1 &
p1=$!
timeout 120 bash "$DEMO" "$(dirname "$BIN")" >"$T/d2.log" 2>&1 &
p2=$!
wait "$p1"; rc1=$?
wait "$p2"; rc2=$?
[[ $rc1 == 0 ]] || { fail "demo 1 exited $rc1"; cat "$T/d1.log"; }
[[ $rc2 == 0 ]] || { fail "demo 2 exited $rc2"; cat "$T/d2.log"; }
check "$T/d1.log" "demo 1"
check "$T/d2.log" "demo 2"
# the port a demo ended up with (it moves on when another run took it)
port_of() { sed -n 's/.*\(acceptor port\|meanwhile, now\) \([0-9]*\).*/\2/p' "$1" | tail -1; }
port1=$(port_of "$T/d1.log")
port2=$(port_of "$T/d2.log")
# Both runs must succeed; they may use the same port one after the other
# (a run that finds the port taken moves on), so the ports are not compared.
[[ -n $port1 && -n $port2 ]] || fail "a demo did not report its acceptor port"
if [[ $(id -u) != 0 ]]; then
	grep -qF "accept=all" "$T/d1.log" || fail "demo as a user did not use accept=all"
	(( port1 > 1023 )) || fail "demo as a user used port $port1"
fi

# --- as root: once more as nobody --------------------------------------------------
if [[ $(id -u) == 0 ]]; then
	if command -v setpriv >/dev/null; then
		AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
	elif command -v runuser >/dev/null; then
		AS=(runuser -u nobody --)
	else
		echo "SKIP (part): neither setpriv nor runuser: demo not run unprivileged"
		AS=()
	fi
	if (( ${#AS[@]} )); then
		# a copy nobody can read, wherever the build lives
		mkdir -p "$T/u/build/bin" "$T/u/scripts"
		cp "$BIN/ulnetd" "$BIN/ulnetctl" "$BIN/put_get" "$T/u/build/bin/"
		cp "$DEMO" "$T/u/scripts/"
		chmod -R a+rX "$T/u"
		if "${AS[@]}" test -x "$T/u/build/bin/ulnetd"; then
			(cd /tmp && timeout 120 "${AS[@]}" env -i PATH="$PATH" HOME=/tmp \
				bash "$T/u/scripts/demo.sh" "$T/u/build") >"$T/d3.log" 2>&1
			rc=$?
			[[ $rc == 0 ]] || { fail "demo as nobody exited $rc"; cat "$T/d3.log"; }
			check "$T/d3.log" "demo as nobody"
			grep -qF "uid 65534," "$T/d3.log" || fail "demo did not run as uid 65534"
			grep -qF "accept=all" "$T/d3.log" || fail "demo as nobody did not use accept=all"
			p3=$(port_of "$T/d3.log")
			(( ${p3:-0} > 1023 )) || fail "demo as nobody used port '$p3'"
		else
			echo "SKIP (part): nobody cannot run binaries under $T (noexec /tmp?)"
		fi
	fi
fi

[[ $FAILS == 0 ]] && echo "demo test: ok"
[[ $FAILS == 0 ]]
