#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_deb.sh - the Debian packages, built, checked, installed, used, removed.
#
#  - scripts/make-deb.sh (what `make deb` runs) builds libulnet0,
#    libulnet-dev and ulnet from debian/ with debhelper, and lintian reports
#    no error on them; the exported symbols are debian/libulnet0.symbols'
#    (dpkg-gensymbols -c4 in debian/rules fails the build otherwise);
#  - each package holds what it must (the library and its SONAME link; the
#    headers, libulnet.so, libulnet.a, ulnet.pc, the CMake package and
#    libulnet(3); the tools, the unit, the conffile and the tools' man pages);
#  - the packages are installed: for real (dpkg -i: maintainer scripts,
#    conffile, unit installed but not enabled) only when asked
#    (ULNET_DEB_REAL_INSTALL=1, as .ci/run does on its fresh machine), as
#    root, on a machine where dpkg knows none of the three in any state and
#    none of their files exists (the test never replaces or purges what a
#    site has), purged at the end whatever happens; otherwise into a scratch
#    root with dpkg-deb -x;
#  - examples/put_get.c builds against the installed headers and library
#    with `pkg-config --cflags --libs ulnet` and runs (PUT and GET of 1 MiB,
#    "data verified") on the installed libulnet.so.0; the installed ulnetd
#    starts with the installed /etc/ulnet/ulnet.conf and ulnetctl talks to it;
#  - after the purge nothing of the packages is left.
# Skips (77) without dpkg-buildpackage, debhelper or lintian
# (scripts/install-deps.sh installs them), and in sanitizer builds: the
# packages are built with Debian's flags whatever this build's are, so one
# run (the plain build's) checks them.
set -u
SRC=$(cd "${ULNET_SRC:-.}" && pwd)
CC=${ULNET_CC:-cc}
WERR=
[[ ${ULNET_WERROR:-OFF} =~ ^(ON|1|TRUE|YES)$ ]] && WERR=-Werror
for t in dpkg-buildpackage dh lintian pkg-config; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (scripts/install-deps.sh installs it)"; exit 77; }
done
[[ -n ${ULNET_SAN_FLAGS:-} ]] && { echo "SKIP: sanitizer build (the packages are built with Debian's flags; the plain build's run checks them)"; exit 77; }
# shellcheck source=../support/put_get_lib.sh
. "$SRC/tests/support/put_get_lib.sh"

T=$(mktemp -d /tmp/ulnet-deb.XXXXXX)
PKGS=(libulnet0 libulnet-dev ulnet)
INSTALLED=0
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	if ((INSTALLED)); then
		dpkg --purge "${PKGS[@]}" >/dev/null 2>&1 || echo "WARN: dpkg --purge ${PKGS[*]} failed"
	fi
	[[ -n ${KEEP:-} ]] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# --- build and lint --------------------------------------------------------------------
if ! JOBS=${JOBS:-$(nproc)} "$SRC/scripts/make-deb.sh" "$T/out" >"$T/make-deb.log" 2>&1; then
	cat "$T/make-deb.log"
	echo "FAIL: scripts/make-deb.sh (the packages' build or lintian)"
	exit 1
