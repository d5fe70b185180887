#!/usr/bin/env python3
"""Writes kiln's two wheels with the standard library only (no network, no build backend):

  kiln_runtime-<v>-<tag>.whl  the package with the runtime binding (kiln._runtime): runs artifacts.
                              Links nothing of LLVM/MLIR (test_wheels.py checks with readelf).
  kiln-<v>-<tag>.whl          the same files plus kiln._compiler (kiln.compile in-process), which
                              loads Debian's LLVM/MLIR 22 shared libraries from /usr/lib/llvm-22/lib
                              (declared as Requires-External, not bundled).

The two hold the same `kiln` package, so install one of them (kiln includes kiln-runtime's files).
The tag is the interpreter running this script (the one the modules were built for), e.g.
cp311-cp311-linux_x86_64. Entries are sorted and dated SOURCE_DATE_EPOCH (default 1980-01-01), so
the same inputs give byte-identical wheels.
"""

import argparse
import base64
import glob
import hashlib
import os
import sys
import sysconfig
import time
import zipfile

SUMMARY = "kiln: run ahead-of-time compiled ONNX models (kiln artifacts) from Python"
COMPILER_SUMMARY = "kiln: compile ONNX models ahead of time and run them from Python"
# Debian 12 packages whose shared libraries kiln._compiler loads (see ldd of the module).
COMPILER_EXTERNAL = ["libmlir-22", "libllvm22", "libonnx1", "libprotobuf32"]


def wheel_tag() -> str:
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    abi = impl + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{abi}-{plat}"


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def write_wheel(out_dir: str, dist: str, version: str, summary: str, files: dict, requires_external: list) -> str:
    """files: archive name -> (bytes, executable). Returns the wheel's path."""
    tag = wheel_tag()
    info = f"{dist}-{version}.dist-info"
    metadata = [
        "Metadata-Version: 2.1",
        f"Name: {dist.replace('_', '-')}",
        f"Version: {version}",
        f"Summary: {summary}",
        f"Requires-Python: =={sys.version_info.major}.{sys.version_info.minor}.*",
        "Requires-Dist: numpy",
    ] + [f"Requires-External: {p}" for p in requires_external] + [
        "Description-Content-Type: text/markdown",
        "",
        "The Python package of kiln (an ahead-of-time ONNX compiler): see docs/python.md.",
        "",
    ]
    wheel = ["Wheel-Version: 1.0", "Generator: kiln python/build_wheels.py", "Root-Is-Purelib: false",
             f"Tag: {tag}", ""]
    entries = dict(files)
    entries[f"{info}/METADATA"] = ("\n".join(metadata).encode(), False)
    entries[f"{info}/WHEEL"] = ("\n".join(wheel).encode(), False)
    entries[f"{info}/top_level.txt"] = (b"kiln\n", False)
    record = [f"{name},{record_hash(data)},{len(data)}" for name, (data, _) in sorted(entries.items())]
    record.append(f"{info}/RECORD,,")
    entries[f"{info}/RECORD"] = ("\n".join(record).encode() + b"\n", False)

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    date = time.gmtime(max(epoch, 315532800))[:6]
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{dist}-{version}-{tag}.whl")
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        # The dist-info last, as the wheel spec recommends.
        for name in sorted(entries, key=lambda n: (n.startswith(info), n)):
            data, executable = entries[name]
            zi = zipfile.ZipInfo(name, date_time=date)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
            z.writestr(zi, data)
    os.replace(tmp, path)
    return path


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="python/ of the source tree (the kiln/ package's .py files)")
    ap.add_argument("--modules", required=True, help="the directory holding the built _runtime/_compiler modules")
    ap.add_argument("--version", required=True)
    ap.add_argument("--out", required=True, help="where the wheels go (e.g. build/dist)")
    ap.add_argument("--runtime-only", action="store_true", help="the build has no compiler: kiln-runtime only")
    args = ap.parse_args()

    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    runtime_so = os.path.join(args.modules, "_runtime" + suffix)
    compiler_so = os.path.join(args.modules, "_compiler" + suffix)
    if not os.path.exists(runtime_so):
        print(f"build_wheels: error: {runtime_so} not found (built for another Python?)", file=sys.stderr)
        return 1

    files = {}
    pkg = os.path.join(args.source, "kiln")
    for p in sorted(glob.glob(os.path.join(pkg, "*.py")) + glob.glob(os.path.join(pkg, "*.pyi"))) + \
            [os.path.join(pkg, "py.typed")]:
        files["kiln/" + os.path.basename(p)] = (read(p), False)
    files["kiln/_runtime" + suffix] = (read(runtime_so), True)

    written = [write_wheel(args.out, "kiln_runtime", args.version, SUMMARY, files, [])]
    if not args.runtime_only:
        if not os.path.exists(compiler_so):
            print(f"build_wheels: error: {compiler_so} not found", file=sys.stderr)
            return 1
        full = dict(files)
        full["kiln/_compiler" + suffix] = (read(compiler_so), True)
        written.append(write_wheel(args.out, "kiln", args.version, COMPILER_SUMMARY, full, COMPILER_EXTERNAL))
    for w in written:
        print(f"build_wheels: wrote {w} ({os.path.getsize(w) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
