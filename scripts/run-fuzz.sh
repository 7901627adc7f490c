#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD/bin for SECONDS each, from its seed
# corpus (tests/fuzz/corpus/<target>, copied so the tree is not written).
# On a crash it prints the fuzzer's report and the input as hex (CI keeps
# only the log), and copies the input under BUILD/fuzz-artifacts/.
set -euo pipefail
build=${1:-build-fuzz}; secs=${2:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
n=0
for bin in "$build"/bin/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  work=$(mktemp -d)
  [ -d "$root/tests/fuzz/corpus/$name" ] && cp -r "$root/tests/fuzz/corpus/$name/." "$work/" || true
  echo "fuzz: $name for ${secs}s"
  log="$work.log"
  rc=0
  "$bin" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" "$work" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $name FAILED (exit $rc); its report:" >&2
    grep -v '^#[0-9]' "$log" | tail -80 >&2
    for a in "$artifacts/$name"-*; do
      [ -f "$a" ] || continue
      echo "fuzz: input $a (replay: $bin $a):" >&2
      od -An -tx1 -v "$a" | head -64 >&2
    done
    rm -rf "$work" "$log"
    exit "$rc"
  fi
  tail -4 "$log"
  rm -rf "$work" "$log"
  n=$((n+1))
done
echo "fuzz: $n targets ran, no crash"
