#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rig-image.sh OUTDIR - the guest image of the soft-RoCE rig (tests/rdma/):
#   OUTDIR/vmlinuz         Debian 12's kernel (the package linux-image-amd64
#                          depends on), linked from the kernel cache
#   OUTDIR/vmlinux         the same, decompressed, for a PVH boot (faster)
#   OUTDIR/initramfs.img   busybox-static, the kernel modules the guest needs,
#                          rdma-core's user space and the tools (ibverbs-utils,
#                          perftest, rping, rdma) copied from this host with
#                          every shared library they need, and tests/rdma/guest/
#                          (/init, /lib/ulrig.sh); zstd-compressed newc cpio
# Caches, so that a rerun downloads and extracts nothing; the kernel's in
# RIG_CACHE (default OUTDIR; tests/rdma/rig.sh shares one between build trees):
#   RIG_CACHE/debs/           the kernel .deb (apt-get download)
#   RIG_CACHE/kernel-<kver>/  vmlinuz, vmlinux and the modules taken from it
#   OUTDIR/image.key          what the image was built from; equal = no rebuild
# RIG_LIBS_FROM="DIR|FILE ..." adds the libraries of those ELF programs (the
# ulnet build's bin/, whose programs reach the guests through a share).
# Exit status: 0 built or up to date; 77 the kernel package can be neither
# downloaded nor found in the cache (the test skips); other: an error.
set -euo pipefail

