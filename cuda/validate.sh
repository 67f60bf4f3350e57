#!/usr/bin/env bash
# bf16emu CUDA twin: all the device work on an H100 / H200, in one command.
#
#   cuda/validate.sh [OUTDIR]            (default OUTDIR: $OUT if set, else ./gpu-validation-out)
#
# Builds bf16emu-gpu (sm_90a on an H100/H200, else sm_80 + sm_90a; the probes add sm_120a),
# records the device, driver and toolkit, and runs:
#   1. the probe self-test and the discriminating probes through every probe kernel the device
#      runs and the model has a preset for (`bf16emu-gpu probe --names`; on an H100: mma.sync
#      bf16, fp16, fp16->fp16, tf32, e4m3, e5m2, m16n8k8 fp16 -> fp32/fp16, the e4m3 x e5m2 and
#      e5m2 x e4m3 mixes -> fp32/fp16, f64 m8n8k4, m16n8k8 and m16n8k16, m16n8k4 tf32, m16n8k8
#      bf16; wgmma bf16, fp16, fp16->fp16, tf32, e4m3, e5m2 and the four fp8 mixes: 27 kernels;
#      on an RTX 50 also mma.sync kind::f8f6f4 with fp8, fp6 and fp4 operands and m16n8k16 fp8;
#      on a T4 m8n8k4 fp16);
#   2. COUNT (default 10^6) random bit patterns plus COUNT/2 normal and COUNT/2 near-cancelling
#      vectors for each of those kernels, against the device's presets;
#   3. the GEMM (mma.sync bf16 -> fp32) against tc::gemm;
#   4. the FA2-style forward for N in {128, 1024, 4096}, d in {64, 128}, causal and not, standard
#      and stabilized (plus the paper's "sink" scenario at N = 1024), and delta, against the CPU
#      twin (attention::fa2_twin on the sm90 model);
#   5. timings: forward TFLOP/s (4 N^2 d per head, halved for causal) next to cuBLAS bf16 dense.
# Writes at most 8 files to OUTDIR (the device tool's limit): summary.txt, env.txt, validate.log,
# raw_kernels.tar.gz, gpu_data.tar.gz (compact vectors + GPU outputs for tests/gpu_data/).
# Exit status 0 only if every comparison had 0 mismatches.
#
# Environment: COUNT (random vectors per kind, default 1000000), JOBS (parallel CPU-twin runs,
# default nproc), BUILD (build dir, default build-gpu), ARCHS (default 90a on compute capability
# 9.0, else "80;90a"), STAGES (default
# "build env probes random kernels timing"; a subset reruns parts with an existing build).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTDIR=${1:-${OUT:-$PWD/gpu-validation-out}}
BUILD=${BUILD:-$ROOT/build-gpu}
COUNT=${COUNT:-1000000}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
if [[ -z ${ARCHS:-} ]]; then
  case $(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1) in
  9.0) ARCHS=90a ;;
  *) ARCHS="80;90a" ;; # sm_80 code and its PTX (which later devices JIT) for mma.sync
  esac
fi
STAGES=${STAGES:-build env probes random kernels timing}
mkdir -p "$OUTDIR"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bf16emu-validate.XXXXXX")
RESULTS=$WORK/results.txt
LOG=$OUTDIR/validate.log
: >"$RESULTS"
exec > >(tee "$LOG") 2>&1
has_stage() { [[ " $STAGES " == *" $1 "* ]]; }
t0=$(date +%s)
stamp() { echo "=== [$(($(date +%s) - t0)) s] $*"; }
GPU=$BUILD/cuda/bf16emu-gpu
FAILED=0

# Runs bf16emu-gpu with the given arguments, appends its RESULT lines to $RESULTS.
run() {
  local out rc
  out=$("$GPU" "$@" 2>&1)
  rc=$?
  printf '%s\n' "$out" | grep -v '^RESULT' | head -n 200
  printf '%s\n' "$out" | grep '^RESULT' | tee -a "$RESULTS"
  if [[ $rc -ne 0 ]]; then
    echo "!!! exit $rc: bf16emu-gpu $*" | tee -a "$RESULTS"
    FAILED=1
  fi
  return 0
}

