#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_capture_decode.sh - capture ulnet's socklnd traffic on lo with tshark
# and have it decoded by $ULNET_SHARED/tools/lnet-wire/decode.sh (Wireshark's
# lnet dissector cross-checked with a spec-derived decoder).
#
# prog_lnet_traffic runs two nodes on 127.0.2.2 and 127.0.2.3 (addresses used
# by no other test) that ping and discover each other and PUT/GET 0 B, 1 B,
# 4 KiB and 1 MiB both ways. The test asserts:
#   - the capture is complete (no packets dropped by the capture);
#   - decode.sh succeeds on the capture as recorded and reports no
#     disagreement between its decoders (no MISMATCH) and no framing error of
#     the spec decoder (DESYNC/GAP/TRUNCATED/UNKNOWN);
#   - decode.sh --resegment --require-tshark succeeds with no diagnostic at
#     all: every NOOP/LNET message was decoded by tshark too. (--resegment
#     removes tshark 4.0's segmentation limits, see the lnet-wire README;
#     what they cost on the raw capture is printed as a NOTE, not a failure.)
#   - the expected messages are there: acceptor requests (v1), HELLO v3 on
#     CONTROL/BULK_IN/BULK_OUT connections, ping GET/REPLY with ping info both
#     ways, discovery push PUT + ACK both ways, PUT+ACK of the four sizes and
#     GET+REPLY of the four sizes both ways (match bits, offsets, lengths,
#     hdr_data, wmd of the response equal to the request's), and ZC-ACK
#     NOOPs for the 1 MiB PUTs and REPLYs.
#
# Needs root (or CAP_NET_RAW) to capture on lo, tshark and python3: without
# them it prints "SKIP: <reason>" and exits 77.
#
# Environment: ULNET_BIN (build/bin), ULNET_SHARED (shared/), KEEP=1 keeps the
# capture and decode output (their directory is printed).
set -u

ADDR_A=127.0.2.2
ADDR_B=127.0.2.3
PORT=$((21000 + $$ % 4000))
HERE=$(cd "$(dirname "$0")" && pwd)
ULNET_BIN=${ULNET_BIN:-$HERE/../../build/bin}
ULNET_SHARED=${ULNET_SHARED:-$HERE/../../../shared}
DECODE=$ULNET_SHARED/tools/lnet-wire/decode.sh
PROG=$ULNET_BIN/prog_lnet_traffic

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "capturing on lo needs root (uid $(id -u))"
command -v tshark >/dev/null 2>&1 || skip "tshark is not installed (apt-get install tshark)"
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (decode.sh needs it)"
[ -x "$DECODE" ] || [ -r "$DECODE" ] || skip "decode.sh not found at $DECODE (set ULNET_SHARED)"
[ -x "$PROG" ] || fail "$PROG not built"

WORK=$(mktemp -d /tmp/ulnet-capture.XXXXXX)
TSHARK_PID=
cleanup() {
    if [ -n "$TSHARK_PID" ] && kill -0 "$TSHARK_PID" 2>/dev/null; then
        kill -TERM "$TSHARK_PID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$TSHARK_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$TSHARK_PID" 2>/dev/null
    fi
    if [ "${KEEP:-0}" = 1 ]; then echo "kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Start tshark; return once a probe datagram between the two addresses has
# been captured (so the filter is in place), within 15 s.
start_capture() {
    local pcap=$1 i
    : >"$WORK/tshark.out"; : >"$WORK/tshark.err"
    tshark -l -P -n -i lo -B 64 -f "host $ADDR_A and host $ADDR_B" -w "$pcap" \
        >"$WORK/tshark.out" 2>"$WORK/tshark.err" &
    TSHARK_PID=$!
    for i in $(seq 150); do
        kill -0 "$TSHARK_PID" 2>/dev/null || { cat "$WORK/tshark.err"; fail "tshark exited at start"; }
        if grep -q "Capturing on" "$WORK/tshark.err"; then
            python3 - "$ADDR_A" "$ADDR_B" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 0))