OUT=${1:?usage: rig-image.sh OUTDIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
KC=${RIG_CACHE:-$OUT}
mkdir -p "$KC/debs"
KC=$(cd "$KC" && pwd)
ARCH_TRIPLET=x86_64-linux-gnu
say() { echo "rig-image: $*" >&2; }
# one rig-image.sh at a time on the kernel cache, and on OUT (two tests, or a
# test and a hand run); bounded, like every wait of the rig
exec 8>"$KC/.kernel.lock"
flock -w 600 8 || { say "$KC is locked by another rig-image.sh for 10 minutes"; exit 1; }

# --- the kernel package ----------------------------------------------------------
# The ABI-versioned package the meta-package points at today, e.g.
# linux-image-6.1.0-56-amd64 (security updates move it).
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }') || true
cached_deb() { # the cached .deb of package $1, or of any kernel when $1 is empty
	local f
	for f in "$KC/debs/${1:-linux-image-}"*_amd64.deb; do
		[[ -f $f ]] && { echo "$f"; return 0; }
	done
	return 1
}
download() { # apt-get download $1 into KC/debs (the kernel only: nothing installed)
	local tmp
	tmp=$(mktemp -d "$KC/debs/dl.XXXXXX")
	# _apt cannot write to a root-owned directory; the warning it gives is noise
	chmod 0777 "$tmp"
	if (cd "$tmp" && apt-get download -q "$1" >&2); then
		mv "$tmp"/*.deb "$KC/debs/"
		rm -rf "$tmp"
		return 0
	fi
	rm -rf "$tmp"
	return 1
}
deb=
if [[ -n $kpkg ]]; then
	if ! deb=$(cached_deb "$kpkg"); then
		say "downloading $kpkg"
		# a stale package list names a version the mirror dropped: update once
		if download "$kpkg" || { [[ $(id -u) == 0 ]] && apt-get update -qq >&2 && download "$kpkg"; }; then
			deb=$(cached_deb "$kpkg")
		else
			deb=
		fi
	fi
fi
if [[ -z $deb ]]; then
	# no apt, or no mirror: any kernel fetched before will do
	deb=$(cached_deb "") || { say "cannot download ${kpkg:-the kernel of linux-image-amd64} and none is cached in $KC/debs"; exit 77; }
	say "using the cached $(basename "$deb")"
fi
kver=$(dpkg-deb -f "$deb" Package)
kver=${kver#linux-image-}
# only the kernel in use stays cached (each .deb is ~70 MB)
for f in "$KC"/debs/linux-image-*.deb; do
	[[ $f == "$deb" ]] || rm -f "$f"
done

# --- the kernel and its modules -----------------------------------------------
KDIR=$KC/kernel-$kver
# The modules the guest loads (guest/init); modules.dep of the package gives
# what they need. The package ships no modules.dep (its postinst runs
# depmod): depmod over the whole extracted tree makes it.
# crc32_generic, crc32_pclmul: rxe asks the crypto API for "crc32" at run
# time (request_module, invisible to modules.dep).
MODS=(virtio_pci virtio_net 9pnet_virtio 9p rdma_rxe rdma_ucm ib_uverbs crc32_generic crc32_pclmul)
if [[ ! -f $KDIR/done ]]; then
	say "extracting vmlinuz and ${#MODS[@]} modules (and their dependencies) from $(basename "$deb")"
	rm -rf "$KDIR" "$KC"/kernel-*
	x=$(mktemp -d "$KC/x.XXXXXX")
	trap 'rm -rf "$x"' EXIT
	dpkg-deb -x "$deb" "$x"
	depmod -b "$x" "$kver"
	mkdir -p "$KDIR/lib/modules/$kver"
	cp "$x/boot/vmlinuz-$kver" "$KDIR/vmlinuz"
	# vmlinux: the kernel decompressed, booted through its PVH entry
	# (CONFIG_PVH) by qemu -kernel: under TCG the decompressor alone takes
	# seconds of every boot. The bzImage's payload is the xz stream that
	# starts at the first xz magic (CONFIG_KERNEL_XZ; otherwise the guests
	# boot vmlinuz).
	if grep -q '^CONFIG_PVH=y' "$x/boot/config-$kver" && grep -q '^CONFIG_KERNEL_XZ=y' "$x/boot/config-$kver"; then
		off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$KDIR/vmlinuz" | head -n 1 | cut -d: -f1) || true
		# (xz stops reading at the stream's end: tail's SIGPIPE is no error)
		if [[ -n $off ]] && { tail -c +$((off + 1)) "$KDIR/vmlinuz" || true; } | xz -dc --single-stream >"$KDIR/vmlinux.tmp" 2>/dev/null &&
			[[ $(head -c4 "$KDIR/vmlinux.tmp" | od -An -c | tr -d ' ') == 177ELF ]]; then
			mv "$KDIR/vmlinux.tmp" "$KDIR/vmlinux"
		else
			rm -f "$KDIR/vmlinux.tmp"
			say "could not take vmlinux out of vmlinuz: the guests boot vmlinuz"
		fi
	fi
	for m in "${MODS[@]}"; do
		modprobe -d "$x" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
	done | sort -u | while read -r ko; do
		rel=${ko#"$x/"}
		mkdir -p "$KDIR/$(dirname "$rel")"
		cp "$ko" "$KDIR/$rel"
	done
	cp "$x/lib/modules/$kver"/modules.{builtin,builtin.modinfo,order} "$KDIR/lib/modules/$kver/"
	# modules.dep of the subset, for the guest's busybox modprobe
	depmod -b "$KDIR" "$kver"
	rm -rf "$x"
	trap - EXIT
	touch "$KDIR/done"
fi
# --- busybox, static: the guests' user land ---------------------------------------
# The host's /bin/busybox when it is the static one; else taken out of the
# busybox-static package, downloaded into the cache, never installed (it
# conflicts with the busybox package, which would be removed).
BB=/bin/busybox
if [[ ! -x $BB ]] || ldd "$BB" >/dev/null 2>&1; then
	BB=$KC/busybox-static/bin/busybox
	if [[ ! -x $BB ]]; then
		bdeb=$(cached_deb busybox-static) || { download busybox-static && bdeb=$(cached_deb busybox-static); } ||
			{ say "cannot download busybox-static"; exit 77; }
		rm -rf "$KC/busybox-static"
		dpkg-deb -x "$bdeb" "$KC/busybox-static"
	fi
	[[ -x $BB ]] || { say "no busybox in $(basename "$bdeb")"; exit 1; }
fi
exec 8>&- # the kernel cache is done with
exec 9>"$OUT/.image.lock"
flock -w 600 9 || { say "$OUT is locked by another rig-image.sh for 10 minutes"; exit 1; }

# --- user space: what goes in, and the libraries it needs ---------------------
# ibverbs-utils, perftest, rdmacm-utils, iproute2's rdma: the tools the
# guests run (the host's, so the guests match what the LND builds against).
TOOLS=(rdma ibv_devices ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong
	ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat
	rping ucmatose)
ELFS=()
for t in "${TOOLS[@]}"; do
	p=$(command -v "$t") || { say "$t not installed (tests/rdma/rig-deps.sh installs it)"; exit 1; }
	ELFS+=("$(readlink -f "$p")")
done
# the rxe provider, dlopened by libibverbs from its compiled-in directory
RXE=()
for f in /usr/lib/"$ARCH_TRIPLET"/libibverbs/librxe-rdmav*.so; do
	[[ -f $f ]] && RXE+=("$f")
done
[[ ${#RXE[@]} -gt 0 && -f /etc/libibverbs.d/rxe.driver ]] || { say "no rxe provider (ibverbs-providers)"; exit 1; }
# libyaml: ulnetd and ulnetctl; libgcc_s: glibc dlopens it to unwind at
# pthread_cancel/pthread_exit
EXTRA_LIBS=(libyaml-0.so.2 libgcc_s.so.1)
# the libraries of the ulnet programs the guests will run from the share
LIBS_ONLY=()
for d in ${RIG_LIBS_FROM:-}; do
	for f in "$d" "$d"/*; do
		[[ -f $f && -x $f ]] || continue
		[[ $(head -c4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] && LIBS_ONLY+=("$f")
	done
done
libs_of() { # the resolved paths of the shared libraries of ELF files "$@"
	ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }'
}
LIBS=$({
	libs_of "${ELFS[@]}" "${RXE[@]}" "${LIBS_ONLY[@]}"
	for l in "${EXTRA_LIBS[@]}"; do
		for d in /lib/$ARCH_TRIPLET /usr/lib/$ARCH_TRIPLET; do
			[[ -e $d/$l ]] && { echo "$d/$l"; break; }
		done
	done
} | sort -u)

# --- up to date? ---------------------------------------------------------------
# Rebuild when the kernel, this script, the guest files, the tools or any
# library changed (a package upgrade changes what dpkg says about the file).
key=$({
	echo "kernel $kver"
	sha256sum "${BASH_SOURCE[0]}" "$HERE"/guest/* | awk '{ print $1 }'
	for f in "$BB" "${ELFS[@]}" "${RXE[@]}" $LIBS; do
		stat -L -c '%n %s %Y' "$f"
	done
} | sha256sum | awk '{ print $1 }')
if [[ -f $OUT/initramfs.img && -f $OUT/vmlinuz && ( -f $OUT/vmlinux || ! -f $KDIR/vmlinux ) && $(cat "$OUT/image.key" 2>/dev/null) == "$key" ]]; then
	say "up to date: $OUT/initramfs.img ($kver)"
	exit 0
fi

# --- the initramfs ---------------------------------------------------------------
say "building $OUT/initramfs.img ($kver)"
S=$(mktemp -d "$OUT/stage.XXXXXX")
trap 'rm -rf "$S"' EXIT
# no merged /usr in the guest: every file at the path the host's ldd names
mkdir -p "$S"/{bin,sbin,usr/bin,usr/sbin,lib64,etc,proc,sys,dev,tmp,run,root,host}
mkdir -p "$S/lib/$ARCH_TRIPLET" "$S/usr/lib/$ARCH_TRIPLET/libibverbs" "$S/etc/libibverbs.d"
cp "$BB" "$S/bin/busybox"
# the applets as links, made here rather than by busybox --install at boot
while read -r a; do
	[[ -e $S/$a || -L $S/$a ]] || ln -s /bin/busybox "$S/$a"
done < <("$BB" --list-full)
cp "${ELFS[@]}" "$S/usr/bin/"
for l in $LIBS; do
	mkdir -p "$S$(dirname "$l")"
	cp -L "$l" "$S$l" # the file under its soname, not the link
done
cp "${RXE[@]}" "$S/usr/lib/$ARCH_TRIPLET/libibverbs/"
cp /etc/libibverbs.d/rxe.driver "$S/etc/libibverbs.d/"
mkdir -p "$S/lib/modules"
cp -a "$KDIR/lib/modules/$kver" "$S/lib/modules/"
install -m 0755 "$HERE/guest/init" "$S/init"
install -m 0644 "$HERE/guest/ulrig.sh" "$S/lib/ulrig.sh"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$S/etc/passwd"
printf 'root:x:0:\n' >"$S/etc/group"
printf '127.0.0.1 localhost\n' >"$S/etc/hosts"
printf '/lib/%s\n/usr/lib/%s\n' "$ARCH_TRIPLET" "$ARCH_TRIPLET" >"$S/etc/ld.so.conf"
ldconfig -r "$S"
(cd "$S" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0 --reproducible) |
	zstd -q -19 -T1 >"$OUT/initramfs.img.tmp"
mv "$OUT/initramfs.img.tmp" "$OUT/initramfs.img"
# the kernel from the cache: a hard link, or a symbolic one across file systems
for k in vmlinuz vmlinux; do
	rm -f "$OUT/$k"
	if [[ -f $KDIR/$k ]]; then
		ln -f "$KDIR/$k" "$OUT/$k" 2>/dev/null || ln -s "$KDIR/$k" "$OUT/$k"
	fi
done
echo "$key" >"$OUT/image.key"
echo "$kver" >"$OUT/kver"
say "$(du -sh "$S" | cut -f1) staged, $(du -h "$OUT/initramfs.img" | cut -f1) compressed"
