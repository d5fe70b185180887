#!/usr/bin/env python3
"""Compiles models for CUDA (--target=cuda) and validates the device code, without a GPU.

Each model is compiled for every --arch (with --spread-arch, for one of them: the i-th model of the
list for arch i mod N, so every arch is covered at a fraction of the compiles). The artifact must
carry a cuda section for that arch. Where ptxas is found (PATH, /usr/local/cuda/bin) kiln-compile
assembles the PTX with it, so a cubin in the artifact means ptxas accepted the PTX for that
architecture. Without ptxas the check says so and reads the PTX itself instead (kiln-inspect
--dump-ptx): a PTX module header (.version, .target for the arch, .address_size 64) and one .entry
for each kernel the artifact lists. A listed model that does not exist is a failure, never dropped.

    check_cuda_compile.py --bin build/bin --onnx-root /usr/share/libonnx-testdata/data \\
        --tests test/e2e/conformance_pass.txt [--expect-pass test/e2e/cuda_compile_pass.txt] \\
        [--models DIR ...] [--arch sm_80 sm_90] [-j N] [--report out.json] [--write-pass FILE]
        [--compile-arg=--precision=bf16 ...]

A test is `suite/name` under --onnx-root, or a model directory (DIR/model.onnx) or .onnx file relative
to --root (kiln's own models: test/models/...); --models adds more of those. With --expect-pass, every listed model must compile for every arch (the gate);
others may fail and are reported with their first error line. With --strict, every model must.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_onnx_tests import BatchCompiler  # noqa: E402


class Compilers(object):
    """One `kiln-compile --batch` process per worker thread and arch (a small model's compile is
    mostly the process start)."""

    def __init__(self):
        self.local = threading.local()
        self.lock = threading.Lock()
        self.all = []

    def get(self, cmd):
        mine = getattr(self.local, "compilers", None)
        if mine is None:
            mine = self.local.compilers = {}
        key = tuple(cmd)
        if key not in mine:
            mine[key] = BatchCompiler(cmd)
            with self.lock:
                self.all.append(mine[key])
        return mine[key]

    def close(self):
        for c in self.all:
            c.close()


COMPILERS = Compilers()


def find_ptxas():
    p = shutil.which("ptxas")
    if p:
        return p
    return "/usr/local/cuda/bin/ptxas" if os.access("/usr/local/cuda/bin/ptxas", os.X_OK) else None


def check_ptx_text(ptx, arch, kernels):
    """Without ptxas: what can be checked of the PTX text. None when it looks like a module for `arch`
    with an entry per kernel, else the first problem."""
    lines = [l.strip() for l in ptx.splitlines()]
    if not any(l.startswith(".version ") for l in lines):
        return "PTX has no .version directive"
    targets = [l.split()[1].rstrip(",") for l in lines if l.startswith(".target ") and len(l.split()) > 1]
    if arch not in targets:
        return "PTX targets %s, not %s" % (targets or "nothing", arch)
    if ".address_size 64" not in lines:
        return "PTX is not 64-bit (.address_size 64 missing)"
    entries = set()
    for l in lines:
        words = l.replace("(", " ").split()
        if ".entry" in words and words.index(".entry") + 1 < len(words):
            entries.add(words[words.index(".entry") + 1])
    missing = [k for k in kernels if k not in entries]
    if missing:
        return "PTX has no .entry for kernel %s" % missing[0]
    return None


ENDS_LOCK = threading.Lock()

# What a run under the mock driver says when a launch or a product got a host address.
POINTER_FAULT = "not inside a device allocation"


def mock_run(bin_dir, artifact, model, mock):
    """Runs `artifact` once under the strict mock driver with KILN_CUDA_CHECK_POINTERS=addresses.

    The mock runs no kernel, so outputs are not compared: the run checks that every buffer each
    launch and each cuBLASLt product gets is device memory. Returns (error or None, how it ended):
    "checked" when the run reached its outputs, else the first line of why it stopped early (sizes
    the host reads back from the device are garbage under the mock, and may stop it)."""
    data = os.path.join(os.path.dirname(model), "test_data_set_0")
    if not os.path.isdir(data):
        return None, "no test_data_set_0"
    env = dict(os.environ, KILN_CUDA_DRIVER=mock[0], KILN_CUBLASLT=mock[1], KILN_CUDA_CHECK_POINTERS="addresses")
    try:
        r = subprocess.run([os.path.join(bin_dir, "kiln-run"), artifact, "--test-data-dir", data, "--quiet"],
                           capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    text = (r.stderr or "") + (r.stdout or "")
    if POINTER_FAULT in text:
        return "pointer check: " + next(l for l in text.splitlines() if POINTER_FAULT in l).strip(), None
    if r.returncode == 0 or "MISMATCH" in text:
        return None, "checked"
    lines = [l for l in text.splitlines() if l.strip()]
    return None, (lines[0] if lines else "exit %d" % r.returncode)[:120]


def compile_one(bin_dir, model, arch, tmp, have_ptxas, extra=(), mock=None, ends=None):
    if not os.path.isfile(model):
        return "missing: no model file %s" % model
    out = os.path.join(tmp, "%s-%s.kiln" % (abs(hash(model)), arch))
    cmd = [os.path.join(bin_dir, "kiln-compile"), "--quiet", "--target=cuda", "--gpu-arch=" + arch] + list(extra)
    step = COMPILERS.get(cmd).compile(model, out, 600)
    if step["timed_out"]:
        return "timeout"
    if step["rc"] != 0:
        lines = [l for l in step["output"].splitlines() if l.strip()]
        return lines[0] if lines else "exit %s" % step["rc"]
    r = subprocess.run([os.path.join(bin_dir, "kiln-inspect"), "--json", out], capture_output=True, text=True)
    ptx = None
    if r.returncode == 0 and not have_ptxas:
        p = subprocess.run([os.path.join(bin_dir, "kiln-inspect"), "--dump-ptx", out], capture_output=True, text=True)
        ptx = p.stdout if p.returncode == 0 else None
    if mock and r.returncode == 0:
        fault, end = mock_run(bin_dir, out, model, mock)
        if fault:
            os.unlink(out)
            return fault
        with ENDS_LOCK:
            ends[end] += 1
    os.unlink(out)
    if r.returncode != 0:
        return "kiln-inspect failed: " + r.stderr.strip()
    meta = json.loads(r.stdout)
    cuda = meta.get("cuda")
    if not cuda or cuda.get("arch") != arch:
        return "artifact has no cuda section for " + arch
    if cuda["ptx_bytes"] == 0 and meta["kernels"]:
        return "artifact has kernels but no PTX"
    if have_ptxas and meta["kernels"] and cuda["cubin_bytes"] == 0:
        return "ptxas is present but the artifact has no cubin"
    if not have_ptxas and meta["kernels"]:
        if ptx is None:
            return "kiln-inspect --dump-ptx failed"
        return check_ptx_text(ptx, arch, [k["name"] if isinstance(k, dict) else k for k in meta["kernels"]])
    return None


def model_path(onnx_root, root, t):
    """suite/name under the ONNX suite, or a model directory / .onnx file relative to --root."""
    local = os.path.join(root, t)
    if t.endswith(".onnx"):
        return local
    if os.path.isdir(local):
        return os.path.join(local, "model.onnx")
    return os.path.join(onnx_root, t, "model.onnx")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--onnx-root", default="/usr/share/libonnx-testdata/data")
    ap.add_argument("--root", default=".", help="directory the --models and local list entries are relative to")
    ap.add_argument("--tests", help="file of suite/name lines (e.g. conformance_pass.txt)")
    ap.add_argument("--models", nargs="*", default=[], help="model directories or .onnx files")
    ap.add_argument("--arch", nargs="+", default=["sm_80", "sm_90"])
    ap.add_argument("--expect-pass", help="models that must compile (a regression gate)")
    ap.add_argument("--write-pass", help="write the models that compiled for every arch here")
    ap.add_argument("--report", help="JSON report of every result")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--strict", action="store_true", help="every model must compile for every arch")
    ap.add_argument("--no-ptxas", action="store_true",
                    help="check the PTX text as if ptxas were absent (kiln-compile still finds ptxas itself)")
    ap.add_argument("--spread-arch", action="store_true",
                    help="compile the i-th model for --arch[i mod N] only, not for every arch")
    ap.add_argument("--compile-arg", action="append", default=[], help="passed on to kiln-compile (repeatable)")
    ap.add_argument("--mock-driver", nargs=2, metavar=("LIBCUDA", "LIBCUBLASLT"),
                    help="also run each artifact once on test_data_set_0 under these mock libraries with "
                         "KILN_CUDA_CHECK_POINTERS=addresses: a host address reaching a launch or a product fails it")
    args = ap.parse_args()

    tests = []
    if args.tests:
        with open(args.tests) as f:
            tests += [l.strip() for l in f if l.strip() and not l.startswith("#")]
    tests += args.models
    if not os.path.isdir(args.onnx_root):
        print("check_cuda_compile: warning: no ONNX suite at %s: its models will fail as missing" % args.onnx_root)
    # The archs each model is compiled for.
    archs = dict((t, [args.arch[i % len(args.arch)]] if args.spread_arch else list(args.arch))
                 for i, t in enumerate(tests))
    ptxas = None if args.no_ptxas else find_ptxas()
    print("check_cuda_compile: ptxas %s" % (ptxas if ptxas else
          "not found: PTX is checked for presence only, not assembled (install the CUDA toolkit to validate it)"))
    results = {}
    ends = collections.Counter()  # how the mock runs ended
    with tempfile.TemporaryDirectory(prefix="kiln-cuda-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
            futures = {pool.submit(compile_one, args.bin, model_path(args.onnx_root, args.root, t), a, tmp, bool(ptxas),
                                   args.compile_arg, args.mock_driver, ends): (t, a)
                       for t in tests for a in archs[t]}
            for fut in concurrent.futures.as_completed(futures):
                results[futures[fut]] = fut.result()
        COMPILERS.close()
    ok = [t for t in tests if all(results[(t, a)] is None for a in archs[t])]
    reasons = collections.Counter()
    for (t, a), why in results.items():
        if why is not None:
            # The reason without the node name, so failures group by cause.
            reasons[why.split("': ", 1)[-1][:140]] += 1
    for a in args.arch:
        of = [t for t in tests if a in archs[t]]
        n = sum(1 for t in of if results[(t, a)] is None)
        print("check_cuda_compile: %s: %d/%d models compile%s" % (a, n, len(of), " and assemble" if ptxas else ""))
    for why, n in reasons.most_common(25):
        print("  %4d  %s" % (n, why))
    if args.mock_driver:
        print("check_cuda_compile: mock runs with pointer checks: %d reached their outputs, %d stopped early "
              "(the mock runs no kernel), %d had no data set" % (
                  ends["checked"], sum(n for e, n in ends.items() if e not in ("checked", "no test_data_set_0")),
                  ends["no test_data_set_0"]))
        for why, n in ends.most_common(8):
            if why not in ("checked", "no test_data_set_0"):
                print("  %4d  stopped early: %s" % (n, why))
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"ptxas": ptxas, "arch": args.arch,
                       "results": [{"model": t, "arch": a, "error": results[(t, a)]} for t in tests for a in archs[t]]},
                      f, indent=1)
    if args.write_pass:
        with open(args.write_pass, "w") as f:
            f.write("".join(t + "\n" for t in sorted(ok)))
    if args.expect_pass:
        with open(args.expect_pass) as f:
            expected = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        broken = [(t, a, "not in the models checked") for t in expected if t not in archs for a in args.arch[:1]]
        broken += [(t, a, results[(t, a)]) for t in expected if t in archs for a in archs[t]
                   if results[(t, a)] is not None]
        for t, a, why in broken:
            print("REGRESSION %s (%s): %s" % (t, a, why))
        if broken:
            return 1
        print("check_cuda_compile: all %d expected models compile for %s%s" % (
            len(expected), ", ".join(args.arch), " (one arch each)" if args.spread_arch else ""))
    failed = [(t, a) for t in tests for a in archs[t] if results[(t, a)] is not None]
    if args.strict and failed:
        print("check_cuda_compile: %d of %d compiles failed (--strict)" % (len(failed), len(results)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
