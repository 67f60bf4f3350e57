#!/usr/bin/env bash
# The sanitizer run (CI runs it after the default tier): clang 14 with AddressSanitizer and
# UndefinedBehaviorSanitizer (float-cast-overflow included, every finding fatal) and -Werror,
# then the default tier less the python tests (an ASan extension cannot load into the system
# interpreter) and the two slowest pure-arithmetic tiers, which the Release tier runs: every
# bf16/fp16 encoding (core.EveryEncoding.Bfloat16/Binary16, ~250 CPU-s each under ASan) and the
# 10^6-vectors-per-preset tensor-core reference (tc.AllPresets/ModelVsReference.*, ~500 CPU-s,
# whose program is then not built), and the random and trace differential tests of the core vs
# the oracle (core.RandomFp32.*, core.Trace.*), which the six differential fuzzers run under the
# same sanitizers in this tier (tests/fuzz_replay: the committed corpora, then 10 s of fresh
# inputs each, as libFuzzer programs).
# Programs of the long tier only are not built here.
# Built at -O1 with line tables only (what ASan recommends; the stack traces keep file:line) and
# without MPI (Open MPI's own allocations trip LeakSanitizer), to keep CI's build time down.
# Uses the asan-ubsan preset of CMakePresets.json, build directory build-asan.
#   bash scripts/sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
gen=() # Ninja for a new build directory, as scripts/test.sh
if [[ ! -f build-asan/CMakeCache.txt ]] && command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake --preset asan-ubsan "${gen[@]}" >/dev/null
cmake --build --preset asan-ubsan -j2
ctest --preset asan-ubsan
