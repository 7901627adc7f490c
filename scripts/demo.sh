#!/usr/bin/env bash
# The README demo. Filled in as the tools land.
set -euo pipefail
build=${1:-build}
echo "demo: not yet assembled (see docs/)"