# ------------------------------------------------------------------------------------------------
if has_stage build; then
  stamp "build ($ARCHS) in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
    -DBF16EMU_BUILD_TESTS=OFF -DBF16EMU_BUILD_CLI=OFF -DBF16EMU_BUILD_BENCH=OFF \
    -DBF16EMU_BUILD_EXAMPLES=OFF -DBF16EMU_INSTALL=OFF || { echo "configure failed"; exit 2; }
  cmake --build "$BUILD" -j "$JOBS" --target bf16emu_gpu bf16emu_vecgen || { echo "build failed"; exit 2; }
  cuobjdump --list-elf "$GPU" 2>/dev/null | head -n 20
  if command -v cuobjdump >/dev/null; then
    echo "SASS instruction counts (HMMA = mma.sync, HGMMA/QGMMA = wgmma, DMMA = f64, OMMA/QMMA = sm_120 fp8):"
    cuobjdump --dump-sass "$GPU" 2>/dev/null | grep -oE '\b(HMMA|HGMMA|QGMMA|DMMA|OMMA|QMMA|MUFU\.EX2)[.A-Z0-9_]*' | sort | uniq -c |
      sort -rn | head -n 20
  fi
fi
[[ -x $GPU ]] || { echo "no $GPU"; exit 2; }

# ------------------------------------------------------------------------------------------------
if has_stage env; then
  stamp "environment"
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(uname -a)"
    echo "git: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null) $(git -C "$ROOT" status --porcelain 2>/dev/null | wc -l) changed files"
    nvidia-smi 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,power.limit --format=csv 2>&1
    nvcc --version 2>&1
    cmake --version 2>&1 | head -n 1
    "${CXX:-c++}" --version 2>&1 | head -n 1
    "$GPU" info 2>&1
  } >"$OUTDIR/env.txt"
  cat "$OUTDIR/env.txt"
fi
"$GPU" info >/dev/null 2>&1
if [[ $? -eq 77 ]]; then
  echo "no CUDA device: nothing to validate"
  exit 77
fi

# The probe kernels this device runs (cuda/probe_table.cpp; `bf16emu-gpu probe --list` prints
# them all). The first twelve keep their gpu_data names; the issue-16 kernels (B format, shape k,
# f64, kind::f8f6f4, tcgen05, the sm120 block-scaled kinds with their scale factors on each line)
# go to gpu_data/issue16/, to be reviewed apart; the checker
# tests/gpu_data/check_gpu_data.cpp reads their headers too (tests/gpu_data/README.md).
KERNELS=$("$GPU" probe --names 2>/dev/null)
FIRST="mma_bf16_fp32 mma_fp16_fp32 mma_fp16_fp16 mma_tf32_fp32 mma_e4m3_fp32 mma_e5m2_fp32
  wgmma_bf16_fp32 wgmma_fp16_fp32 wgmma_fp16_fp16 wgmma_tf32_fp32 wgmma_e4m3_fp32 wgmma_e5m2_fp32"
data_dir() { if [[ " $(echo $FIRST) " == *" $1 "* ]]; then echo "$WORK/gpu_data"; else echo "$WORK/gpu_data/issue16"; fi; }
echo "probe kernels on this device: $(echo $KERNELS | wc -w): $(echo $KERNELS)"

