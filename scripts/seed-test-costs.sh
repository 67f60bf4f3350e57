#!/usr/bin/env bash
# Seeds a new build directory's CTest cost data from tests/ctest-costs/NAME.txt, so that the first
# `ctest -j2` there starts the longest tests first instead of in declaration order (a fresh
# clone's test stage was ~100 s longer without it; docs/testing.md). An existing cost file (a
# build that has run its tests) is kept; ctest refreshes the data after each run. Only the order
# of the tests changes, never which ones run.
#   bash scripts/seed-test-costs.sh BUILD_DIR NAME
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1/Testing/Temporary
src=tests/ctest-costs/$2.txt
[[ -f $src ]] || { echo "seed-test-costs: no $src" >&2; exit 2; }
if [[ ! -f $dir/CTestCostData.txt ]]; then
  mkdir -p "$dir"
  grep -v '^#' "$src" >"$dir/CTestCostData.txt"
fi
