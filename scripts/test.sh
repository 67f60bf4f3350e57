#!/usr/bin/env bash
# The default test run: the README's test command, verbatim (keep the two in sync).
# Runs every tier except the exhaustive and long ones.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2 && ctest --test-dir build -LE "exhaustive|long" --output-on-failure -j2
