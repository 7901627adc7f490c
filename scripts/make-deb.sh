#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make-deb.sh [OUTDIR] - builds the Debian packages libulnet0, libulnet-dev
# and ulnet from debian/ with debhelper (dpkg-buildpackage -b), then checks
# them with lintian: any lintian error fails. `make deb` runs it.
#
# dpkg-buildpackage writes its results beside the source tree it builds, so
# the tree (what git tracks, plus files not yet added that git does not
# ignore; every file but build directories outside a git checkout) is copied
# to OUTDIR/ulnet-VERSION first: the packages land in OUTDIR (default
# build-deb/), and nothing is written into the checkout.
# Environment: JOBS (parallel build jobs, default nproc), LINTIAN=0 (skip the
# lintian check, for a quick rebuild).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$SRC/build-deb}
JOBS=${JOBS:-$(nproc)}

for t in dpkg-buildpackage dpkg-parsechangelog dh; do
	command -v "$t" >/dev/null || { echo "make-deb: $t not found (scripts/install-deps.sh installs dpkg-dev and debhelper)" >&2; exit 1; }
done
# the packages' version is debian/changelog's; it must be the project's
deb_version=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
version=$(sed -n 's/^project(ulnet VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
if [[ ${deb_version%%-*} != "$version" ]]; then
	echo "make-deb: debian/changelog is at $deb_version, CMakeLists.txt's project version is $version: add a changelog entry (dch -v $version)" >&2
	exit 1
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
stage=$OUT/ulnet-$version
rm -rf "$stage"
mkdir -p "$stage"
if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -xf - -C "$stage"
else
	tar -C "$SRC" --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$stage"
fi
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
rm -f "$OUT"/*_"$deb_version"_"$arch".deb "$OUT/ulnet_${deb_version}_$arch.changes"

echo "make-deb: building ulnet $deb_version ($arch) in $stage"
(cd "$stage" && DEB_BUILD_OPTIONS="nocheck parallel=$JOBS ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -us -uc -b) >"$OUT/build.log" 2>&1 || {
	tail -40 "$OUT/build.log" >&2
	echo "make-deb: dpkg-buildpackage failed; the whole log is $OUT/build.log" >&2
	exit 1
}
changes=$OUT/ulnet_${deb_version}_$arch.changes
debs=("$OUT/libulnet0_${deb_version}_$arch.deb" "$OUT/libulnet-dev_${deb_version}_$arch.deb"
      "$OUT/ulnet_${deb_version}_$arch.deb")
for d in "${debs[@]}"; do
	[[ -f $d ]] || { echo "make-deb: $d was not built" >&2; exit 1; }
done

if [[ ${LINTIAN:-1} != 0 ]]; then
	command -v lintian >/dev/null || { echo "make-deb: lintian not found (scripts/install-deps.sh installs it; LINTIAN=0 skips the check)" >&2; exit 1; }
	# errors fail; warnings and the rest are printed for whoever reads them
	if ! lintian --fail-on error --display-info "$changes" >"$OUT/lintian.log" 2>&1; then
		cat "$OUT/lintian.log" >&2
		echo "make-deb: lintian reports errors on the packages" >&2
		exit 1
	fi
	cat "$OUT/lintian.log"
	echo "make-deb: lintian: no errors"
fi
printf '%s\n' "${debs[@]}"
