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
# The header keys of the issue-16 kernels (gpu::probe_header): b= (B's format), kind=, shape_k=,
# fp64 (DMMA), tcgen05. Each case: arch instr A B D kind shape_k (- for none), K = two
# instructions per line; `bf16emu mma` answers with the matching options.
for c in "sm90 mma e4m3 e5m2 fp32 - -" "sm90 mma e5m2 e4m3 fp16 - -" "sm90 wgmma e4m3 e5m2 fp32 - -" \
  "sm90 wgmma e5m2 e4m3 fp16 - -" "sm90 mma fp16 fp16 fp32 - 8" "sm80 mma fp16 fp16 fp16 - 8" \
  "sm80 mma fp64 fp64 fp64 - -" "sm90 mma fp64 fp64 fp64 - -" "sm120 mma e4m3 e5m2 fp32 f8f6f4 -" \
  "sm120 mma e5m2 e5m2 fp16 f8f6f4 -" "sm100 tcgen05 e4m3 e5m2 fp32 f8f6f4 -" \
  "sm100 tcgen05 e5m2 e5m2 fp16 f8f6f4 -" "sm100 tcgen05 bf16 bf16 fp32 - -" "sm100 tcgen05 tf32 tf32 fp32 - -"; do
  read -r arch instr a b o kind sk <<<"$c"
  case $a in tf32) k=8 ;; e4m3 | e5m2) k=32 ;; fp64) k=4 ;; *) k=16 ;; esac
  [ "$sk" = - ] || k=$sk
  K=$((2 * k))
  head="#! arch=$arch instr=$instr in=$a out=$o k=$K" opts=(--arch "$arch" --instr "$instr" --a-format "$a" --out "$o" --k "$K")
  [ "$b" = "$a" ] || head+=" b=$b" opts+=(--b-format "$b")
  [ "$kind" = - ] || head+=" kind=$kind" opts+=(--kind "$kind")
  [ "$sk" = - ] || head+=" shape_k=$sk" opts+=(--shape-k "$sk")
  for gen in probes normal bits cancel; do
    name=$dir/new_${arch}_${instr}_${a}x${b}_${o}_${kind}_${sk}_$gen
    {
      echo "$head"
      "$vecgen" --format "$a" --b-format "$b" --out "$o" --kind "$gen" --count 200 --k "$K" --seed 5
    } >"$name.vec"
    "$cli" mma "${opts[@]}" <"$name.vec" >"$name.out"
  done
done
# The block-scaled kernels (sm_120a mma.sync ... .block_scale): header keys kind= scale= vec=,
# lines with K/vec scale factors of A and of B after B. Each case: A B kind scale vec k; K = two
# instructions per line; `bf16emu mma --kind` answers.
for c in "e4m3 e4m3 mxf8f6f4 ue8m0 32 32" "e4m3 e2m1 mxf8f6f4 ue8m0 32 32" "e3m2 e2m3 mxf8f6f4 ue8m0 32 32" \
  "e5m2 e3m2 mxf8f6f4 ue8m0 32 32" "e2m1 e2m1 mxf8f6f4 ue8m0 32 32" "e2m1 e2m1 mxf4 ue8m0 32 64" \
  "e2m1 e2m1 mxf4nvf4 ue4m3 16 64"; do
  read -r a b kind sf vec k <<<"$c"
  K=$((2 * k))
  head="#! arch=sm120 instr=mma in=$a out=fp32 k=$K" opts=(--arch sm120 --instr mma --a-format "$a" --out fp32 --k "$K")
  [ "$b" = "$a" ] || head+=" b=$b"
  head+=" kind=$kind scale=$sf vec=$vec" opts+=(--b-format "$b" --kind "$kind" --scale-format "$sf" --scale-vec "$vec")
  for gen in probes normal bits cancel; do
    name=$dir/bs_${kind}_${a}x${b}_$gen
    {
      echo "$head"
      "$vecgen" --format "$a" --b-format "$b" --out fp32 --kind "$gen" --count 200 --k "$K" --seed 6 \
        --scale-format "$sf" --scale-vec "$vec"
    } >"$name.vec"
    "$cli" mma "${opts[@]}" <"$name.vec" >"$name.out"
  done
done
"$checker" "$dir"

