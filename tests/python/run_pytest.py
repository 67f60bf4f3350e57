"""Runs one pytest file against the built bf16emu module (CTest entry point).

Exit 77 (CTest's SKIP_RETURN_CODE) with a one-line reason when the module was not built or
pytest/NumPy are missing; otherwise pytest's own exit status.
"""
import importlib.util
import os
import sys


def skip(reason: str) -> None:
    print(f"SKIPPED: {reason}")
    sys.exit(77)


def main() -> int:
    module_dir = os.environ.get("BF16EMU_PYTHON_DIR", "")
    if not module_dir:
        skip("the bf16emu Python module is not configured (BF16EMU_BUILD_PYTHON=OFF, or no pybind11 or no "
             "Python 3 with NumPy: apt-get install pybind11-dev python3-pybind11 python3-numpy python3-dev)")
    for mod in ("pytest", "numpy"):
        if importlib.util.find_spec(mod) is None:
            skip(f"{sys.executable} has no {mod} (apt-get install python3-{mod})")
    sys.path.insert(0, module_dir)
    os.environ["PYTHONPATH"] = module_dir + os.pathsep + os.environ.get("PYTHONPATH", "")
    import pytest
    return pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
