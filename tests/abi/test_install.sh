#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_install.sh - the install tree, and programs built against it.
#
# `cmake --install` of this build (prefix /usr, the layout a package has)
# into a scratch DESTDIR, then:
#  - the tree has the headers, libulnet.so (with its SONAME links) and
#    libulnet.a, ulnet.pc, the CMake package, ulnetd and ulnetctl (sbin),
#    ulst (bin), ulnetd.service naming the installed ulnetd and config,
#    /etc/ulnet/ulnet.conf, which the installed ulnetd accepts, and the man
#    pages (when the build has them, ULNET_MAN): ulnetd.8, ulnetctl.8,
#    ulst.8 in share/man/man8 (component tools), libulnet.3 in man3
#    (component dev), with the project's version;
#  - examples/put_get.c compiles and links against the installed headers and
#    libulnet.so with `pkg-config --cflags --libs ulnet` (PKG_CONFIG_PATH and
#    PKG_CONFIG_SYSROOT_DIR into the DESTDIR) and runs (LD_LIBRARY_PATH): PUT
#    and GET of 1 MiB, "data verified". libulnet.so exports the public API
#    only, so this also proves put_get needs nothing else;
#  - a small CMake project with find_package(ulnet) (CMAKE_PREFIX_PATH into
#    the DESTDIR) builds put_get against ulnet::ulnet and ulnet::ulnet_static
#    and runs them;
#  - a second install keeps an existing /etc/ulnet/ulnet.conf.
# Runs as any user (nothing outside the scratch directory is written). Skips
# (77) without pkg-config. Environment: ULNET_BUILD, ULNET_SRC, ULNET_CC (the
# build's compiler), ULNET_SAN_FLAGS (its sanitizer flags, for the consumers),
# ULNET_WERROR (ON: the consumers' warnings are errors too), ULNET_MAN (OFF:
# the build has no man pages).
set -u
SRC=$(cd "${ULNET_SRC:-.}" && pwd)
BUILD=$(cd "${ULNET_BUILD:-build}" && pwd)
CC=${ULNET_CC:-cc}
SAN=${ULNET_SAN_FLAGS:-}
WERR=
[[ ${ULNET_WERROR:-OFF} =~ ^(ON|1|TRUE|YES)$ ]] && WERR=-Werror
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config not installed (scripts/install-deps.sh installs it)"; exit 77; }
command -v cmake >/dev/null || { echo "SKIP: cmake not in PATH"; exit 77; }
# cmake --install writes its manifest and the generated files into the build
# tree: one left by another user (a `sudo make install`) cannot be rewritten
for f in "$BUILD" "$BUILD"/install_manifest*.txt "$BUILD/install-generated" "$BUILD"/install-generated/*; do
	[[ -e $f && ! -w $f ]] && { echo "SKIP: $f is not writable by uid $(id -u) (left by another user's install?)"; exit 77; }
done

# shellcheck source=../support/put_get_lib.sh
. "$SRC/tests/support/put_get_lib.sh"

T=$(mktemp -d /tmp/ulnet-install.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	[[ -n ${KEEP:-} ]] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
D=$T/root

# --- install -----------------------------------------------------------------
if ! DESTDIR=$D cmake --install "$BUILD" --prefix /usr >"$T/install.log" 2>&1; then
	cat "$T/install.log"
	echo "FAIL: cmake --install"
	exit 1
fi
echo "--- installed (DESTDIR=$D):"
(cd "$D" && find . -mindepth 1 \( -type f -o -type l \) | sort | grep -v '^./usr/share/doc/')

version=$(sed -n 's/^project(ulnet VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
major=${version%%.*}
pc=$(cd "$D" && find . -name ulnet.pc -path '*/pkgconfig/*' | head -1)
libdir=$(dirname "${pc#.}")
libdir=${libdir%/pkgconfig}
[[ -n $pc ]] || { echo "FAIL: no ulnet.pc installed"; exit 1; }
case $libdir in /usr/lib|/usr/lib64|/usr/lib/*-linux-*) ;; *) fail "libdir $libdir is not under /usr/lib" ;; esac

want=(usr/include/ulnet/ulnet.h usr/include/ulnet/export.h usr/include/ulnet/nid.h
      usr/include/ulnet/fault.h usr/include/ulnet/routing.h usr/include/ulnet/selftest.h
      usr/include/ulnet/udsp.h
      "${libdir#/}/libulnet.so.$version" "${libdir#/}/libulnet.a"
      "${libdir#/}/cmake/ulnet/ulnetConfig.cmake" "${libdir#/}/cmake/ulnet/ulnetConfigVersion.cmake"
      "${libdir#/}/cmake/ulnet/ulnetTargets.cmake"
      usr/sbin/ulnetd usr/sbin/ulnetctl usr/bin/ulst
      usr/lib/systemd/system/ulnetd.service etc/ulnet/ulnet.conf usr/share/doc/ulnet/tools.md)
MAN8=(ulnetd.8 ulnetctl.8 ulst.8)
MAN3=(libulnet.3)
if [[ ${ULNET_MAN:-ON} == ON ]]; then
	want+=("${MAN8[@]/#/usr/share/man/man8/}" "${MAN3[@]/#/usr/share/man/man3/}")
else
	echo "note: this build has no man pages (ULNET_MAN=OFF): none checked"
fi
for f in "${want[@]}"; do [[ -e $D/$f ]] || fail "not installed: /$f"; done
[[ $(readlink "$D$libdir/libulnet.so") == "libulnet.so.$major" ]] || fail "libulnet.so does not link to libulnet.so.$major"
[[ $(readlink "$D$libdir/libulnet.so.$major") == "libulnet.so.$version" ]] || fail "libulnet.so.$major does not link to libulnet.so.$version"
for x in usr/sbin/ulnetd usr/sbin/ulnetctl usr/bin/ulst; do [[ -x $D/$x ]] || fail "/$x not executable"; done
# the archive holds machine code (an LTO build's objects are fat), so any
# compiler links it, not only the one that built it
if command -v nm >/dev/null; then
	nm "$D$libdir/libulnet.a" 2>/dev/null | grep -q ' T ulnet_create$' ||
		fail "libulnet.a has no machine code for ulnet_create (LTO bytecode only?)"
fi
unit=$D/usr/lib/systemd/system/ulnetd.service
grep -qxF "ExecStart=/usr/sbin/ulnetd --config /etc/ulnet/ulnet.conf --syslog --log-level info" "$unit" ||
	{ fail "ulnetd.service's ExecStart is not the installed ulnetd and config:"; grep ExecStart "$unit"; }
grep -q '@[A-Z_]*@' "$unit" "$D/$pc" && fail "unsubstituted @VARS@ in ulnetd.service or ulnet.pc"
grep -rl "$BUILD\|$SRC" "$D/$pc" "$D$libdir/cmake/ulnet" "$unit" 2>/dev/null |
	while read -r f; do echo "FAIL: $f names the build or source tree"; done | tee "$T/leaks"
[[ -s $T/leaks ]] && FAILS=$((FAILS + 1))

# --- the man pages: the version in each, and each in its component ----------------
if [[ ${ULNET_MAN:-ON} == ON ]]; then
	for f in "${MAN8[@]/#/man8/}" "${MAN3[@]/#/man3/}"; do
		[[ -f $D/usr/share/man/$f ]] || continue
		grep -q '^\.TH .*"ulnet '"$version"'"' "$D/usr/share/man/$f" ||
			fail "/usr/share/man/$f does not name ulnet $version in its .TH line"
		grep -q '@[A-Z_]*@' "$D/usr/share/man/$f" && fail "unsubstituted @VARS@ in /usr/share/man/$f"
	done
	for comp in tools dev; do
		DESTDIR=$T/comp-$comp cmake --install "$BUILD" --prefix /usr --component "$comp" >"$T/comp.log" 2>&1 ||
			{ fail "cmake --install --component $comp:"; cat "$T/comp.log"; continue; }
		got=$(cd "$T/comp-$comp/usr/share/man" 2>/dev/null && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
		if [[ $comp == tools ]]; then
			exp=$(printf '%s\n' "${MAN8[@]/#/man8/}" | sort | tr '\n' ' ')
		else
			exp=$(printf '%s\n' "${MAN3[@]/#/man3/}" | sort | tr '\n' ' ')
		fi
		[[ $got == "$exp" ]] || fail "component $comp installs the man pages '$got', expected '$exp'"
	done
fi

# --- the installed ulnetd accepts the installed example config -------------------
"$D/usr/sbin/ulnetd" --config "$D/etc/ulnet/ulnet.conf" --ctl "$T/ctl/ulnetd.sock" \
	--log-level info >"$T/ulnetd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [[ -S $T/ctl/ulnetd.sock ]] && break; kill -0 "${PIDS[0]}" 2>/dev/null || break; sleep 0.05; done
if [[ -S $T/ctl/ulnetd.sock ]]; then
	out=$("$D/usr/sbin/ulnetctl" --ctl "$T/ctl/ulnetd.sock" global show 2>&1)
	grep -q "transaction_timeout: 150" <<<"$out" || { fail "ulnetctl global show after --config:"; echo "$out"; }
	out=$("$D/usr/sbin/ulnetctl" --ctl "$T/ctl/ulnetd.sock" net show 2>&1)
	grep -q "nid: 0@lo" <<<"$out" || { fail "ulnetctl net show after --config:"; echo "$out"; }
else
	fail "installed ulnetd did not start with the installed /etc/ulnet/ulnet.conf:"
	cat "$T/ulnetd.log"
fi

# --- each installed header compiles on its own: strict C17, and C++ -------------------
for h in "$D"/usr/include/ulnet/*.h; do
	printf '#include <ulnet/%s>\nint ulnet_header_check;\n' "${h##*/}" >"$T/hdr.c"
	# shellcheck disable=SC2086
	$CC -std=c17 -Wall -Wextra -Wpedantic $WERR -I"$D/usr/include" -fsyntax-only "$T/hdr.c" 2>"$T/hdr.log" ||
		{ fail "<ulnet/${h##*/}> alone does not compile as C17:"; cat "$T/hdr.log"; }
	if command -v c++ >/dev/null; then
		# shellcheck disable=SC2086
		c++ -x c++ -std=c++17 -Wall -Wextra $WERR -I"$D/usr/include" -fsyntax-only "$T/hdr.c" 2>"$T/hdr.log" ||
			{ fail "<ulnet/${h##*/}> does not compile as C++:"; cat "$T/hdr.log"; }
	fi
