#!/usr/bin/env bash
# A fuzzing campaign: runs each harness in turn (one process, niced) until it has used
# CPU_SECONDS of CPU time (not wall time: on a shared machine a niced fuzzer may get a small
# share of a core), growing a working corpus under WORK; then merges the new coverage back
# into the committed seed corpus fuzz/corpus/<harness> (minimised with -merge=1).
#
#   fuzz/campaign.sh BUILD_DIR [CPU_SECONDS=600] [WORK=/tmp/bf16emu-fuzz] [harness ...]
#
# Environment: MAX_WALL (seconds, default unlimited) also stops a harness after that much
# wall time; KEEP (default 300) caps the committed corpus of a harness to a deterministic
# sample (the first KEEP names, which are content hashes) of the minimised corpus.
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
max_wall=${MAX_WALL:-0}
keep=${KEEP:-300}
status=0
for h in "${harnesses[@]}"; do
  bin="$build/fuzz/fuzz_$h"
  mkdir -p "$work/$h" "$work/$h.artifacts" "$here/corpus/$h"
  start=$(date +%s)
  nice -n 10 "$bin" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/$h.artifacts/" "$work/$h" "$here/corpus/$h" >"$work/$h.log" 2>&1 &
  pid=$!
  used=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    if [ -r /proc/$pid/stat ]; then
      # utime + stime (fields 14, 15) in clock ticks.
      used=$(awk -v t="$tick" '{ printf "%d", ($14 + $15) / t }' /proc/$pid/stat 2>/dev/null || echo "$used")
      if [ "$used" -ge "$cpu" ]; then kill -INT "$pid"; break; fi
      if [ "$max_wall" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$max_wall" ]; then kill -INT "$pid"; break; fi
    fi
  done
  wait "$pid"; rc=$?
  wall=$(( $(date +%s) - start ))
  # rc 0 or 130 (SIGINT after the CPU budget) is a clean stop; anything else is a finding.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 130 ] && [ "$rc" -ne 72 ]; then status=1; echo "!! $h: exit $rc, see $work/$h.log" >&2; fi
  execs=$(grep -aE "stat::number_of_executed_units" "$work/$h.log" | awk '{print $2}')
  echo "== $h: cpu ${used} s, wall ${wall} s, execs ${execs:-?}, exit $rc" >&2
  grep -aE "^#[0-9]+" "$work/$h.log" | tail -1 >&2
  # Keep a minimal corpus with the same coverage (MERGE=0: skip the minimisation, which
  # replays the whole corpus, and sample the working corpus directly).
  rm -rf "$work/$h.min" && mkdir -p "$work/$h.min"
  if [ "${MERGE:-1}" = 0 ]; then
    cp "$work/$h"/* "$work/$h.min"/ 2>/dev/null
    cp "$here/corpus/$h"/* "$work/$h.min"/ 2>/dev/null
    ok=0
  else
    nice -n 10 "$bin" -merge=1 "$work/$h.min" "$here/corpus/$h" "$work/$h" >>"$work/$h.merge.log" 2>&1
    ok=$?
  fi
  if [ "$ok" -eq 0 ]; then
    # Hand-written seeds (names without a 40-hex-digit hash) are always kept.
    ls "$work/$h.min" | grep -E '^[0-9a-f]{40}$' | sort | tail -n +$((keep + 1)) | sed "s|^|$work/$h.min/|" | xargs -r rm -f
    for f in "$here/corpus/$h"/*; do
      b=$(basename "$f")
      echo "$b" | grep -qE '^[0-9a-f]{40}$' || cp "$f" "$work/$h.min/"
    done
    rm -rf "$here/corpus/$h" && mv "$work/$h.min" "$here/corpus/$h"
  fi
done
exit $status