# ------------------------------------------------------------------------------------------------
if has_stage probes; then
  stamp "probe self-test (every probe kernel of the device: probes + 3 x 4096 random)"
  run probe --self-test
  stamp "discriminating probes, saved with 64 vectors of each random kind for tests/gpu_data"
  mkdir -p "$WORK/gpu_data/issue16"
  for kern in $KERNELS; do
    dir=$(data_dir "$kern")
    run probe --kernel "$kern" --random probes --save "$dir" --name "${kern}_probes" --save-lines 100000
    for kind in normal bits cancel; do
      run probe --kernel "$kern" --random $kind --count 64 --seed 11 --save "$dir" --name "${kern}_${kind}" \
        --save-lines 64
    done
  done
  # The probe lines with the GPU's answers next to the model's, for the record.
  for f in "$WORK"/gpu_data/*_probes.vec "$WORK"/gpu_data/issue16/*_probes.vec; do
    echo "--- $(basename "$f")"
    paste -d' ' <(grep -v '^#' "${f%.vec}.out") <(grep '^# ' "$f" | grep -v '^# bf16emu-gpu' | sed 's/^# //') |
      head -n 80
  done
fi

# ------------------------------------------------------------------------------------------------
if has_stage random; then
  stamp "random vectors: $COUNT bits + $((COUNT / 2)) normal + $((COUNT / 2)) cancel per kernel"
  for kern in $KERNELS; do
    run probe --kernel "$kern" --random bits --count "$COUNT" --seed 1 \
      --save "$WORK/mismatch" --name "${kern}_bits" --save-lines 0
    run probe --kernel "$kern" --random normal --count $((COUNT / 2)) --seed 2
    run probe --kernel "$kern" --random cancel --count $((COUNT / 2)) --seed 3
  done
fi

# ------------------------------------------------------------------------------------------------
if has_stage kernels; then
  stamp "GEMM against tc::gemm"
  mkdir -p "$WORK/raw"
  run gemm --m 128 --n 128 --k 16 --seed 1
  run gemm --m 256 --n 192 --k 1040 --seed 2 --save "$WORK/raw" --save-lines 16
  run gemm --m 512 --n 512 --k 4096 --seed 3 --save "$WORK/raw"
  cp "$WORK"/raw/gemm_*.vec "$WORK"/raw/gemm_*.out "$WORK/gpu_data/" 2>/dev/null

  stamp "FA2 forward and delta against the CPU twin ($JOBS in parallel)"
  cmds=$WORK/attention_cmds.txt
  : >"$cmds"
  for n in 4096 1024 128; do
    for d in 64 128; do
      for causal in "" --causal; do
        for stab in "" --stabilized; do
          echo "attention --n $n --d $d $causal $stab --seed $n --save $WORK/raw" >>"$cmds"
        done
      done
      echo "delta --n $n --d $d --heads 4 --seed $n --save $WORK/raw" >>"$cmds"
    done
  done
  for d in 64 128; do
    for stab in "" --stabilized; do
      echo "attention --n 1024 --d $d $stab --scenario sink --seed 5 --save $WORK/raw" >>"$cmds"
    done
    echo "attention --n 1024 --d $d --causal --stabilized --scenario sink --seed 6 --save $WORK/raw" >>"$cmds"
    echo "attention --n 1024 --d $d --heads 2 --fast-exp --seed 7" >>"$cmds"
  done
  # shellcheck disable=SC2016
  xargs -P "$JOBS" -I{} bash -c 'out=$("'"$GPU"'" {} 2>&1); rc=$?; printf "%s\n" "$out" | grep -v "^RESULT" | head -n 120;
    printf "%s\n" "$out" | grep "^RESULT"; [[ $rc -ne 0 ]] && echo "!!! exit $rc: bf16emu-gpu {}"; exit 0' \
    <"$cmds" >"$WORK/attention.log" 2>&1
  cat "$WORK/attention.log"
  grep -E '^(RESULT|!!!)' "$WORK/attention.log" >>"$RESULTS"
  # The fast-exp runs compare by tolerance; their "mismatches" are expected and their exit
  # status already says whether the tolerance held.
  grep -q '^!!!' "$WORK/attention.log" && FAILED=1
fi

# ------------------------------------------------------------------------------------------------
if has_stage timing; then
  stamp "timing (serial): cuBLAS bf16 dense, the GEMM kernel, the forward kernel"
  run dense --size 8192 --repeats 20
  run gemm --m 4096 --n 4096 --k 4096 --no-compare --repeats 10
  for n in 1024 4096 8192; do
    heads=$((65536 / n))
    for d in 64 128; do
      for causal in "" --causal; do
        run attention --n $n --d $d --heads $heads $causal --no-compare --repeats 20
        run attention --n $n --d $d --heads $heads $causal --no-compare --repeats 20 --fast-exp
      done
    done
  done
fi

# ------------------------------------------------------------------------------------------------
stamp "summary"
{
  echo "bf16emu CUDA twin validation, $(date -u +%FT%TZ)"
  "$GPU" info 2>/dev/null | sed 's/^RESULT info //'
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/nvidia-smi: /'
  echo
  awk '
    /^RESULT/ && /compared=/ {
      c = m = 0
      for (i = 1; i <= NF; ++i) {
        if ($i ~ /^compared=/) c = substr($i, 10)
        if ($i ~ /^mismatches=/) m = substr($i, 12)
      }
      kind = $2; tot[kind] += c; bad[kind] += m
      if (m > 0) print "MISMATCH  " $0
    }
    /^!!!/ { print "FAILED    " $0 }
    END { for (k in tot) printf "%-10s compared %12d  mismatches %d\n", k, tot[k], bad[k] }
  ' "$RESULTS"
  echo
  dense=$(grep -oE 'cublas_bf16_tflops=[0-9.]+' "$RESULTS" | head -n 1 | cut -d= -f2)
  echo "dense bf16 (cuBLAS, 8192^3): ${dense:-n/a} TFLOP/s"
  grep -E '^RESULT (attention|gemm).*tflops=' "$RESULTS" | while read -r line; do
    name=$(echo "$line" | awk '{print $3}')
    tf=$(echo "$line" | grep -oE 'tflops=[0-9.]+' | cut -d= -f2)
    if [[ -n ${dense:-} ]]; then
      pct=$(awk -v a="$tf" -v b="$dense" 'BEGIN { printf "%.1f", 100 * a / b }')
      printf '%-60s %8s TFLOP/s  %5s%% of dense\n' "$name" "$tf" "$pct"
    else
      printf '%-60s %8s TFLOP/s\n' "$name" "$tf"
    fi
  done
  echo
  if [[ $FAILED -eq 0 ]]; then echo "RESULT: PASS (0 mismatches)"; else echo "RESULT: FAIL (see MISMATCH / FAILED lines and validate.log)"; fi
} | tee "$OUTDIR/summary.txt"
cp "$RESULTS" "$OUTDIR/results.txt"

# Raw outputs (<= 16 MiB a file): GPU outputs of every kernel run, inputs for the small ones.
if [[ -d $WORK/raw ]]; then
  (cd "$WORK/raw" && tar -czf "$OUTDIR/raw_kernels.tar.gz" --exclude='*n4096*.[qkv].npy' --exclude='*n4096*.do.npy' \
    --exclude='*n4096*.o.npy' .)
  if [[ $(stat -c %s "$OUTDIR/raw_kernels.tar.gz") -gt 16000000 ]]; then
    (cd "$WORK/raw" && tar -czf "$OUTDIR/raw_kernels.tar.gz" --exclude='*n4096*' --exclude='*.[qkv].npy' .)
  fi
fi
if [[ -d $WORK/gpu_data ]]; then
  (cd "$WORK/gpu_data" && tar -czf "$OUTDIR/gpu_data.tar.gz" .)
  echo "tests/gpu_data: tar -xzf gpu_data.tar.gz -C tests/gpu_data && ctest -R gpu_data"
fi
[[ -d $WORK/mismatch ]] && (cd "$WORK/mismatch" && tar -czf "$OUTDIR/mismatches.tar.gz" .)
ls -la "$OUTDIR"
stamp "done"
rm -rf "$WORK"
exit $FAILED
