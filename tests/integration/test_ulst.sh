#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_ulst.sh - ulst end to end on 127.0.3.x with a high acceptor port:
#   serve (two targets, one with the ULST_TEST_CORRUPT hook), ping, brw
#   read/write of several sizes with --check simple/full, two clients at
#   once, data errors detected on both sides, unreachable targets, the
#   counters serve prints on SIGTERM/SIGINT, serve as a test server of an
#   lst console (prog_srpc_console: SRPC session, ping, brw, stat; another
#   serve as its test client), and bad
#   arguments: each with its exit code and message; a target killed under a
#   brw (it ends at once), and a brw --keep-going across a kill and a
#   restart of its target (it goes on), a brw stopped by SIGTERM under 1 MiB
#   GETs (its summary, exit 1; the target serves on), and by SIGINT while it
#   waits for a target that does not answer. Every command runs under
#   timeout(1).
#
# If this ulnet does not implement LNet ping yet (ENOSYS), everything else is
# checked and the test then exits 77 saying so.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ULNET_BIN=${ULNET_BIN:-$HERE/../../build/bin}
ULST=$ULNET_BIN/ulst
PORT=$((25000 + $$ % 4000))
SRV=127.0.3.2@tcp          # the target
BAD=127.0.3.5@tcp          # a target whose GET source is corrupt
CL1=127.0.3.3@tcp          # clients
CL2=127.0.3.4@tcp
NOBODY=127.0.3.9@tcp       # nothing listens there
CON=127.0.3.7@tcp          # an lst console (prog_srpc_console)
DIE=127.0.3.8@tcp          # a target killed (-9) and restarted
MR1=127.0.3.20@tcp         # a Multi-Rail target (two NIs) ...
MR2=127.0.3.21@tcp
CM1=127.0.3.30@tcp         # ... and client
CM2=127.0.3.31@tcp

[ -x "$ULST" ] || { echo "FAIL: $ULST not built"; exit 1; }

