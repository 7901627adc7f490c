#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_ip2nets.sh - ip2nets end to end, in a network namespace this test
# creates: v0 (10.203.0.5/24, 2001:db8:203::5/64) and v1 (10.203.1.7/24),
# each one end of a veth pair whose other end is up without an address;
# ulnetd and ulnetctl run in the namespace (an NI lives in the namespace
# of the ulnetctl that adds it, ulnetd's at start). Checked:
# - `ip2nets:` in import as sanity-lnet 150-161 use it (one rule, two
#   interfaces, wildcards, ranges, strides, lists, IPv6 addresses and
#   prefixes), the export it gives is the one `net add` gives, the same
#   import again fails as lnetctl's, `import --del`;
# - `net add --ip2net` with the kernel's string;
# - ulnetd --config with ip2nets: rules, and "lnet configure --all";
# - the lnet module parameter ip2nets= (--module-option, a modprobe.d
#   file): its NIs at start and at "lnet configure --all", a bad value or
#   no match stops the start naming where, not with networks= too.
# Needs root (namespaces, links): skipped (77) otherwise.
set -u

TAG=ip2nets
. "$(dirname "$0")/../support/ctl_lib.sh"

if [[ $(id -u) != 0 ]]; then
	echo "SKIP: needs root (creates a network namespace and veth links)"
	exit 77
fi
if ! command -v ip >/dev/null; then
	echo "SKIP: no ip(8)"
	exit 77
fi

NS=ulip2n-$$
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
# ulnetctl runs in the namespace too: an NI is added in its caller's
CTL_IN=(ip netns exec "$NS")
X link set lo up &&
	X link add v0 type veth peer name v0p && X link add v1 type veth peer name v1p &&
	X addr add 10.203.0.5/24 dev v0 && X -6 addr add 2001:db8:203::5/64 dev v0 nodad &&
	X addr add 10.203.1.7/24 dev v1 &&
	X link set v0p up && X link set v1p up && X link set v0 up && X link set v1 up ||
	{ fail "cannot set up the links"; exit 1; }

# has out|err TEXT: TEXT (which may span lines) is in the output
has() {
	local f content
	CHECKS=$((CHECKS + 1))
	case $1 in out) f=$T/out ;; *) f=$T/err ;; esac
	content=$(cat "$f")
	[[ $content == *"$2"* ]] || fail "'$LAST': $1 lacks '$2': $content"
}
lacks() {
	local content
	CHECKS=$((CHECKS + 1))
	content=$(cat "$T/$1")
	[[ $content != *"$2"* ]] || fail "'$LAST': $1 has '$2': $content"
}

# start NAME ulnetd-args...: a daemon in the namespace serving $T/NAME.sock
# (no Multi-Rail routing setup: it would name tables in the host's
# rt_tables; test_mrroute.sh tests it in a private copy)
start() {
	local name=$1; shift
	ul_daemon_in "ip netns exec $NS" "$name" --log-level info \
		--module-option ksocklnd.skip_mr_route_setup=1 "$@"
}
stop() { ul_stop "$1"; }

# refused WANT ulnetd-args...: ulnetd exits 1 before serving, saying WANT
refused() {
	local want=$1; shift
	LAST="ulnetd $*"
	CHECKS=$((CHECKS + 1))
	rm -f "$T/X.sock"
	timeout 20 ip netns exec "$NS" "$ULNETD" --ctl "$T/X.sock" "$@" >"$T/X.log" 2>&1
	local rc=$?
	[[ $rc == 1 ]] || fail "$LAST exited $rc, want 1: $(cat "$T/X.log")"
	[[ ! -e $T/X.sock ]] || fail "$LAST left its socket"
	grep -qF -- "$want" "$T/X.log" || fail "$LAST: log lacks '$want': $(cat "$T/X.log")"
}

# yaml FILE <<EOF: an import file
yaml() { cat >"$T/$1"; }
# nids NODE: the NIDs the node has, but 0@lo, one line each, in order
nids() {
	run "$1" 0 net show
	grep -o 'nid: [^ ]*' "$T/out" | sed 's/nid: //' | grep -v '^0@lo$' | tr '\n' ' '
}
want_nids() { # want_nids NODE "NID NID ..."
	local got
	got=$(nids "$1")
	CHECKS=$((CHECKS + 1))
	[[ $got == "$2 " || ( -z $2 && -z $got ) ]] || fail "after '$3': NIDs '$got', want '$2'"
}

