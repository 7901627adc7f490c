#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# apt-ensure.sh WHO PKG... - installs the Debian packages of the list that
# are not installed yet (apt-get, as root or through sudo); does nothing when
# all are. WHO names the caller in its messages. APT_PRESEED: debconf
# selections to set first (one per line), only when something is installed.
# Used by scripts/install-deps.sh (the build and the suite) and
# tests/rdma/rig-deps.sh (the qemu rig's host side).
set -euo pipefail
who=$1
shift
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "$who: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
if [ -n "${APT_PRESEED:-}" ]; then
  printf '%s\n' "$APT_PRESEED" | $SUDO debconf-set-selections || true
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
