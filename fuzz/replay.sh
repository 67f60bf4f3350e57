#!/usr/bin/env bash
# CI entry point for the fuzzers: builds the libFuzzer harnesses with clang, replays every
# committed corpus (each input once), then fuzzes each harness briefly. A crash, a sanitizer
# report or a core/oracle mismatch fails the run (exit 1). Without clang++ or libFuzzer the
# run is skipped (exit 0, with a message).
#
#   fuzz/replay.sh                 # build in build-fuzz, replay, 30 s per harness
#   FUZZ_SECONDS=0 fuzz/replay.sh  # replay only
#
# Environment: BF16EMU_FUZZ_BUILD (build directory, default <repo>/build-fuzz),
# FUZZ_SECONDS (default 30), JOBS (build parallelism, default 2), CXX_CLANG (default clang++).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BF16EMU_FUZZ_BUILD:-$root/build-fuzz}
secs=${FUZZ_SECONDS:-30}
jobs=${JOBS:-2}
cxx=${CXX_CLANG:-clang++}

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: $cxx not found: fuzzers skipped"
  exit 0
fi
probe=$(mktemp -d)
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }\n' >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
  echo "fuzz: $cxx cannot link -fsanitize=fuzzer (Debian: apt-get install libclang-rt-14-dev): fuzzers skipped"
  rm -rf "$probe"
  exit 0
fi
rm -rf "$probe"

set -e
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DBF16EMU_BUILD_FUZZERS=ON \
  -DBF16EMU_BUILD_TESTS=OFF -DBF16EMU_BUILD_CLI=OFF -DBF16EMU_BUILD_BENCH=OFF -DBF16EMU_BUILD_EXAMPLES=OFF \
  -DBF16EMU_ENABLE_CUDA=OFF -DBF16EMU_INSTALL=OFF >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$jobs" --target fuzzers
set +e

# Harnesses that are only replayed, not fuzzed (space-separated). Empty by default: every
# finding so far is fixed (docs/fuzzing.md).
replay_only=${FUZZ_REPLAY_ONLY-}
passed=0
failed=0
work=$(mktemp -d)
for bin in "$build"/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  h=$(basename "$bin" | sed 's/^fuzz_//')
  corpus="$root/fuzz/corpus/$h"
  mkdir -p "$work/$h" "$work/$h.artifacts"
  # 1. Replay the committed corpus: every input once.
  if "$bin" -runs=0 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$work/$h.artifacts/" "$corpus" \
    >"$work/$h.replay.log" 2>&1; then
    echo "PASS replay $h ($(ls "$corpus" | wc -l) inputs)"
    passed=$((passed + 1))
  else
    echo "FAIL replay $h"
    tail -40 "$work/$h.replay.log"
    failed=$((failed + 1))
  fi
  # 2. Fuzz briefly from the corpus (new inputs go to a scratch directory).
  if [ "$secs" -gt 0 ] && ! echo " $replay_only " | grep -q " $h "; then
    if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$work/$h.artifacts/" "$work/$h" "$corpus" >"$work/$h.fuzz.log" 2>&1; then
      echo "PASS fuzz $h (${secs}s, $(grep -E 'stat::number_of_executed_units' "$work/$h.fuzz.log" | awk '{print $2}') executions)"
      passed=$((passed + 1))
    else
      echo "FAIL fuzz $h: the crashing input follows (hex), log tail:"
      tail -40 "$work/$h.fuzz.log"
      for a in "$work/$h.artifacts"/*; do [ -f "$a" ] && od -An -tx1 "$a" | head -5; done
      failed=$((failed + 1))
    fi
  fi
done
rm -rf "$work"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