# --- import: sanity-lnet 150 ----------------------------------------------------------
start A || { fail "ulnetd A did not start"; exit 1; }
run A 0 net add --net tcp --if v0
run A 0 net add --net tcp --if v1
run A 0 net add --net tcp2 --if v0
run A 0 export --backup
cp "$T/out" "$T/expected"
run A 0 lnet unconfigure
run A 0 lnet configure
yaml one.yaml <<EOF
ip2nets:
  - net-spec: tcp
    interfaces:
        0: v0
    ip-range:
        0: 10.203.0.5
EOF
run A 0 import "$T/one.yaml"
want_nids A "10.203.0.5@tcp" "import one.yaml"
run A 234 import "$T/one.yaml"
has err $'add:\n-     net:\n      errno: -17\n      descr: ! "cannot add LNet NI"'
has err "Failed to configure NI on net 'tcp' rc = -22"
want_nids A "10.203.0.5@tcp" "import one.yaml again"

# --- sanity-lnet 151, 160: two interfaces, later rules for the net, a second net -----------
R0=(10.203.0.5 2001:db8:203::5 "10.203.0.*" "10.203.0.[1,3,5]")
R1=(10.203.1.7 "10.203.1.[1-9/2]" "10.203.[1-4].*" '"*.*.1.*"')
for i in "${!R0[@]}"; do
	r="${R0[$i]} ${R1[$i]}"
	run A 0 lnet unconfigure
	run A 0 lnet configure
	yaml two.yaml <<EOF
ip2nets:
  - net-spec: tcp
    interfaces:
        0: v0
        1: v1
    ip-range:
        0: ${R0[$i]}
        1: ${R1[$i]}
  - net-spec: tcp
    interfaces:
        0: v0
  - net-spec: tcp
    interfaces:
        0: v1
    ip-range:
        0: 10.203.1.7
  - net-spec: tcp2
    interfaces:
        0: v0
    ip-range:
        0: 2001:db8:203::/48
  - net-spec: tcp3
    ip-range:
        0: 192.168.0.1
EOF
	run A 0 import "$T/two.yaml"
	want_nids A "10.203.0.5@tcp 10.203.1.7@tcp 10.203.0.5@tcp2" "import two.yaml ($r)"
	run A 0 export --backup
	CHECKS=$((CHECKS + 1))
	diff -u "$T/expected" "$T/out" >"$T/diff" || fail "export after ip2nets ($r): $(cat "$T/diff")"
done
# --del: the NIs of the rules that match
yaml del.yaml <<EOF
ip2nets:
  - net-spec: tcp
    interfaces:
        0: v1
  - net-spec: tcp2
    ip-range:
        0: 10.203.0.*
EOF
run A 0 import --del "$T/del.yaml"
want_nids A "10.203.0.5@tcp" "import --del del.yaml"

# --- no match, malformed (sanity-lnet 155, 157, 162) ---------------------------------------
yaml none.yaml <<EOF
ip2nets:
  - net-spec: tcp5
    interfaces:
        0: v0
    ip-range:
        0: 2001:db8:dead:beef::1
  - net-spec: tcp5
    ip-range:
        0: 10.20.30.40
  - net-spec: tcp5
    interfaces:
        0: nosuch0
EOF
run A 234 import "$T/none.yaml"
has err "No ip2nets rules applied: rule 0 (tcp5): Interface 'v0' doesn't match an IP pattern; rule 1 (tcp5): IP pattern(s) do not match available interfaces; rule 2 (tcp5): No interface matching 'nosuch0'"
# v0p is up with no address: without ranges it matches, and has no IPv4 address
yaml noaddr.yaml <<EOF
ip2nets:
  - net-spec: tcp5
    interfaces:
        0: v0p
EOF
run A 234 import "$T/noaddr.yaml"
has err "errno: -100"
has err "Failed to configure NI on net 'tcp5' rc = -22"
yaml bad.yaml <<EOF
ip2nets:
  - net-spec: tcp5
    ip-range:
        0: 10.203.0.0/24
EOF
run A 234 import "$T/bad.yaml"
has err "bad.yaml:4:12: Failed to parse ip-range list rc = -22: '10.203.0.0/24': an IPv4 range takes no prefix length"
yaml bad.yaml <<EOF
ip2nets:
  - net-spec: tcp5
    ip_range:
        0: 10.203.0.5
