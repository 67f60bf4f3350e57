#!/usr/bin/env bash
# Quick start, the main job: install what a fresh Debian 12 lacks, build the CLI, then run
# the paper's worked example with its full rounding trace and the bias of attention's output
# over 24 independent heads of the built-in sink scenario, with z over heads, under the
# authors' arithmetic (paper:bf16, paper:autocast; unstabilized and stabilized) and the
# FlashAttention-2 kernel's (fa2:sm90): a few seconds on two cores. Extra arguments go to
# `bf16emu paper` (e.g. --json). The site attribution: build/src/bf16emu ablate --help.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target bf16emu_cli
exec ./build/src/bf16emu paper "$@"
