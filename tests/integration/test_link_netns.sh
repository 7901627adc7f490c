#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_link_netns.sh - a socklnd NI follows its interface's link
# (rtnetlink): two network namespaces this test creates, joined by two veth
# pairs (10.201.1.0/24 for tcp1, 10.201.2.0/24 for tcp2, addresses that
# exist only inside those namespaces), one ulnet node in each with an NI on
# each link (prog_link_stream). A stream of 1 MiB PUTs (ACKed, every byte
# checked by the target) runs from A to B; `ip link set down` on A's end of
# link 1 under it makes A's and B's tcp1 NIs fatal and down, the stream
# goes on over tcp2 with no PUT lost; `ip link set up` brings both NIs back
# (fatal 0, up) and the stream uses link 1 again. `ip addr del` of A's
# link 1 address does the same to A's tcp1 NI (the link stays up), and
# `ip addr add` brings it back. The namespaces go on
# exit, whatever happens (trap). Needs root: skipped (77) otherwise.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ULNET_BIN=${ULNET_BIN:-$HERE/../../build/bin}
PROG=$ULNET_BIN/prog_link_stream

if [[ $(id -u) != 0 ]]; then
	echo "SKIP: needs root (creates network namespaces and veth links)"
	exit 77
fi
if [[ ! -x $PROG ]]; then
	echo "FAIL: $PROG not built"
	exit 1
fi
if ! command -v ip >/dev/null; then
	echo "SKIP: no ip(8)"
	exit 77
fi

NSA=ulnk-a-$$
NSB=ulnk-b-$$
A1=10.201.1.1@tcp1 A2=10.201.2.1@tcp2
B1=10.201.1.2@tcp1 B2=10.201.2.2@tcp2
PORT=7988
# the sender's transaction_timeout: an ACK lost when an address goes (see
# below) ends its PUT this long after
TXT=10
T=$(mktemp -d /tmp/ulnet-linkns.XXXXXX)
PIDS=()
FAILS=0

