#!/usr/bin/env bash
# Fails (exit 1) when a tracked C++/CUDA source differs from what clang-format makes of it with
# the committed .clang-format. Fix with: bash scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
  echo "check-format: $cf not found (Debian: apt-get install clang-format)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.h' | grep -v '^fuzz/corpus/')
if [[ ${1:-} == --fix ]]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
if ! out=$("$cf" --dry-run -Werror "${files[@]}" 2>&1); then
  echo "$out" | grep 'error:' | cut -d: -f1 | sort -u | sed 's/^/check-format: not clang-formatted: /'
  echo "check-format: run 'bash scripts/check-format.sh --fix'" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clang-formatted"