done

# --- and its commented examples, uncommented (eth0 read as lo) ---------------------
# net + route + peer, then ip2nets + route + peer (one or the other, as the
# file says). On lo, at a free high port: nothing leaves the host.
sed -e 's/^#\([a-z]\)/\1/' -e 's/^#\(  \)/\1/' -e 's/eth0/lo/' -e 's/10\.73\.0\.\*/127.0.0.*/' \
	"$D/etc/ulnet/ulnet.conf" >"$T/all.conf"
awk '/^ip2nets:/ { skip = 1 } /^route:/ { skip = 0 } !skip' "$T/all.conf" >"$T/net.conf"
awk '/^net:/ { skip = 1 } /^ip2nets:/ { skip = 0 } !skip' "$T/all.conf" >"$T/ip2nets.conf"
for v in net ip2nets; do
	grep -q "^$v:" "$T/$v.conf" || { fail "no '$v:' example in /etc/ulnet/ulnet.conf"; continue; }
	for try in 1 2 3; do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		"$D/usr/sbin/ulnetd" --config "$T/$v.conf" --ctl "$T/ctl-$v/ulnetd.sock" \
			--accept-port "$port" --accept all >"$T/ulnetd-$v.log" 2>&1 &
		pid=$!
		PIDS+=("$pid")
		for _ in $(seq 100); do [[ -S $T/ctl-$v/ulnetd.sock ]] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
		[[ -S $T/ctl-$v/ulnetd.sock ]] && break
		grep -qF -- "-98" "$T/ulnetd-$v.log" || break   # EADDRINUSE: another port
	done
	if [[ -S $T/ctl-$v/ulnetd.sock ]]; then
		out=$(for c in "net show" "route show" "peer show"; do
			"$D/usr/sbin/ulnetctl" --ctl "$T/ctl-$v/ulnetd.sock" $c 2>&1; done)
		for want in "nid: 127.0.0.1@tcp" "net: tcp1" "gateway: 192.168.1.254@tcp" \
			    "primary nid: 192.168.1.3@tcp" "nid: 192.168.2.3@tcp1"; do
			grep -qF "$want" <<<"$out" || fail "the $v example: '$want' not configured"
		done
		kill -TERM "$pid" 2>/dev/null
	else
		fail "ulnetd refused the example config's $v variant:"
		cat "$T/ulnetd-$v.log"
	fi
