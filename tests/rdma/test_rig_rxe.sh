#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_rig_rxe.sh - the soft-RoCE rig works: two Debian 12 guests (qemu, KVM
# when it works, else TCG) on a bridge in a netns of this test's own, rdma_rxe
# on each one's virtio NIC. Shows that rxe0 is there and its port ACTIVE in
# both, that ibv_rc_pingpong runs between them over the IPv4-mapped RoCE v2
# GID, that rping connects through rdma_cm, and what ib_write_bw gets
# (printed; speed is no verdict). When the
# ulnet build's bin/ is given (ULNET_BIN), a guest also runs ulnetd --help
# from the share: the image has the libraries ulnet needs.
# Installs its packages (tests/rdma/rig-deps.sh) and downloads the guest
# kernel once (cached in RIG_DIR, see tests/rdma/rig.sh); needs root: as an
# ordinary user, or where the packages or the kernel cannot be had, it says
# so and exits 77. ULNET_RDMA_RIG=skip skips it. docs/rdma-rig.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$(date +%s.%N)
# shellcheck source-path=SCRIPTDIR source=rig-test-start.sh
. "$HERE/rig-test-start.sh"

S=$(rig_ip 1) # guest 1 serves, guest 2 is the client
# Both: rxe0 listed, its port ACTIVE, the GID of eth0's IPv4 address.
# ibv_rc_pingpong and ib_write_bw listen on TCP (18515, 18516) to swap QP
# numbers and GIDs: the server marks the share just before it listens, the
# client waits for the mark, then retries while the server is not yet up.
# rping (librdmacm, rdma_cm: what the o2ib LND connects with) likewise; its
# server exits when its client has gone.
# Each run is bounded (20 s; a pass takes 1-6 s under TCG) and the pair is
# run again when one side fails: a TCG guest's rxe once left both ends of an
# RC QP waiting for good (CI; no NIC watchdog, no QP error), which a rerun of
# the same tools with fresh QPs gets past. The server reruns after a failure
# of its own (at most 3 times); the client keeps retrying while the server is
# not listening again yet.
# ib_write_bw -D 4 -f 1: 4 s, of which the middle 2 s are measured (the
# default margin, 2 s each side, would leave nothing of a short run).
# shellcheck disable=SC2016 # expanded in the guest
common='. /lib/ulrig.sh
set -eu
ibv_devices
ibv_devices | grep -q rxe0
ibv_devinfo -d rxe0
ibv_devinfo -d rxe0 | grep -q "state:.*PORT_ACTIVE"
gid=$(ulrig_gid_index)
echo "RoCE v2 GID of $ULRIG_IP: index $gid"
'
cat >"$RIG_SHARE/guest-1.sh" <<EOF
$common
ulrig_mark pp-ready
ulrig_retry 3 0 timeout 20 ibv_rc_pingpong -d rxe0 -g "\$gid" -n 1000
ulrig_mark bw-ready
ulrig_retry 3 0 timeout 20 ib_write_bw -d rxe0 -x "\$gid" -F -p 18516 -D 4 -f 1 -s 65536 --report_gbits
ulrig_mark rping-ready
ulrig_retry 3 0 timeout 20 rping -s -a $S -C 10
EOF
cat >"$RIG_SHARE/guest-2.sh" <<EOF
$common
ping -c 3 -W 2 $S
ulrig_wait_file pp-ready 60
ulrig_retry 60 0.5 timeout 20 ibv_rc_pingpong -d rxe0 -g "\$gid" -n 1000 $S
ulrig_wait_file bw-ready 60
ulrig_retry 60 0.5 timeout 20 ib_write_bw -d rxe0 -x "\$gid" -F -p 18516 -D 4 -f 1 -s 65536 --report_gbits $S
ulrig_wait_file rping-ready 60
ulrig_retry 60 0.5 timeout 20 rping -c -a $S -C 10 -v
if command -v ulnetd >/dev/null; then
	ulnetd --help >/dev/null 2>&1 || { echo "ulnetd from the share does not run:"; ulnetd --help; exit 1; }
	echo "ulnetd from the share runs"
fi
EOF

T1=$(date +%s.%N)
rig_up 2 || { echo "FAIL: rig_up"; exit 1; }
FAILS=0
if ! rig_wait; then
	echo "FAIL: guests did not power off in time"
	FAILS=$((FAILS + 1))
fi
T2=$(date +%s.%N)

rig_failed_guests 2
FAILS=$((FAILS + RIG_FAILED))

L2=$(rig_log 2)
# ibv_rc_pingpong: "8192000 bytes in 0.07 seconds = 930.52 Mbit/sec" and
# "1000 iters in 0.07 seconds = 70.43 usec/iter"
pp=$(grep -h -E 'Mbit/sec|usec/iter' "$L2" 2>/dev/null | tr '\n' ';' || true)
# ib_write_bw: the line under "#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]"
bw=$(awk '/BW average/ { getline; print; exit }' "$L2" 2>/dev/null || true)
for i in 1 2; do
	grep -q "state:.*PORT_ACTIVE" "$(rig_log "$i")" 2>/dev/null ||
		{ echo "FAIL: guest $i: no ACTIVE port on rxe0"; FAILS=$((FAILS + 1)); }
done
[[ -n $pp ]] || { echo "FAIL: ibv_rc_pingpong gave no figure"; FAILS=$((FAILS + 1)); }
[[ -n $bw ]] || { echo "FAIL: ib_write_bw gave no figure"; FAILS=$((FAILS + 1)); }
grep -q "rdma-ping-9:" "$L2" 2>/dev/null || { echo "FAIL: rping did not get its 10 pings through"; FAILS=$((FAILS + 1)); }

echo "accelerator:     $RIG_ACCEL (${RIG_ACCEL_ARGS[*]})"
echo "kernel:          $(cat "$RIG_DIR/kver"), initramfs $(du -h "$RIG_DIR/initramfs.img" | cut -f1)"
echo "image:           ${RIG_IMAGE_S}s (rig-image.sh)"
echo "boot to script:  guest 1 ${RIG_BOOT_S[1]:-?}s, guest 2 ${RIG_BOOT_S[2]:-?}s"
echo "guests' run:     $(rig_secs "$T1" "$T2")s (start to both powered off)"
echo "ibv_rc_pingpong: ${pp:-none}"
echo "ib_write_bw:     ${bw:-none}  (bytes iterations peak[Gb/s] average[Gb/s] Mpps)"
echo "rping:           $(grep -c "rdma-ping-" "$L2" 2>/dev/null || true) pings over rdma_cm"
grep -h "ulnetd from the share" "$L2" 2>/dev/null || true
rig_verdict "$T0"
