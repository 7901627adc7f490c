#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_modopts.sh - ulnetd with the kernel's module parameters
# (--module-option MODULE.PARAM=VALUE, --module-options FILE in modprobe.d
# syntax), end to end: each parameter's effect seen through ulnetctl (net
# show -v, route show -v, routing show, global show, export), the order
# module options -> --config -> serving, "lnet configure --all" bringing
# them back, and refusals: ulnetd exits 1 before serving, naming the
# parameter (and FILE:LINE).
#
# networks= names `lo`, so the node's NID is 127.0.0.1@tcp (lo's address)
# on a high acceptor port of its own (lnet.accept_port, lnet.accept=all);
# other NIs and the gateways are 127.0.9.x, a subnet no other test uses
# (an NI listens on its own address: two on 127.0.0.1 would share the
# port). Needs no root (nothing is skipped for root reasons). `tcp`
# without an interface is checked only where an interface other than lo
# is up with an IPv4 address (said when skipped). Exits 77 only if the
# binaries are missing.
set -u

TAG=modopts
. "$(dirname "$0")/../support/ctl_lib.sh"

# a high port nothing listens on (127.0.0.1 is shared with other tests)
port_free() { ! ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; }
PORT=$((31000 + ($$ % 3000) * 2))
for _ in $(seq 50); do
	port_free "$PORT" && port_free $((PORT + 1)) && break
	PORT=$((PORT + 2))
done

# start NAME ulnetd-args...: a daemon serving $T/NAME.sock
start() {
	local name=$1; shift
	ul_daemon "$name" --log-level info "$@"
}

# has out|err|FILE TEXT: TEXT (which may span lines) is in the output
has() {
	local s=$1 txt=$2 f content
	CHECKS=$((CHECKS + 1))
	case $s in out) f=$T/out ;; err) f=$T/err ;; *) f=$s ;; esac
	content=$(cat "$f")
	[[ $content == *"$txt"* ]] || fail "'$LAST': $s lacks '$txt': $content"
}

lacks() { # lacks out TEXT
	local content
	CHECKS=$((CHECKS + 1))
	content=$(cat "$T/$1")
	[[ $content != *"$2"* ]] || fail "'$LAST': $1 has '$2': $content"
}

# refused WANT_TEXT ulnetd-args...: ulnetd exits 1 before serving, saying why
refused() {
	local want=$1; shift
	LAST="ulnetd $*"
	CHECKS=$((CHECKS + 1))
	rm -f "$T/X.sock"
	timeout 20 "$ULNETD" --ctl "$T/X.sock" "$@" >"$T/X.log" 2>&1
	local rc=$?
	[[ $rc == 1 ]] || fail "$LAST exited $rc, want 1: $(cat "$T/X.log")"
	[[ ! -e $T/X.sock ]] || fail "$LAST left its socket"
	grep -qF -- "$want" "$T/X.log" || fail "$LAST: log lacks '$want': $(cat "$T/X.log")"
}

# --- the options are there (sanity-lnet's harness looks for them) -----------------
CHECKS=$((CHECKS + 1))
"$ULNETD" --help >"$T/help" 2>&1 || fail "ulnetd --help failed"
grep -qF -- "--module-option MODULE.PARAM=VALUE" "$T/help" &&
	grep -qF -- "--module-options FILE" "$T/help" &&
	grep -qF -- "--accept-port-bulk N" "$T/help" || fail "ulnetd --help lacks the module options"
# --accept-port-bulk is checked as --accept-port is: a bad one exits 2
CHECKS=$((CHECKS + 1))
"$ULNETD" --ctl "$T/Y.sock" --accept-port-bulk 65536 >"$T/Y.log" 2>&1
[[ $? == 2 ]] && grep -qF "bad value for --accept-port-bulk: '65536' (0..65535)" "$T/Y.log" ||
	fail "ulnetd --accept-port-bulk 65536: $(cat "$T/Y.log")"

