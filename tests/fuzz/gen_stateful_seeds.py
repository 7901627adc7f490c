#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora of the stateful fuzz targets (fuzz_lnet_parse,
fuzz_sock_conn, fuzz_ctl_proto, fuzz_yaml_import, fuzz_selftest_agent) into
tests/fuzz/corpus/<target>/. Each seed is a short op sequence in the target's
input language (see the comment at the top of each target), written so that
it reaches the interesting state: a match and its ACK, a handshake that
completes and carries messages, a session with a test. Run from anywhere;
the files are checked in, so run it again only after changing a language.
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def u32(v):
    return struct.pack("<I", v & 0xffffffff)


def u64(v):
    return struct.pack("<Q", v & 0xffffffffffffffff)


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes(data))


# --- fuzz_lnet_parse ------------------------------------------------------
# op = byte % 10: 0 attach, 1 unlink, 2 initiate, 3 complete, 4-6 header,
# 7 raw header, 8 progress, 9 lazy.

def lp_attach(a, b, opt, lenb, thr):
    return bytes([0, a, b, opt, lenb, thr])


def lp_put(ptl, mbits_idx, plen, payload, ack=True, frm=0):
    a = 1 | (ptl << 3) | (0 if ack else 8)
    return (bytes([4, a, 0, mbits_idx, plen]) + (u64(7) if ack else b"") +
            u64(0x1234) + bytes(payload) + bytes([frm]))


def lp_get(ptl, mbits_idx, sink, frm=0):
    a = 2 | (ptl << 3)
    return bytes([4, a, 0, mbits_idx]) + u64(9) + u64(1) + bytes([sink, frm])


def gen_lnet_parse():
    t = "fuzz_lnet_parse"
    # wildcard ME on portal 4, bits 0x10, 64-byte MD (PUT|GET|TRUNCATE),
    # a PUT with ACK then a GET, then complete the ACK/REPLY sends
    me = lp_attach(0x24, 0x02, 0x0b, 64, 0xff)
    write(t, "put-get-wildcard", bytes([3]) + me + lp_put(4, 2, 8, b"ABCDEFGH") +
          lp_get(4, 2, 32) + bytes([3, 0, 3, 0, 8, 0x85]))
    # unique ME (peer 2@ptlf, pid 12345) with MANAGE_REMOTE, threshold 1
    me = lp_attach(0x0d, 0x0a, 0x05, 32, 1)
    write(t, "put-unique-manage-remote", bytes([0]) + me + lp_put(5, 2, 16, b"x" * 16) +
          lp_put(5, 2, 16, b"y" * 16))
    # lazy portal 6: the PUT waits, the MD comes after
    write(t, "lazy-portal", bytes([1, 9, 0x0e]) + lp_put(6, 2, 4, b"lazy") +
          lp_attach(0x26 & 0xff, 0x02, 0x03, 16, 0xff) + bytes([9, 0x06]))
    # our PUT to a peer, its ACK (wire handle of the send), a timeout
    write(t, "put-ack", bytes([3, 2, 0x00, 0x03, 16, 0xff]) +
          bytes([4, 0x00, 0x00, 0x00]) + u64(0x10) + u32(16) + bytes([0]) +
          bytes([3, 0, 8, 0xff]))
    # our GET, its REPLY with payload
    write(t, "get-reply", bytes([3, 2, 0x04, 0x03, 16, 0xff]) +
          bytes([4, 0x03, 0x00, 0x00, 12]) + b"replypayload" + bytes([0]) + bytes([3, 0]))
    # ignore bits, MAX_SIZE and an iovec MD
    write(t, "ignore-maxsize-iovec", bytes([0]) + lp_attach(0x27, 0x42, 0x61, 100, 2) +
          bytes([24]) + lp_put(7 & 7, 3, 40, b"z" * 40))


