#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD/bin for SECONDS each, from its seed
# corpus (tests/fuzz/corpus/<target>, copied so the tree is not written).
set -euo pipefail
build=${1:-build-fuzz}; secs=${2:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
n=0
for bin in "$build"/bin/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  work=$(mktemp -d)
  [ -d "$root/tests/fuzz/corpus/$name" ] && cp -r "$root/tests/fuzz/corpus/$name/." "$work/" || true
  echo "fuzz: $name for ${secs}s"
  "$bin" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 "$work" 2>&1 | tail -4
  rm -rf "$work"
  n=$((n+1))
done
echo "fuzz: $n targets ran, no crash"
