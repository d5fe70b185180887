#!/usr/bin/env python3
"""Runs the Python tests the way a user gets kiln: a fresh venv (with Debian's numpy, onnx and
pytest through --system-site-packages), the built `kiln` wheel installed with pip --no-index, and
pytest from outside the source tree. ctest runs it as python_tests (python/CMakeLists.txt).

  /usr/bin/python3 python/tests/run.py --build build [test_file.py...] [pytest args...]
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="the build directory (dist/ and bin/ in it)")
    args, pytest_args = ap.parse_known_args()
    build = os.path.abspath(args.build)
    source = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    wheels = glob.glob(os.path.join(build, "dist", "kiln-*.whl"))
    if len(wheels) != 1:
        print(f"run.py: error: expected one kiln-*.whl in {build}/dist, found {wheels} (build kiln_wheels)",
              file=sys.stderr)
        return 1
    work = tempfile.mkdtemp(prefix="kiln-pytest-")
    try:
        venv = os.path.join(work, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-cache-dir",
                        "--disable-pip-version-check", wheels[0]], check=True)
        env = dict(os.environ, KILN_SOURCE=source, KILN_BIN=os.path.join(build, "bin"),
                   KILN_DIST=os.path.join(build, "dist"), KILN_CACHE_DIR=os.path.join(work, "cache"),
                   PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        tests = os.path.join(source, "python", "tests")
        # Test files named on the command line (test_run.py, test_run.py::test_x) or the whole suite.
        named = [os.path.join(tests, a) for a in pytest_args if a.startswith("test_")]
        pytest_args = [a for a in pytest_args if not a.startswith("test_")]
        # From the work directory, so that nothing of the source tree is importable as `kiln`.
        r = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                            os.path.join(work, "tmp"), "--rootdir", tests] + (named or [tests]) + pytest_args,
                           cwd=work, env=env)
        return r.returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