WORK=$(mktemp -d /tmp/ulnet-ulst.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

failures=0
checks=0
pass() { checks=$((checks + 1)); echo "ok   $*"; }
bad() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $*"; }

# expect RC 'substring' [more substrings...] -- ulst args...
expect() {
    local rc=$1 out got; shift
    local subs=()
    while [ "$1" != -- ]; do subs+=("$1"); shift; done
    shift
    out=$(timeout 60 "$ULST" "$@" 2>&1)
    got=$?
    local desc="ulst $*"
    if [ "$got" != "$rc" ]; then
        bad "$desc: exit $got, expected $rc"; echo "$out" | sed 's/^/     | /' | tail -15; return 1
    fi
    for s in "${subs[@]}"; do
        if ! grep -qF -- "$s" <<<"$out"; then
            bad "$desc: no '$s' in the output"; echo "$out" | sed 's/^/     | /' | tail -15; return 1
        fi
    done
    pass "$desc -> $rc"
    LAST_OUT=$out
    return 0
}

# start_serve NID LOGFILE [env...] [-- node options...]: background serve,
# wait for "ready" (10 s)
start_serve() {
    local nid=$1 log=$2 i envs=(); shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    : >"$log"
    env "${envs[@]}" timeout 120 "$ULST" --nid "$nid" "$@" --accept-port "$PORT" --accept all serve \
        --duration 100 >"$log" 2>&1 &
    PIDS+=($!)
    for i in $(seq 100); do
        grep -q " ready on portal" "$log" && return 0
        kill -0 "${PIDS[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    cat "$log"
    echo "FAIL: ulst serve on $nid did not come up"
    exit 1
}

# stop_serve PID SIGNAL LOGFILE: signal it, wait (10 s) for a clean exit
stop_serve() {
    local pid=$1 sig=$2 log=$3 i st
    kill "-$sig" "$pid"
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        bad "serve did not exit within 10 s of SIG$sig"; return 1
    fi
    wait "$pid"; st=$?
    [ "$st" = 0 ] && pass "serve exits 0 on SIG$sig" || bad "serve exited $st on SIG$sig"
}

start_serve "$SRV" "$WORK/serve.log"
SRV_PID=${PIDS[-1]}
start_serve "$BAD" "$WORK/bad.log" ULST_TEST_CORRUPT=1
BAD_PID=${PIDS[-1]}
C1=(--nid "$CL1" --accept-port "$PORT" --accept all)
C2=(--nid "$CL2" --accept-port "$PORT" --accept all)

# --- ping -----------------------------------------------------------------------
ping_enosys=0
out=$(timeout 60 "$ULST" "${C1[@]}" ping "$SRV,$BAD" --count 3 --timeout 5 2>&1); rc=$?
if grep -q "Function not implemented" <<<"$out"; then
    ping_enosys=1
    echo "note ulst ping: ulnet_ping is not implemented (ENOSYS): $(head -1 <<<"$out")"
    [ $rc = 1 ] && pass "ping without ulnet_ping exits 1" || bad "ping without ulnet_ping exited $rc"
else
    expect 0 "$SRV: 3/3 replies, rtt min/avg/max = " "$BAD: 3/3 replies" "NIDs $SRV" -- \
        "${C1[@]}" ping "$SRV,$BAD" --count 3 --timeout 5
fi
expect 1 "$NOBODY: 0/1 replies" -- "${C1[@]}" ping "$NOBODY" --count 1 --timeout 2

# --- brw ------------------------------------------------------------------------
expect 0 "[LNet Rates of $CL1]" "[LNet Bandwidth of $CL1]" "[R] Avg:" "[W] Avg:" "MiB/s" \
    "50 of 50 done" "check simple by the target: 0 errors" -- \
    "${C1[@]}" brw write "$SRV" --size 1m --count 50 --concurrency 4 --check simple --timeout 30
expect 0 "10 of 10 done" "check full by the target: 0 errors" -- \
    "${C1[@]}" brw write "$SRV" --size 1 --count 10 --check full --timeout 30
expect 0 "[LNet Rates of $CL1]" "500 of 500 done" "check full: 0 errors" -- \
    "${C1[@]}" brw read "$SRV" --size 4k --count 500 --concurrency 8 --check full --timeout 30
expect 0 "10 of 10 done" -- "${C1[@]}" brw read "$SRV" --size 0 --count 10 --timeout 30
# Multi-Rail: a client with two NIs against a target with two; the
# target's second NID is learned only by discovery, and both of the
# client's NIs carry traffic (their connections, at debug level)
start_serve "$MR1" "$WORK/mr.log" -- --nid "$MR2"
expect 0 "200 of 200 done" "check full by the target: 0 errors" \
    "$CM1: conn #" "$CM2: conn #" "peer $MR2 (" -- \
    --nid "$CM1" --nid "$CM2" --accept-port "$PORT" --accept all -v -v \
    brw write "$MR1" --size 64k --count 200 --concurrency 8 --check full --timeout 30
stop_serve "${PIDS[-1]}" TERM "$WORK/mr.log"
# two clients reading at once
timeout 60 "$ULST" "${C1[@]}" brw read "$SRV" --size 64k --count 200 --concurrency 16 --check simple \
    --timeout 30 >"$WORK/c1.out" 2>&1 &
c1=$!
timeout 60 "$ULST" "${C2[@]}" brw read "$SRV" --size 64k --count 200 --concurrency 16 --check simple \
    --timeout 30 >"$WORK/c2.out" 2>&1 &
c2=$!
wait $c1; r1=$?
wait $c2; r2=$?
if [ $r1 = 0 ] && [ $r2 = 0 ] && grep -q "200 of 200 done" "$WORK/c1.out" && grep -q "200 of 200 done" "$WORK/c2.out"; then
    pass "two clients brw read at once"
else
    bad "two clients at once: exits $r1 and $r2"; cat "$WORK/c1.out" "$WORK/c2.out" | sed 's/^/     | /'
fi

# data errors are caught: by the client on read, by the target on write
expect 1 "wrong data at byte" "check simple: " -- \
    "${C1[@]}" brw read "$BAD" --size 8k --count 5 --check simple --timeout 30
grep -q "check simple: 5 errors" <<<"${LAST_OUT:-}" && pass "read check counts 5 errors" ||
    bad "read check did not count 5 errors"
out=$(ULST_TEST_CORRUPT=1 timeout 60 "$ULST" "${C1[@]}" brw write "$BAD" --size 8k --count 5 \
    --check full --timeout 30 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "$BAD found wrong data in 5 PUTs" <<<"$out"; then
    pass "write check: the target reports 5 bad PUTs, exit 1"
else
    bad "write check: exit $rc"; echo "$out" | sed 's/^/     | /'
fi

# unreachable / not a serve node
expect 1 "$NOBODY does not answer as a 'ulst serve' node on portal 60" -- \
    "${C1[@]}" brw read "$NOBODY" --count 1 --timeout 5
expect 1 "does not answer as a 'ulst serve' node on portal 61" -- \
    "${C1[@]}" brw write "$SRV" --count 1 --portal 61 --timeout 1

# --- serve is an lst test server ------------------------------------------------------
grep -q "ready on portal 60 .*; lst test server (selftest portals 50-52)" "$WORK/serve.log" &&
    pass "serve's ready line names the selftest agent" || bad "serve's ready line: $(head -1 "$WORK/serve.log")"
# ... and $BAD a test client of it (ping and brw write, 16 RPCs to $SRV)
out=$(timeout 60 "$ULNET_BIN/prog_srpc_console" "$CON" "$PORT" "$SRV" "$BAD" 2>&1); rc=$?
if [ $rc = 0 ] && grep -q "srpc console: 0 failures" <<<"$out" &&
   grep -q "client stat: sent 16, errors 0, brw errors 0, ping errors 0" <<<"$out"; then
    pass "an SRPC console runs a session, ping and brw tests and stat on serve, and another serve as a test client"
else
    bad "SRPC console against serve: exit $rc"; echo "$out" | sed 's/^/     | /'
fi

# --- node setup errors ---------------------------------------------------------------
expect 1 "--accept-port $PORT: already in use" -- --nid "$SRV" --accept-port "$PORT" ping "$CL1"
expect 1 "that address is not on this host" -- --nid 10.255.255.1@tcp --accept-port "$PORT" ping "$SRV"
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
    out=$(timeout 30 setpriv --bounding-set -net_bind_service --inh-caps -net_bind_service \
        "$ULST" --nid 127.0.3.6@tcp --accept-port 988 ping "$SRV" 2>&1); rc=$?
    [ $rc = 1 ] && grep -q "a privileged port needs root" <<<"$out" &&
        pass "privileged port without CAP_NET_BIND_SERVICE -> 1" ||
        { bad "privileged port: exit $rc"; echo "$out" | sed 's/^/     | /'; }
elif [ "$(id -u)" != 0 ]; then
    expect 1 "a privileged port needs root" -- --nid 127.0.3.6@tcp --accept-port 988 ping "$SRV"
else
    echo "note privileged-port case not run: setpriv missing"
fi

# --- bad arguments: exit 2 and a message naming the argument ------------------------
N=(--nid "$CL1" --accept-port "$PORT")
expect 2 "a command is required" --
expect 2 "unknown command 'frob'" -- frob
expect 2 "unknown option '--bogus'" -- --bogus ping "$SRV"
expect 2 "unknown option -x" -- "${N[@]}" ping "$SRV" -x
expect 2 "--nid is required" -- ping "$SRV"
expect 2 "--nid '127.0.3.3@tcp' given twice" -- --nid 127.0.3.3@tcp --nid 127.0.3.3@tcp ping "$SRV"
expect 2 "--nid '127.0.3.15@tcp': at most 4 NIDs" -- --nid 127.0.3.11@tcp --nid 127.0.3.12@tcp \
    --nid 127.0.3.13@tcp --nid 127.0.3.14@tcp --nid 127.0.3.15@tcp ping "$SRV"
expect 2 "--nid '127.0.3.3@foo': not a NID" -- --nid 127.0.3.3@foo ping "$SRV"
expect 2 "--nid '0@lo': only tcp and o2ib NIDs" -- --nid 0@lo ping "$SRV"
expect 2 "--accept-port '0': expected a whole number from 1 to 65535" -- --nid "$CL1" --accept-port 0 ping "$SRV"
expect 2 "--accept-port '70000'" -- --nid "$CL1" --accept-port 70000 ping "$SRV"
expect 2 "--transaction-timeout '2': expected a whole number from 3 to 3600" -- "${N[@]}" --transaction-timeout 2 ping "$SRV"
expect 2 "--accept 'maybe': expected secure, all or none" -- --nid "$CL1" --accept maybe ping "$SRV"
expect 2 "--peer-credits '0': expected a whole number from 1 to 255" -- "${N[@]}" --peer-credits 0 ping "$SRV"
expect 2 "--o2ib-timeout '0': expected a whole number from 1 to 3600" -- "${N[@]}" --o2ib-timeout 0 ping "$SRV"
expect 2 "--routes 'o2ib': in 'o2ib': 'o2ib': a route needs a net and a gateway" -- "${N[@]}" --routes o2ib ping "$SRV"
expect 2 "--routes 'o2ib 1.2.3@tcp':" -- "${N[@]}" --routes "o2ib 1.2.3@tcp" ping "$SRV"
expect 2 "--routes '': no route in it" -- "${N[@]}" --routes "" ping "$SRV"
expect 2 "--routes 'o2ib 10.0.0.3@o2ib1': route to o2ib through 10.0.0.3@o2ib1: the gateway is not on this node's net" -- \
    "${N[@]}" --routes "o2ib 10.0.0.3@o2ib1" ping "$SRV"
expect 2 "option --routes needs an argument" -- "${N[@]}" ping "$SRV" --routes
# a good route (through the target: nothing goes to o2ib here) and peer_credits
# leave the node as it was: the target answers
expect 0 "1/1 replies" -- "${N[@]}" --routes "o2ib $SRV; o2ib1 2 $SRV:1" --peer-credits 2 ping "$SRV" --count 1
expect 2 "option --nid needs an argument" -- ping "$SRV" --nid
expect 2 "NID[,NID...] is required" -- "${N[@]}" ping
expect 2 "without empty entries" -- "${N[@]}" ping "$SRV,,$CL2"
expect 2 "NID '1.2.3@tcp': not a NID" -- "${N[@]}" ping 1.2.3@tcp
expect 2 "--count '0': expected a whole number from 1 to 10000" -- "${N[@]}" ping "$SRV" --count 0
expect 2 "--count 'abc'" -- "${N[@]}" ping "$SRV" --count abc
expect 2 "--timeout '-1': expected seconds" -- "${N[@]}" ping "$SRV" --timeout -1
expect 2 "option --timeout needs an argument" -- "${N[@]}" ping "$SRV" --timeout
expect 2 "--portal '0': expected a whole number from 1 to 63" -- "${N[@]}" serve --portal 0
expect 2 "--portal '64'" -- "${N[@]}" serve --portal 64
expect 2 "--duration 'x': expected seconds" -- "${N[@]}" serve --duration x
expect 2 "unexpected argument 'extra'" -- "${N[@]}" serve extra
expect 2 "read or write is required" -- "${N[@]}" brw
expect 2 "'copy': expected read or write" -- "${N[@]}" brw copy "$SRV"
expect 2 "NID is required" -- "${N[@]}" brw read
expect 2 "NID 'nid?': not a NID" -- "${N[@]}" brw read 'nid?'
expect 2 "--size '2m': expected bytes as N, Nk or Nm, at most 1 MiB" -- "${N[@]}" brw read "$SRV" --size 2m
expect 2 "--size '12q'" -- "${N[@]}" brw read "$SRV" --size 12q
expect 2 "--size '-1'" -- "${N[@]}" brw read "$SRV" --size -1
expect 2 "--concurrency '65': expected a whole number from 1 to 64" -- "${N[@]}" brw read "$SRV" --concurrency 65
expect 2 "--concurrency '0'" -- "${N[@]}" brw read "$SRV" --concurrency 0
expect 2 "--count '0'" -- "${N[@]}" brw write "$SRV" --count 0
expect 2 "--check 'maybe': expected simple or full" -- "${N[@]}" brw write "$SRV" --check maybe
expect 2 "--timeout '0': expected seconds from 0.1 to 3600" -- "${N[@]}" brw write "$SRV" --timeout 0
expect 2 "unexpected argument '$CL2'" -- "${N[@]}" brw write "$SRV" "$CL2"
expect 2 "is this node" -- "${N[@]}" brw write "$CL1"
expect 0 "usage: ulst" -- --help
expect 0 "usage: ulst [node options] ping" -- ping --help
expect 0 "usage: ulst [node options] serve" -- serve --help
expect 0 "usage: ulst [node options] brw" -- brw --help

# --- a target that dies: every operation ends, a stream with --keep-going goes on ---
# kill_serve PID: SIGKILL the ulst that timeout(1) runs as PID
kill_serve() {
    pkill -KILL -P "$1" 2>/dev/null
    { wait "$1"; } 2>/dev/null
}
# ended PID: wait for the background PID; its exit status in rc, and in ms
# how long the wait took (the time from what was just done to PID's end)
ended() {
    local t0
    t0=$(date +%s%N)
    wait "$1"; rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}
start_serve "$DIE" "$WORK/die.log"
# a PUT fully sent waits for its ACK until transaction_timeout (here 5 s)
timeout 60 "$ULST" "${C2[@]}" --transaction-timeout 5 brw write "$DIE" --size 1m --count 1000000 \
    --concurrency 8 --timeout 50 >"$WORK/die1.out" 2>&1 &
b1=$!
sleep 1.5
kill_serve "${PIDS[-1]}"
ended $b1
# within transaction_timeout (most fail with the connection, at once), not
# at --timeout
if [ $rc = 1 ] && [ $ms -lt 12000 ] && grep -q "failed: " "$WORK/die1.out" &&
   ! grep -q "timed out after" "$WORK/die1.out"; then
    pass "brw ends ${ms} ms after its target is killed (-9), exit 1"
else
    bad "brw after kill -9 of its target: exit $rc after $ms ms"; sed 's/^/     | /' "$WORK/die1.out"
fi
# --keep-going across a kill and a restart: a run bounded by time (its
# count is never reached, however fast this machine is), then the restarted
# target's counters show the PUTs that came after its restart
start_serve "$DIE" "$WORK/die.log"
timeout 60 "$ULST" "${C2[@]}" --transaction-timeout 5 brw write "$DIE" --size 64k --count 10000000 \
    --concurrency 8 --keep-going --timeout 8 >"$WORK/die2.out" 2>&1 &
b2=$!
sleep 0.5
kill_serve "${PIDS[-1]}"
sleep 1.5
start_serve "$DIE" "$WORK/die2.log"
DIE_PID=${PIDS[-1]}
wait $b2; rc=$?
nfail=$(sed -n 's/.* of 10000000 done in .*, \([0-9]*\) failed$/\1/p' "$WORK/die2.out")
stop_serve "$DIE_PID" TERM "$WORK/die2.log"
nput=$(sed -n "s/^ulst serve: $DIE: SIGTERM: PUT \([0-9]*\) .*/\1/p" "$WORK/die2.log")
if [ $rc = 1 ] && [ -n "$nfail" ] && [ "$nfail" -ge 1 ] && grep -q "(going on)" "$WORK/die2.out" &&
   [ -n "$nput" ] && [ "$nput" -ge 1 ]; then
    pass "brw --keep-going across a kill -9 and a restart of its target: $nfail failed, then $nput PUTs to the restarted target"
else
    bad "brw --keep-going across a restart: exit $rc, $nfail failed, ${nput:-no} PUTs after the restart"
    sed 's/^/     | /' "$WORK/die2.out" "$WORK/die2.log"
fi

# SIGTERM to brw: it stops at once with what it did so far, its node going
# down under 8 GETs of 1 MiB in flight (freed only once they have ended),
# and exits 1; its target is none the worse: a new brw from the same NID
# (a new incarnation) runs against it
start_serve "$DIE" "$WORK/die3.log"
DIE_PID=${PIDS[-1]}
timeout 60 "$ULST" "${C2[@]}" brw read "$DIE" --size 1m --count 10000000 --concurrency 8 \
    --check simple --timeout 30 >"$WORK/term.out" 2>&1 &
b3=$!
for _ in $(seq 100); do grep -q "^ulst brw read" "$WORK/term.out" && break; sleep 0.1; done
sleep 1
kill -TERM $b3
ended $b3
if [ $rc = 1 ] && [ $ms -lt 5000 ] &&
   grep -q "^ulst brw: stopped by SIGTERM: [1-9][0-9]* of 10000000 done, [0-9]* in flight" "$WORK/term.out" &&
   grep -q "^ulst brw read $DIE: [1-9][0-9]* of 10000000 done in " "$WORK/term.out"; then
    pass "brw stops ${ms} ms after SIGTERM, with its summary, exit 1"
else
    bad "brw after SIGTERM: exit $rc after $ms ms"; sed 's/^/     | /' "$WORK/term.out"
fi
expect 0 "10 of 10 done" -- "${C2[@]}" brw write "$DIE" --size 1m --count 10 --concurrency 4 --check full
stop_serve "$DIE_PID" TERM "$WORK/die3.log"

# SIGINT while brw still waits for its target's first answer (a stopped
# serve: the connection is accepted by the kernel, nothing answers): brw
# stops at once, saying so, exit 1
start_serve "$DIE" "$WORK/die4.log"
DIE_PID=${PIDS[-1]}
SRV_CHILD=$(pgrep -P "$DIE_PID")   # ulst itself, under timeout(1)
kill -STOP $SRV_CHILD
timeout 60 "$ULST" "${C2[@]}" brw read "$DIE" --count 1 --timeout 30 >"$WORK/int.out" 2>&1 &
b4=$!
sleep 1
kill -INT $b4
ended $b4
if [ $rc = 1 ] && [ $ms -lt 3000 ] &&
   grep -q "^ulst brw: stopped by SIGINT before the run, waiting for $DIE to answer" "$WORK/int.out"; then
    pass "brw waiting for its target stops ${ms} ms after SIGINT, exit 1"
else
    bad "brw waiting for its target, after SIGINT: exit $rc after $ms ms"; sed 's/^/     | /' "$WORK/int.out"
fi
kill -CONT $SRV_CHILD
stop_serve "$DIE_PID" TERM "$WORK/die4.log"

# --- serve's counters on the way out -----------------------------------------------
stop_serve "$SRV_PID" TERM "$WORK/serve.log"
# 50 + 10 PUTs; 500 + 10 + 2 x 200 GETs; the counters GETs are not counted
if grep -q "ulst serve: $SRV: SIGTERM: PUT 60 (50.00 MiB), GET 910 (" "$WORK/serve.log" &&
   grep -q "check errors 0, errors 0" "$WORK/serve.log"; then
    pass "serve prints its counters on SIGTERM"
else
    bad "serve counters"; sed 's/^/     | /' "$WORK/serve.log"
fi
# the console's 10, and the test client's 8 pings and 8 brw writes
grep -q "ulst serve: $SRV: selftest: 26 RPCs (0 dropped), ping 11, brw 10, brw check errors 0" "$WORK/serve.log" &&
    pass "serve prints its selftest counters" ||
    { bad "serve selftest counters"; sed 's/^/     | /' "$WORK/serve.log"; }
stop_serve "$BAD_PID" INT "$WORK/bad.log"
grep -q "ulst serve: $BAD: SIGINT: PUT 5 (0.04 MiB), GET 5 (0.04 MiB), check errors 5" "$WORK/bad.log" &&
    pass "the corrupt-read target counted the 5 bad PUTs" ||
    { bad "corrupt target counters"; sed 's/^/     | /' "$WORK/bad.log"; }

echo "$checks checks, $failures failed"
[ $failures = 0 ] || exit 1
[ $ping_enosys = 0 ] || { echo "SKIP: ulnet_ping is not implemented (ENOSYS); everything else passed"; exit 77; }
exit 0