# Every probe kernel of the runner's table (bf16emu_gpu_data_check --cases: a new kernel joins
# here by itself) on the first model arch of a device that runs it: the header `probe --save`
# writes, vectors of each generator, `bf16emu mma`'s answers, re-checked by the checker's host
# model (cuda/host_model.cpp, the runner's own).
all=$dir/all
mkdir "$all"
"$checker" --cases >"$dir/cases.txt"
ncases=0
while IFS='|' read -r name head vopts copts; do
  for gen in probes normal bits cancel; do
    # shellcheck disable=SC2086 # the option lists are word lists
    { echo "$head" && "$vecgen" $vopts --kind "$gen" --count 100 --seed 7; } >"$all/${name}_$gen.vec"
    # shellcheck disable=SC2086
    "$cli" mma $copts <"$all/${name}_$gen.vec" >"$all/${name}_$gen.out"
  done
  ncases=$((ncases + 1))
done <"$dir/cases.txt"
echo "every probe kernel: $ncases kernels, 4 generators each"
"$checker" "$all"

# Negative checks: each must exit 1 (not 0, not a crash) with a line naming the fault.
bad=$dir/bad
mkdir "$bad"
expect_fail() { # expect_fail PATTERN: the checker over $bad exits 1 and prints PATTERN
  local out rc=0
  out=$("$checker" "$bad") || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q -- "$1" <<<"$out"; then
    printf 'expected exit 1 and "%s", got exit %d:\n%s\n' "$1" "$rc" "$out" >&2
    exit 1
  fi
  echo "refused as expected ($1)"
  rm -f "$bad"/*
}
# One output bit flipped (the last hex digit of the first D): a mismatch on line 1.
src=$dir/new_sm90_mma_e4m3xe5m2_fp32_-_-_normal
cp "$src.vec" "$bad/flip.vec"
awk 'BEGIN { h = "0123456789abcdef" }
     !done && !/^#/ { i = index(h, substr($0, length($0), 1)) - 1; i = i % 2 ? i - 1 : i + 1
                      $0 = substr($0, 1, length($0) - 1) substr(h, i + 1, 1); done = 1 } { print }' \
  "$src.out" >"$bad/flip.out"
cmp -s "$src.out" "$bad/flip.out" && { echo "the bit flip changed nothing" >&2; exit 1; }
expect_fail 'flip.vec: line 1: GPU'
# Headers no kernel or model serves: HEADER|what the message names.
good="arch=sm90 instr=mma in=e4m3 out=fp32 k=64 b=e5m2"
for c in "$good kind=nonsense|nonsense" "$good bogus=1|bogus=1" "${good/b=e5m2/b=e9m9}|b='e9m9'" \
  "$good shape_k=4|no probe kernel for mma e4m3 x e5m2 -> fp32 k4" \
  "${good/sm90 instr=mma/sm80 instr=wgmma}|no preset for sm80 wgmma e4m3 x e5m2 -> fp32" "${good/k=64/k=zero}|k=" \
  "${good/ in=e4m3/}|without in="; do
  h=${c%%|*} want=${c#*|}
  awk -v h="#! $h" '/^#!/ { $0 = h } { print }' "$src.vec" >"$bad/header.vec"
  cp "$src.out" "$bad/header.out"
  expect_fail "header.vec: .*$want"
done
# The issue-16 families can fail: a file of one kernel, answered by `bf16emu mma` on ARCH, passes
# with its own header and gives mismatches with the header edited FROM -> TO (another kernel's
# model): m16n8k4 tf32 as m16n8k8 and m16n8k8 bf16 as m16n8k16 on sm90 (blocks of 4 / 8 vs 8 / 16;
# on sm80 the tf32 k8 row has blocks of 4 too), sm120 m16n8k16 fp8 as m16n8k32, an e3m2 x e2m1
# kind::f8f6f4 file read as e3m2 x e2m3, an m8n8k4 file with C in fp16 and D in fp32 read without
# its c= key (C as fp32 bits, the m8n8k4 kernel with C in D's format). (f64 m16n8k8 / k16 are one fma chain each, as m8n8k4:
# a wrong shape gives the same bits, so the f64 case is a flipped output bit below.)
for c in "mma_tf32_fp32_k4_normal|sm90| shape_k=4|" "mma_bf16_fp32_k8_normal|sm90| shape_k=8|" \
  "mma_e4m3_fp32_k16_normal|sm120| shape_k=16|" "mma_e5m2xe4m3_fp16_k16_normal|sm120| shape_k=16|" \
  "mma_f8f6f4_e3m2xe2m1_fp32_bits|sm120| b=e2m1| b=e2m3" "mma_fp16_fp32_c16_m8n8k4_normal|sm75| c=fp16| shape_k=4"; do
  IFS='|' read -r name arch from to <<<"$c"
  copts=$(awk -F'|' -v k="${name%_*}" '$1 == k { print $4 }' "$dir/cases.txt" | sed -E "s/--arch [^ ]+/--arch $arch/")
  awk -v a="$arch" '/^#!/ { sub(/arch=[^ ]+/, "arch=" a) } { print }' "$all/$name.vec" >"$bad/own.vec"
  # shellcheck disable=SC2086
  "$cli" mma $copts <"$bad/own.vec" >"$bad/own.out"
  "$checker" "$bad" >/dev/null
  awk -v f="$from" -v t="$to" '/^#!/ { if (!sub(f, t)) exit 3 } { print }' "$bad/own.vec" >"$bad/wrong.vec"
  mv "$bad/own.out" "$bad/wrong.out"
  rm "$bad/own.vec"
  rc=0
  out=$("$checker" "$bad") || rc=$?
  summary=$(grep '^gpu_data:' <<<"$out" || true)
  if [ "$rc" -ne 1 ] || ! grep -q ' [1-9][0-9]* mismatches' <<<"$summary"; then
    printf '%s with "%s" -> "%s": expected mismatches, got exit %d:\n%s\n' "$name" "$from" "$to" "$rc" "$out" >&2
    exit 1
  fi
  echo "$name on $arch checked as '${to:-without${from}}': $summary"
  rm -f "$bad"/*
done
src=$all/mma_fp64_fp64_k16_normal
cp "$src.vec" "$bad/flip.vec"
awk 'BEGIN { h = "0123456789abcdef" }
     !done && !/^#/ { i = index(h, substr($0, length($0), 1)) - 1; i = i % 2 ? i - 1 : i + 1
                      $0 = substr($0, 1, length($0) - 1) substr(h, i + 1, 1); done = 1 } { print }' \
  "$src.out" >"$bad/flip.out"
expect_fail 'flip.vec: line 1: GPU'
# Block-scaled files. The scale format matters: the same lines answered with ue8m0 factors (the
# model's sm120 mxf4nvf4 ue8m0 preset) but headed scale=ue4m3 mismatch; the count is printed.
bs=$dir/bs_mxf4nvf4_e2m1xe2m1_normal
cp "$bs.vec" "$bad/scalefmt.vec"
"$cli" mma --arch sm120 --a-format e2m1 --out fp32 --k 128 --kind mxf4nvf4 --scale-format ue8m0 --scale-vec 16 \
  <"$bs.vec" >"$bad/scalefmt.out"
out=$("$checker" "$bad") && { echo "a file with the wrong scale format passed:" >&2; echo "$out" >&2; exit 1; }
n=$(sed -n 's/^scalefmt.vec .*: \([0-9]*\) lines, \([0-9]*\) mismatches$/\2 of \1/p' <<<"$out")
case $n in "" | "0 of"*) echo "expected mismatches for the wrong scale format, got: $out" >&2; exit 1 ;; esac
echo "refused as expected (scale=ue4m3 header, ue8m0 answers: $n lines mismatch)"
rm -f "$bad"/*
# Block-scaled headers and lines no kernel or parser takes: HEADER|what the message names.
bgood="arch=sm120 instr=mma in=e2m1 out=fp32 k=128 kind=mxf4nvf4 scale=ue4m3 vec=16"
for c in "${bgood/scale=ue4m3/scale=ue9m9}|bad header value scale='ue9m9'" "${bgood/vec=16/vec=24}|bad header value vec='24'" \
  "${bgood/vec=16/vec=x}|vec=" "${bgood/scale=ue4m3/scale=ue8m0}|scale ue8m0 vec 16 (mxf4nvf4 with ue8m0 factors" \
  "${bgood/vec=16/vec=32}|no probe kernel for mma kind::mxf4nvf4 e2m1 -> fp32 scale ue4m3 vec 32" \
  "${bgood/kind=mxf4nvf4/kind=f8f6f4}|need a block-scaled --kind" "${bgood/k=128/k=96}|k=96 is not a multiple of"; do
  h=${c%%|*} want=${c#*|}
  awk -v h="#! $h" '/^#!/ { $0 = h } { print }' "$bs.vec" >"$bad/header.vec"
  cp "$bs.out" "$bad/header.out"
  expect_fail "header.vec: .*$want"
done
# A scale factor that is not a byte pattern.
awk '!/^#/ && !done { $257 = "0x1ff"; done = 1 } { print }' "$bs.vec" >"$bad/token.vec"
cp "$bs.out" "$bad/token.out"
expect_fail "token.vec: line .*scale factor '0x1ff' is not a ue4m3 bit pattern"