s.sendto(b"ulnet-capture-probe", (sys.argv[2], 9))
EOF
            [ -s "$WORK/tshark.out" ] && return 0
        fi
        sleep 0.1
    done
    cat "$WORK/tshark.err"
    fail "tshark did not start capturing within 15 s"
}

stop_capture() {
    local i
    sleep 0.5                       # the last segments and the FINs
    kill -TERM "$TSHARK_PID" 2>/dev/null
    for i in $(seq 100); do kill -0 "$TSHARK_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$TSHARK_PID" 2>/dev/null; then
        kill -KILL "$TSHARK_PID" 2>/dev/null
        fail "tshark did not stop within 10 s"
    fi
    wait "$TSHARK_PID" 2>/dev/null
    TSHARK_PID=
}

# --- capture (again if the capture itself dropped packets) -------------------
PCAP=$WORK/traffic.pcapng
prog_rc=
for attempt in 1 2 3; do
    rm -f "$PCAP"
    start_capture "$PCAP"
    timeout 45 "$PROG" --timeout 30 "$ADDR_A" "$ADDR_B" "$PORT" >"$WORK/prog.out" 2>&1
    prog_rc=$?
    stop_capture
    dropped=$(sed -n 's/^\([0-9][0-9]*\) packets\{0,1\} dropped.*/\1/p' "$WORK/tshark.err" | head -1)
    [ "${dropped:-0}" = 0 ] && break
    echo "capture attempt $attempt dropped $dropped packets; again"
    dropped=
    PORT=$((PORT + 1))
done
[ -z "${dropped:-}" ] || [ "$dropped" = 0 ] || fail "the capture kept dropping packets ($dropped)"
case $prog_rc in
    0) ;;
    *) cat "$WORK/prog.out"; fail "prog_lnet_traffic exited with $prog_rc" ;;
esac
packets=$(sed -n 's/^\([0-9][0-9]*\) packets\{0,1\} captured.*/\1/p' "$WORK/tshark.err" | head -1)
echo "captured ${packets:-?} packets (port $PORT)"

# --- decode as recorded -------------------------------------------------------
sh "$DECODE" "$PCAP" -p "$PORT" >"$WORK/raw.txt" 2>"$WORK/raw.err"
raw_rc=$?
case $raw_rc in
    0|2) ;;
    *) cat "$WORK/raw.err"; fail "decode.sh failed with exit $raw_rc" ;;
esac
grep -q '^# MISMATCH' "$WORK/raw.txt" && { grep '^# MISMATCH' "$WORK/raw.txt" | head; fail "tshark and the spec decoder disagree"; }
if grep -qE '^# (DESYNC|GAP|TRUNCATED|UNKNOWN)' "$WORK/raw.txt"; then
    grep -E '^# (DESYNC|GAP|TRUNCATED|UNKNOWN)' "$WORK/raw.txt" | head
    fail "the spec decoder could not frame the byte stream"
fi
if [ $raw_rc != 0 ]; then
    echo "NOTE: on the raw capture decode.sh exited 2 because of tshark 4.0's segmentation limits:"
    grep '^#' "$WORK/raw.txt" | head -5
fi

# --- decode with one message per segment: tshark must decode every message ---
sh "$DECODE" "$PCAP" -p "$PORT" --resegment --require-tshark >"$WORK/reseg.txt" 2>"$WORK/reseg.err"
reseg_rc=$?
if [ $reseg_rc != 0 ] || grep -qvE '^# (NOHELLO|IGNORED)' <(grep '^#' "$WORK/reseg.txt"); then
    grep '^#' "$WORK/reseg.txt" | head -20
    cat "$WORK/reseg.err"
    fail "decode.sh --resegment --require-tshark exited with $reseg_rc"
fi
[ "$(grep -vc '^#' "$WORK/reseg.txt")" = "$(grep -vc '^#' "$WORK/raw.txt")" ] ||
    fail "the resegmented capture decodes to $(grep -vc '^#' "$WORK/reseg.txt") messages, the raw one to $(grep -vc '^#' "$WORK/raw.txt")"

