"""Builds bf16emu._core through the project's CMake (pyproject.toml holds the metadata).

The extension is the CMake target bf16emu_python; this file configures a build tree with only
that target (no tests, CLI, benches, examples or CUDA), builds it and copies the module into the
wheel. BF16EMU_CMAKE_BUILD_DIR=<dir> reuses an existing build tree instead (configured with the
same Python): the target is brought up to date there, so nothing is recompiled when it already is.
The version is the one of project(bf16emu VERSION ...) in CMakeLists.txt, as for the CLI.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"project\(\s*bf16emu\s+VERSION\s+([0-9][0-9.]*)", text)
    if not m:
        raise RuntimeError("CMakeLists.txt: no 'project(bf16emu VERSION x.y.z' line")
    return m.group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        reuse = os.environ.get("BF16EMU_CMAKE_BUILD_DIR")
        jobs = os.environ.get("BF16EMU_BUILD_JOBS") or os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or "2"
        if reuse:
            build = Path(reuse).resolve()
            if not (build / "CMakeCache.txt").exists():
                raise RuntimeError(f"BF16EMU_CMAKE_BUILD_DIR={reuse}: no CMakeCache.txt there (configure it first)")
        else:
            build = Path(self.build_temp).resolve() / "cmake"
            build.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                            "-DBF16EMU_BUILD_TESTS=OFF", "-DBF16EMU_BUILD_CLI=OFF", "-DBF16EMU_BUILD_BENCH=OFF",
                            "-DBF16EMU_BUILD_EXAMPLES=OFF", "-DBF16EMU_ENABLE_CUDA=OFF", "-DBF16EMU_INSTALL=OFF",
                            "-DBF16EMU_BUILD_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "bf16emu_python", "-j", jobs], check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = sorted((build / "python" / "bf16emu").glob("_core*.so"))
        match = [p for p in built if p.name == "_core" + suffix]
        if not match:
            raise RuntimeError(f"no _core{suffix} in {build / 'python' / 'bf16emu'} (found "
                               f"{[p.name for p in built]}; was the build tree configured for another Python?)")
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(match[0], dest)


# setuptools' scratch space (and its egg-info): <BF16EMU_CMAKE_BUILD_DIR>/setuptools when a build
# tree is reused, else build-pip/ (ignored by git); never build/, the CMake tree of scripts/test.sh.
if os.environ.get("BF16EMU_CMAKE_BUILD_DIR"):
    SCRATCH = Path(os.environ["BF16EMU_CMAKE_BUILD_DIR"]).resolve() / "setuptools"
else:
    SCRATCH = ROOT / "build-pip"
SCRATCH.mkdir(parents=True, exist_ok=True)
setup(version=project_version(), ext_modules=[Extension("bf16emu._core", sources=[])],
      cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": str(SCRATCH)}, "egg_info": {"egg_base": str(SCRATCH)}})
