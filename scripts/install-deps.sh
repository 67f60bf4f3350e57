#!/usr/bin/env bash
# Installs what a fresh Debian 12 (bookworm) lacks to build and test bf16emu.
# Only missing packages are installed; nothing happens when everything is present.
# Non-interactive; uses sudo when not run as root.
#   bash scripts/install-deps.sh            # required packages
#   BF16EMU_DEPS_MPI=1 bash scripts/install-deps.sh     # also Open MPI (optional: mpirun -np N
#                                                         bf16emu bias|attention, docs/scale.md)
set -euo pipefail

# package : a command or file that proves it is present without dpkg (e.g. a manual install)
required=(
  "cmake:cmd:cmake"
  "g++:cmd:g++"
  "make:cmd:make"
  "ninja-build:cmd:ninja" # scripts/test.sh and sanitize.sh build with it (Make still works)
  "python3:cmd:python3"
  "libboost-dev:file:/usr/include/boost/version.hpp"
  "libmpfr-dev:file:/usr/include/mpfr.h"
  "libgmp-dev:file:/usr/include/gmp.h"
  "libcli11-dev:file:/usr/include/CLI/CLI.hpp"
  "libgtest-dev:file:/usr/include/gtest/gtest.h"
  "libbenchmark-dev:file:/usr/include/benchmark/benchmark.h"
  "libhwy-dev:file:/usr/include/hwy/highway.h"
  "gnuplot-nox:cmd:gnuplot"
  "clang-format:cmd:clang-format"
  "ccache:cmd:ccache" # compiler cache (CMakeLists.txt): a rebuild or a fresh clone on the same machine reuses objects
  "clang-14:cmd:clang++-14"
  "libclang-rt-14-dev:file:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a"
  # the Python module (python/) and its tests, for Debian's /usr/bin/python3
  "python3-dev:file:/usr/include/python3.11/Python.h"
  "pybind11-dev:file:/usr/include/pybind11/pybind11.h"
  "python3-pybind11:file:/usr/lib/python3/dist-packages/pybind11/__init__.py"
  "python3-numpy:file:/usr/lib/python3/dist-packages/numpy/__init__.py"
  "python3-pytest:file:/usr/lib/python3/dist-packages/pytest/__init__.py"
  "python3-torch:file:/usr/lib/python3/dist-packages/torch/__init__.py"
  "python3-venv:file:/usr/lib/python3.11/ensurepip/__init__.py"
  "python3-build:file:/usr/lib/python3/dist-packages/build/__init__.py"
  "python3-setuptools:file:/usr/lib/python3/dist-packages/setuptools/__init__.py"
  "python3-wheel:file:/usr/lib/python3/dist-packages/wheel/__init__.py"
  "python3-matplotlib:file:/usr/lib/python3/dist-packages/matplotlib/__init__.py"
)
if [[ "${BF16EMU_DEPS_MPI:-0}" == 1 ]]; then
  required+=("libopenmpi-dev:file:/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h" "openmpi-bin:cmd:mpirun")
fi

installed() { # package kind probe
  local pkg=$1 kind=$2 probe=$3
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then return 0; fi
  case $kind in
  cmd) command -v "$probe" >/dev/null 2>&1 ;;
  file) [[ -e $probe ]] || compgen -G "/usr/include/*-linux-gnu/${probe#/usr/include/}" >/dev/null ;;
  esac
}

missing=()
for entry in "${required[@]}"; do
  IFS=: read -r pkg kind probe <<<"$entry"
  installed "$pkg" "$kind" "$probe" || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all dependencies present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  SUDO=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
