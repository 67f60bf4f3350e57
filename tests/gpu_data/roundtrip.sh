#!/usr/bin/env bash
# No-GPU consistency check of the GPU-data pipeline: vectors written by bf16emu-vecgen (as the
# GPU runner writes them), answered by `bf16emu mma`, re-read and re-checked by
# bf16emu_gpu_data_check. Every format, both instruction families, every generator.
#   roundtrip.sh VECGEN BF16EMU CHECKER
set -eu -o pipefail
vecgen=$1 cli=$2 checker=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for instr in mma wgmma; do
  for pair in bf16:fp32 fp16:fp32 fp16:fp16 tf32:fp32 e4m3:fp32 e5m2:fp32; do
    f=${pair%:*} o=${pair#*:}
    case $f in tf32) k=8 ;; e4m3 | e5m2) k=32 ;; *) k=16 ;; esac
    for kind in probes normal bits cancel; do
      name=$dir/${instr}_${f}_${o}_${kind}
      {
        echo "#! arch=sm90 instr=$instr in=$f out=$o k=$k"
        "$vecgen" --format "$f" --out "$o" --kind "$kind" --count 500 --seed 3
      } >"$name.vec"
      "$cli" mma --arch sm90 --instr "$instr" --a-format "$f" --out "$o" <"$name.vec" >"$name.out"
    done
  done
done
# A multi-instruction line (k = 3 instructions), as a GEMM element is written.
{
  echo "#! arch=sm80 instr=mma in=bf16 out=fp32 k=48"
  "$vecgen" --format bf16 --kind cancel --count 200 --k 48 --seed 4
} >"$dir/gemm_like.vec"
"$cli" mma --arch sm80 --a-format bf16 --k 48 <"$dir/gemm_like.vec" >"$dir/gemm_like.out"
"$checker" "$dir"