done

# --- pkg-config consumer: examples/put_get.c ----------------------------------------
export PKG_CONFIG_PATH=$D$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
[[ $(pkg-config --modversion ulnet) == "$version" ]] || fail "pkg-config --modversion ulnet: '$(pkg-config --modversion ulnet)', expected $version"
flags=$(pkg-config --cflags --libs ulnet) || fail "pkg-config --cflags --libs ulnet"
echo "--- pkg-config --cflags --libs ulnet: $flags"
# put_get uses pthreads itself (-pthread: its own flag, not the library's)
# shellcheck disable=SC2086
if $CC -Wall -Wextra $WERR $SAN -pthread $(pkg-config --cflags ulnet) \
	"$SRC/examples/put_get.c" -o "$T/put_get" $(pkg-config --libs ulnet) 2>"$T/cc.log"; then
	readelf -d "$T/put_get" | grep -q "NEEDED.*\[libulnet.so.$major\]" ||
		fail "put_get is not linked to libulnet.so.$major"
else
	fail "put_get does not build against the installed headers and library:"
	cat "$T/cc.log"
fi

if [[ -x $T/put_get ]]; then
	LD_LIBRARY_PATH=$D$libdir run_put_get "$T/run.log" "$T/put_get" ||
		fail "put_get (pkg-config, libulnet.so) did not verify its data"
	# it runs on the installed library, not another one
	LD_LIBRARY_PATH=$D$libdir ldd "$T/put_get" 2>/dev/null | grep -qF "$D$libdir/libulnet.so.$major" ||
		fail "put_get did not resolve libulnet.so.$major in the DESTDIR"
