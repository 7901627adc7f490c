#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""instr.py - instructions per message, counted by callgrind (repeatable,
whatever else the machine is doing; timing on this VM is not).

Runs build/bin/bench_tcp under valgrind --tool=callgrind with manual
progress (no progress thread, so every instruction is on the thread that
callgrind attributes it to), once for `lat` (8 B PUT + ACK ping-pong) and
once for `rate` (64 B PUTs, no ACK), and prints for each process:

  <mode>_<side>_instr_per_msg  <Ir>   (entry points: ...)

The cost counted is the inclusive cost of the calls *into* ulnet's work
entry points (ulnet_put, ulnet_batch_end, and each connection's I/O
callback ksock_conn_io (or its busy-poll ksock_conn_poll), which covers parse, match, events, handlers and
the sends they cause), divided by the messages that side handled
(lnet_parse calls on a receiver, ulnet_put calls on the rate sender).
The processes wait in ulnet_progress(ln, 1 ms) (BENCH_WAIT_MS=1) rather
than spin, so no poll that finds nothing is counted: the figures do not
depend on timing.

usage: bench/instr.py [build-dir] [seconds]
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ENTRY = ("ulnet_put", "ulnet_batch_end", "ksock_conn_io", "ksock_conn_poll", "ksock_kick_cb")
# calls into an entry point from these are inside another one: not counted
NESTED = re.compile(r"^(lnet_|ksock_|ulnet_|lat_handler|stream_handler|srv_handler|get_handler)")


def parse(path):
    """Return ({fn: inclusive Ir of the calls into fn from outside ulnet},
    {fn: call count from anywhere})."""
    names = {}
    incl, calls = {}, {}
    cfn = caller = None
    pending = None  # call count waiting for its cost line

    def name_of(spec):
        m = re.match(r"\((\d+)\)(?: (.*))?", spec)
        if not m:
            return spec.strip()
        if m.group(2):
            names[m.group(1)] = m.group(2).strip()
        return names.get(m.group(1), "?")

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("cfn="):
                cfn = name_of(line[4:])
            elif line.startswith("fn="):
                caller = name_of(line[3:])
            elif line.startswith("calls="):
                pending = int(line[6:].split()[0])
            elif pending is not None and line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                calls[cfn] = calls.get(cfn, 0) + pending
                if not NESTED.match(caller.split("'")[0]):
                    incl[cfn] = incl.get(cfn, 0) + cost
                pending = None
    return incl, calls


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    secs = sys.argv[2] if len(sys.argv) > 2 else "1"
    exe = os.path.join(build, "bin", "bench_tcp")
    with tempfile.TemporaryDirectory() as work:
        for mode in ("lat", "rate"):
            env = dict(os.environ, BENCH_MANUAL="1", BENCH_WAIT_MS="1",
                       BENCH_PORT=str(22100 + os.getpid() % 800))
            subprocess.run(["valgrind", "--tool=callgrind",
                            "--callgrind-out-file=%s/%s.%%p" % (work, mode), exe,
                            "ratebatch" if mode == "rate_batch" else mode, secs],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            files = sorted(glob.glob("%s/%s.*" % (work, mode)),
                           key=lambda p: int(p.rsplit(".", 1)[1]))
            # the parent (client) has the lower pid; the server is forked
            for side, path in zip(("client", "server"), files):
                incl, calls = parse(path)
                work_ir = sum(incl.get(e, 0) for e in ENTRY)
                if mode == "rate" and side == "client":
                    n = calls.get("ulnet_put", 0)
                    what = "PUTs sent"
                else:
                    n = calls.get("lnet_parse", 0)
                    what = "messages received"
                per = work_ir / n if n else 0
                print("%s_%s_instr_per_msg %.0f Ir (%d %s)" % (mode, side, per, n, what))


if __name__ == "__main__":
    main()
