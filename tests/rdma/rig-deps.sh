#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rig-deps.sh - installs the host packages the soft-RoCE qemu rig
# (tests/rdma/) needs. Idempotent: does nothing when all are present.
# Kept apart from scripts/install-deps.sh on purpose: the main suite must not
# pull qemu and the RDMA stack onto every builder.
set -euo pipefail
# qemu-system-x86: boots the guests (KVM or TCG); (busybox-static, the
# guests' user land, is not installed: it would remove a host's busybox;
# rig-image.sh takes it out of its package); rdma-core, ibverbs-providers (librxe), ibverbs-utils
# (ibv_devices, ibv_devinfo, ibv_rc_pingpong), rdmacm-utils (rping),
# perftest (ib_write_bw...), iproute2 (rdma): copied from the host into the
# guest image; libibverbs-dev, librdmacm-dev: for building the o2ib LND
# against them later; cpio, zstd: pack the initramfs; xz-utils: take vmlinux
# out of vmlinuz; kmod: depmod for the guest's module tree.
pkgs=(qemu-system-x86 rdma-core ibverbs-providers ibverbs-utils
      rdmacm-utils perftest libibverbs-dev librdmacm-dev iproute2 cpio zstd
      xz-utils kmod)
exec "$(dirname "$0")/../../scripts/apt-ensure.sh" rig-deps "${pkgs[@]}"