# --- a node configured by module parameters ----------------------------------------
# a site's modprobe.d file (comments, quotes, continuations); routes= also
# names a gateway on tcp2, a net only --config brings up: module
# parameters come first, so that route is skipped, as the kernel skips a
# route whose gateway it cannot reach
cat >"$T/lnet.conf" <<EOF
# LNet as on the kernel nodes

options lnet accept=all accept_port=$PORT accept_port_bulk=$((PORT + 1)) \\
    routes="tcp10 127.0.9.[20-21]@tcp:3; tcp11 2 127.0.9.30@tcp; tcp12 127.0.9.40@tcp2" \\
    forwarding=enabled
options lnet large_router_buffers=300 lnet_transaction_timeout=60 lnet_retry_count=1
options lnet lnet_peer_discovery_disabled=1 lnet_health_sensitivity=50 \\
    router_sensitivity_percentage=80
   # ksocklnd: the defaults of every tcp NI
options ksocklnd peer_credits=16 "conns_per_peer=2" sock_timeout=77 tos=0x20 nscheds=1
options lnet live_router_check_interval=10
EOF
# --config after them: retry_count 3 wins over lnet_retry_count=1
cat >"$T/config.yaml" <<EOF
net:
    - net type: tcp2
      local NI(s):
        - nid: 127.0.9.1@tcp2
global:
    retry_count: 3
EOF
start M --module-option 'lnet.networks="tcp(lo)"' --module-options "$T/lnet.conf" \
	--config "$T/config.yaml" || { echo "FAIL: ulnetd with module options did not start"; exit 1; }

run M 0 net show -v --net tcp
has out "nid: 127.0.0.1@tcp"
has out "0: lo"
has out "peer_credits: 16"
has out "conns_per_peer: 2"
has out "timeout: 77"
has out "tos: 32"
run M 0 route show -v
[[ $OUT == $'route:\n-     net: tcp10\n      gateway: 127.0.9.20@tcp\n      hop: -1\n      priority: 3\n'* ]] ||
	fail "route show -v: '$OUT'"
has out "      gateway: 127.0.9.21@tcp"
has out $'-     net: tcp11\n      gateway: 127.0.9.30@tcp\n      hop: 2\n      priority: 0'
lacks out "tcp12"
has "$T/M.log" "$T/lnet.conf:3: lnet.routes: route to tcp12 through 127.0.9.40@tcp2 skipped"
run M 0 routing show
has out "    - enable: 1"
has out $'buffers:\n    tiny: 2048\n    small: 16384\n    large: 300'
run M 0 global show
has out "    discovery: 0"
has out "    retry_count: 3"
has out "    transaction_timeout: 60"
has out "    health_sensitivity: 50"
has out "    router_sensitivity: 80"
run M 0 export --backup
has out "      gateway: 127.0.9.30@tcp"
has out $'routing:\n    enable: 1\nbuffers:\n    tiny: 2048\n    small: 16384\n    large: 300'
# the deprecated parameter: accepted, said to be ignored
has "$T/M.log" "$T/lnet.conf:11: lnet.live_router_check_interval=10: deprecated in the kernel"
# the NI works on the acceptor port the module options gave it
run M 0 ping 127.0.0.1@tcp
has out "primary nid: 127.0.0.1@tcp"
CHECKS=$((CHECKS + 1))
ss -ltnH "sport = :$PORT" 2>/dev/null | grep -qF "127.0.0.1:$PORT" ||
	fail "nothing listens on 127.0.0.1:$PORT (lnet.accept_port)"
# and on the bulk port beside it (lnet.accept_port_bulk)
CHECKS=$((CHECKS + 1))
ss -ltnH "sport = :$((PORT + 1))" 2>/dev/null | grep -qF "127.0.0.1:$((PORT + 1))" ||
	fail "nothing listens on 127.0.0.1:$((PORT + 1)) (lnet.accept_port_bulk)"
