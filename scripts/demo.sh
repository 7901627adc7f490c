#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README demo: two ulnetd nodes on 127.0.0.2@tcp and 127.0.0.3@tcp,
# managed with ulnetctl exactly as lnetctl would be; then examples/put_get
# (if built) PUTs 1 MiB from its own embedded node and GETs it back.
# As root: port 988, accept=secure. As a user: a high port, accept=all.
set -euo pipefail
build=${1:-build}
BIN=$build/bin
for b in ulnetd ulnetctl; do
	[[ -x $BIN/$b ]] || { echo "demo: $BIN/$b not built (run make)"; exit 1; }
done

T=$(mktemp -d /tmp/ulnet-demo.XXXXXX)
if [[ $(id -u) == 0 ]]; then PORT=988; ACCEPT=secure; else PORT=20988; ACCEPT=all; fi
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

start() { # start NAME NID
	"$BIN/ulnetd" --ctl "$T/$1.sock" --accept-port "$PORT" --accept "$ACCEPT" \
		>"$T/$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [[ -S $T/$1.sock ]] && break; sleep 0.05; done
	"$BIN/ulnetctl" --ctl "$T/$1.sock" net add --nid "$2"
}

start n2 127.0.0.2@tcp
start n3 127.0.0.3@tcp
ctl2() { "$BIN/ulnetctl" --ctl "$T/n2.sock" "$@"; }

step ctl2 net show
step ctl2 ping 127.0.0.3@tcp
step ctl2 discover 127.0.0.3@tcp
step ctl2 peer show -v
step ctl2 stats show

if [[ -x $BIN/put_get ]]; then
	step "$BIN/put_get" --port "$PORT" --accept "$ACCEPT"
else
	echo "(examples/put_get not built: skipped)"
fi
echo
echo "demo: done"
