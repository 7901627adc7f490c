#!/usr/bin/env bash
# make bench: runs ulnet's benchmarks beside the peer anchors.
set -euo pipefail
build=${1:-build}
for b in "$build"/bin/bench_*; do [ -x "$b" ] && "$b"; done