# the ping to ourselves dialled CONTROL to accept_port; as root (privileged
# source ports: a user-space peer opens CONTROL alone) BULK_IN went to the
# bulk port: conn show lists both (the bulk ones come just after the ping)
run M 0 conn show
has out "      type: control"$'\n'"      local: 127.0.0.1:"
has out "      remote: 127.0.0.1:$PORT"$'\n'
if [[ $(id -u) == 0 ]]; then
	for _ in $(seq 50); do
		[[ $OUT == *"remote: 127.0.0.1:$((PORT + 1))"* ]] && break
		sleep 0.1
		run M 0 conn show
	done
	has out $'      type: bulk_in\n      local: 127.0.0.1:'
	has out "      remote: 127.0.0.1:$((PORT + 1))"$'\n'
	run M 0 conn show --nid 127.0.0.1@tcp --net tcp
	has out "    - nid: 127.0.0.1@tcp"
else
	echo "SKIP (part): bulk connections to the bulk port need root (privileged source ports)"
fi
# an NI added later takes the ksocklnd defaults where it sets nothing
run M 0 net add --nid 127.0.9.2@tcp3 --peer-credits 4
run M 0 net show -v --net tcp3
has out "peer_credits: 4"
has out "conns_per_peer: 2"
has out "timeout: 77"
# nscheds=1: each tcp NI on a thread of its own, named after its net
CHECKS=$((CHECKS + 1))
grep -qx "ulnet-tcp3" /proc/"$PID_M"/task/*/comm 2>/dev/null ||
	fail "ksocklnd.nscheds=1: no thread ulnet-tcp3 in ulnetd ($(cat /proc/"$PID_M"/task/*/comm 2>/dev/null | tr '\n' ' '))"
# "lnet configure" brings back 0@lo only; "--all" the module parameters'
# networks, routes and forwarding (and --config's nets)
run M 0 lnet unconfigure
run M 0 lnet configure
run M 0 net show --net tcp
[[ -z $OUT ]] || fail "lnet configure brought up module networks: '$OUT'"
run M 0 route show
[[ -z $OUT ]] || fail "lnet configure brought up module routes: '$OUT'"
run M 0 lnet unconfigure
run M 0 lnet configure --all
run M 0 net show -v --net tcp
has out "nid: 127.0.0.1@tcp"
has out "peer_credits: 16"
run M 0 route show --net tcp11
has out "gateway: 127.0.9.30@tcp"
run M 0 routing show
has out "    - enable: 1"
run M 0 net show --net tcp2
has out "nid: 127.0.9.1@tcp2"
kill -TERM "$PID_M"; wait "$PID_M"

# --- ulnetd's own --accept-port(-bulk) over lnet.accept_port(_bulk) --------------------
start P --module-option lnet.networks='tcp(lo)' --module-option lnet.accept_port=1 \
	--module-option lnet.accept=secure --accept-port $((PORT + 1)) --accept all \
	--module-option lnet.accept_port_bulk=2 --accept-port-bulk $PORT ||
	fail "ulnetd P did not start"
# served only once the module options are applied
run P 0 net show
has out "nid: 127.0.0.1@tcp"
CHECKS=$((CHECKS + 1))
ss -ltnH "sport = :$((PORT + 1))" 2>/dev/null | grep -qF "127.0.0.1:$((PORT + 1))" ||
	fail "--accept-port did not take precedence over lnet.accept_port"
CHECKS=$((CHECKS + 1))
ss -ltnH "sport = :$PORT" 2>/dev/null | grep -qF "127.0.0.1:$PORT" ||
	fail "--accept-port-bulk did not take precedence over lnet.accept_port_bulk"
kill -TERM "$PID_P"; wait "$PID_P"

# --- refused: exit 1 before serving, naming the parameter -----------------------------
# ip2nets: a bad pattern when set; no match (lo, loopback, never does) at start
refused "--module-option: lnet.ip2nets: entry 1 (tcp(lo)): bad IP pattern '127.0.0'" \
	--module-option 'lnet.ip2nets="tcp(lo) 127.0.0"'