# --- the expected messages ------------------------------------------------------
python3 - "$WORK/reseg.txt" "$ADDR_A@tcp" "$ADDR_B@tcp" <<'EOF'
import sys
from collections import Counter

path, nid_a, nid_b = sys.argv[1], sys.argv[2], sys.argv[3]
PING_MB = 0x8000000000000000
SIZES = [0, 1, 4096, 1 << 20]
msgs = []
for ln in open(path):
    if ln.startswith("#") or "|" not in ln:
        continue
    head, tail = ln.split("|", 1)
    parts = head.split()
    m = {"dir": parts[0], "kind": parts[1]}
    for kv in parts[2:] + tail.split():
        if "=" in kv:
            k, v = kv.split("=", 1)
            m[k] = v
    msgs.append(m)

errors = []
def check(cond, what):
    if not cond:
        errors.append(what)
    return cond

def num(m, k):
    return int(m[k], 0)

kinds = Counter(m["kind"] for m in msgs)
connreq = [m for m in msgs if m["kind"] == "CONNREQ"]
hello = [m for m in msgs if m["kind"] == "HELLO"]
check(len(connreq) >= 3, f"{len(connreq)} acceptor requests, expected >= 3")
check(all(m["ver"] == "1" and m["dst"] in (nid_a, nid_b) for m in connreq),
      "an acceptor request is not v1 for one of the two NIDs")
check(len(hello) == 2 * len(connreq), f"{len(hello)} HELLOs for {len(connreq)} connections")
check(all(m["ver"] == "3" for m in hello), "a HELLO is not v3")
check({m["ctype"] for m in hello} >= {"1", "2", "3"},
      "HELLOs do not cover CONTROL, BULK_IN and BULK_OUT: ctypes %s" % sorted({m["ctype"] for m in hello}))
check(all(m["spid"] == "12345" and m["nips"] == "0" for m in hello), "a HELLO has spid != 12345 or nips != 0")
# each connection: the passive side answers BULK_IN with BULK_OUT and the reverse
by_stream = {}
for m in hello:
    by_stream.setdefault(m["stream"], {})[m["dir"]] = m["ctype"]
pairs = {"1": "1", "2": "3", "3": "2"}
for s, d in by_stream.items():
    check("c>s" in d and "s>c" in d and pairs.get(d["c>s"]) == d["s>c"],
          f"stream {s}: HELLO ctypes {d} do not pair up")

lnet = [m for m in msgs if m["kind"] in ("PUT", "GET", "ACK", "REPLY")]
noops = [m for m in msgs if m["kind"] == "NOOP"]
check(all(m["ksm"] == "LNET" for m in lnet), "an LNet message is not in a ksock LNET message")
check(all(m.get("by") == "tshark" for m in lnet + noops), "a NOOP/LNET message was not decoded by tshark")

def responses(req, kind):
    return [r for r in lnet if r["kind"] == kind and r["wmd"] == req["wmd"]
            and r["src"] == req["dst"] and r["dst"] == req["src"]]

