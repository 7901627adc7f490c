#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_mrroute.sh - Multi-Rail routing setup (sanity-lnet 250): `net add`
# gives each tcp NI's interface a routing table named after it and a rule
# from its address, as lnetctl does through ksocklnd-config. In a network
# namespace this test creates, two veth interfaces on one subnet, v0
# (10.206.0.2/24) and v1 (10.206.0.3/24), a default route via
# 10.206.0.1 on v0, and a private mount namespace whose
# /etc/iproute2 is a tmpfs holding a copy of rt_tables (the host's file is
# never written). Checked:
# - net add --if v0: table v0 holds 10.206.0.0/24 (src 10.206.0.2) and
#   the default via 10.206.0.1; rule "from 10.206.0.2 lookup v0";
#   rt_tables names v0;
# - net add --if v1 (same subnet: the case MR routing is for) sets up v1
#   and leaves v0 as it was (a table with routes is skipped);
# - --skip-mr-route-setup, and ksocklnd.skip_mr_route_setup=1 on ulnetd,
#   set up nothing; a loopback NI sets up nothing;
# - setup-mrrouting makes a flushed table again;
# - --if v0,v1 adds an NI on each (as lnetctl), "v0," is refused.
# Needs root: skipped (77) otherwise.
set -u

if [[ $(id -u) != 0 ]]; then
	echo "SKIP: needs root (namespaces, routing tables)"
	exit 77
fi
for t in ip unshare mount; do
	command -v $t >/dev/null || { echo "SKIP: no $t"; exit 77; }
done
if [[ ! -d /etc/iproute2 ]]; then
	echo "SKIP: no /etc/iproute2 to mount a private copy over"
	exit 77
fi
# a private mount namespace: /etc/iproute2 is ours alone from here on
if [[ -z ${ULNET_MRROUTE_INNER:-} ]]; then
	ULNET_MRROUTE_INNER=1 exec unshare --mount --propagation private bash "$0" "$@"
fi

TAG=mrroute
. "$(dirname "$0")/../support/ctl_lib.sh"

RT=$T/rt_tables.orig
if [[ -f /etc/iproute2/rt_tables ]]; then
	cp /etc/iproute2/rt_tables "$RT"
elif [[ -f /usr/share/iproute2/rt_tables ]]; then
	cp /usr/share/iproute2/rt_tables "$RT"
else
	printf '255\tlocal\n254\tmain\n253\tdefault\n0\tunspec\n' >"$RT"
fi
mount -t tmpfs ulnet-iproute2 /etc/iproute2 || { fail "cannot mount a tmpfs on /etc/iproute2"; exit 1; }
cp "$RT" /etc/iproute2/rt_tables

NS=ulmr-$$
cleanup_ns() {
	cleanup
	ip netns del "$NS" 2>/dev/null
}
trap cleanup_ns EXIT
trap 'exit 1' INT TERM
if ! ip netns add "$NS" 2>"$T/nserr"; then
	echo "SKIP: cannot create a network namespace: $(cat "$T/nserr")"
	exit 77
fi
X() { ip -n "$NS" "$@"; }
X link set lo up &&
	X link add v0 type veth peer name v0p && X link add v1 type veth peer name v1p &&
	X addr add 10.206.0.2/24 dev v0 && X addr add 10.206.0.3/24 dev v1 &&
	X link set v0p up && X link set v1p up && X link set v0 up && X link set v1 up &&
	X route add default via 10.206.0.1 dev v0 ||
	{ fail "cannot set up the links"; exit 1; }
CTL_IN=(ip netns exec "$NS")

# start NAME ulnetd-args...: a daemon in the namespace
start() {
	local name=$1; shift
	ul_daemon_in "ip netns exec $NS" "$name" --log-level info "$@"
}
stop() { ul_stop "$1"; }
check() { # check WHAT COMMAND-OUTPUT WANT-SUBSTRING
	CHECKS=$((CHECKS + 1))
	[[ $2 == *"$3"* ]] || fail "$1: '$3' not in: $2"
}
check_not() {
	CHECKS=$((CHECKS + 1))
	[[ $2 != *"$3"* ]] || fail "$1: '$3' unexpected in: $2"
}
table() { X -4 route show table "$1" 2>/dev/null; }
rules() { X -4 rule show; }

