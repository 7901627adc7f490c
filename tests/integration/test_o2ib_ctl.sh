#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_ctl.sh - ulnetctl and an o2ib net on a host without RDMA (or a
# build without the o2ib LND), as an ordinary user: an o2ib LND tunable
# that the LND cannot take is refused (-95, or -22 out of range) naming it,
# by net add and by import, before anything is tried; a kernel's export of
# an o2ib net is taken whole; an o2ib NI that cannot come up
# (no RDMA device on the address, or no LND) is refused with the kernel's
# "cannot add LNet NI" and the daemon stays up and serves tcp. The o2ib
# data path is tests/rdma/test_o2ib_ping.sh's (soft-RoCE guests).
set -u

TAG=o2ibctl
. "$(dirname "$0")/../support/ctl_lib.sh"

PORT=$((25000 + ($$ % 4000) * 2))
ul_daemon A --accept-port "$PORT" --accept all || { echo "FAIL: ulnetd A did not start"; exit 1; }

has() { # has TEXT: in stdout or stderr of the last command
	CHECKS=$((CHECKS + 1))
	grep -qF -- "$1" "$T/out" "$T/err" || fail "'$LAST' lacks '$1': $OUT $ERR"
}

# o2ib tunables out of range: -22, named, before the NI is tried
run A 234 net add --nid 127.0.0.1@o2ib --conns-per-peer 128
has "errno: -22"
has "o2ib LND tunable 'conns_per_peer': value out of range"
run A 234 net add --nid 127.0.0.1@o2ib --tos 300
has "errno: -22"
has "o2ib LND tunable 'tos': value out of range"
alive A

cat >"$T/o2ib.yaml" <<'EOF'
net:
    - net type: o2ib
      local NI(s):
        - nid: 127.0.0.1@o2ib
          lnd tunables:
              conns_per_peer: 200
EOF
run A 234 import "$T/o2ib.yaml"
has "conns_per_peer"
has "-22"
alive A

# lnetctl's o2ib lnd tunables: fmr_* other than the kernel's defaults are
# refused (no FMR pool)
cat >"$T/o2ib2.yaml" <<'EOF'
net:
    - net type: o2ib
      local NI(s):
        - nid: 127.0.0.1@o2ib
          lnd tunables:
              fmr_pool_size: 1024
EOF
run A 234 import "$T/o2ib2.yaml"
has "'fmr_pool_size: 1024'"
has "errno: -95"
alive A

# a 2.17 kernel's export of an o2ib net: every key is taken; here only the
# missing RDMA device stops the NI (test_ctl_import_net.c shows each key's
# effect with a stand-in LND, tests/rdma/test_o2ib_ping.sh on soft-RoCE)
cat >"$T/o2ib3.yaml" <<'EOF'
net:
    - net type: o2ib
      local NI(s):
        - nid: 127.0.0.1@o2ib
          status: up
          interfaces:
              0: lo
          tunables:
              peer_timeout: 180
              peer_credits: 8
              peer_buffer_credits: 0
              credits: 256
          lnd tunables:
              peercredits_hiw: 4
              map_on_demand: 1
              concurrent_sends: 8
              fmr_pool_size: 512
              fmr_flush_trigger: 384
              fmr_cache: 1
              ntx: 512
              conns_per_peer: 1
              tos: -1
          CPT: "[0]"
EOF
if [[ -d /sys/class/infiniband ]] && ls /sys/class/infiniband/*/ports/*/gid_attrs/ndevs/* 2>/dev/null |
	xargs -r cat 2>/dev/null | grep -qx lo; then
	echo "note: an RDMA device on lo, skipping the kernel export's import"
else
	run A 234 import "$T/o2ib3.yaml"
	has "cannot add LNet NI"
	CHECKS=$((CHECKS + 1))
	! grep -qF -- "not supported" "$T/out" "$T/err" || fail "a key of the export was refused: $ERR"
	alive A
fi

# no RDMA device has 127.0.0.1 (rdma_rxe is not bound to lo): refused, the
# daemon stays up and the tcp side works
if [[ -d /sys/class/infiniband ]] && ls /sys/class/infiniband/*/ports/*/gid_attrs/ndevs/* 2>/dev/null |
	xargs -r cat 2>/dev/null | grep -qx lo; then
	echo "note: an RDMA device on lo, skipping the no-device check"
else
	run A 234 net add --nid 127.0.0.1@o2ib
	has "cannot add LNet NI"
	alive A
fi
run A 0 net add --nid 127.0.7.30@tcp
run A 0 net show
has "127.0.7.30@tcp"
alive A

echo "$CHECKS checks, $FAILS failures"
[[ $FAILS == 0 ]]
