#!/bin/sh
# tests/mpi: one MPI check of the CLI; $MPIEXEC is mpiexec (tests/mpi/CMakeLists.txt).
#   mpi_run.sh same N KIND FILE BF ARGS...
#       runs `BF ARGS` as one process and as N ranks; the output FILE (- for stdout) must be
#       byte-identical, KIND json without the value of "seconds" (the run's timing)
#   mpi_run.sh fail N R BF ARGS...
#       N ranks with BF16EMU_MPI_FAIL_RANK=R must exit non-zero and name rank R on stderr
set -u
mode=$1 n=$2
shift 2
if [ "$mode" = same ]; then
  kind=$1 file=$2
  shift 2
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  mkdir "$dir/one" "$dir/mpi"
  (cd "$dir/one" && "$@" > stdout) || { echo "FAIL: one process exited $?"; exit 1; }
  (cd "$dir/mpi" && "$MPIEXEC" -n "$n" --oversubscribe "$@" > stdout) || { echo "FAIL: $n ranks exited $?"; exit 1; }
  [ "$file" = - ] && file=stdout
  for d in one mpi; do
    if [ "$kind" = json ]; then sed 's/"seconds": *[^,}]*//' "$dir/$d/$file" > "$dir/$d.cmp"; else cp "$dir/$d/$file" "$dir/$d.cmp"; fi
  done
  [ -s "$dir/one.cmp" ] || { echo "FAIL: empty output"; exit 1; }
  cmp "$dir/one.cmp" "$dir/mpi.cmp" || { echo "FAIL: $n ranks differ from one process"; diff "$dir/one.cmp" "$dir/mpi.cmp" | head -20; exit 1; }
  echo "OK: $file identical for 1 process and $n ranks ($(wc -c < "$dir/one.cmp") bytes)"
elif [ "$mode" = fail ]; then
  rank=$1
  shift
  err=$(BF16EMU_MPI_FAIL_RANK=$rank "$MPIEXEC" -n "$n" --oversubscribe "$@" 2>&1 >/dev/null)
  rc=$?
  echo "$err" | grep -v 'heads done'
  [ "$rc" -ne 0 ] || { echo "FAIL: exit status 0"; exit 1; }
  echo "$err" | grep -q "^bf16emu: rank $rank of $n: .*BF16EMU_MPI_FAIL_RANK" || { echo "FAIL: rank $rank not named"; exit 1; }
  echo "OK: exit $rc, rank $rank named"
else
  echo "mpi_run.sh: unknown mode $mode"
  exit 2
fi