has "$T/X.log" "(errno -22)"
refused "--module-option: lnet.ip2nets: does not match any local IP interface" \
	--module-option 'lnet.ip2nets="tcp(lo) 127.0.0.*"'
has "$T/X.log" "(errno -2)"
refused "--module-option: ksocklnd.tos: 300 is out of range (-1..255) (errno -22)" \
	--module-option ksocklnd.tos=300
refused "--module-option: lnet.forwarding: needs a value" --module-option lnet.forwarding
refused "--module-option: lnet.bogus_param: not supported by ulnet: no such parameter" \
	--module-option lnet.bogus_param=1
refused "expected MODULE.PARAM=VALUE" --module-option networks=tcp
printf '# a site file\noptions lnet accept=all\nalias eth0 e1000e\n' >"$T/alias.conf"
refused "$T/alias.conf:3: 'alias': not supported by ulnet" --module-options "$T/alias.conf"
printf 'options libcfs cpu_npartitions=2\n' >"$T/libcfs.conf"
refused "$T/libcfs.conf:1: libcfs.cpu_npartitions: not supported by ulnet" \
	--module-options "$T/libcfs.conf"
printf 'options lnet \\\n   lnet_retry_count=many\n' >"$T/bad.conf"
refused "$T/bad.conf:1: lnet.lnet_retry_count: 'many' is not" --module-options "$T/bad.conf"
refused "$T/nosuch.conf: cannot open" --module-options "$T/nosuch.conf"
refused "lnet.networks: tcp(nosuch0): no IPv4 address on interface nosuch0 (errno -100)" \
	--module-option 'lnet.networks=tcp(nosuch0)'
refused "ksocklnd.peer_credits: peer_credits 512 exceeds credits 256" \
	--module-option ksocklnd.peer_credits=512
# ko2iblnd: what the o2ib LND does not do (-95), a bad value (-22)
refused "--module-option: ko2iblnd.conns_per_peer: 128 is out of range (0..127)" \
	--module-option ko2iblnd.conns_per_peer=128
refused "--module-option: ko2iblnd.service: 0 is not a port (1..65535) (errno -22)" \
	--module-option ko2iblnd.service=0
printf 'options ko2iblnd cksum=1 timeout=20\noptions ko2iblnd fmr_pool_size=2048\n' >"$T/o2ib.conf"
refused "$T/o2ib.conf:2: ko2iblnd.fmr_pool_size: not supported by ulnet: only fmr_pool_size=512" \
	--module-options "$T/o2ib.conf"
refused "--module-option: lnet.accept_port_bulk: 0 is not a port (1..65535) (errno -22)" \
	--module-option lnet.accept_port_bulk=0
# a bad one after good ones still stops it
refused "lnet.config_on_load: not supported by ulnet" --module-option lnet.networks='tcp(lo)' \
	--module-option lnet.accept_port=$PORT --module-option lnet.config_on_load=0

# --- "tcp" alone: the first interface up, not loopback, with an IPv4 address -------------
first_if=$(ip -o -4 addr show up 2>/dev/null | awk '$2 != "lo" && $2 !~ /^lo:/ {print $2, $4; exit}')
if [[ -n $first_if ]]; then
	ifn=${first_if%% *}; ip4=${first_if#* }; ip4=${ip4%/*}
	if start D --module-option lnet.networks=tcp --module-option lnet.accept=all \
		--module-option lnet.accept_port=$((PORT + 1)); then
		run D 0 net show
		has out "nid: $ip4@tcp"
		has out "0: $ifn"
		kill -TERM "$PID_D"; wait "$PID_D"
	else
		fail "ulnetd with networks=tcp did not start: $(cat "$T/D.log")"
	fi
else
	echo "SKIP (part): networks=tcp without an interface: no interface but lo is up with IPv4"
fi

echo "$CHECKS checks, $FAILS failures"
[[ $FAILS == 0 ]]
