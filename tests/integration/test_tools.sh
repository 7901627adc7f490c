#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_tools.sh - ulnetd + ulnetctl end to end, as an ordinary user:
# temp control sockets, 127.0.7.x NIDs (a subnet of its own: tests run in
# parallel, and a node of another test on the same address and port would
# answer this one's pings), a high acceptor port, accept=all.
# Every command's exit status and error text are checked, and after each
# one that the daemon is still alive. Needs no root (nothing is skipped for
# root reasons); exits 77 only if the binaries are missing.
set -u

TAG=tools
. "$(dirname "$0")/../support/ctl_lib.sh"
PORT=$((21000 + ($$ % 4000) * 2))

# start NAME [ulnetd args...]: daemon with socket $T/NAME.sock
start() {
	local name=$1; shift
	ul_daemon "$name" --accept-port "$PORT" --accept all "$@"
}

# nth KEY N: the N-th value of "KEY: value" in the last stdout (1-based)
nth() { awk -v k="$1:" -v n="$2" '$1 == k { if (++c == n) { print $2; exit } }' "$T/out"; }
# moved KEY N: the N-th KEY of the last stdout is a number > 0
moved() {
	local v
	v=$(nth "$1" "${2:-1}")
	CHECKS=$((CHECKS + 1))
	[[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || fail "'$LAST': $1 (#${2:-1}) did not move: '$v'"
}

has() { # has STREAM TEXT
	local s=$1 txt=$2
	CHECKS=$((CHECKS + 1))
	if [[ $s == out ]]; then grep -qF -- "$txt" "$T/out" || fail "stdout of '$LAST' lacks '$txt': $OUT"
	else grep -qF -- "$txt" "$T/err" || fail "stderr of '$LAST' lacks '$txt': $ERR"; fi
}

hasnt() { # hasnt STREAM TEXT
	local f=$T/out
	[[ $1 == out ]] || f=$T/err
	CHECKS=$((CHECKS + 1))
	! grep -qF -- "$2" "$f" || fail "$1 of '$LAST' has '$2': $(cat "$f")"
}

# --- no daemon -----------------------------------------------------------------
"$CTL" --ctl "$T/none.sock" net show >"$T/out" 2>"$T/err"
rc=$?
[[ $rc != 0 ]] || fail "ulnetctl without daemon succeeded"
grep -qF "cannot reach ulnetd at $T/none.sock" "$T/err" || fail "no 'cannot reach' message: $(cat "$T/err")"
"$CTL" --ctl "$T/none.sock" net add --help >"$T/out" 2>&1 || fail "help needs a daemon"
grep -qF -- "--nid" "$T/out" || fail "net add --help lacks --nid"

# --- node A ----------------------------------------------------------------------
start A || { echo "FAIL: ulnetd A did not start"; exit 1; }
run A 0 net show
has out "nid: 0@lo"
run A 0 net add --nid 127.0.7.2@tcp
run A 0 net show
has out "nid: 127.0.7.2@tcp"
has out "0: lo"
run A 0 net show -v 3
has out "health stats:"
run A 0 net show --net tcp -v 4
has out "udsp info:"
run A 234 net add --nid 127.0.7.2@tcp
has err "errno: -17"
has err 'descr: ! "cannot add LNet NI"'
run A 234 net add --nid 127.0.0.300@tcp
has err "cannot parse NID '127.0.0.300@tcp'"
run A 234 net add --nid 1.2.3.4@nosuchnet
has err "errno: -22"
run A 234 net add --net tcp1 --if nosuch0
has err "errno: -100"
run A 234 net add --net tcp1
has err "'--if'"
run A 234 net add --bogus
has err "unrecognized option '--bogus'"
run A 234 net add --nid 127.0.7.2@tcp --peer-credits lots
has err "invalid value for --peer-credits"
run A 234 net show --net nosuch
has err "cannot parse net 'nosuch'"
run A 234 net del --nid 127.0.7.77@tcp
has err "errno: -2"
run A 255 frobnicate
has err "'frobnicate' is not a valid command"
run A 255 net frob

# ping: bad NID, no route, nobody listening, self
run A 234 ping foo
has err 'descr: ! "\"Unable to parse nidlist: no valid NIDs in string\""'
run A 255 ping 10.0.0.1@o2ib
has out "errno: -113"
has out "failed to ping 10.0.0.1@o2ib: No route to host"
run A 255 ping --timeout 1 127.0.7.9@tcp
has out "failed to ping 127.0.7.9@tcp"
run A 0 ping 127.0.7.2@tcp
has out "primary nid: 127.0.7.2@tcp"
run A 255 discover
has out "Missing nid argument"

# globals
run A 0 global show
has out "    transaction_timeout: 150"
run A 0 set retry_count 3
run A 0 global show
has out "    retry_count: 3"
run A 255 set retry_count many
has err "cannot parse retry_count value"
run A 234 set response_tracking 9
has err "Valid values are: 0, 1, 2, or 3"
run A 234 set discovery
run A 0 set transaction_timeout 60

# peers
run A 0 peer add --prim_nid 127.0.7.50@tcp --nid 127.0.7.51@tcp
run A 0 peer show -v
has out "primary nid: 127.0.7.50@tcp"
has out "nid: 127.0.7.51@tcp"
run A 0 peer list
has out "peer list:"
run A 234 peer show --nid 127.0.7.200@tcp
[[ -z $OUT && -z $ERR ]] || fail "peer show of an unknown NID printed something"
run A 234 peer add --nid 127.0.7.51@tcp
has err "--prim_nid must be specified"
run A 234 peer add --prim_nid bogus
run A 0 debug peer --nid 127.0.7.50@tcp
has out "udsp info:"
run A 0 peer del --prim_nid 127.0.7.50@tcp
run A 234 peer del --prim_nid 127.0.7.50@tcp

run A 0 stats show
has out "statistics:"
run A 0 stats reset
run A 0 routing show

# --- route add / show / del, lnetctl's texts and exit codes ------------------------
run A 0 route show -v
[[ -z $OUT && -z $ERR ]] || fail "route show without routes printed something"
run A 0 route add --net tcp9 --gateway 127.0.7.[20-21]@tcp --hop 2 --priority 3
[[ -z $OUT && -z $ERR ]] || fail "route add printed something"
run A 0 route show -v 2
has out "-     net: tcp9"
has out "      gateway: 127.0.7.21@tcp"
has out "      hop: 2"
has out "      priority: 3"
has out "      state: up"
run A 0 route show --net tcp9 --gateway 127.0.7.20@tcp
[[ $OUT == $'route:\n-     net: tcp9\n      gateway: 127.0.7.20@tcp' ]] ||
	fail "route show --net --gateway: '$OUT'"
run A 0 route show --net tcp8
[[ -z $OUT ]] || fail "route show of a net without routes printed something"
run A 234 route add --net tcp9 --gateway 127.0.7.20@tcp
has err "errno: -17"
has err 'descr: ! "Route already exists or the specified network is local"'
run A 234 route add --net tcp9 --gateway 127.0.7.20@tcp1
has err "errno: -113"
run A 234 route add --net tcp9
has out "missing mandatory parameters:'gateway'"
run A 234 route add --net tcp8 --gateway 127.0.7.20@tcp --health_sensitivity 2
has err "errno: -95"
has err "--health_sensitivity is not supported by ulnet"
run A 0 export --backup
has out "route:"
run A 0 route del --net tcp9 --gateway 127.0.7.[20-21]@tcp
run A 0 route show
[[ -z $OUT ]] || fail "route show after route del printed something"
run A 234 route del --net tcp9 --gateway 127.0.7.20@tcp
has err "errno: -2"
has err 'descr: ! "failed to delete route"'
printf 'route:\n  - net: tcp9\n    gateway: 127.0.7.20@tcp\n    hop: 3\n' >"$T/route.yaml"
run A 0 import "$T/route.yaml"
run A 0 route show -v
has out "      hop: 3"
run A 0 import --del "$T/route.yaml"
run A 0 route show
[[ -z $OUT ]] || fail "import --del left the route"
printf 'route:\n  - net: tcp9\n    gateway: 127.0.7.20@tcp\n    weight: 3\n' >"$T/route2.yaml"
run A 234 import "$T/route2.yaml"
has err "unknown route key 'weight'"

# --- set routing / set *_buffers / routing show, lnetctl's texts and exit codes ---
# on a node of its own (R): it stays in the stopping phase for 110 s
start R || fail "ulnetd R did not start"
run R 0 routing show
[[ -z $OUT && -z $ERR ]] || fail "routing show before set routing 1 printed something"
run R 0 set tiny_buffers 100
[[ -z $OUT && -z $ERR ]] || fail "set tiny_buffers printed something"
run R 0 set routing 1
[[ -z $OUT && -z $ERR ]] || fail "set routing 1 printed something"
run R 0 routing show
[[ $OUT == "routing:"$'\n'"    - cpt[0]:"$'\n'* ]] || fail "routing show: '$OUT'"
[[ $OUT == *$'\n    - enable: 3\nbuffers:\n    tiny: 100\n    small: 16384\n    large: 1024' ]] ||
	fail "routing show after set routing 1: '$OUT'"
run R 0 export --backup
[[ $OUT == *$'routing:\n    enable: 3\nbuffers:\n    tiny: 100\n'*$'\nglobal:\n'* ]] ||
	fail "export --backup lacks routing: and buffers: before global: '$OUT'"
run R 255 set routing 2
[[ $ERR == $'parser:\n    - set:\n          errno: -1\n          descr: cannot parse routing value.\n                 must be 0 for disable or 1 for enable' ]] ||
	fail "set routing 2: '$ERR'"
run R 255 set large_buffers foo
has err "descr: cannot parse large_buffers value"
run R 222 set small_buffers -2
has err "errno: -34"
has err 'descr: "tiny, small and large must be >= 0"'
run R 0 set routing 0
[[ -z $OUT && -z $ERR ]] || fail "set routing 0 printed something"
run R 240 set routing 1
[[ $ERR == $'add:\n    - routing:\n          errno: -16\n          descr: "cannot enable routing Device or resource busy"' ]] ||
	fail "set routing 1 while stopping: '$ERR'"
run R 0 routing show
has out "    - enable: 2"
printf 'buffers:\n  tiny: 200\nrouting:\n  enable: 1\n  bogus: 1\n' >"$T/routing.yaml"
run R 234 import "$T/routing.yaml"
has err "unknown routing key 'bogus'"
kill -TERM "$PID_R"; wait "$PID_R"

# --- not supported by ulnet: each a clean -EOPNOTSUPP (-95), exit 234 -----------
for cmd in "peer add --prim_nid 127.0.0.70@tcp --ip2nets 127.0.0.[70-71]" \
	   "net add --nid 127.0.7.9@tcp --cpt 0" \
	   "net add --nid 127.0.7.9@tcp --auth-key k" "net add --nid 127.0.7.9@tcp --traffic-class 1"; do
	# shellcheck disable=SC2086
	run A 234 $cmd
	has err "errno: -95"
	has err "not supported by ulnet"
done
# --- peer add --lock_prim / peer del --force (sanity-lnet 26) ----------------------------
run A 0 peer add --prim_nid 127.0.7.70@tcp --nid 127.0.7.71@tcp --lock_prim
run A 0 peer show -v 4 --nid 127.0.7.70@tcp
has out "peer state: 1048585"
run A 0 peer del --prim_nid 127.0.7.70@tcp
run A 0 peer show --nid 127.0.7.70@tcp
has out "primary nid: 127.0.7.70@tcp"
hasnt out "127.0.7.71@tcp"
run A 0 peer del --prim_nid 127.0.7.70@tcp --force
run A 234 peer show --nid 127.0.7.70@tcp
# a udsp rule the kernel would keep and never apply
run A 234 udsp add --rte 127.0.7.12@tcp --priority 4
has err "errno: -95"
has err "not supported by ulnet"
printf 'udsp:\n  - rte: 127.0.7.12@tcp\n' >"$T/udsp.yaml"
run A 234 import "$T/udsp.yaml"
has err "errno: -95"
has err "$T/udsp.yaml:2:5: cannot add udsp: rte without dst is not supported by ulnet"

# --- udsp ------------------------------------------------------------------------------
run A 0 udsp add --src tcp --priority 3
run A 0 udsp add --dst 127.0.7.[50-59]@tcp --prio 2 --idx 0
run A 0 udsp show
[[ $OUT == $'udsp:\n    - idx: 0\n      dst: 127.0.7.[50-59]@tcp\n      action:\n          priority: 2\n    - idx: 1\n      src: tcp\n      action:\n          priority: 3' ]] ||
	fail "udsp show: '$OUT'"
run A 0 net show --net tcp -v 4
has out "net priority: 3"
run A 0 export --backup
has out "    - idx: 1"
run A 114 udsp add --src tcp --priority 3
has err "cannot add udsp: Operation already in progress"
run A 0 udsp del --all
printf 'udsp:\n  - src: tcp\n    action:\n      priority: 4\n' >"$T/udsp.yaml"
run A 0 import "$T/udsp.yaml"
run A 0 net show --net tcp -v 4
has out "net priority: 4"
run A 0 import --del "$T/udsp.yaml"
run A 0 udsp show
[[ -z $OUT ]] || fail "udsp show after import --del: '$OUT'"

# --- net set / peer set ------------------------------------------------------------
# (recovery pings would raise a lowered NI health back between two commands)
run A 0 set recovery_interval 600
run A 0 net set --nid 127.0.7.2@tcp --health 0
run A 0 net show --net tcp
has out "status: down"
run A 0 debug recovery --local
has out "Local NI recovery:"
has out "    nid-0: 127.0.7.2@tcp"
run A 0 net set --all --health 1000
run A 0 net show -v 2 --net tcp
has out "status: up"
has out "health value: 1000"
run A 0 net set --net tcp --health 700
run A 0 net show -v 2 --net tcp
has out "health value: 700"
run A 0 net set --nid 127.0.7.2@tcp --health 1000 --conns-per-peer 3
run A 0 net show -v --net tcp
has out "conns_per_peer: 3"
run A 0 net set --net tcp --lnd-timeout 33
run A 0 net show -v --net tcp
has out "timeout: 33"
# 0: the global lnd_timeout ((transaction_timeout - 1) / (retry_count + 1)),
# following it when it changes (the kernel's sock_timeout=0); global show
# takes -v, as lnetctl's does (sanity-lnet 241)
run A 0 net set --net tcp --lnd-timeout 0
run A 0 global show -v
lto=$(sed -n 's/^ *lnd_timeout: //p' "$T/out")
tto=$(sed -n 's/^ *transaction_timeout: //p' "$T/out")
rcn=$(sed -n 's/^ *retry_count: //p' "$T/out")
[[ $lto == $(((tto - 1) / (rcn + 1))) ]] || fail "lnd_timeout $lto, not ($tto - 1) / ($rcn + 1)"
run A 0 net show -v --net tcp
has out "timeout: $lto"
run A 0 set transaction_timeout $((tto + 4 * (rcn + 1)))
run A 0 net show -v --net tcp
has out "timeout: $((lto + 4))"
run A 0 set transaction_timeout "$tto"
run A 234 net set --health 1001
has err "Invalid health value '1001'"
run A 234 net set --health lots
has err "Invalid health value 'lots'"
run A 255 net set --conns-per-peer 128
has err "invalid conns-per-peer value (valid range 0-127)"
run A 234 net set --lnd-timeout 5
has err "Specified --lnd-timeout without --net option"
run A 234 net set --net tcp --lnd-timeout -1
has err "Invalid LND timeout value '-1', must be >= 0"
run A 234 net set --net nosuch --health 5
has err "Invalid network type: nosuch"
run A 234 net set --nid 127.0.7.99@tcp --health 5
has err "errno: -2"
run A 234 net set --net lo --lnd-timeout 5
has err "does not accept a LND timeout"
run A 234 net set --all --nid 127.0.7.2@tcp --health 5
run A 0 peer add --prim_nid 127.0.7.52@tcp
run A 0 peer set --nid 127.0.7.52@tcp --health 400
run A 0 peer show -v 2 --nid 127.0.7.52@tcp
has out "health value: 400"
# a peer NI never heard from is not pinged (the kernel's recovery queue
# takes it only with a last_alive); our own NID, pinged above, is
run A 0 debug recovery --peer
hasnt out "127.0.7.52@tcp"
run A 0 peer set --nid 127.0.7.2@tcp --health 300
run A 0 debug recovery --peer
has out "Peer NI recovery:"
has out "    nid-0: 127.0.7.2@tcp"
run A 0 peer set --nid 127.0.7.2@tcp --health 1000
run A 0 peer set --all --health 1000
run A 0 peer show -v 2 --nid 127.0.7.52@tcp
has out "health value: 1000"
run A 0 peer set --nid 127.0.7.52@tcp --state 9
run A 0 peer show -v 3 --nid 127.0.7.52@tcp
has out "peer state: 9"
run A 234 peer set --nid 127.0.7.53@tcp --state 9
has err "invalid peer state param"
run A 234 peer set --health 5
has err "missing mandatory parameter"
run A 234 peer set --nid 127.0.7.52@tcp --health -3
has err "Invalid health value '-3'"
run A 0 peer del --prim_nid 127.0.7.52@tcp

# --- node B: ping / discover between daemons -------------------------------------
start B || fail "ulnetd B did not start"
run B 0 net add --nid 127.0.7.3@tcp
run A 0 ping 127.0.7.3@tcp
has out "primary nid: 127.0.7.3@tcp"
run A 0 discover 127.0.7.3@tcp
has out "127.0.7.3@tcp"
run A 0 peer show -v 2
has out "primary nid: 127.0.7.3@tcp"

# --- every counter moves after traffic (a ping and a discovery above) --------------
run A 0 stats reset
run A 0 ping 127.0.7.3@tcp
run A 0 discover --force 127.0.7.3@tcp
run A 0 stats show
for k in msgs_max send_count recv_count send_length recv_length; do moved $k; done
run A 0 net show -v 2 --net tcp
for k in send_count recv_count put_egress_samples put_egress_avg_nsec get_rtt_samples \
	 get_rtt_min_nsec put_ack_samples put_ack_max_nsec; do moved $k; done
moved put 1; moved get 1          # sent_stats
moved reply 2; moved ack 2   # received_stats (counted since the reset: no PUT came in)
has out "health value: 1000"
run A 0 peer show -v 2 --nid 127.0.7.3@tcp
for k in send_count recv_count put_egress_samples put_egress_min_nsec get_rtt_samples \
	 get_rtt_avg_nsec put_ack_samples put_ack_avg_nsec; do moved $k; done
moved put 1; moved get 1; moved reply 2; moved ack 2
has out "health value: 1000"
mx=$(nth max_ni_tx_credits 1); mn=$(nth min_tx_credits 1); av=$(nth available_tx_credits 1)
CHECKS=$((CHECKS + 1))
[[ $mn -lt $mx && $av == "$mx" ]] || fail "peer credits: max $mx min $mn available $av"
run A 0 stats show
# stats reset clears the NIs' and peer NIs' counts and latencies too (the
# kernel's lnet_iface_stats_reset(); sanity-lnet 475), not their health
run A 0 stats reset
for v in "net show -v 2 --net tcp" "peer show -v 2 --nid 127.0.7.3@tcp"; do
	run A 0 $v
	for k in send_count recv_count get_rtt_samples put_ack_samples; do
		CHECKS=$((CHECKS + 1))
		[[ $(nth $k 1) == 0 ]] || fail "'$v' after stats reset: $k is $(nth $k 1)"
	done
	has out "health value: 1000"
done
# B goes away: ping now fails cleanly and A stays up
kill -TERM "$PID_B"; wait "$PID_B" 2>/dev/null
run A 255 ping --timeout 2 127.0.7.3@tcp
has out "failed to ping 127.0.7.3@tcp"

# --- import / export ---------------------------------------------------------------
printf 'net:\n  - net type: tcp\n    local NI(s): [\n' >"$T/bad.yaml"
run A 234 import "$T/bad.yaml"
has err "$T/bad.yaml:"
printf 'bogus_key: 1\n' >"$T/bad2.yaml"
run A 234 import "$T/bad2.yaml"
has err "$T/bad2.yaml:1:1: invalid key 'bogus_key'"
has err "errno: -95"
printf 'global:\n    retry_count: many\n' >"$T/bad3.yaml"
run A 234 import "$T/bad3.yaml"
has err "$T/bad3.yaml:2:18: invalid value 'many' for key 'retry_count'"
printf 'global:\n    discovery:\n' >"$T/bad4.yaml"
run A 234 import "$T/bad4.yaml"
has err "no value specified for key 'discovery'"
printf 'global:\n    bogus: 1\n' >"$T/bad5.yaml"
run A 234 import "$T/bad5.yaml"
has err "$T/bad5.yaml:2:5: invalid key 'bogus'"
has err "errno: -95"
# import --exec of ping:/discover: in the kernel's form (nids as index:
# NID, timeout in ms): sanity-lnet 350; an unknown key is refused
printf 'ping:\n  nids:\n    0: 127.0.7.2@tcp\n  timeout: 2000\n' >"$T/p.yaml"
run A 0 import -e "$T/p.yaml"
has out "primary nid: 127.0.7.2@tcp"
printf 'discover:\n  nids:\n    0: 127.0.7.2@tcp\n  bogus: 1\n' >"$T/d.yaml"
run A 234 import -e "$T/d.yaml"
has err "'bogus' in 'discover' is not supported by ulnet"
# numa: range: sets numa_range (sanity-lnet 51); another key is refused
printf 'numa:\n    range: 3\n' >"$T/n.yaml"
run A 0 import "$T/n.yaml"
run A 0 global show
has out "numa_range: 3"
printf 'numa:\n    range: 0\n    bogus: 1\n' >"$T/n2.yaml"
run A 234 import "$T/n2.yaml"
has err "'bogus' in 'numa' is not supported by ulnet"
printf 'ping:\n  timeout: 2000\n' >"$T/p2.yaml"
run A 234 import -e "$T/p2.yaml"
has err "'ping' names no NID"
run A 234 import "$T/nosuch.yaml"
has err "cannot open '$T/nosuch.yaml'"
run A 0 import --show "$T/bad2.yaml"
has out "bogus_key: 1"

# --- limits and option checks --------------------------------------------------------
# every command path refuses an unknown option (exit 234, named), runs nothing
for cmd in "lnet configure" "lnet unconfigure" "net add --nid 127.0.7.8@tcp" "net del --net tcp9" \
	   "net show" "net set --all --health 1000" "peer add --prim_nid 127.0.7.61@tcp" \
	   "peer del --prim_nid 127.0.7.61@tcp" "peer show" "peer list" "peer set --all --health 1000" \
	   "ping 127.0.7.2@tcp" "discover 127.0.7.2@tcp" "stats show" "stats reset" "global show" \
	   "export" "route show" "routing show" "udsp show" "debug peer --nid 127.0.7.2@tcp" \
	   "debug recovery" "set retry_count 3" "set routing 0" "set large_buffers 10"; do
	# shellcheck disable=SC2086
	run A 234 $cmd --bogus
	has err "unrecognized option '--bogus'"
done
run A 234 import --bogus "$T/bad2.yaml"
has err "unrecognized option '--bogus'"
run A 0 net show
has out "nid: 127.0.7.2@tcp"
run A 234 peer show --nid 127.0.7.61@tcp
run A 234 stats show extra
has err "unexpected argument 'extra'"
# an empty NID list (lnetctl's words), never "no NIDs"
run A 234 peer add --prim_nid 127.0.7.61@tcp --nid ,,,,
has out "can't parse nidrange"
has err "Unable to parse nidlist: no valid NIDs in string"
run A 234 peer show --nid 127.0.7.61@tcp
# the request limits are named, not "Argument list too long"
run A 255 peer show --nid "$(head -c 5000 /dev/zero | tr '\0' 1)"
has err "is 5000 bytes, over the limit of 4096 bytes per argument"
# shellcheck disable=SC2046
run A 255 peer show $(seq 127)
has err "129 arguments, over the limit of 128 arguments"
head -c 10000000 /dev/zero | tr '\0' ' ' >"$T/big.yaml"
run A 234 import "$T/big.yaml"
has err "errno: -27"
has err "is larger than 4194304 bytes (4 MiB), the limit of an import file"
# a hostile YAML (100k nested "[", 200 KB) is refused at once, naming the
# limit, and never holds up the control plane: net show keeps answering
{ head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; } >"$T/deep.yaml"
t0=$(date +%s%N)
"$CTL" --ctl "$T/A.sock" import "$T/deep.yaml" >"$T/dout" 2>"$T/derr" &
IPID=$!
for _ in $(seq 20); do
	CHECKS=$((CHECKS + 1))
	t1=$(date +%s%N)
	timeout 5 "$CTL" --ctl "$T/A.sock" net show >/dev/null 2>&1 || fail "net show failed during a hostile import"
	ms=$((($(date +%s%N) - t1) / 1000000))
	((ms < 1000)) || fail "net show took $ms ms during a hostile import"
done
CHECKS=$((CHECKS + 1))
wait "$IPID"; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[[ $rc == 234 ]] || fail "hostile import exited $rc, want 234"
grep -qF "$T/deep.yaml:1:65: nesting deeper than 64 levels" "$T/derr" || fail "hostile import: $(cat "$T/derr")"
((ms < 5000)) || fail "hostile import took $ms ms"
alive A
# ulnetd --config: the same bounds, a clear error, exit 1
for f in deep big; do
	CHECKS=$((CHECKS + 1))
	timeout 20 "$ULNETD" --ctl "$T/L.sock" --config "$T/$f.yaml" >"$T/L.log" 2>&1
	rc=$?
	[[ $rc == 1 ]] || fail "ulnetd --config $f.yaml exited $rc, want 1"
	if [[ $f == deep ]]; then want="nesting deeper than 64 levels"; else want="larger than 4194304 bytes (4 MiB)"; fi
	grep -qF "$want" "$T/L.log" || fail "ulnetd --config $f.yaml: $(cat "$T/L.log")"
done
rm -f "$T/big.yaml"

run A 0 peer add --prim_nid 127.0.7.60@tcp
# a router in its start-up phase: routing: and buffers: round trip too
run A 0 set tiny_buffers 100
run A 0 set routing 1
run A 0 export "$T/a-full.yaml"
grep -qF -- "- enable: 3" "$T/a-full.yaml" || fail "export file lacks routing:"
grep -qF "nid: 127.0.7.2@tcp" "$T/a-full.yaml" || fail "export file lacks the NI"
run A 0 export --backup "$T/a-backup.yaml"
kill -TERM "$PID_A"; wait "$PID_A"; rc=$?
[[ $rc == 0 ]] || fail "ulnetd A exited $rc on SIGTERM"
[[ ! -e $T/A.sock ]] || fail "SIGTERM left the socket file"

start C || fail "ulnetd C did not start"
run C 0 import "$T/a-full.yaml"
run C 0 export --backup "$T/c-backup.yaml"
diff -u "$T/a-backup.yaml" "$T/c-backup.yaml" || fail "export -> import -> export differs"
run C 0 import --del "$T/a-full.yaml"
run C 0 net show
grep -qF "127.0.7.2@tcp" "$T/out" && fail "import --del left the NI"
kill -TERM "$PID_C"; wait "$PID_C"

# --config at start: the backup file configures a fresh node
start D --config "$T/a-backup.yaml" || fail "ulnetd D --config did not start"
run D 0 export --backup "$T/d-backup.yaml"
diff -u "$T/a-backup.yaml" "$T/d-backup.yaml" || fail "--config gave another configuration"

# lnet unconfigure / configure [--all]: LNet down answers like the kernel
run D 0 set retry_count 1
run D 0 lnet unconfigure
run D 0 lnet unconfigure
run D 156 net show
has err "errno: -100"
has err 'descr: ! "LNet stack down"'
run D 156 peer show
has err "Network is down"
run D 156 stats show
has err "cannot get lnet statistics: Network is down"
run D 234 net add --nid 127.0.7.2@tcp
has err "LNet stack down"
run D 234 ping 127.0.7.3@tcp
has err "errno: -100"
run D 0 global show
has out "    retry_count: 1"
run D 0 lnet configure
run D 0 net show
has out "nid: 0@lo"
grep -qF "127.0.7.2@tcp" "$T/out" && fail "lnet configure without --all brought up the --config nets"
run D 0 global show
has out "    retry_count: 1"
run D 0 lnet configure --all
run D 0 lnet unconfigure
run D 0 lnet configure --all --large
run D 0 export --backup "$T/d2-backup.yaml"
nets_of() { awk '/^(peer|global):/ { exit } { print }' "$1"; }  # the net: section
nets_of "$T/a-backup.yaml" >"$T/a-nets.yaml"; nets_of "$T/d2-backup.yaml" >"$T/d2-nets.yaml"
CHECKS=$((CHECKS + 1))
grep -qF "net type: tcp" "$T/d2-nets.yaml" || fail "lnet configure --all: no tcp net"
diff -u "$T/a-nets.yaml" "$T/d2-nets.yaml" || fail "lnet configure --all did not bring the --config nets back"
kill -TERM "$PID_D"; wait "$PID_D"

# SIGTERM while a ping blocks: a peer that accepts TCP but never answers
# (stopped), the daemon still exits promptly and the client hears why
start F || fail "ulnetd F did not start"
start G || fail "ulnetd G did not start"
run F 0 net add --nid 127.0.7.2@tcp
run G 0 net add --nid 127.0.7.3@tcp
kill -STOP "$PID_G"
"$CTL" --ctl "$T/F.sock" ping --timeout 60 127.0.7.3@tcp >"$T/pout" 2>"$T/perr" &
PCLI=$!
sleep 1
t0=$SECONDS
kill -TERM "$PID_F"; wait "$PID_F"; rc=$?
CHECKS=$((CHECKS + 1))
(( SECONDS - t0 <= 10 )) || fail "ulnetd F took $((SECONDS - t0)) s to stop during a ping"
[[ $rc == 0 ]] || fail "ulnetd F exited $rc on SIGTERM during a ping"
wait "$PCLI"; prc=$?
[[ $prc == 255 ]] || fail "blocked ping client exited $prc"
grep -qF "abandoned" "$T/perr" || fail "blocked ping client was not told: $(cat "$T/perr")"
kill -CONT "$PID_G"; kill -TERM "$PID_G"; wait "$PID_G"

# malformed --config: a clear error with line and column, non-zero exit
printf 'net:\n  - net type: tcp\n   bad indent: [\n' >"$T/badcfg.yaml"
"$ULNETD" --ctl "$T/E.sock" --config "$T/badcfg.yaml" >"$T/E.log" 2>&1
rc=$?
[[ $rc != 0 ]] || fail "ulnetd accepted a malformed --config"
grep -qF "$T/badcfg.yaml:" "$T/E.log" || fail "no file:line:col in ulnetd error: $(cat "$T/E.log")"
[[ ! -e $T/E.sock ]] || fail "failed start left a socket"
"$ULNETD" --bogus >/dev/null 2>&1 && fail "ulnetd accepted --bogus"

# --accept-backlog: listen() backlog of the tcp NIs that listen (the lnet
# module parameter accept_backlog); not applied to an NI with no listener
for bad in "x" "0" "-1" "65536"; do
	CHECKS=$((CHECKS + 1))
	"$ULNETD" --ctl "$T/K0.sock" --accept-backlog "$bad" >"$T/K0.log" 2>&1
	rc=$?
	[[ $rc == 2 ]] && grep -qF "bad value for --accept-backlog" "$T/K0.log" ||
		fail "ulnetd --accept-backlog $bad exited $rc, want 2: $(cat "$T/K0.log")"
done
grep -qF -- "--accept-backlog" <("$ULNETD" --help) || fail "ulnetd --help lacks --accept-backlog"
start K --accept-backlog 32 || fail "ulnetd --accept-backlog 32 did not start"
run K 0 net add --nid 127.0.7.6@tcp
run K 0 net add --nid 127.0.7.7@tcp --accept none
if command -v ss >/dev/null 2>&1; then
	CHECKS=$((CHECKS + 1))
	# a listener's Send-Q is its backlog
	bl=$(ss -ltnH "sport = :$PORT" 2>/dev/null | awk '$4 == "127.0.7.6:'"$PORT"'" { print $3 }')
	[[ $bl == 32 ]] || fail "--accept-backlog 32: the listener's backlog is '$bl'"
fi
kill -TERM "$PID_K" 2>/dev/null

# --selftest: the node answers an lst console (SRPC), across an unconfigure
for bad in "--session-timeout x" "--session-timeout -1" "--session-timeout 86401" "--session-timeout"; do
	CHECKS=$((CHECKS + 1))
	# shellcheck disable=SC2086
	"$ULNETD" --ctl "$T/S0.sock" --selftest $bad >"$T/S0.log" 2>&1
	rc=$?
	[[ $rc == 2 ]] || fail "ulnetd --selftest $bad exited $rc, want 2"
	[[ $bad == --session-timeout ]] || grep -qF "bad value for --session-timeout" "$T/S0.log" ||
		fail "ulnetd --selftest $bad: $(cat "$T/S0.log")"
done
CHECKS=$((CHECKS + 1))
"$ULNETD" --ctl "$T/S0.sock" --session-timeout 5 >"$T/S0.log" 2>&1
[[ $? == 2 ]] && grep -qF -- "--session-timeout needs --selftest" "$T/S0.log" ||
	fail "--session-timeout without --selftest: $(cat "$T/S0.log")"
grep -qF -- "--selftest" <("$ULNETD" --help) || fail "ulnetd --help lacks --selftest"
start S --selftest --session-timeout 30 || fail "ulnetd --selftest did not start"
run S 0 net add --nid 127.0.7.4@tcp
srpc() {
	CHECKS=$((CHECKS + 1))
	timeout 60 "$BIN/prog_srpc_console" 127.0.7.5@tcp "$PORT" 127.0.7.4@tcp >"$T/srpc.out" 2>&1
	local rc=$?
	[[ $rc == 0 ]] && grep -qF "srpc console: 0 failures" "$T/srpc.out" ||
		fail "SRPC console against ulnetd --selftest ($1): exit $rc: $(cat "$T/srpc.out")"
	alive S
}
srpc "first"
run S 0 lnet unconfigure
run S 0 lnet configure
run S 0 net add --nid 127.0.7.4@tcp
srpc "after lnet unconfigure/configure"
# without --selftest nothing answers on portal 51
start N || fail "ulnetd N did not start"
run N 0 net add --nid 127.0.7.6@tcp
CHECKS=$((CHECKS + 1))
SRPC_CONSOLE_WAIT_MS=3000 timeout 60 "$BIN/prog_srpc_console" 127.0.7.5@tcp "$PORT" 127.0.7.6@tcp >"$T/srpc.out" 2>&1 &&
	fail "a node without --selftest answered SRPC"
grep -qF "make session: FAILED" "$T/srpc.out" || fail "no SRPC failure reported: $(cat "$T/srpc.out")"

echo "$CHECKS checks, $FAILS failures"
[[ $FAILS == 0 ]]
