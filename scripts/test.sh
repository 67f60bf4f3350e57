#!/usr/bin/env bash
# The default test run (the README's test command): installs what is missing, builds
# everything (warnings are errors), and runs every tier except the exhaustive and long ones.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBF16EMU_WERROR=ON && cmake --build build -j2 && ctest --test-dir build -LE "exhaustive|long" --output-on-failure -j2
