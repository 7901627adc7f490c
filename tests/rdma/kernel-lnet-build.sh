#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kernel-lnet-build.sh LUSTRE_SRC [OUTDIR] - the kernel's LNet for the rig's
# guest kernel, for tests/rdma/test_o2ib_kernel.sh: libcfs.ko, lnet.ko,
# ko2iblnd.ko and lnet_selftest.ko built from a lustre-release tree against
# the headers of the guest kernel, its lnetctl and lst with the libraries
# they need (lib/), and the guest kernel's own modules lnet.ko needs that the
# rig image lacks (kmod/: sunrpc).
#   LUSTRE_SRC  a lustre-release work tree, or a git directory (its HEAD is
#               exported); nothing is written into it
#   OUTDIR      default RIG_CACHE/kernel-lnet-<guest kernel version>, where
#               the test looks
# Lustre is GPL-2.0 and is not part of ulnet: this script drives its own build
# (autogen, configure --disable-server, the lnet modules and utilities) in a
# scratch directory and copies the results; no Lustre file enters this tree.
# Needs root (apt: linux-headers-<kver> and the build's packages) and the rig
# image (tests/rdma/rig-image.sh) for the guest kernel's version and package.
# Takes about 10 minutes on 2 CPUs.
set -euo pipefail

SRC=${1:?usage: kernel-lnet-build.sh LUSTRE_SRC [OUTDIR]}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RIG_CACHE=${RIG_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/ulnet-rig}
RIG_DIR=${RIG_DIR:-${ULNET_BUILD:-$ROOT/build}/rdma-rig}
say() { echo "kernel-lnet-build: $*" >&2; }

[[ -f $RIG_DIR/kver ]] || RIG_CACHE=$RIG_CACHE "$HERE/rig-image.sh" "$RIG_DIR" >&2
KVER=$(cat "$RIG_DIR/kver")
OUT=${2:-$RIG_CACHE/kernel-lnet-$KVER}
deb=$(ls "$RIG_CACHE/debs/linux-image-$KVER"_*.deb 2>/dev/null | head -n1) ||
	true
[[ -n $deb ]] || { say "no package of the guest kernel $KVER in $RIG_CACHE/debs"; exit 1; }

"$ROOT/scripts/apt-ensure.sh" kernel-lnet-build autoconf automake libtool pkg-config make gcc flex bison \
	"linux-headers-$KVER" libyaml-dev libnl-genl-3-dev libnl-3-dev libkeyutils-dev \
	libmount-dev libssl-dev zlib1g-dev libreadline-dev kmod >&2
HDR=/usr/src/linux-headers-$KVER

W=$(mktemp -d "${TMPDIR:-/tmp}/kernel-lnet.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir "$W/src"
if [[ -d $SRC/.git || -f $SRC/.git ]]; then
	git -C "$SRC" archive HEAD | tar -x -C "$W/src"
elif git --git-dir="$SRC" rev-parse HEAD >/dev/null 2>&1; then
	# a bare mirror may lack the test suite's large binaries: not needed here
	git --git-dir="$SRC" archive HEAD -- . ':(exclude)lustre/tests/*.tar.bz2' \
		':(exclude)lustre/tests/*.tar.gz' | tar -x -C "$W/src"
else
	cp -a "$SRC/." "$W/src/"
fi
cd "$W/src"
say "autogen, configure (client only, in-kernel o2ib) against $HDR"
sh autogen.sh >"$W/autogen.log" 2>&1 || { tail -20 "$W/autogen.log" >&2; exit 1; }
./configure --disable-server --disable-tests --disable-doc --disable-manpages \
	--disable-gss --disable-crypto --with-linux="$HDR" --with-linux-obj="$HDR" \
	--with-o2ib=yes >"$W/configure.log" 2>&1 || { tail -30 "$W/configure.log" >&2; exit 1; }
grep -q "enable OpenIB gen2 support... yes" "$W/configure.log" ||
	{ say "configure did not enable the in-kernel o2ib LND"; exit 1; }
# the lnet modules only (libcfs, lnet, the LNDs, selftest), not the client
sed -i 's|^obj-m += lustre/|#&|' Kbuild
say "building the lnet modules"
make modules -j"$(nproc)" >"$W/modules.log" 2>&1 || { tail -30 "$W/modules.log" >&2; exit 1; }
say "building lnetctl and lst"
{ make -C lib -j"$(nproc)" && make -C lnet/utils -j"$(nproc)"; } >"$W/utils.log" 2>&1 ||
	{ tail -30 "$W/utils.log" >&2; exit 1; }

rm -rf "$OUT.new"
mkdir -p "$OUT.new/lib" "$OUT.new/kmod"
cp lnet/libcfs/libcfs.ko lnet/lnet/lnet.ko lnet/klnds/in-kernel-o2iblnd/ko2iblnd.ko \
	lnet/selftest/lnet_selftest.ko "$OUT.new/"
strip --strip-debug "$OUT.new"/*.ko
cp lnet/utils/.libs/lnetctl lnet/utils/.libs/lst "$OUT.new/"
cp -L lnet/utils/lnetconfig/.libs/liblnetconfig.so.[0-9] "$OUT.new/lib/"
LD_LIBRARY_PATH=$OUT.new/lib ldd "$OUT.new/lnetctl" "$OUT.new/lst" |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
	while read -r l; do cp -L -n "$l" "$OUT.new/lib/"; done
# lnet.ko needs sunrpc, which the rig image does not carry
mkdir "$W/kernel"
dpkg-deb -x "$deb" "$W/kernel"
deps=$(modinfo -F depends "$OUT.new/lnet.ko" "$OUT.new/ko2iblnd.ko") ||
	{ say "modinfo cannot read the modules built"; exit 1; }
for m in $(echo "$deps" | tr ',' '\n' | sort -u); do
	case $m in libcfs | lnet | ib_core | rdma_cm | '') continue ;; esac
	f=$(find "$W/kernel/lib/modules/$KVER" -name "$m.ko*" | head -n1)
	[[ -n $f ]] || { say "module $m (a dependency of lnet) not in $deb"; exit 1; }
	cp "$f" "$OUT.new/kmod/"
done
rm -rf "$OUT"
mv "$OUT.new" "$OUT"
say "done: $OUT ($(modinfo -F vermagic "$OUT/lnet.ko"))"
