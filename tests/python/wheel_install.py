"""python.wheel_install: the wheel of the current build tree, installed into a fresh venv.

  wheel_install.py SOURCE_DIR BUILD_DIR

Builds the wheel with `python3 -m build --no-isolation --wheel` (BF16EMU_CMAKE_BUILD_DIR=BUILD_DIR:
the module already built there is reused, not recompiled), makes a venv with
--system-site-packages in a temporary directory (NumPy and torch come from Debian's site
packages), installs the wheel with pip --no-index, and imports and uses bf16emu from that temporary
directory with no PYTHONPATH: the installed copy, not the source tree. Exits 77 (CTest SKIP) with a
message only when venv, ensurepip or the build frontend (Debian: python3-venv, python3-build) is
missing; any other failure fails the test.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMOKE = r"""
import os, sys, warnings
import numpy as np
import bf16emu
here = os.path.realpath(os.path.dirname(bf16emu.__file__))
assert here.startswith(os.path.realpath(sys.prefix)), (here, sys.prefix)
assert bf16emu.__version__ == sys.argv[1], (bf16emu.__version__, sys.argv[1])
assert os.path.exists(os.path.join(here, "py.typed")) and os.path.exists(os.path.join(here, "__init__.pyi"))
y = np.asarray(bf16emu.convert(np.float32([1 / 3, 1.0, 3e38]), to="bf16"))
assert y.dtype == np.uint16 and y.tolist() == [0x3EAB, 0x3F80, 0x7F62], y
r, mask, flags = bf16emu.add(np.float32([[1.0], [3e38]]), np.float32([2.0**-30, 3e38]), return_flags=True)
assert r.shape == (2, 2) and mask.tolist() == [[16, 16], [16, 20]], mask
assert bf16emu.finfo("e4m3").max == 448.0
print("wheel smoke test passed:", bf16emu.__version__, here)
"""


def skip(msg: str) -> None:
    print(f"python.wheel_install: skipped: {msg}")
    sys.exit(77)


def run(cmd, **kw) -> None:
    t = time.monotonic()
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)
    print(f"  ({time.monotonic() - t:.1f} s)", flush=True)


def main() -> int:
    source, build = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    for mod, pkg in (("venv", "python3-venv"), ("ensurepip", "python3-venv"), ("build", "python3-build")):
        if importlib.util.find_spec(mod) is None:
            skip(f"{sys.executable} has no '{mod}' module (Debian: apt-get install {pkg})")
    version = re.search(r"project\(\s*bf16emu\s+VERSION\s+([0-9.]+)", (source / "CMakeLists.txt").read_text())[1]
    tmp = Path(tempfile.mkdtemp(prefix="bf16emu-wheel-"))
    try:
        env = dict(os.environ, BF16EMU_CMAKE_BUILD_DIR=str(build))
        env.pop("PYTHONPATH", None)
        run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(tmp / "dist"), str(source)],
            env=env, cwd=tmp)
        wheels = sorted((tmp / "dist").glob(f"bf16emu-{version}-*.whl"))
        assert len(wheels) == 1, f"expected one bf16emu-{version} wheel, got {list((tmp / 'dist').iterdir())}"
        run([sys.executable, "-m", "venv", "--system-site-packages", str(tmp / "venv")], env=env, cwd=tmp)
        py = tmp / "venv" / "bin" / "python"
        env_venv = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "BF16EMU_CMAKE_BUILD_DIR")}
        run([str(py), "-m", "pip", "install", "--no-index", "--disable-pip-version-check", str(wheels[0])],
            env=env_venv, cwd=tmp)
        run([str(py), "-c", SMOKE, version], env=env_venv, cwd=tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