summary = Counter()
for src, dst in ((nid_a, nid_b), (nid_b, nid_a)):
    tag = f"{src} -> {dst}"
    out = [m for m in lnet if m["src"] == src and m["dst"] == dst]
    # ping and discovery: GET on portal 0 with the ping match bits, REPLY with ping info
    pgets = [m for m in out if m["kind"] == "GET" and m["ptl"] == "0" and num(m, "mbits") == PING_MB]
    pushes = [m for m in out if m["kind"] == "PUT" and m["ptl"] == "0" and num(m, "mbits") == PING_MB]
    check(len(pgets) >= 2, f"{tag}: {len(pgets)} ping GETs, expected >= 2 (ping + discovery)")
    for g in pgets:
        rs = responses(g, "REPLY")
        check(len(rs) == 1 and num(rs[0], "plen") >= 16,
              f"{tag}: ping GET {g['wmd']}: REPLY with ping info missing or too short")
        check(num(g, "slen") > 0, f"{tag}: ping GET with sink length 0")
    check(len(pushes) >= 1, f"{tag}: no discovery push (PUT on portal 0)")
    for p in pushes:
        check(num(p, "plen") >= 16, f"{tag}: push PUT without ping info")
        acks = responses(p, "ACK")
        check(len(acks) == 1, f"{tag}: push PUT {p['wmd']} has {len(acks)} ACKs")
    summary["ping GET/REPLY"] += len(pgets)
    summary["push PUT/ACK"] += len(pushes)
    for i, size in enumerate(SIZES):
        puts = [m for m in out if m["kind"] == "PUT" and m["ptl"] == "21" and num(m, "mbits") == 0x5000 + i]
        if check(len(puts) == 1, f"{tag}: {len(puts)} PUTs of {size} B, expected 1"):
            p = puts[0]
            check(num(p, "plen") == size and num(p, "off") == 0 and num(p, "hdr") == 0x1234500 + i,
                  f"{tag}: PUT of {size} B: plen {p['plen']} off {p['off']} hdr {p['hdr']}")
            check(p["spid"] == "12345" and p["dpid"] == "12345", f"{tag}: PUT pids {p['spid']}/{p['dpid']}")
            acks = responses(p, "ACK")
            check(len(acks) == 1 and num(acks[0], "mlen") == size and acks[0]["mbits"] == p["mbits"],
                  f"{tag}: PUT of {size} B: ACK missing or wrong ({acks})")
            summary["PUT/ACK"] += 1
            if size >= 1 << 20:
                zc = num(p, "zcreq")
                check(zc != 0, f"{tag}: 1 MiB PUT without a ZC cookie")
                back = [n for n in noops if n["stream"] == p["stream"] and n["dir"] != p["dir"]
                        and num(n, "zcack") == zc]
                check(len(back) == 1, f"{tag}: no ZC-ACK NOOP for the 1 MiB PUT (cookie {zc:#x})")
                summary["ZC-ACK NOOP"] += len(back)
        gets = [m for m in out if m["kind"] == "GET" and m["ptl"] == "21" and num(m, "mbits") == 0x6000 + i]
        if check(len(gets) == 1, f"{tag}: {len(gets)} GETs of {size} B, expected 1"):
            g = gets[0]
            check(num(g, "slen") == size and num(g, "soff") == 0 and num(g, "plen") == 0,
                  f"{tag}: GET of {size} B: slen {g['slen']} soff {g['soff']} plen {g['plen']}")
            rs = responses(g, "REPLY")
            if check(len(rs) == 1 and num(rs[0], "plen") == size,
                     f"{tag}: GET of {size} B: REPLY missing or wrong ({rs})"):
                summary["GET/REPLY"] += 1
                if size >= 1 << 20:
                    zc = num(rs[0], "zcreq")
                    check(zc != 0, f"{tag}: 1 MiB REPLY without a ZC cookie")
                    back = [n for n in noops if n["stream"] == rs[0]["stream"]
                            and n["dir"] != rs[0]["dir"] and num(n, "zcack") == zc]
                    check(len(back) == 1, f"{tag}: no ZC-ACK NOOP for the 1 MiB REPLY (cookie {zc:#x})")
                    summary["ZC-ACK NOOP"] += len(back)
            if size < 1 << 20:
                check(all(num(r, "zcreq") == 0 for r in rs), f"{tag}: {size} B REPLY asks for a ZC-ACK")

print("decoded: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
print("checked: " + ", ".join(f"{k} {v}" for k, v in summary.items())
      + f", connections {len(connreq)} (HELLO v3 x{len(hello)})")
for e in errors:
    print("FAIL: " + e)
sys.exit(1 if errors else 0)
EOF
check_rc=$?
if [ $check_rc != 0 ]; then
    echo "--- decode.sh --resegment output ---"
    cut -c1-220 "$WORK/reseg.txt"
    echo "--- prog_lnet_traffic ---"
    cat "$WORK/prog.out"
    fail "the capture does not hold the expected messages"
fi
echo "PASS: decode.sh agrees with itself on every message; all expected messages present"
