#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_health_recovery.sh - the local and peer NI recovery checks of Lustre's
# sanity-lnet (210, 211, 235), played with ulnetctl: the suite drives its
# fault rules through `lctl net_drop_add`, which the sanity-lnet harness
# maps to nothing, so here they are `ulnetctl fault drop add` with the same
# options. One daemon with two nets on one address (127.0.13.1@tcp and
# @tcp1: one shared listener), a high acceptor port, unprivileged.
#  - 235: GETs from tcp's NID to itself fail (local_timeout); its health set
#    to 100, the recovery pings (from that NI: the only one on its net)
#    fail and take it to 0, status down; tcp1 stays up. Rules gone, health
#    900: recovery pings bring it to 1000, status up.
#  - 210: tcp's NI at health 0 under rules failing every GET (local_error)
#    and dropping the rest: its recovery ping count grows with the
#    kernel's back-off (2 pings within 4 s, 3 within 8 s) and it stays in
#    `debug recovery --local`.
#  - 211: our own peer NI (discovered) at health 0 with recovery_limit 10:
#    in `debug recovery --peer`, then aged out within 20 s, ping_count
#    back to 0; with recovery_limit 0 and health 500 it comes back to 1000
#    and leaves the queue.
# Every wait is bounded.
set -u

TAG=healthrec
. "$(dirname "$0")/../support/ctl_lib.sh"

PORT=$((33000 + ($$ % 2000) * 2))
N1=127.0.13.1@tcp
N2=127.0.13.1@tcp1

has() { # has TEXT: in the last stdout
	CHECKS=$((CHECKS + 1))
	grep -qF -- "$1" "$T/out" || fail "stdout of '$LAST' lacks '$1': $OUT"
}

# status NID: the NI's status in `net show`
status() {
	"$CTL" --ctl "$T/A.sock" net show | awk -v n="$1" '$NF == n { f = 1 } f && /status:/ { print $NF; exit }'
}

# field CMD... -- NID KEY: KEY's value in the block of NID in CMD's output
field() {
	local args=() nid key
	while [[ $1 != -- ]]; do args+=("$1"); shift; done
	nid=$2 key=$3
	"$CTL" --ctl "$T/A.sock" "${args[@]}" |
		awk -v n="$nid" -v k="$key:" '$NF == n && /nid:/ { f = 1 } f && $1 == k { print $2; exit }'
}

# wait_for SECS WANT CMD...: until CMD prints WANT (bounded)
wait_for() {
	local secs=$1 want=$2 got=""; shift 2
	for _ in $(seq $((secs * 10))); do
		got=$("$@")
		[[ $got == "$want" ]] && return 0
		sleep 0.1
	done
	fail "waited ${secs}s for '$*' to be '$want', last '$got'"
	return 1
}

in_recovery() { # in_recovery -l|-p NID: 1 or 0
	"$CTL" --ctl "$T/A.sock" debug recovery "$1" | grep -cw "nid-0: $2"
}

ul_daemon A --accept-port "$PORT" --accept all || { echo "FAIL: ulnetd did not start"; exit 1; }
run A 0 net add --nid $N1
run A 0 net add --nid $N2
run A 0 discover $N1

# --- 235 ------------------------------------------------------------------------------
wait_for 5 up status $N1
run A 0 fault drop add -s $N1 -d $N1 -m GET -r 1 -e local_timeout
run A 0 net set --health 100 --nid $N1
wait_for 30 down status $N1
[[ $(status $N2) == up ]] || fail "235: $N2 went down with $N1"
run A 0 fault drop del --all
run A 0 net set --health 900 --nid $N1
wait_for 30 up status $N1
run A 0 net show -v 2 --net tcp
has "health value: 1000"

# --- 210 ------------------------------------------------------------------------------
run A 0 set max_recovery_ping_interval 4
run A 0 fault drop add -s '*@tcp' -d '*@tcp' -m GET -r 1 -e local_error
run A 0 fault drop add -s '*@tcp1' -d '*@tcp1' -m GET -r 1 -e local_error
run A 0 fault drop add -s '*@tcp' -d '*@tcp' -r 1
run A 0 fault drop add -s '*@tcp1' -d '*@tcp1' -r 1
run A 0 net set --health 0 --nid $N1
# pings at 0 s, then min(2^n, 4) s apart: 2 by ~3 s, 4 by ~11 s
wait_for 10 2 field net show -v 2 -- $N1 ping_count
[[ $(in_recovery -l $N1) == 1 ]] || fail "210: $N1 not in the local recovery queue"
wait_for 14 4 field net show -v 2 -- $N1 ping_count
[[ $(in_recovery -l $N1) == 1 ]] || fail "210: $N1 left the local recovery queue"
run A 0 fault drop del --all
run A 0 net set --health 1000 --nid $N1

# --- 211 ------------------------------------------------------------------------------
# (heard from just now, as after the suite's reinit and discover: 210 kept
# every message on tcp from arriving for longer than recovery_limit)
# (a discovery started while 210's rules dropped everything may still be
# ending with their timeout: a discover joins it; the next one is fresh)
for _ in 1 2 3; do
	"$CTL" --ctl "$T/A.sock" discover --force $N1 >/dev/null 2>&1 && break
	sleep 1
done
run A 0 discover --force $N1
run A 0 set recovery_limit 10
run A 0 fault drop add -s '*@tcp' -d '*@tcp' -m GET -r 1 -e remote_error
run A 0 fault drop add -s '*@tcp' -d '*@tcp' -r 1
run A 0 peer set --nid $N1 --health 0
wait_for 5 1 in_recovery -p $N1
wait_for 25 0 in_recovery -p $N1
wait_for 5 0 field peer show -v 2 --nid $N1 -- $N1 ping_count
run A 0 fault drop del --all
run A 0 set recovery_limit 0
run A 0 peer set --nid $N1 --health 500
wait_for 5 1 in_recovery -p $N1
wait_for 25 0 in_recovery -p $N1
run A 0 peer show -v 2 --nid $N1
has "health value: 1000"

echo "test_health_recovery: $CHECKS checks, $FAILS failed"
[[ $FAILS == 0 ]]