fi

# --- CMake consumer: find_package(ulnet) ------------------------------------------
mkdir -p "$T/consumer"
cat >"$T/consumer/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.20)
project(ulnet_consumer C)
find_package(ulnet $version REQUIRED)
find_package(Threads REQUIRED)
add_executable(put_get "$SRC/examples/put_get.c")
target_link_libraries(put_get PRIVATE ulnet::ulnet Threads::Threads)
add_executable(put_get_static "$SRC/examples/put_get.c")
target_link_libraries(put_get_static PRIVATE ulnet::ulnet_static Threads::Threads)
EOT
if cmake -S "$T/consumer" -B "$T/consumer/build" -DCMAKE_PREFIX_PATH="$D/usr" \
	-DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$SAN" >"$T/cmake.log" 2>&1 &&
   cmake --build "$T/consumer/build" >>"$T/cmake.log" 2>&1; then
	grep -F "ulnet_DIR" "$T/consumer/build/CMakeCache.txt" | grep -qF "$D" ||
		fail "find_package(ulnet) did not find the DESTDIR's package"
	run_put_get "$T/run.log" "$T/consumer/build/put_get" || fail "put_get (find_package, ulnet::ulnet) did not verify its data"
	readelf -d "$T/consumer/build/put_get" | grep -q "NEEDED.*\[libulnet.so.$major\]" ||
		fail "ulnet::ulnet is not libulnet.so.$major"
	run_put_get "$T/run.log" "$T/consumer/build/put_get_static" || fail "put_get (find_package, ulnet::ulnet_static) did not verify its data"
	readelf -d "$T/consumer/build/put_get_static" | grep -q "NEEDED.*libulnet" &&
		fail "ulnet::ulnet_static linked libulnet.so"
else
	fail "the find_package(ulnet) consumer does not build:"
	cat "$T/cmake.log"
fi
# a version this one is not compatible with is refused
mkdir -p "$T/consumer2"
cat >"$T/consumer2/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.20)
project(ulnet_consumer2 C)
find_package(ulnet $((major + 1)) REQUIRED)
EOT
cmake -S "$T/consumer2" -B "$T/consumer2/build" -DCMAKE_PREFIX_PATH="$D/usr" >"$T/cmake2.log" 2>&1 &&
	fail "find_package(ulnet $((major + 1))) accepted version $version"

# --- an admin's config survives a reinstall --------------------------------------
echo "# mine" >"$D/etc/ulnet/ulnet.conf"
DESTDIR=$D cmake --install "$BUILD" --prefix /usr >"$T/install2.log" 2>&1 || fail "second cmake --install"
[[ $(cat "$D/etc/ulnet/ulnet.conf") == "# mine" ]] || fail "a reinstall overwrote /etc/ulnet/ulnet.conf"

if (( FAILS )); then
	echo "$FAILS failure(s)"
	exit 1
fi
echo "PASS"