fi
sed -n '/^[EWI]: /p; /^make-deb: lintian/p' "$T/make-deb.log"
grep -q '^make-deb: lintian: no errors' "$T/make-deb.log" || fail "make-deb did not report a clean lintian run"
version=$(sed -n 's/^project(ulnet VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
major=${version%%.*}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch
declare -A DEB
for p in "${PKGS[@]}"; do
	DEB[$p]=$(ls "$T/out/${p}_${version}"*"_$arch.deb" 2>/dev/null | head -1)
	[[ -f ${DEB[$p]} ]] || { echo "FAIL: no $p package in $T/out"; exit 1; }
done

# --- what each package holds -------------------------------------------------------
# has PACKAGE PATH...: each PATH is in PACKAGE's data
has() {
	local p=$1 f
	shift
	dpkg-deb -c "${DEB[$p]}" | awk '{print $6}' | sed 's|^\./|/|' >"$T/list.$p"
	for f in "$@"; do grep -qxF "$f" "$T/list.$p" || fail "$p does not hold $f"; done
}
has libulnet0 "$libdir/libulnet.so.$version" "$libdir/libulnet.so.$major"
has libulnet-dev /usr/include/ulnet/ulnet.h /usr/include/ulnet/export.h "$libdir/libulnet.so" \
	"$libdir/libulnet.a" "$libdir/pkgconfig/ulnet.pc" "$libdir/cmake/ulnet/ulnetConfig.cmake" \
	/usr/share/man/man3/libulnet.3.gz /usr/share/doc/libulnet-dev/examples/put_get.c
has ulnet /usr/sbin/ulnetd /usr/sbin/ulnetctl /usr/bin/ulst /lib/systemd/system/ulnetd.service \
	/etc/ulnet/ulnet.conf /usr/share/man/man8/ulnetd.8.gz /usr/share/man/man8/ulnetctl.8.gz \
	/usr/share/man/man8/ulst.8.gz /usr/share/doc/ulnet/tools.md
# the runtime package has the library only: a second libulnet0 (a later
# SONAME) must be installable beside it
grep -v -e "^$libdir/libulnet.so.$major" -e '^/usr/share/doc/libulnet0' -e '/$' "$T/list.libulnet0" |
	grep . && fail "libulnet0 holds more than the library"
dpkg-deb -f "${DEB[libulnet-dev]}" Depends | grep -qF "libulnet0 (= " || fail "libulnet-dev does not depend on its libulnet0"
dpkg-deb --ctrl-tarfile "${DEB[ulnet]}" | tar -xOf - ./conffiles 2>/dev/null | grep -qx /etc/ulnet/ulnet.conf ||
	fail "ulnet does not mark /etc/ulnet/ulnet.conf a conffile"
dpkg-deb --ctrl-tarfile "${DEB[libulnet0]}" | tar -xOf - ./shlibs 2>/dev/null | grep -q "^libulnet $major libulnet0" ||
	fail "libulnet0 has no shlibs entry for libulnet.so.$major"

# --- install -------------------------------------------------------------------------
installed_here() {
	local p
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' && return 0
	done
	return 1
}
# why a real install would touch what is already here ("" if nothing):
# any state dpkg keeps of the packages (config-files left by a remove,
# half-installed...), or any file of theirs (a `make install` to /usr)
site_has_ulnet() {
	local p st f
	for p in "${PKGS[@]}"; do
		st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) || continue
		[[ -z $st || $st == un* ]] || { echo "dpkg knows $p ($st)"; return; }
	done
	for f in /usr/sbin/ulnetd /usr/sbin/ulnetctl /usr/bin/ulst /etc/ulnet "$libdir"/libulnet.so* \
		/usr/include/ulnet /lib/systemd/system/ulnetd.service /usr/lib/systemd/system/ulnetd.service; do
		[[ -e $f || -L $f ]] && { echo "$f exists"; return; }
	done
}
R=
why=
if [[ ${ULNET_DEB_REAL_INSTALL:-0} != 1 ]]; then
	why="ULNET_DEB_REAL_INSTALL=1 not set"
elif [[ $(id -u) -ne 0 ]]; then
	why="not root"
else
	why=$(site_has_ulnet)
fi
if [[ -z $why ]]; then
	echo "--- installing the packages on this machine (dpkg -i; purged at the end)"
	INSTALLED=1
	if ! dpkg -i "${DEB[@]}" >"$T/dpkg.log" 2>&1; then
		cat "$T/dpkg.log"
		echo "FAIL: dpkg -i ${DEB[*]##*/}"
		exit 1
	fi
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" | grep -q 'install ok installed' || fail "$p is not installed after dpkg -i"
	done
	# the unit is installed, neither enabled nor started (debian/rules)
	[[ -e /etc/systemd/system/multi-user.target.wants/ulnetd.service ]] && fail "dpkg -i enabled ulnetd.service"
	PC=(env -u PKG_CONFIG_PATH -u PKG_CONFIG_SYSROOT_DIR pkg-config)
	RUNENV=()
