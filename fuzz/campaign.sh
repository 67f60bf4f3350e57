#!/usr/bin/env bash
# A fuzzing campaign: runs each harness in turn (one process, niced) until it has used
# CPU_SECONDS of CPU time (not wall time: on a shared machine a niced fuzzer may get a small
# share of a core), growing a working corpus under WORK; then merges the new coverage back
# into the committed seed corpus fuzz/corpus/<harness> (minimised with -merge=1).
#
#   fuzz/campaign.sh BUILD_DIR [CPU_SECONDS=600] [WORK=/tmp/bf16emu-fuzz] [harness ...]
#
# Per harness: WORK/<harness>.log (libFuzzer output with its final stats) and a summary line
# "== <harness>: cpu S s, wall W s, execs N" on stderr. Exits 1 if any harness crashed or
# found a mismatch (the input is under WORK/<harness>.artifacts/).
set -u
build=${1:?usage: fuzz/campaign.sh BUILD_DIR [CPU_SECONDS] [WORK] [harness ...]}
cpu=${2:-600}
work=${3:-/tmp/bf16emu-fuzz}
shift $(( $# < 3 ? $# : 3 ))
here=$(cd "$(dirname "$0")" && pwd)
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  for b in "$build"/fuzz/fuzz_*; do harnesses+=("$(basename "$b" | sed 's/^fuzz_//')"); done
fi
mkdir -p "$work"
tick=$(getconf CLK_TCK)
status=0
for h in "${harnesses[@]}"; do
  bin="$build/fuzz/fuzz_$h"
  mkdir -p "$work/$h" "$work/$h.artifacts" "$here/corpus/$h"
  start=$(date +%s)
  nice -n 19 "$bin" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/$h.artifacts/" "$work/$h" "$here/corpus/$h" >"$work/$h.log" 2>&1 &
  pid=$!
  used=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    if [ -r /proc/$pid/stat ]; then
      # utime + stime (fields 14, 15) in clock ticks.
      used=$(awk -v t="$tick" '{ printf "%d", ($14 + $15) / t }' /proc/$pid/stat 2>/dev/null || echo "$used")
      if [ "$used" -ge "$cpu" ]; then kill -INT "$pid"; break; fi
    fi
  done
  wait "$pid"; rc=$?
  wall=$(( $(date +%s) - start ))
  # rc 0 or 130 (SIGINT after the CPU budget) is a clean stop; anything else is a finding.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 130 ] && [ "$rc" -ne 72 ]; then status=1; echo "!! $h: exit $rc, see $work/$h.log" >&2; fi
  execs=$(grep -E "stat::number_executed_units" "$work/$h.log" | awk '{print $2}')
  echo "== $h: cpu ${used} s, wall ${wall} s, execs ${execs:-?}, exit $rc" >&2
  grep -E "^#[0-9]+" "$work/$h.log" | tail -1 >&2
  # Keep a minimal corpus with the same coverage.
  rm -rf "$work/$h.min" && mkdir -p "$work/$h.min"
  if nice -n 19 "$bin" -merge=1 "$work/$h.min" "$here/corpus/$h" "$work/$h" >>"$work/$h.log" 2>&1; then
    rm -rf "$here/corpus/$h" && mv "$work/$h.min" "$here/corpus/$h"
  fi
done
exit $status