# --- fuzz_sock_conn -------------------------------------------------------
# setup byte; op = low nibble (high nibble: connection): 0 adopt, 1 acceptor
# request, 2-3 HELLO, 4-5 NOOP, 6-8 LNET, 9 raw, 10-11 send, 12 close,
# 13-15 time.

def sc_lnet_put(conn, plen, payload, khdr_flags=0):
    return (bytes([(conn << 4) | 6, khdr_flags, 0x01, 0x00, plen, 1, 1, 0x10]) +
            bytes(payload) + bytes([0]))


def gen_sock_conn():
    t = "fuzz_sock_conn"
    for ver, setup in ((1, 0x02), (2, 0x00), (3, 0x02), (4, 0x01)):
        hello_a = (ver - 1) | (2 << 2)          # CONTROL
        body = bytes([setup, 0x00, 0x00,         # adopt, from port 1023
                      0x01, 0x00, 0x00,          # acceptor request v1
                      0x02, hello_a, 0x00, 0x00, 0x00])
        body += sc_lnet_put(0, 8, b"payload!")
        if ver > 1:
            body += bytes([0x04, 0x04, 2, 0])    # NOOP, ZC-ACK cookie 2
        body += bytes([0x0a, 0x01, 0x0d, 0x05])  # big PUT (asks a ZC-ACK)
        if ver > 1:
            body += bytes([0x04, 0x04, 2, 0])
        body += bytes([0x0d, 0x90])
        write(t, "passive-v%d" % ver, body)
    # active: our PUT dials, the peer answers V3 CONTROL, then a big PUT
    # and the ZC-ACK forms (cookie in slot 0, slot 1, both)
    write(t, "active-v3", bytes([0x02, 0x0a, 0x00, 16, 0x02, 0x0a, 0x00, 0x00, 0x00,
                                 0x0a, 0x01, 0x04, 0x04, 2, 0, 0x04, 0x10, 3, 0,
                                 0x04, 0x14, 4, 5, 0]) + sc_lnet_put(0, 4, b"abcd"))
    write(t, "active-v4", bytes([0x01, 0x0a, 0x00, 16, 0x02, 0x0b, 0x00, 0x00, 0x00,
                                 0x0a, 0x00, 8, 0x0d, 0x81]))
    # acceptor request for a wrong NID, then a HELLO without a request
    write(t, "passive-refused", bytes([0x02, 0x00, 0x02, 0x01, 0x04, 0x09, 0x00,
                                       0x00, 0x02, 0x12, 0x0a, 0x00, 0x00, 0x00]))


# --- fuzz_ctl_proto -------------------------------------------------------

def gen_ctl_proto():
    t = "fuzz_ctl_proto"

    def req(args, blob=None):
        b = b"ULQ1" + u32(len(args))
        for a in args:
            b += u32(len(a)) + a
        b += u32(0xffffffff) if blob is None else u32(len(blob)) + blob
        return b

    def rep(rc, out, err):
        return b"ULR1" + u32(rc) + u32(len(out)) + out + u32(len(err)) + err

    write(t, "req-net-show", b"\x00" + req([b"net", b"show", b"-v"]))
    write(t, "req-import-blob", b"\x00" + req([b"import", b"--add", b"f.yaml"],
                                              b"net:\n  - net type: tcp\n"))
    write(t, "rep-ok", b"\x01" + rep(0, b"net:\n    - net type: lo\n", b""))
    write(t, "rep-err", b"\x01" + rep(0xffffffff, b"", b"add:\n    - ip2nets:\n"))


# --- fuzz_yaml_import -----------------------------------------------------

