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

# The acceptor port: unique per run, so demos and tests can share
# 127.0.0.2-5 at once. Root: 988 with accept=secure (privileged source
# ports) unless 988 is taken on our addresses, then a high port, still
# secure. A user: a high port and accept=all (its source ports are > 1023,
# which secure refuses). ULNET_DEMO_PORT forces a port.
port_busy() { # is anything listening on $1 at one of the demo's addresses?
	local a
	for a in 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5; do
		(exec 3<>"/dev/tcp/$a/$1") 2>/dev/null && return 0
	done
	return 1
}
pick_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		port_busy "$p" || { echo "$p"; return 0; }
	done
	echo "demo: no free port found" >&2
	return 1
}
if [[ $(id -u) == 0 ]]; then
	ACCEPT=secure
	if port_busy 988; then PORT=$(pick_port); else PORT=988; fi
else
	ACCEPT=all
	PORT=$(pick_port)
fi
PORT=${ULNET_DEMO_PORT:-$PORT}
echo "demo: uid $(id -u), acceptor port $PORT, accept=$ACCEPT"
PIDS=()
stop_all() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	PIDS=()
}
cleanup() {
	stop_all
	rm -rf "$T"
}
trap cleanup EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

start() { # start NAME NID: 0, or 1 when the port was taken meanwhile
	"$BIN/ulnetd" --ctl "$T/$1.sock" --accept-port "$PORT" --accept "$ACCEPT" \
		>"$T/$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [[ -S $T/$1.sock ]] && break; sleep 0.05; done
	[[ -S $T/$1.sock ]] || { echo "demo: ulnetd $1 did not start:"; cat "$T/$1.log"; exit 1; }
	if ! "$BIN/ulnetctl" --ctl "$T/$1.sock" net add --nid "$2" 2>"$T/err"; then
		grep -qF "errno: -98" "$T/err" && return 1   # EADDRINUSE: another run won
		cat "$T/err"; exit 1
	fi
}

# Another demo or test may grab the port between our check and our bind:
# then start over on a fresh one (bounded).
for try in 1 2 3 4 5; do
	if start n2 127.0.0.2@tcp && start n3 127.0.0.3@tcp; then break; fi
	stop_all
	[[ $try == 5 ]] && { echo "demo: no usable port after 5 tries"; exit 1; }
	PORT=$(pick_port)
	echo "demo: port taken meanwhile, now $PORT"
done
ctl2() { "$BIN/ulnetctl" --ctl "$T/n2.sock" "$@"; }

step ctl2 net show
step ctl2 ping 127.0.0.3@tcp
step ctl2 discover 127.0.0.3@tcp
step ctl2 peer show -v
step ctl2 stats show

if [[ -x $BIN/put_get ]]; then
	# its own nodes (127.0.0.4/5) need the port too: retry on a clash
	for try in 1 2 3 4 5; do
		if step "$BIN/put_get" --port "$PORT" --accept "$ACCEPT" 2>"$T/err"; then break; fi
		cat "$T/err"
		grep -qF "in use" "$T/err" && [[ $try != 5 ]] || exit 1
		PORT=$(pick_port)
	done
else
	echo "(examples/put_get not built: skipped)"
fi
echo
echo "demo: done"