EOF
run A 234 import "$T/bad.yaml"
has err "errno: -95"
has err "bad.yaml:3:5: ip2nets key 'ip_range' is not supported by ulnet"
want_nids A "10.203.0.5@tcp" "failed imports"

# --- net add --ip2net (the kernel's string) -------------------------------------------------
run A 0 net add --ip2net "tcp3(v0) 10.203.*.*"
run A 0 net add --ip2net "tcp4(v1),tcp6 192.168.1.1 10.203.1.[1-9] # here; tcp7 10.0.0.1"
want_nids A "10.203.0.5@tcp 10.203.0.5@tcp3 10.203.1.7@tcp4 10.203.0.5@tcp6" "net add --ip2net"
# sanity-lnet 199: the NI is there already
run A 234 net add --ip2net "tcp 10.203.0.5"
has err "errno: -17"
has err "cannot setup ip2nets"
run A 234 net add --ip2net "tcp8 10.203.0.5/32"
has err "cannot setup ip2nets: entry 1 (tcp8): bad IP pattern '10.203.0.5/32'"
run A 234 net add --ip2net "tcp8 10.9.9.9"
has err $'errno: -2\n      descr: ! "cannot setup ip2nets: does not match any local IP interface'
stop A

# --- ulnetd --config with ip2nets ---------------------------------------------------------
yaml cfg.yaml <<EOF
ip2nets:
  - net-spec: tcp1
    ip-range:
        0: 10.203.[0-1].*
  - net-spec: tcp1
    interfaces:
        0: v0
EOF
start C --config "$T/cfg.yaml" || fail "ulnetd --config cfg.yaml did not start"
want_nids C "10.203.0.5@tcp1 10.203.1.7@tcp1" "ulnetd --config cfg.yaml"
run C 0 lnet unconfigure
run C 0 lnet configure
want_nids C "" "lnet configure"
run C 0 lnet unconfigure
run C 0 lnet configure --all
want_nids C "10.203.0.5@tcp1 10.203.1.7@tcp1" "lnet configure --all"
stop C
refused "none.yaml:2:3: No ip2nets rules applied" --config "$T/none.yaml"

# --- the lnet module parameter ip2nets= -----------------------------------------------------
start M --module-option 'lnet.networks=""' \
	--module-option 'lnet.ip2nets="tcp(v0) 10.203.0.5; tcp1(v1,v0) 192.168.[0-9].*; tcp1(v1) 10.203.1.*"' ||
	fail "ulnetd M did not start"
want_nids M "10.203.0.5@tcp 10.203.1.7@tcp1" "lnet.ip2nets"
run M 0 lnet unconfigure
run M 0 lnet configure --all
want_nids M "10.203.0.5@tcp 10.203.1.7@tcp1" "lnet configure --all (lnet.ip2nets)"
stop M
cat >"$T/lnet.conf" <<EOF
# LNet by address
options lnet \\
  ip2nets="tcp2(v0,v1) [10,10].203.[0,1].[5,7] #all of them"
EOF
start F --module-options "$T/lnet.conf" || fail "ulnetd F did not start"
want_nids F "10.203.0.5@tcp2 10.203.1.7@tcp2" "--module-options lnet.conf"
stop F
printf '\noptions lnet ip2nets="tcp 10.9.9.9"\n' >"$T/nomatch.conf"
refused "nomatch.conf:2: lnet.ip2nets: does not match any local IP interface (" \
	--module-options "$T/nomatch.conf"
refused "--module-option: lnet.ip2nets: entry 2: 'tpc' is not a net (errno -22)" \
	--module-option 'lnet.ip2nets=tcp 10.203.0.5; tpc 10.203.0.5'
refused "lnet.ip2nets: networks= is set too (--module-option): specify either networks or ip2nets" \
	--module-option 'lnet.networks=tcp(v0)' --module-option 'lnet.ip2nets=tcp1 10.203.0.5'
refused "lnet.ip2nets: tcp9(nosuch0): no IPv4 address on interface nosuch0" \
	--module-option 'lnet.ip2nets=tcp9(nosuch0) 10.203.0.5'

echo "$CHECKS checks, $FAILS failures"
((FAILS == 0))