start A || { fail "ulnetd A did not start"; exit 1; }
run A 0 net add --net tcp --if v0
check "table v0" "$(table v0)" "10.206.0.0/24 dev v0 proto kernel scope link src 10.206.0.2"
check "table v0" "$(table v0)" "default via 10.206.0.1 dev v0"
check "rules" "$(rules)" "from 10.206.0.2 lookup v0"
check "rt_tables" "$(cat /etc/iproute2/rt_tables)" " v0"
check "A's log" "$(cat "$T/A.log")" "MR route setup: 10.206.0.0/24: table v0, from 10.206.0.2, default via 10.206.0.1"
V0=$(table v0)

run A 0 net add --net tcp --if v1
check "table v1" "$(table v1)" "10.206.0.0/24 dev v1 proto kernel scope link src 10.206.0.3"
check "rules" "$(rules)" "from 10.206.0.3 lookup v1"
CHECKS=$((CHECKS + 1))
[[ $(table v0) == "$V0" ]] || fail "table v0 changed by the second net add: $(table v0)"
[[ $(grep -c " v0$" /etc/iproute2/rt_tables) == 1 ]] || fail "rt_tables names v0 twice"

# loopback: nothing
run A 0 net add --net tcp9 --if lo
CHECKS=$((CHECKS + 1))
grep -qE "^[0-9]+[[:space:]]+lo$" /etc/iproute2/rt_tables && fail "a loopback NI named a table lo"

# setup-mrrouting makes a flushed table again
X route flush table v1
X rule del from 10.206.0.3 table v1
run A 0 setup-mrrouting
check "table v1 after setup-mrrouting" "$(table v1)" "10.206.0.0/24 dev v1"
check "rules after setup-mrrouting" "$(rules)" "from 10.206.0.3 lookup v1"
CHECKS=$((CHECKS + 1))
[[ $(rules | grep -c "from 10.206.0.3 lookup v1") == 1 ]] || fail "rule from 10.206.0.3 twice: $(rules)"
stop A

# --skip-mr-route-setup
X route flush table v0; X route flush table v1
X rule del from 10.206.0.2 table v0; X rule del from 10.206.0.3 table v1
start B || { fail "ulnetd B did not start"; exit 1; }
run B 0 net add --net tcp --if v0 --skip-mr-route-setup
check_not "table v0 with --skip-mr-route-setup" "$(table v0)" "10.206.0.0/24"
check_not "rules with --skip-mr-route-setup" "$(rules)" "lookup v0"
stop B

# the module parameter
start C --module-option ksocklnd.skip_mr_route_setup=1 || { fail "ulnetd C did not start"; exit 1; }
run C 0 net add --net tcp --if v1
check_not "table v1 with skip_mr_route_setup=1" "$(table v1)" "10.206.0.0/24"
run C 0 setup-mrrouting
check_not "table v1 after setup-mrrouting with skip_mr_route_setup=1" "$(table v1)" "10.206.0.0/24"
stop C

# --if v0,v1: an NI on each, as lnetctl (one command, two local NIs);
# a list with an empty name is refused, naming it
start D --module-option ksocklnd.skip_mr_route_setup=1 || { fail "ulnetd D did not start"; exit 1; }
run D 0 net add --net tcp --if v0,v1
run D 0 net show
check "net show after --if v0,v1" "$OUT" "nid: 10.206.0.2@tcp"
check "net show after --if v0,v1" "$OUT" "nid: 10.206.0.3@tcp"
check "net show after --if v0,v1" "$OUT" "0: v1"
run D 234 net add --net tcp1 --if v0,
check "net add --if v0," "$ERR" "bad interface list 'v0,'"
stop D

echo "$CHECKS checks, $FAILS failures"
((FAILS == 0))
