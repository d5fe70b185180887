#!/usr/bin/env python3
"""What calling a compiled model from Python costs over the C API, per call, on a small model.

The C API's figure is kiln-run's timed loop (kiln::Session::run on tensors made once; the outputs
of the previous run released outside the timed region). Python's is the same loop around
kiln.Session.run (a dict of numpy arrays in, a dict out: wrapping the inputs, the GIL released
and taken back, numpy arrays over the outputs) and around InferenceSession.run. Both run the same
artifact on one thread, alternately, and report medians (the machine is shared: medians of
several rounds are steadier than means).

  /usr/bin/python3 -m venv --system-site-packages /tmp/kv && /tmp/kv/bin/pip install --no-index build/dist/kiln-*.whl
  /tmp/kv/bin/python bench/python_overhead.py --bin build/bin [--model test/models/mlp/model.onnx] [--batch 1]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import kiln


def c_api_median_us(kiln_run, artifact, npy, iterations):
    out = subprocess.run([kiln_run, artifact, npy, "--iterations", str(iterations), "--warmup", "1000",
                          "--threads", "1", "--quiet"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"latency_ms median=([0-9.]+) p90=([0-9.]+) min=([0-9.]+)", out)
    if not m:
        raise SystemExit(f"python_overhead: cannot read kiln-run's latency line:\n{out}")
    return float(m.group(1)) * 1000, float(m.group(3)) * 1000


def python_median_us(call, iterations):
    for _ in range(1000):
        call()
    times = []
    clock = time.perf_counter_ns
    out = None
    for _ in range(iterations):
        out = None  # release the previous outputs outside the timed region, as kiln-run does
        t0 = clock()
        out = call()
        times.append(clock() - t0)
    del out
    return statistics.median(times) / 1000, min(times) / 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the directory of kiln-run (build/bin)")
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--model", default=os.path.join(root, "test", "models", "mlp", "model.onnx"))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as d:
        artifact = kiln.compile(args.model, os.path.join(d, "model.kiln"))
        model = kiln.load(artifact, threads=1)
        info = model.inputs[0]
        if len(model.inputs) != 1:
            raise SystemExit("python_overhead: the model must have one input")
        shape = [args.batch if not isinstance(s, int) else s for s in info.shape]
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        npy = os.path.join(d, "x.npy")
        np.save(npy, x)
        session = model.session()
        feeds = {info.name: x}
        ort = kiln.InferenceSession(artifact, threads=1)
        rows = {"C API (kiln-run)": [], "kiln.Session.run": [], "InferenceSession.run": []}
        for _ in range(args.rounds):
            rows["C API (kiln-run)"].append(c_api_median_us(os.path.join(args.bin, "kiln-run"), artifact, npy,
                                                            args.iterations))
            rows["kiln.Session.run"].append(python_median_us(lambda: session.run(feeds), args.iterations))
            rows["InferenceSession.run"].append(python_median_us(lambda: ort.run(None, feeds), args.iterations))
        print(f"model {os.path.relpath(args.model, root)}, input {info.name} {shape}, {args.iterations} calls x "
              f"{args.rounds} rounds, 1 thread; per call, median of the rounds' medians (min)")
        base = statistics.median(m for m, _ in rows["C API (kiln-run)"])
        for name, values in rows.items():
            med = statistics.median(m for m, _ in values)
            low = min(m for _, m in values)
            extra = "" if name.startswith("C API") else f"   overhead {med - base:+.2f} us"
            print(f"  {name:<22} {med:8.2f} us  ({low:.2f}){extra}")


if __name__ == "__main__":
    main()
