#!/usr/bin/env bash
# Quick start, the main job: install what a fresh Debian 12 lacks, build the CLI, then run
# the paper's worked example with its full rounding trace and the attention-ledger summary
# on the built-in default scenario. Extra arguments go to `bf16emu paper` (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target bf16emu_cli
exec ./build/src/bf16emu paper "$@"
