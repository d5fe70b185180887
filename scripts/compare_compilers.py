#!/usr/bin/env python3
"""Checks that two kiln-compile builds give byte-identical artifacts (and identical errors) on every test
model and every ONNX conformance model, for x86, x86 with --symbolic-input-dims and CUDA sm_90: what a
refactoring that must not change behaviour is held to.

    scripts/compare_compilers.py OLD_BIN NEW_BIN WORK_DIR [--sample N] [--tags x86,x86dyn,cuda] [-j N]

OLD_BIN/NEW_BIN are bin folders (e.g. a copy of build/bin made before the change, and build/bin).
WORK_DIR/{old,new}/<tag>/<model>.kiln (or .err: stderr and exit code) are kept, and compiles already
there are not redone, so the old side can be made once and reused. --sample N takes every Nth
conformance model (all of kiln's own). Exit 1 and a list when anything differs.
"""
import argparse
import filecmp
import glob
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONNX_DATA = "/usr/share/libonnx-testdata/data"
FLAGS = {"x86": [], "x86dyn": ["--symbolic-input-dims"], "cuda": ["--target=cuda", "--gpu-arch=sm_90"]}


def models(sample):
    found = []
    for m in sorted(glob.glob(os.path.join(ROOT, "test/models/**/model.onnx"), recursive=True)):
        rel = os.path.relpath(os.path.dirname(m), os.path.join(ROOT, "test/models"))
        found.append((m, "own_" + rel.replace("/", "_")))
    for m in sorted(glob.glob(os.path.join(ONNX_DATA, "*/*/model.onnx")))[::sample]:
        d = os.path.dirname(m)
        found.append((m, "suite_%s_%s" % (os.path.basename(os.path.dirname(d)), os.path.basename(d))))
    return found


def compile_one(bin_dir, out_dir, tag, model, name):
    os.makedirs(os.path.join(out_dir, tag), exist_ok=True)
    art = os.path.join(out_dir, tag, name + ".kiln")
    err = os.path.join(out_dir, tag, name + ".err")
    if os.path.exists(art) or os.path.exists(err):
        return
    # From the model's folder with a relative path, so that messages naming the file agree.
    try:
        p = subprocess.run([os.path.join(bin_dir, "kiln-compile"), "--quiet"] + FLAGS[tag] + ["model.onnx", "-o", art],
                           cwd=os.path.dirname(model), capture_output=True, timeout=600)
        rc, stderr = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, stderr = "timeout", b""
    if rc != 0:
        if os.path.exists(art):
            os.remove(art)
        with open(err, "wb") as f:
            f.write(stderr + b"\nexit %s\n" % str(rc).encode())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old_bin")
    ap.add_argument("new_bin")
    ap.add_argument("work_dir")
    ap.add_argument("--sample", type=int, default=1)
    ap.add_argument("--tags", default="x86,x86dyn,cuda")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    tags = args.tags.split(",")
    todo = models(args.sample)
    jobs = [(b, os.path.join(args.work_dir, side), t, m, n)
            for side, b in (("old", os.path.abspath(args.old_bin)), ("new", os.path.abspath(args.new_bin)))
            for t in tags for m, n in todo]
    with ThreadPoolExecutor(args.j) as pool:
        list(pool.map(lambda job: compile_one(*job), jobs))
    differ, same = [], 0
    for t in tags:
        for _, n in todo:
            for ext in (".kiln", ".err"):
                a = os.path.join(args.work_dir, "old", t, n + ext)
                b = os.path.join(args.work_dir, "new", t, n + ext)
                if os.path.exists(a) != os.path.exists(b) or (os.path.exists(a) and not filecmp.cmp(a, b, shallow=False)):
                    differ.append("%s/%s%s" % (t, n, ext))
                elif os.path.exists(a):
                    same += 1
    for d in differ:
        print("DIFFERS %s" % d)
    print("compare_compilers: %d models x %s: %d identical, %d differ" % (len(todo), ",".join(tags), same, len(differ)))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
