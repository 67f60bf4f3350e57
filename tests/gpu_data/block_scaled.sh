#!/usr/bin/env bash
# No-GPU check of every block-scaled probe kernel (cuda/scaled_probe.cu: sm120 mma.sync and sm100
# tcgen05) that `bf16emu-gpu probe --list` prints: its vectors (bf16emu-vecgen with the kernel's scale format and vector, two
# instructions per line, each generator), answered by `bf16emu mma --kind`, under the header
# `probe --save` writes for it, re-read by the GPU-data checker, whose host model (the runner's)
# must give the same bits on every line.
#   block_scaled.sh GPU VECGEN BF16EMU CHECKER
set -eu -o pipefail
gpu=$1 vecgen=$2 cli=$3 checker=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
list=$("$gpu" probe --list)
kernels=0
while read -r name instr kind in out k _; do
  # mxf4nvf4 rows name their factor format: <instr>_mxf4nvf4_<ue8m0|ue4m3>_fp32.
  case $kind in mxf8f6f4 | mxf4) sf=ue8m0 vec=32 ;; mxf4nvf4) sf=${name#"${instr}"_mxf4nvf4_} sf=${sf%_fp32} vec=16 ;; *) continue ;; esac
  case $instr in mma) arch=sm120 ;; tcgen05) arch=sm100 ;; *) echo "unexpected instr: $name $instr" >&2; exit 1 ;; esac
  [ "$name" = "${instr}_${kind}_${sf}_fp32" ] || [ "$name" = "${instr}_${kind}_${in}_fp32" ] ||
    { echo "unexpected row: $name" >&2; exit 1; }
  a=${in%x*} b=${in#*x} K=$((2 * k))
  head="#! arch=$arch instr=$instr in=$a out=$out k=$K" opts=(--arch "$arch" --instr "$instr" --a-format "$a" --out "$out")
  [ "$b" = "$a" ] || head+=" b=$b"
  head+=" kind=$kind scale=$sf vec=$vec"
  opts+=(--b-format "$b" --k "$K" --kind "$kind" --scale-format "$sf" --scale-vec "$vec")
  for gen in probes normal bits cancel; do
    f=$dir/${name}_$gen
    { echo "$head"; "$vecgen" --format "$a" --b-format "$b" --out "$out" --kind "$gen" --count 100 --k "$K" \
      --seed 7 --scale-format "$sf" --scale-vec "$vec"; } >"$f.vec"
    "$cli" mma "${opts[@]}" <"$f.vec" >"$f.out"
  done
  kernels=$((kernels + 1))
done <<<"$list"
[ "$kernels" -gt 0 ] || { echo "probe --list printed no block-scaled kernel" >&2; exit 1; }
out=$("$checker" "$dir")
tail -n 1 <<<"$out"
grep -q "^gpu_data: $((4 * kernels)) files, [0-9]* lines compared, 0 mismatches$" <<<"$out"
echo "block-scaled kernels: $kernels, each with 4 generators: the host model agrees with bf16emu mma"
