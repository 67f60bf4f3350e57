#!/bin/sh
# Regenerates every number and figure of docs/paper-reproduction.md.
#   sh docs/figures/reproduce.sh [path/to/bf16emu]      (needs jq and gnuplot)
# Writes docs/figures/*.json (one ledger per run), sweep.csv, trace_*.csv and *.png.
set -eu
B=${1:-build-attn/src/bf16emu}
D=$(dirname "$0")
# The reproduction's sink scenario (n 256, d 64, one head, Br = Bc = 64, seed 1):
M=8 ST=10 SK=0.9
sink() { echo "--n 256 --d 64 --scenario sink --multiplicity $M --strength $ST --tie-share 0.5 --v-skew $SK --skew-cols 0.5"; }
row() { # name, then bf16emu attention options: appends one CSV line from the JSON ledger
  name=$1; shift
  "$B" attention "$@" --json --threads 1 > "$D/run_$name.json"
  jq -r --arg n "$name" '[$n, .policy, .variant, (.beta // ""), .seed, .multiplicity, .strength, .v_skew, .block_n,
      .output_error.mean_signed, .output_error.stderr_signed, .output_error.z, .output_error.rel_fro,
      .p_equals_one.ones, (.delta_error.mean_signed // ""), (.delta_error.z // "")] | @csv' "$D/run_$name.json" >> "$D/sweep.csv"
}
echo 'name,policy,variant,beta,seed,multiplicity,strength,v_skew,block_n,mean_signed,stderr,z,rel_fro,p_ones,delta_mean,delta_z' > "$D/sweep.csv"
# 1, 6: the FA2 forward under paper, fa2:sm80, fa2:sm90 (seeds 1-3)
for seed in 1 2 3; do
  for p in paper fa2:sm80 fa2:sm90; do row "main_${p#*:}_s$seed" $(sink) --seed $seed --policy $p; done
done
# 2: stabilized, beta 2 4 7 8
for beta in 2 4 7 8; do
  for p in paper fa2:sm90; do row "stab_${p#*:}_b$beta" $(sink) --seed 1 --policy $p --variant stabilized --beta $beta; done
done
# 3: delta with dO correlated (+1, -1) and uncorrelated (0) with the skewed columns
for bias in 1 -1 0; do
  for p in paper fa2:sm90; do row "delta_${p#*:}_do$bias" $(sink) --seed 1 --policy $p --backward --do-bias $bias; done
done
# 5: random control
for p in paper fa2:sm80 fa2:sm90; do row "random_${p#*:}" --n 256 --d 64 --scenario random --seed 1 --policy $p; done
# 6: conditions: multiplicity, strength, V skew, block size (fa2 variant, seed 1)
for m in 1 2 4 16; do
  for p in paper fa2:sm90; do M=$m; row "mult${m}_${p#*:}" $(sink) --seed 1 --policy $p; M=8; done
done
for st in 4 6 8 12; do
  for p in paper fa2:sm90; do ST=$st; row "str${st}_${p#*:}" $(sink) --seed 1 --policy $p; ST=10; done
done
for sk in 0.5 1.0; do
  for p in paper fa2:sm90; do SK=$sk; row "skew${sk}_${p#*:}" $(sink) --seed 1 --policy $p; SK=0.9; done
done
for bn in 16 256; do
  for p in paper fa2:sm90; do row "bn${bn}_${p#*:}" $(sink) --seed 1 --policy $p --block-n $bn; done
done
for p in paper fa2:sm90; do row "standard_${p#*:}" $(sink) --seed 1 --policy $p --variant standard; done
# 4: figure-6-like trace of one element: row 0 is aimed at the repeated key (its P-bar = 1 eight times), column 3 is skewed
for p in paper fa2:sm90; do
  "$B" attention $(sink) --seed 1 --policy $p --trace-element 0,3 --plot "$D/trace_${p#*:}.png" --threads 1 > /dev/null
done
# z of the O error against the multiplicity (CSV beside the plot)
{ echo 'multiplicity,z_paper,z_fa2_sm90'
  for m in 1 2 4 8 16; do
    f=$m; [ "$m" = 8 ] && a="$D/run_main_paper_s1.json" b="$D/run_main_sm90_s1.json" || { a="$D/run_mult${m}_paper.json"; b="$D/run_mult${m}_sm90.json"; }
    echo "$f,$(jq .output_error.z "$a"),$(jq .output_error.z "$b")"
  done; } > "$D/z_vs_multiplicity.csv"
gnuplot -e "set terminal pngcairo size 800,500; set output '$D/z_vs_multiplicity.png'; set datafile separator ',';
  set logscale x 2; set xlabel 'copies of the repeated key (multiplicity)'; set ylabel 'z = mean signed error of O / standard error';
  set title 'sink scenario, n 256, d 64, strength 10, seed 1'; set grid; set key bottom left;
  plot '$D/z_vs_multiplicity.csv' every ::1 using 1:2 with linespoints lw 2 title 'paper', '' every ::1 using 1:3 with linespoints lw 2 title 'fa2:sm90', 0 with lines lc rgb 'gray' notitle"
