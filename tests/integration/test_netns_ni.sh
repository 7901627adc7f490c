#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_netns_ni.sh - an NI lives in the network namespace of whoever added
# it, as a kernel NI does (sanity-lnet 203): ulnetd D runs in this test's
# namespace; `ip netns exec NSA ulnetctl net add --if va` adds an NI on an
# interface that exists only in NSA (one end of a veth pair whose other end,
# vb, is in NSB: 10.204.0.1/24 and 10.204.0.2/24, addresses that exist
# only there). ulnetd E runs in NSB with an NI on vb. Checked:
# - the net add succeeds and `net show` lists 10.204.0.1@tcp (the daemon's
#   own namespace has no va: it fails there, which is checked too);
# - D pings E (D's dialled sockets are made in NSA, although D's threads
#   live here) and E pings D (D's listener is in NSA), with `ulnetctl ping`
#   run from this namespace;
# - conns_per_peer left unset is derived from va's speed (10 Gb/s: 2);
# - a net add from NSA of an interface only this namespace has fails;
# - `net del` from here of the NSA NI works and the namespace can go.
# Needs root (namespaces, setns): skipped (77) otherwise.
set -u

TAG=netns
. "$(dirname "$0")/../support/ctl_lib.sh"

if [[ $(id -u) != 0 ]]; then
	echo "SKIP: needs root (creates network namespaces; ulnetd enters them)"
	exit 77
fi
if ! command -v ip >/dev/null; then
	echo "SKIP: no ip(8)"
	exit 77
fi

NSA=ulnsa-$$
NSB=ulnsb-$$
cleanup_ns() {
	cleanup
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
}
trap cleanup_ns EXIT
trap 'exit 1' INT TERM

if ! ip netns add "$NSA" 2>"$T/nserr" || ! ip netns add "$NSB" 2>>"$T/nserr"; then
	echo "SKIP: cannot create network namespaces: $(cat "$T/nserr")"
	exit 77
fi
ip -n "$NSA" link set lo up && ip -n "$NSB" link set lo up &&
	ip -n "$NSA" link add va type veth peer name vb netns "$NSB" &&
	ip -n "$NSA" addr add 10.204.0.1/24 dev va && ip -n "$NSB" addr add 10.204.0.2/24 dev vb &&
	ip -n "$NSA" link set va up && ip -n "$NSB" link set vb up ||
	{ fail "cannot set up the link"; exit 1; }
A=10.204.0.1@tcp
B=10.204.0.2@tcp

# runin NS NODE WANT_RC ARGS...: ulnetctl run from namespace NS
runin() {
	local ns=$1 node=$2 want=$3; shift 3
	LAST="(in $ns) $*"
	CHECKS=$((CHECKS + 1))
	ip netns exec "$ns" "$CTL" --ctl "$T/$node.sock" "$@" >"$T/out" 2>"$T/err"
	local rc=$?
	OUT=$(cat "$T/out"); ERR=$(cat "$T/err")
	if [[ $rc != "$want" ]]; then
		fail "ulnetctl $LAST -> rc $rc, want $want"
		echo "  stdout: $OUT"; echo "  stderr: $ERR"
	fi
	alive "$node"
}

# (no Multi-Rail routing setup: it would name tables in the host's
# rt_tables; test_mrroute.sh tests it in a private copy)
NOMR=(--module-option ksocklnd.skip_mr_route_setup=1)
ul_daemon D --log-level info "${NOMR[@]}" || { fail "ulnetd D did not start"; exit 1; }
# E in NSB
ip netns exec "$NSB" "$ULNETD" --ctl "$T/E.sock" --log-level info "${NOMR[@]}" >"$T/E.log" 2>&1 &
PID_E=$!
PIDS+=("$PID_E")
for _ in $(seq 100); do [[ -S $T/E.sock ]] && break; sleep 0.05; done
[[ -S $T/E.sock ]] || { fail "ulnetd E did not start: $(cat "$T/E.log")"; exit 1; }

# here, va does not exist: lnetctl's answer for an interface the
# namespace lacks (ENETDOWN)
run D 234 net add --net tcp --if va
[[ $ERR == *"errno: -100"* ]] || fail "net add --if va here: $ERR"

runin "$NSA" D 0 net add --net tcp --if va
run D 0 net show
[[ $OUT == *"nid: $A"* ]] || fail "net show lacks $A: $OUT"
# conns_per_peer left unset comes from the link speed, as ksocklnd's:
# veth says 10 Gb/s (ethtool, asked in NSA), which gives 2
run D 0 net show -v 1
[[ $OUT == *"conns_per_peer: 2"* ]] || fail "conns_per_peer on a 10 Gb/s veth: $OUT"
# from NSA, an interface of NSB's is unknown
runin "$NSA" D 234 net add --net tcp1 --if vb

runin "$NSB" E 0 net add --net tcp --if vb
run E 0 ping "$B"   # E's own NID: E is up

# D -> E: D's progress thread dials from NSA
run D 0 ping "$B" --timeout 10
[[ $OUT == *"primary nid: $B"* ]] || fail "ping $B from D: $OUT"
# E -> D: D's listener is in NSA (E discovers D afresh)
run E 0 ping "$A" --timeout 10
[[ $OUT == *"primary nid: $A"* ]] || fail "ping $A from E: $OUT"
run D 0 peer show --nid "$B"
[[ $OUT == *"$B"* ]] || fail "peer show $B on D: $OUT"

run D 0 net del --net tcp
run D 0 net show
[[ $OUT != *"$A"* ]] || fail "net del from here left $A: $OUT"

# lnet configure from NSA: the node's progress thread still lives in the
# daemon's namespace (it would otherwise pin NSA), and an NI added from
# NSA still works
runin "$NSA" D 0 lnet unconfigure
runin "$NSA" D 0 lnet configure
runin "$NSA" D 0 net add --net tcp --if va
run D 0 ping "$B" --timeout 10
[[ $OUT == *"primary nid: $B"* ]] || fail "ping $B after lnet configure from $NSA: $OUT"
HOME_NS=$(readlink "/proc/$PID_D/ns/net")
CHECKS=$((CHECKS + 1))
for t in /proc/$PID_D/task/*; do
	ns=$(readlink "$t/ns/net" 2>/dev/null) || continue   # a worker that just ended
	[[ $ns == "$HOME_NS" ]] ||
		fail "thread $(basename "$t") ($(cat "$t/comm")) of ulnetd is in $ns, not the daemon's $HOME_NS"
done

# a daemon that cannot enter its client's namespace (no CAP_SYS_ADMIN)
# refuses the command, saying why, rather than run it in its own
if command -v setpriv >/dev/null; then
	setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "$ULNETD" --ctl "$T/N.sock" \
		"${NOMR[@]}" >"$T/N.log" 2>&1 &
	PID_N=$!
	PIDS+=("$PID_N")
	for _ in $(seq 100); do [[ -S $T/N.sock ]] && break; sleep 0.05; done
	runin "$NSA" N 255 net add --net tcp --if va
	[[ $ERR == *"in another network namespace, which this daemon cannot enter"* ]] ||
		fail "no CAP_SYS_ADMIN: $ERR"
	run N 0 net show
	[[ $OUT != *"$A"* ]] || fail "the refused net add added $A: $OUT"
else
	echo "(no setpriv: the refusal of a daemon without CAP_SYS_ADMIN is not checked)"
fi
grep -q "can't enter" "$T/D.log" && fail "D logged a namespace failure: $(grep "can't enter" "$T/D.log")"

echo "$CHECKS checks, $FAILS failures"
((FAILS == 0))