else
	echo "--- installing the packages into a scratch root (dpkg-deb -x; $why)"
	R=$T/root
	for p in "${PKGS[@]}"; do dpkg-deb -x "${DEB[$p]}" "$R" || fail "dpkg-deb -x ${DEB[$p]}"; done
	PC=(env PKG_CONFIG_PATH="$R$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$R" pkg-config)
	RUNENV=(env LD_LIBRARY_PATH="$R$libdir")
fi

# --- a program built against the installed packages --------------------------------------
[[ $("${PC[@]}" --modversion ulnet) == "$version" ]] || fail "pkg-config --modversion ulnet: '$("${PC[@]}" --modversion ulnet)', expected $version"
cflags=$("${PC[@]}" --cflags ulnet) && libs=$("${PC[@]}" --libs ulnet) || fail "pkg-config --cflags --libs ulnet"
echo "--- pkg-config --cflags --libs ulnet: $cflags $libs"
# shellcheck disable=SC2086
if $CC -Wall -Wextra $WERR -pthread $cflags "$SRC/examples/put_get.c" -o "$T/put_get" $libs 2>"$T/cc.log"; then
	# (compared resolved: with merged /usr, /lib/<multiarch> is /usr/lib/<multiarch>)
	got=$("${RUNENV[@]}" ldd "$T/put_get" | awk -v l="libulnet.so.$major" '$1 == l { print $3 }')
	[[ -n $got && $(readlink -f "$got") == $(readlink -f "$R$libdir/libulnet.so.$major") ]] ||
		{ fail "put_get does not run on the packaged $R$libdir/libulnet.so.$major:"; "${RUNENV[@]}" ldd "$T/put_get"; }
	run_put_get "$T/run.log" "${RUNENV[@]}" "$T/put_get" || fail "put_get (built against the packages) did not verify its data"
else
	fail "put_get does not build against the installed packages:"
	cat "$T/cc.log"
fi

# --- the packaged daemon with the packaged configuration ------------------------------
"$R/usr/sbin/ulnetd" --config "$R/etc/ulnet/ulnet.conf" --ctl "$T/ctl/ulnetd.sock" >"$T/ulnetd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [[ -S $T/ctl/ulnetd.sock ]] && break; kill -0 "${PIDS[0]}" 2>/dev/null || break; sleep 0.05; done
out=$("$R/usr/sbin/ulnetctl" --ctl "$T/ctl/ulnetd.sock" net show 2>&1)
grep -q "nid: 0@lo" <<<"$out" || { fail "packaged ulnetctl net show on the packaged ulnetd:"; echo "$out"; cat "$T/ulnetd.log"; }
kill -TERM "${PIDS[0]}" 2>/dev/null
wait "${PIDS[0]}" 2>/dev/null
PIDS=()

# --- remove ----------------------------------------------------------------------------
if ((INSTALLED)); then
	dpkg --purge "${PKGS[@]}" >"$T/purge.log" 2>&1 || { cat "$T/purge.log"; fail "dpkg --purge ${PKGS[*]}"; }
	INSTALLED=0
	installed_here && fail "packages still installed after dpkg --purge"
	for f in /usr/sbin/ulnetd /usr/bin/ulst "$libdir/libulnet.so.$major" /usr/include/ulnet/ulnet.h \
		/lib/systemd/system/ulnetd.service /etc/ulnet/ulnet.conf; do
		[[ -e $f ]] && fail "$f left after dpkg --purge"
	done
	echo "--- purged"
fi

((FAILS)) && { echo "$FAILS failure(s)"; exit 1; }
echo "OK: libulnet0, libulnet-dev, ulnet $version built, lintian-clean, installed, used and removed"
