"""The wheels: valid (RECORD matches), kiln-runtime free of LLVM/MLIR and working on its own."""

import base64
import glob
import hashlib
import os
import subprocess
import sys
import zipfile

import pytest

import kiln

DIST = os.environ.get("KILN_DIST", "")


def wheel(prefix):
    found = glob.glob(os.path.join(DIST, prefix + "-*.whl"))
    assert len(found) == 1, f"{prefix}-*.whl in KILN_DIST='{DIST}': {found}"
    return found[0]


def needed_and_runpath(data, tmp_path):
    so = tmp_path / "module.so"
    so.write_bytes(data)
    out = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    # kiln._compiler links objects built as position-independent executables (python/CMakeLists.txt):
    # they must not have forced text relocations on the module.
    assert "TEXTREL" not in out
    needed = [l.split("[", 1)[1].rstrip("]") for l in out.splitlines() if "(NEEDED)" in l]
    runpath = [l.split("[", 1)[1].rstrip("]") for l in out.splitlines() if "(RUNPATH)" in l or "(RPATH)" in l]
    # The module exports its PyInit_ function only (python/CMakeLists.txt's version scripts): not
    # the C API of the runtime copy inside it.
    syms = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True, text=True, check=True).stdout
    exported = [l.split()[-1] for l in syms.splitlines() if l.strip()]
    assert len(exported) == 1 and exported[0].startswith("PyInit__"), exported
    return needed, runpath


@pytest.mark.parametrize("prefix", ["kiln", "kiln_runtime"])
def test_record_matches_contents(prefix):
    with zipfile.ZipFile(wheel(prefix)) as z:
        names = set(z.namelist())
        info = [n for n in names if n.endswith(".dist-info/RECORD")]
        assert len(info) == 1
        rows = [r.rsplit(",", 2) for r in z.read(info[0]).decode().splitlines()]
        assert {r[0] for r in rows} == names
        for path, digest, size in rows:
            if path == info[0]:
                assert digest == "" and size == ""
                continue
            data = z.read(path)
            assert int(size) == len(data)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == want, path
        meta = z.read(info[0].replace("RECORD", "METADATA")).decode()
        assert f"Name: {prefix.replace('_', '-')}" in meta and f"Version: {kiln.__version__}" in meta
        assert "Root-Is-Purelib: false" in z.read(info[0].replace("RECORD", "WHEEL")).decode()


def test_runtime_wheel_links_no_llvm(tmp_path):
    with zipfile.ZipFile(wheel("kiln_runtime")) as z:
        modules = [n for n in z.namelist() if n.endswith(".so")]
        assert [os.path.basename(m).split(".")[0] for m in modules] == ["_runtime"]
        needed, _ = needed_and_runpath(z.read(modules[0]), tmp_path)
    assert needed, "readelf found no NEEDED entries"
    assert not [n for n in needed if "LLVM" in n or "MLIR" in n or "clang" in n], needed
    assert os.path.getsize(wheel("kiln_runtime")) < 4 * 1024 * 1024


def test_compiler_module_finds_debians_llvm(tmp_path):
    with zipfile.ZipFile(wheel("kiln")) as z:
        compiler = [n for n in z.namelist() if os.path.basename(n).startswith("_compiler") and n.endswith(".so")]
        assert len(compiler) == 1
        needed, runpath = needed_and_runpath(z.read(compiler[0]), tmp_path)
        # Declared, not bundled.
        assert "Requires-External: libmlir-22" in z.read(
            [n for n in z.namelist() if n.endswith("METADATA")][0]).decode()
        assert not [n for n in z.namelist() if "libLLVM" in n or "libMLIR" in n]
    assert any(n.startswith("libMLIR.so") for n in needed) and any(n.startswith("libLLVM.so") for n in needed)
    assert any("/usr/lib/llvm-22/lib" in r for r in runpath), runpath


def test_runtime_wheel_alone_in_a_fresh_venv(tmp_path, artifacts):
    venv = tmp_path / "venv"
    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-cache-dir", "--disable-pip-version-check",
                    wheel("kiln_runtime")], check=True)
    script = f"""
import kiln, numpy as np
assert not kiln.has_compiler()
m = kiln.load({artifacts('mlp')!r})
y = m.session().run({{'x': np.ones((2, 64), np.float32)}})['probs']
assert y.shape == (2, 10) and abs(float(y.sum()) - 2.0) < 1e-4
try:
    kiln.compile('model.onnx', 'out.kiln')
except kiln.CompileError as e:
    assert 'not installed' in str(e), e
else:
    raise SystemExit('compile did not fail')
print('ok')
"""
    r = subprocess.run([py, "-c", script], capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