cleanup() {
	touch "$T/stop" "$T/stop-b"
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok   $*"; }

# wait_for FILE 'fixed text' SECONDS [FROM]: true once FILE has a line
# with it (after line FROM when given)
wait_for() {
	local f=$1 text=$2 s=$3 from=${4:-0} i
	for ((i = 0; i < s * 20; i++)); do
		tail -n +"$((from + 1))" "$f" | grep -qF -- "$text" && return 0
		sleep 0.05
	done
	return 1
}

# count_after FILE MARK 'text': lines with text after the line MARK
# (a line number) of FILE
count_after() {
	tail -n +"$(($2 + 1))" "$1" | grep -cF -- "$3"
}

# --- the namespaces and links -------------------------------------------------------------
if ! ip netns add "$NSA" 2>"$T/err" || ! ip netns add "$NSB" 2>>"$T/err"; then
	echo "SKIP: cannot create network namespaces: $(cat "$T/err")"
	exit 77
fi
setup() {
	ip -n "$NSA" link set lo up &&
	ip -n "$NSB" link set lo up &&
	ip -n "$NSA" link add va1 type veth peer name vb1 netns "$NSB" &&
	ip -n "$NSA" link add va2 type veth peer name vb2 netns "$NSB" &&
	ip -n "$NSA" addr add 10.201.1.1/24 dev va1 &&
	ip -n "$NSA" addr add 10.201.2.1/24 dev va2 &&
	ip -n "$NSB" addr add 10.201.1.2/24 dev vb1 &&
	ip -n "$NSB" addr add 10.201.2.2/24 dev vb2 &&
	ip -n "$NSA" link set va1 up && ip -n "$NSA" link set va2 up &&
	ip -n "$NSB" link set vb1 up && ip -n "$NSB" link set vb2 up
}
if ! setup 2>"$T/err"; then
	echo "SKIP: cannot create veth links: $(cat "$T/err")"
	exit 77
fi
# carrier on both ends before the nodes start (bounded)
for ((i = 0; i < 100; i++)); do
	ip -n "$NSA" link show va1 | grep -q LOWER_UP && ip -n "$NSA" link show va2 | grep -q LOWER_UP &&
		break
	sleep 0.05
done

# --- the nodes ------------------------------------------------------------------------------
ip netns exec "$NSB" timeout 150 "$PROG" serve --nid "$B1,$B2" --port $PORT --stop "$T/stop-b" \
	>"$T/b.out" 2>"$T/b.err" &
PIDS+=($!)
wait_for "$T/b.out" ready 10 || { fail "B not ready"; cat "$T/b.err"; exit 1; }
ip netns exec "$NSA" timeout 150 "$PROG" send --nid "$A1,$A2" --port $PORT --to "$B1" \
	--stop "$T/stop" --transaction-timeout $TXT >"$T/a.out" 2>"$T/a.err" &
SENDER=$!
PIDS+=($SENDER)

show_logs() {
	echo "--- A (sender) stdout, first lines"; head -20 "$T/a.out"
	echo "--- A (sender) stdout, last lines"; tail -20 "$T/a.out"
	echo "--- A stderr"; grep -v ' D\] ' "$T/a.err" | tail -30
	echo "--- B (target) stdout"; tail -10 "$T/b.out"
	echo "--- B stderr"; grep -v ' D\] ' "$T/b.err" | tail -20
}

# Stream going, both links carrying it
if wait_for "$T/a.out" "done 40 " 30; then
	ok "stream started"
else
	fail "the stream did not start"; show_logs; exit 1
fi
if wait_for "$T/a.out" "via $B1" 20 && wait_for "$T/a.out" "via $B2" 20; then
	ok "both links carry it"
else
	fail "one link never used before the pull"
fi

# Link 1 down under the stream
ip -n "$NSA" link set va1 down
if wait_for "$T/a.out" "ni $A1 fatal=1 status=down" 10; then
	ok "A's $A1 fatal and down after ip link set down"
else
	fail "A's $A1 did not follow its link down"
fi
if wait_for "$T/b.out" "ni $B1 fatal=1 status=down" 10; then
	ok "B's $B1 (the other end, no carrier) fatal and down"
else
	fail "B's $B1 did not follow its peer's link down"
fi
# from a while after the pull, everything goes over link 2
sleep 1
MARK2=$(wc -l <"$T/a.out")
start=$(grep -c '^done ' "$T/a.out")
for ((i = 0; i < 200; i++)); do
	[[ $(($(grep -c '^done ' "$T/a.out") - start)) -ge 40 ]] && break
	sleep 0.05
done
n2=$(count_after "$T/a.out" "$MARK2" "via $B2")
n1=$(count_after "$T/a.out" "$MARK2" "via $B1")
if [[ $n2 -ge 40 && $n1 == 0 ]]; then
	ok "link 1 down: $n2 PUTs over link 2, none over link 1"
else
	fail "link 1 down: $n2 PUTs via $B2, $n1 via $B1 (want >= 40 and 0)"
fi

# No PUT was handed to the downed NI after the pull: it was not chosen
# (one that was would fail at once with the dead link's -ENETUNREACH; the
# PUTs in flight on its closed connections fail with -ENETDOWN instead)
if grep -q "PUT failed (Network is unreachable)" "$T/a.err"; then
	fail "PUTs were sent through the downed NI: $(grep -c "PUT failed (Network is unreachable)" "$T/a.err")"
else
	ok "no PUT chosen through the downed NI"
fi

# Link 1 back
MARKA=$(wc -l <"$T/a.out")
MARKB=$(wc -l <"$T/b.out")
ip -n "$NSA" link set va1 up
if wait_for "$T/a.out" "ni $A1 fatal=0 status=up" 10 "$MARKA"; then
	ok "A's $A1 up again (fatal 0) after ip link set up"
else
	fail "A's $A1 did not come back"
fi
if wait_for "$T/b.out" "ni $B1 fatal=0 status=up" 10 "$MARKB"; then
	ok "B's $B1 up again"
else
	fail "B's $B1 did not come back"
fi
MARK3=$(wc -l <"$T/a.out")
# the peer NI's health comes back through LNet recovery pings: bounded wait
used=0
for ((i = 0; i < 600; i++)); do
	if [[ $(count_after "$T/a.out" "$MARK3" "via $B1") -gt 0 ]]; then used=1; break; fi
	sleep 0.05
done
if [[ $used == 1 ]]; then
	ok "link 1 carries PUTs again"
else
	fail "link 1 unused 30 s after it came back"
fi

# Link 1's address removed (the link stays up): A's tcp1 NI goes down as
# with a lost link (the kernel's inetaddr event), the stream moves to link 2.
# B is not told (its link stays up): an ACK B sends for a PUT that went out
# on link 1 just before goes to A's old connection, which A closed without
# a FIN reaching B, and is lost; that PUT ends at A's transaction_timeout
# (TXT), as it would between kernel nodes. When the address is back, B's
# stale connections meet A's resets: a PUT being written on one fails as a
# LOCAL_ERROR, never resent (the kernel's rule). Only PUTs in flight from
# here on may fail, at most one window (4).
MARKA=$(wc -l <"$T/a.out")
MARK_ADDR=$MARKA
ip -n "$NSA" addr del 10.201.1.1/24 dev va1
if wait_for "$T/a.out" "ni $A1 fatal=1 status=down" 10 "$MARKA"; then
	ok "A's $A1 fatal and down after ip addr del"
else
	fail "A's $A1 did not go down when its address went"
fi
sleep 1
MARK4=$(wc -l <"$T/a.out")
start=$(grep -c '^done ' "$T/a.out")
for ((i = 0; i < 200; i++)); do
	[[ $(($(grep -c '^done ' "$T/a.out") - start)) -ge 20 ]] && break
	sleep 0.05
done
n2=$(count_after "$T/a.out" "$MARK4" "via $B2")
n1=$(count_after "$T/a.out" "$MARK4" "via $B1")
if [[ $n2 -ge 20 && $n1 == 0 ]]; then
	ok "address gone: $n2 PUTs over link 2, none over link 1"
else
	fail "address gone: $n2 PUTs via $B2, $n1 via $B1 (want >= 20 and 0)"
fi
MARKA=$(wc -l <"$T/a.out")
ip -n "$NSA" addr add 10.201.1.1/24 dev va1
if wait_for "$T/a.out" "ni $A1 fatal=0 status=up" 10 "$MARKA"; then
	ok "A's $A1 up again (fatal 0) once its address is back"
else
	fail "A's $A1 did not come back with its address"
fi
MARK5=$(wc -l <"$T/a.out")
used=0
for ((i = 0; i < 600; i++)); do
	if [[ $(count_after "$T/a.out" "$MARK5" "via $B1") -gt 0 ]]; then used=1; break; fi
	sleep 0.05
done
if [[ $used == 1 ]]; then
	ok "link 1 carries PUTs again after its address came back"
else
	fail "link 1 unused 30 s after its address came back"
fi

# Stop: every PUT ACKed and intact
# (the target stops only once the sender is done: one that stopped first
# would take the ACKs of the last PUTs with it)
touch "$T/stop"
wait $SENDER
src=$?
# 1: some PUT failed (judged below); anything else but 0 is a failure
if [[ $src != 0 && $src != 1 ]]; then
	fail "the sender failed (exit $src)"
fi
touch "$T/stop-b"
wait_for "$T/b.out" "served " 10
sent=$(sed -n 's/^sent \([0-9]*\) failed \([0-9]*\)$/\1 \2/p' "$T/a.out")
served=$(sed -n 's/^served \([0-9]*\) bad \([0-9]*\) aborted \([0-9]*\) again \([0-9]*\)$/\1 \2 \3 \4/p' "$T/b.out")
read -r s_ok s_failed <<<"${sent:-0 -1}"
read -r b_n b_bad b_cut b_dup <<<"${served:-0 -1 0 0}"
# each PUT has its own target: the target got each one whole and right
# (a receive the pull cut short, or a resend after an ACK the pull lost,
# is counted apart)
# (a PUT that failed after the address went may have reached the target)
early=$(head -n "$MARK_ADDR" "$T/a.out" | grep -c '^failed ')
if [[ $s_failed -ge 0 && $s_failed -le 4 && $early == 0 && $b_bad == 0 &&
      $s_ok -gt 0 && $b_n -ge $s_ok && $b_n -le $((s_ok + s_failed)) ]]; then
	ok "$s_ok PUTs of 1 MiB ACKed, $s_failed failed after the address went; target got each whole and right ($b_cut cut short, $b_dup again)"
else
	fail "sender: ${sent:-no summary}; target: ${served:-no summary}; failed before the address went: $early"
	grep '^failed ' "$T/a.out" | head -5
fi
grep -q '^bad PUT\|^posting' "$T/a.out" "$T/b.out" &&
	fail "$(grep -h '^bad PUT\|^posting' "$T/a.out" "$T/b.out" | head -5)"

if [[ $FAILS -gt 0 ]]; then
	show_logs
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all passed"
