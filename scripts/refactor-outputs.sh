#!/usr/bin/env bash
# Golden outputs for refactors: runs a fixed set of bf16emu commands (JSON ledgers, bias state
# files, tensor-core lines, pitfalls reports, the paper job) with one binary and writes each
# output to a directory. Run it with the old and the new binary, then compare:
#   bash scripts/refactor-outputs.sh OLD/bf16emu /tmp/old
#   bash scripts/refactor-outputs.sh build/src/bf16emu /tmp/new
#   python3 scripts/compare-outputs.py /tmp/old /tmp/new
# JSON files are compared as values (every number bit for bit; Inf may have become null),
# everything else byte for byte, except the timing fields named in compare-outputs.py.
set -uo pipefail
bin=$1
out=$2
mkdir -p "$out"
run() { # name, args...
  local name=$1
  shift
  "$bin" "$@" >"$out/$name" 2>"$out/$name.stderr"
  echo $? >"$out/$name.rc"
}
for pol in exact fp32 paper fa2:sm80 fa2:sm90; do
  p=${pol/:/_}
  run "att_$p.json" attention --scenario sink --policy "$pol" --n 128 --d 32 --heads 2 --json
  run "att_${p}_stab.json" attention --scenario sink --policy "$pol" --variant stabilized --beta 4 --n 128 --d 32 --json
  run "att_${p}_bwd.json" attention --scenario sink --policy "$pol" --backward --n 128 --d 32 --json
  run "att_${p}_tiled.json" attention --scenario sink --policy "$pol" --bwd tiled --bwd-block-m 32 --bwd-block-n 32 --n 128 --d 32 --causal --json
done
run att_random_std.json attention --scenario random --policy fa2:sm90 --variant standard --n 96 --d 16 --batch 2 --heads 2 --json
run att_trace.json attention --scenario sink --policy paper --n 128 --d 32 --trace-element 3,1 --json
run att_text.txt attention --scenario sink --policy paper --n 128 --d 32 --backward
run att_o.npy attention --scenario sink --policy fa2:sm90 --n 64 --d 16 --out-o "$out/att_o_file.npy" --json
run bias_paper.json bias --scenario paper --trials 3000 --quiet --json
run bias_all.csv bias --scenario paper --method all --round all --trials 500 --quiet --csv
run bias_map.json bias --scenario paper --map-x ones=0:1:3 --map-y neg=0:1:3 --trials 300 --quiet --json
run bias_shard0.state bias --scenario paper --trials 4000 --shard 0/2 --quiet
run bias_shard1.state bias --scenario paper --trials 4000 --shard 1/2 --quiet
run bias_merge.json merge "$out/bias_shard0.state" "$out/bias_shard1.state" --json
run bias_search.json bias --search --iters 300 --restarts 2 --threads 2 --quiet --json
run bias_text.txt bias --scenario paper --trials 2000 --quiet
run paper.txt paper
run paper.json paper --json
run positions.txt positions --n 4096
run positions.json positions --n 4096 --json
run cp.json cp --n 128 --chunks 4 --json
run bwd_order.json bwd-order --n 128 --block 32 --json
run add_trace.txt add -2.4071154594421387 -2.296875 --to bf16 --trace
run fma.json fma 1.5 2 0x3f800001 --json
printf '0x3f80 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0x3f80 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0xbf7fffff\n1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 0.5\n' >"$out/mma.in"
run mma_sm80.txt mma --arch sm80 --a-format bf16 --in "$out/mma.in"
run mma_sm90.json mma --arch sm90 --a-format bf16 --in "$out/mma.in" --json --trace
exit 0
