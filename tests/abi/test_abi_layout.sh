#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_abi_layout.sh - the size and alignment of every struct the public
# headers declare, against tests/abi/layout-<arch>.txt.
#
# Callers allocate these structs (ulnet_ni_info, ulnet_event, ...) and the
# library fills them: a changed size is an ABI break as surely as a removed
# function, which test_abi_exports.sh and debian/libulnet0.symbols cannot
# see. Fails listing each struct whose size or alignment changed, or that
# appeared or went. After a deliberate change: before the first release,
# record it with `ULNET_ABI_UPDATE=1` (the file is rewritten); after one,
# raise the major version (the SONAME) as well (docs/install.md).
# Environment: ULNET_SRC, ULNET_CC.
set -u
SRC=$(cd "${ULNET_SRC:-.}" && pwd)
CC=${ULNET_CC:-cc}
arch=$(uname -m)
REF=$SRC/tests/abi/layout-$arch.txt
[[ -f $REF || ${ULNET_ABI_UPDATE:-0} == 1 ]] ||
	{ echo "SKIP: no recorded layout for $arch ($REF)"; exit 77; }
T=$(mktemp -d /tmp/ulnet-layout.XXXXXX)
trap 'rm -rf "$T"' EXIT

names=$(grep -ho '^struct ulnet_[a-z0-9_]* {' "$SRC"/include/ulnet/*.h | awk '{ print $2 }' | sort -u)
[[ $(wc -w <<<"$names") -gt 20 ]] || { echo "FAIL: only $(wc -w <<<"$names") structs found (parser broken?)"; exit 1; }
{
	echo '#include <stdio.h>'
	echo '#include <stdalign.h>'
	for h in "$SRC"/include/ulnet/*.h; do echo "#include <ulnet/${h##*/}>"; done
	echo 'int main(void) {'
	for n in $names; do
		echo "printf(\"%s %zu %zu\\n\", \"$n\", sizeof(struct $n), alignof(struct $n));"
	done
	echo 'return 0; }'
} >"$T/layout.c"
$CC -std=c17 -I"$SRC/include" "$T/layout.c" -o "$T/layout" 2>"$T/cc.log" || { cat "$T/cc.log"; echo "FAIL: layout program"; exit 1; }
"$T/layout" >"$T/now.txt"
if [[ ${ULNET_ABI_UPDATE:-0} == 1 ]]; then
	{ echo "# struct sizeof alignof ($arch): tests/abi/test_abi_layout.sh"; cat "$T/now.txt"; } >"$REF"
	echo "recorded $(wc -l <"$T/now.txt") structs in $REF"
	exit 0
fi
if ! diff <(grep -v '^#' "$REF") "$T/now.txt" >"$T/diff"; then
	echo "FAIL: public struct layout changed (< recorded, > now): an ABI change"
	cat "$T/diff"
	echo "(deliberate, before the first release: ULNET_ABI_UPDATE=1 bash tests/abi/test_abi_layout.sh)"
	exit 1
fi
echo "PASS: $(wc -l <"$T/now.txt") public structs as recorded ($arch)"
