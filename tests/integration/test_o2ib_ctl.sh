#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_o2ib_ctl.sh - ulnetctl and an o2ib net on a host without RDMA (or a
# build without the o2ib LND), as an ordinary user: an o2ib LND tunable
# that the LND does not implement is refused with -95 naming it, by net add
# and by import, before anything is tried; an o2ib NI that cannot come up
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

# unimplemented o2ib tunables: -95, named (the refusal comes before the NI)
run A 234 net add --nid 127.0.0.1@o2ib --conns-per-peer 2
has "errno: -95"
has "o2ib LND tunable 'conns_per_peer' is not supported"
run A 234 net add --nid 127.0.0.1@o2ib --tos 3
has "errno: -95"
has "'tos'"
alive A

cat >"$T/o2ib.yaml" <<'EOF'
net:
    - net type: o2ib
      local NI(s):
        - nid: 127.0.0.1@o2ib
          lnd tunables:
              conns_per_peer: 4
EOF
run A 234 import "$T/o2ib.yaml"
has "conns_per_peer"
has "-95"
alive A

# o2ib-only keys of lnetctl's o2ib lnd tunables: refused as unknown (-95)
cat >"$T/o2ib2.yaml" <<'EOF'
net:
    - net type: o2ib
      local NI(s):
        - nid: 127.0.0.1@o2ib
          lnd tunables:
              peercredits_hiw: 4
EOF
run A 234 import "$T/o2ib2.yaml"
has "peercredits_hiw"
alive A

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