def gen_yaml_import():
    t = "fuzz_yaml_import"
    net = (b"net:\n    - net type: tcp\n      local NI(s):\n"
           b"        - nid: 127.0.0.1@tcp\n          interfaces:\n              0: lo\n"
           b"          tunables:\n              peer_timeout: 180\n"
           b"              peer_credits: 8\n          lnd tunables:\n"
           b"              conns_per_peer: 2\n")
    peer = (b"peer:\n    - primary nid: 10.0.0.2@tcp\n      Multi-Rail: True\n"
            b"      peer ni:\n        - nid: 10.0.0.2@tcp\n        - nid: 10.0.1.2@tcp\n")
    glob = (b"global:\n    numa_range: 0\n    max_interfaces: 200\n    discovery: 0\n"
            b"    retry_count: 3\n    transaction_timeout: 50\n    health_sensitivity: 100\n")
    write(t, "add-net", b"\x04" + net)
    write(t, "add-del-peer", b"\x07" + peer)
    write(t, "add-global", b"\x04" + glob)
    write(t, "show", b"\x02" + net + peer)
    write(t, "bad", b"\x00net:\n  - nid: 1.2.3.4@tcp\nroute:\n  - net: tcp1\n")
    ip2nets = (b"ip2nets:\n  - net-spec: tcp\n    interfaces:\n        0: lo\n"
               b"    ip-range:\n        0: 127.0.0.[1-3/2]\n        1: ::1/128\n"
               b"  - net-spec: tcp\n    interfaces:\n        0: lo\n"
               b"  - net-spec: tcp1\n    ip-range:\n        0: 127.*.*.*\n"
               b"    tunables:\n        peer_timeout: 180\n    CPT: \"[0]\"\n")
    write(t, "add-del-ip2nets", b"\x07" + ip2nets)


# --- fuzz_selftest_agent --------------------------------------------------
# op = byte % 8: 0-3 request, 4-5 pump, 6 fault, 7 time.
# request: a (type index % 10: 0 MKSN 1 RMSN 2 BATCH 3 STAT 4 TEST 5 DEBUG
# 6 BRW 7 PING 8 JOIN 9 TEST), b (feats, and per type), then fields.

def st_mksn(sid=0):
    return bytes([0, 0, 0x00, sid])


def gen_selftest_agent():
    t = "fuzz_selftest_agent"
    pump = bytes([4, 31])
    # session, a ping server test, a ping, stat, remove
    write(t, "session-ping-stat", st_mksn() + pump +
          bytes([0, 4, 0x00, 0x01, 0x00, 0x00, 16, 0]) + pump +   # TEST add: ping server
          bytes([0, 7, 0, 5]) + pump +                             # PING seq 5
          bytes([0, 3, 0x00, 0]) + pump +                          # STAT
          bytes([0, 1, 0, 0]) + pump)                              # RMSN
    # session with BULK_LEN, brw server test (v1 param), brw write and read
    write(t, "brw-server", bytes([0, 0, 1, 0]) + pump +
          bytes([0, 4, 0x01, 0x02, 0x00, 0x00, 16, 0]) + pump +   # TEST add: brw server
          bytes([0, 6, 0x4d, 0x03]) + pump + pump +                # BRW write 4 KiB, simple
          bytes([0, 6, 0x09, 0x03]) + pump + pump)                 # BRW read 4 KiB
    # session, client ping test to the server itself, RUN, time, STOP
    write(t, "client-ping", st_mksn() + pump +
          bytes([0, 4, 0x00, 0x01, 0x00, 0x00, 16, 0]) + pump +   # ping server
          bytes([0, 4, 0x10, 0x01, 0x01, 0x00, 16, 0, 0, 0]) +     # ping client, 1 dest
          pump + pump +
          bytes([0, 2, 0x10, 0, 0]) + pump + pump +                # BATCH 0 RUN
          bytes([7, 0x81]) + pump +
          bytes([0, 2, 0x20, 0, 1]) + pump + pump)                 # BATCH 0 STOP force
    # session that times out, then a request for it
    write(t, "session-timeout", st_mksn() + pump + bytes([7, 0xff, 0, 3, 0, 0]) + pump)


def main():
    gen_lnet_parse()
    gen_sock_conn()
    gen_ctl_proto()
    gen_yaml_import()
    gen_selftest_agent()


if __name__ == "__main__":
    main()
