#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_abi_exports.sh - libulnet.so exports exactly the public API.
#
# The library is compiled with -fvisibility=hidden; include/ulnet/export.h's
# ULNET_API marks what the public headers (include/ulnet/*.h) declare. This
# test fails when
#  - a function (or object) declared in a public header lacks ULNET_API,
#  - libulnet.so exports a symbol that no ULNET_API declaration names (an
#    internal lnet_*, ksock_*, ul_*, ... leaking into the ABI), or one not
#    named ulnet_* / ULNET_*,
#  - a ULNET_API declaration is not exported (a consumer could not link it),
#  - the SONAME is not libulnet.so.<major> of the project's VERSION, or the
#    static archive is missing,
#  - debian/libulnet0.symbols (the Debian package's record of the ABI, with
#    the version each symbol first shipped in) does not list exactly the
#    exported symbols: a new public function is recorded there in the same
#    change (the package build fails on it too, dh_makeshlibs -c4).
# Environment: ULNET_BUILD (the build tree), ULNET_SRC (the sources).
set -u
SRC=${ULNET_SRC:-.}
BUILD=${ULNET_BUILD:-build}
LIB=$BUILD/lib/libulnet.so
command -v nm >/dev/null || { echo "SKIP: nm (binutils) not installed"; exit 77; }
command -v readelf >/dev/null || { echo "SKIP: readelf (binutils) not installed"; exit 77; }
[[ -e $LIB ]] || { echo "FAIL: $LIB not built"; exit 1; }

T=$(mktemp -d /tmp/ulnet-abi.XXXXXX)
trap 'rm -rf "$T"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# --- what the headers declare ---------------------------------------------------
# A declaration starts in column 0 (continuation lines are indented), as
# every public header is written: "int ulnet_x(...", "extern const T ULNET_Y;".
for h in "$SRC"/include/ulnet/*.h; do
	awk -v h="${h##*/}" '
		/^(static|typedef|#)/ || /^extern[ \t]+"C"/ { next }
		/^[A-Za-z_](.*[^A-Za-z0-9_])?ulnet_[A-Za-z0-9_]+[ \t]*\(/ || /^(ULNET_API[ \t]+)?extern[ \t]/ {
			if ($0 !~ /^ULNET_API[ \t]/) { printf "%s:%d: no ULNET_API: %s\n", h, NR, $0; next }
			s = $0
			if (s ~ /\(/) { sub(/[ \t]*\(.*/, "", s) } else { sub(/[ \t]*(\[.*|=.*|;.*)$/, "", s) }
			n = split(s, w, /[^A-Za-z0-9_]+/)
			print w[n] > "/dev/stderr"
		}' "$h" 2>>"$T/declared.raw" >>"$T/unmarked"
done
sort -u "$T/declared.raw" >"$T/declared"
[[ -s $T/unmarked ]] && { fail "public declarations without ULNET_API (include/ulnet/export.h):"; cat "$T/unmarked"; }
ndecl=$(wc -l <"$T/declared")
(( ndecl > 50 )) || fail "only $ndecl ULNET_API declarations found in $SRC/include/ulnet (parser broken?)"

# --- what the library exports ----------------------------------------------------
# (an ASan build adds an ODR indicator, __odr_asan.NAME, beside each exported
# object NAME: dropped when NAME itself is public)
nm -D --defined-only "$LIB" | awk 'NF >= 3 { print $3 } NF == 2 { print $2 }' | sed 's/@.*//' |
	awk -v decl="$T/declared" 'BEGIN { while ((getline l < decl) > 0) pub[l] = 1 }
		/^__odr_asan[._]/ { n = $0; sub(/^__odr_asan[._]/, "", n); if (n in pub) next }
		{ print }' | sort -u >"$T/exported"
nexp=$(wc -l <"$T/exported")

extra=$(comm -23 "$T/exported" "$T/declared")
missing=$(comm -13 "$T/exported" "$T/declared")
[[ -n $extra ]] && { fail "$LIB exports $(wc -l <<<"$extra") symbol(s) no public header declares with ULNET_API:"; sed 's/^/  /' <<<"$extra" | head -50; }
[[ -n $missing ]] && { fail "ULNET_API declared but not exported by $LIB:"; sed 's/^/  /' <<<"$missing"; }
bad=$(grep -vE '^(ulnet_|ULNET_)' "$T/exported")
[[ -n $bad ]] && { fail "exported names outside ulnet_*/ULNET_*:"; sed 's/^/  /' <<<"$bad" | head -50; }

# --- SONAME, versioned file, static archive --------------------------------------
version=$(sed -n 's/^project(ulnet VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
major=${version%%.*}
soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ -n $version ]] || fail "no project(ulnet VERSION ...) in $SRC/CMakeLists.txt"
[[ $soname == "libulnet.so.$major" ]] || fail "SONAME is '$soname', expected libulnet.so.$major (VERSION $version)"
[[ -e $BUILD/lib/libulnet.so.$version ]] || fail "$BUILD/lib/libulnet.so.$version missing"
[[ -e $BUILD/lib/libulnet.a ]] || fail "$BUILD/lib/libulnet.a (the static library) missing"

# --- the Debian symbols file ------------------------------------------------------
SYMS=$SRC/debian/libulnet0.symbols
if [[ -f $SYMS ]]; then
	sed -n 's/^ \([A-Za-z0-9_]*\)@Base .*/\1/p' "$SYMS" | sort -u >"$T/debsyms"
	[[ $(head -1 "$SYMS") == "libulnet.so.$major libulnet$major #MINVER#" ]] ||
		fail "debian/libulnet0.symbols is not for libulnet.so.$major (package libulnet$major)"
	new=$(comm -23 "$T/exported" "$T/debsyms")
	gone=$(comm -13 "$T/exported" "$T/debsyms")
	[[ -n $new ]] && { fail "exported but not in debian/libulnet0.symbols (add ' NAME@Base $version'):"; sed 's/^/  /' <<<"$new"; }
	[[ -n $gone ]] && { fail "in debian/libulnet0.symbols but no longer exported (an ABI break):"; sed 's/^/  /' <<<"$gone"; }
else
	fail "$SYMS missing"
fi

echo "libulnet.so ($soname): $nexp exported symbols, $ndecl ULNET_API declarations"
if (( FAILS )); then
	echo "$FAILS failure(s)"
	exit 1
fi
echo "PASS"
