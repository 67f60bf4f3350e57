#!/usr/bin/env bash
# The default test run (the README's test command): installs what is missing, builds
# everything (warnings are errors), and runs every tier except the exhaustive and long ones.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# A new build directory uses Ninja, which keeps both cores busy to the end of the build (Make
# waits for each library before compiling its users' objects); an existing one keeps its generator.
gen=()
if [[ ! -f build/CMakeCache.txt ]] && command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBF16EMU_WERROR=ON && cmake --build build -j2 && ctest --test-dir build -LE "exhaustive|long" --output-on-failure -j2
