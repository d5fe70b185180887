#!/usr/bin/env python3
"""Benchmark kiln against ONNX Runtime on the same models, inputs and threads.

    bench/run.py --bin build/bin                      # the bench suite, threads 1 and 2
    bench/run.py --bin build/bin --threads 1,2 --rounds 3 --markdown
    bench/run.py --bin build/bin --cases small        # the tiny test/models cases
    bench/run.py --bin build/bin --cases cnn:1 --threads 1,2,4 --rounds 5 --markdown
    bench/run.py --bin build/bin --cases vision --markdown --plot docs/perf-vision.png
    bench/run.py --no-kiln                            # ORT side only (no kiln build)

Cases (--cases, comma-separated; default `bench`):
  bench          = bench:mlp,bench:resnet,bench:bert,bench:gpt
  bench:NAME     a model of bench/models/gen_bench_models.py (MLP 768/3072, ResNet-18-style
                 CNN on 224x224, BERT-style encoder and GPT-style decoder at seq 128; batch 1),
                 generated into --models-dir (default bench/models/out) with Debian's
                 /usr/bin/python3 (onnx, numpy) when missing or outdated
  vision         = vision:NAME for every model below (torchvision CNNs and OCR models)
  vision:NAME    a model of bench/models/gen_cnn_models.py, exported by torch.onnx.export
                 (opset 13, eval mode, random fixed-seed weights; batch 1): resnet18,
                 resnet50, mobilenet_v2, mobilenet_v3_small, efficientnet_b0,
                 shufflenet_v2_x1_0, squeezenet1_1 (224x224), ocr_det (PP-OCR-style DB text
                 detector, 480x640), ocr_rec (PP-OCRv4-style CTC recognizer, 48x320);
                 generated into --models-dir/cnn_NAME when missing or outdated (needs
                 Debian's python3-torch and python3-torchvision: bench/setup.sh --vision)
  small          = mlp:0,mlp:1,cnn:0,cnn:1  (test/models/cnn, not the vision set)
  NAME:K         test/models/NAME with the inputs of its test_data_set_K
                 (K=0 is batch 1, K=1 is batch 7)
  DIR:K          any test directory (DIR/model.onnx, DIR/test_data_set_K)

For each model: `kiln-compile model.onnx -o TMP/x.kiln --quiet` once (time and peak RSS
recorded), then a correctness check `kiln-run x.kiln --test-data-dir DS --quiet --rtol R
--atol A` against the data set's reference outputs, which are ONNX Runtime's (skip with
--no-check; tolerances: --rtol/--atol, default 1e-3/1e-4 for bench and vision models
(vision:ocr_rec's probabilities 1e-3/1e-5), kiln-run's 1e-3/1e-5 otherwise). Then for each thread count and each of --rounds rounds, it runs

    kiln-run x.kiln INPUT.pb... --iterations N --warmup W --threads T
    node bench/ort_bench.js model.onnx INPUT.pb... --iterations N --warmup W --threads T

alternating which goes first, each a fresh process. Both print
`latency_ms median=.. p90=.. min=.. max=.. iterations=N threads=T`. The table
shows, per case and thread count, the median over rounds of each round's median
and p90, kiln/ORT = kiln median / ORT median (below 1: kiln is faster), the same
ratio of each side's fastest iteration over all rounds (on a shared VM whose
neighbours take cache and memory bandwidth for seconds at a time, the minimum is
the figure that moves least between runs; the median is what a user sees), and the
peak resident memory of each process (ru_maxrss from wait4, maximum over rounds;
ORT's figure includes Node.js itself, whose baseline with onnxruntime-node loaded
is printed in the header). N and W default per case (bench models: see
BENCH_MODELS and VISION_MODELS; others 200/20); --iterations/--warmup override them all.

With kiln-fmapeak in --bin (bench/fmapeak, built with kiln), the run also measures the
machine's f32 multiply-add peak at each thread count before and after the models, and the
table adds kiln's GFLOP/s (the model's Conv/ConvTranspose/Gemm/MatMul flops, counted from the
ONNX graph by bench/model_flops.py in a child process, over kiln's median) and its share of
the larger peak: how close a compute-bound model (a ResNet) runs to what the cores can do.

--plot FILE.png draws kiln/ORT (median) per model and thread count as bars, with lines
at 1.0 and 0.8 (needs matplotlib: python3-matplotlib, bench/setup.sh --vision).

ORT needs onnxruntime-node in bench/node_modules: run bench/setup.sh once
(the only step that needs network). Standard library only, but for --plot (matplotlib).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODELS = os.path.join(REPO, "test", "models")
ORT_BENCH = os.path.join(HERE, "ort_bench.js")
LATENCY_RE = re.compile(r"latency_ms\s+median=([0-9.eE+-]+)\s+p90=([0-9.eE+-]+)"
                        r"\s+min=([0-9.eE+-]+)\s+max=([0-9.eE+-]+)")
CHECK_RE = re.compile(r"^output '(.*)': (ok|MISMATCH) \((.*)\)$", re.M)
MAX_ABS_RE = re.compile(r"max abs err ([0-9.eE+-]+|nan|inf)")
BENCH_GEN = os.path.join(HERE, "models", "gen_bench_models.py")
BENCH_OUT = os.path.join(HERE, "models", "out")
# Bench models and their default (iterations, warm-up) per round: a few seconds per process
# on a 2-core machine.
BENCH_MODELS = {"mlp": (200, 20), "resnet": (30, 5), "bert": (50, 5), "gpt": (50, 5)}
BENCH_TOL = (1e-3, 1e-4)          # rtol, atol of the check for bench models
CNN_GEN = os.path.join(HERE, "models", "gen_cnn_models.py")
# The vision models (bench/models/gen_cnn_models.py) and their default (iterations, warm-up)
# per round: about 2 s per process for kiln on a 2-core machine, so that the whole set at
# threads 1,2 with 3 rounds takes a few minutes.
VISION_MODELS = {"resnet18": (40, 5), "resnet50": (20, 3), "mobilenet_v2": (100, 10),
                 "mobilenet_v3_small": (300, 30), "efficientnet_b0": (50, 5),
                 "shufflenet_v2_x1_0": (200, 20), "squeezenet1_1": (120, 10),
                 "ocr_det": (10, 2), "ocr_rec": (150, 15)}
# ocr_rec's outputs are probabilities over 6625 classes (mostly ~1e-4): a tighter atol.
VISION_TOL = {"ocr_rec": (1e-3, 1e-5)}
KILN_RUN_TOL = (1e-3, 1e-5)       # kiln-run's own defaults, for the other cases
SMALL_ITER = (200, 20)
ALIASES = {"bench": ",".join("bench:" + n for n in BENCH_MODELS),
           "small": "mlp:0,mlp:1,cnn:0,cnn:1",
           "vision": ",".join("vision:" + n for n in VISION_MODELS)}
DEFAULT_CASES = "bench"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("KILN_BIN"),
                    help="directory with kiln-compile and kiln-run (default: $KILN_BIN)")
    ap.add_argument("--cases", default=DEFAULT_CASES,
                    help="comma-separated bench, bench:NAME, vision, vision:NAME, small, NAME:K "
                    "or DIR:K (default: %s)"
                    % DEFAULT_CASES)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--iterations", type=int,
                    help="timed runs per round (default per case: bench models %s; vision "
                    "models %s; others %d)" % (
                        ", ".join("%s %d" % (n, it) for n, (it, _) in BENCH_MODELS.items()),
                        ", ".join("%s %d" % (n, it) for n, (it, _) in VISION_MODELS.items()),
                        SMALL_ITER[0]))
    ap.add_argument("--warmup", type=int,
                    help="warm-up runs per round (default per case: bench models %s; vision "
                    "models %s; others %d)" % (
                        ", ".join("%s %d" % (n, w) for n, (_, w) in BENCH_MODELS.items()),
                        ", ".join("%s %d" % (n, w) for n, (_, w) in VISION_MODELS.items()),
                        SMALL_ITER[1]))
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating kiln/ORT rounds per case and thread count (default 3)")
    ap.add_argument("--taskset", metavar="CPUS",
                    help="pin both runners with `taskset -c CPUS` (e.g. 0-1)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per command (default 600)")
    ap.add_argument("--no-kiln", action="store_true", help="time ORT only")
    ap.add_argument("--no-ort", action="store_true", help="time kiln only")
    ap.add_argument("--no-check", action="store_true", help="skip kiln's correctness check")
    ap.add_argument("--rtol", type=float, help="check tolerance (default: 1e-3)")
    ap.add_argument("--atol", type=float,
                    help="check tolerance (default: 1e-4 for bench and vision models but "
                    "vision:ocr_rec, 1e-5 otherwise)")
    ap.add_argument("--models-dir", default=BENCH_OUT,
                    help="where the bench models live / are generated (default bench/models/out)")
    ap.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3")
                    else "python3",
                    help="Python with onnx and numpy (and torch, torchvision for the vision "
                    "models), for the model generators (default %(default)s)")
    ap.add_argument("--no-generate", action="store_true",
                    help="do not (re)generate bench or vision models; use what --models-dir has")
    ap.add_argument("--compile-args", metavar="ARGS", default="",
                    help="extra kiln-compile arguments for every case, one string "
                    "(e.g. --compile-args=--kv-cache=false)")
    ap.add_argument("--kiln-commit", metavar="TEXT",
                    help="what --bin was built from, for the header and JSON (default: this "
                    "checkout's HEAD, +uncommitted if its sources have changes)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--json", metavar="FILE", help="write all measurements as JSON")
    ap.add_argument("--plot", metavar="FILE.png",
                    help="bar chart of kiln/ORT per model and thread count (needs matplotlib)")
    args = ap.parse_args()
    if args.no_kiln and args.no_ort:
        ap.error("--no-kiln and --no-ort leave nothing to run")
    if args.plot and (args.no_kiln or args.no_ort):
        ap.error("--plot draws kiln/ORT: it needs both sides")
    if not args.no_kiln and not args.bin:
        ap.error("--bin DIR (or $KILN_BIN) is required unless --no-kiln")
    try:
        args.threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        ap.error("--threads wants integers, e.g. 1,2")
    if not args.threads or min(args.threads) < 1 or args.rounds < 1 or \
            (args.iterations is not None and args.iterations < 1) or \
            (args.warmup is not None and args.warmup < 0):
        ap.error("threads, rounds and iterations must be at least 1, warmup at least 0")
    return args


# --- TensorProto dims, without onnx: field 1 (dims, int64) -------------------

def _varint(buf, pos):
    result, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def tensor_dims(path):
    with open(path, "rb") as f:
        buf = f.read()
    dims, pos = [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            if field == 1:
                dims.append(value)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            if field == 1:
                end = pos + n
                while pos < end:
                    value, pos = _varint(buf, pos)
                    dims.append(value)
            else:
                pos += n
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError("%s: not a TensorProto" % path)
    return dims


# --- cases ------------------------------------------------------------------

def expand_cases(spec):
    out = []
    for item in spec.split(","):
        item = item.strip()
        if item:
            out.extend(expand_cases(ALIASES[item]) if item in ALIASES else [item])
    return out


class Case(object):
    def __init__(self, spec, args):
        self.bench = spec.startswith("bench:")
        self.vision = spec.startswith("vision:")
        if self.vision:
            name = spec.split(":", 1)[1]
            if name not in VISION_MODELS:
                raise SystemExit("bench/run.py: error: no vision model '%s' (have %s)" % (
                    name, ", ".join(VISION_MODELS)))
            test_dir, k = os.path.join(args.models_dir, "cnn_" + name), "0"
            self.name = "vision/" + name
            self.vision_name = name
            self.iterations, self.warmup = VISION_MODELS[name]
            self.rtol, self.atol = VISION_TOL.get(name, BENCH_TOL)
        elif self.bench:
            name = spec.split(":", 1)[1]
            if name not in BENCH_MODELS:
                raise SystemExit("bench/run.py: error: no bench model '%s' (have %s)" % (
                    name, ", ".join(BENCH_MODELS)))
            test_dir, k = os.path.join(args.models_dir, name), "0"
            self.name = "bench/" + name
            self.bench_name = name
            self.iterations, self.warmup = BENCH_MODELS[name]
            self.rtol, self.atol = BENCH_TOL
        else:
            if ":" not in spec:
                raise SystemExit("bench/run.py: error: case '%s' is not bench:NAME, vision:NAME, "
                                 "NAME:K or DIR:K" % spec)
            where, k = spec.rsplit(":", 1)
            test_dir = where if os.path.isdir(where) and os.sep in where else os.path.join(MODELS, where)
            self.name = os.path.basename(os.path.normpath(test_dir))
            self.iterations, self.warmup = SMALL_ITER
            self.rtol, self.atol = KILN_RUN_TOL
        if args.iterations is not None:
            self.iterations = args.iterations
        if args.warmup is not None:
            self.warmup = args.warmup
        if args.rtol is not None:
            self.rtol = args.rtol
        if args.atol is not None:
            self.atol = args.atol
        self.model = os.path.join(test_dir, "model.onnx")
        self.data_dir = os.path.join(test_dir, "test_data_set_%s" % k)

    def load(self):
        if not os.path.isfile(self.model) or not os.path.isdir(self.data_dir):
            raise SystemExit("bench/run.py: error: no %s or %s" % (self.model, self.data_dir))
        pat = re.compile(r"^input_(\d+)\.pb$")
        files = sorted((int(pat.match(f).group(1)), f) for f in os.listdir(self.data_dir)
                       if pat.match(f))
        self.inputs = [os.path.join(self.data_dir, f) for _, f in files]
        dims = tensor_dims(self.inputs[0]) if self.inputs else []
        self.batch = dims[0] if dims else "-"


def generate_bench_models(cases, args):
    names = [c.bench_name for c in cases if c.bench]
    if not names or args.no_generate:
        return
    cmd = [args.python, BENCH_GEN, "--out", args.models_dir, "--if-stale"] + names
    print("# " + " ".join(cmd), file=sys.stderr)
    sys.stderr.flush()
    if subprocess.call(cmd, stdout=sys.stderr) != 0:
        raise SystemExit("bench/run.py: error: generating the bench models failed (the generator "
                         "needs onnx and numpy: --python, and onnxruntime-node: bench/setup.sh)")


def generate_vision_models(cases, args):
    names = [c.vision_name for c in cases if c.vision]
    if not names or args.no_generate:
        return
    cmd = [args.python, CNN_GEN, "--out", args.models_dir, "--if-stale"] + names
    print("# " + " ".join(cmd), file=sys.stderr)
    sys.stderr.flush()
    if subprocess.call(cmd, stdout=sys.stderr) != 0:
        raise SystemExit("bench/run.py: error: generating the vision models failed (the generator "
                         "needs onnx, numpy, torch and torchvision: --python and bench/setup.sh "
                         "--vision, and onnxruntime-node: bench/setup.sh)")


def import_pyplot(check_only=False):
    """matplotlib's pyplot on the Agg backend, imported only for --plot. `check_only`: only
    whether it is installed (at start-up, so a missing matplotlib fails before the runs). It is
    imported after the runs: a child forked from this process counts the parent's resident
    memory in its ru_maxrss, and pyplot took every model's kiln peak RSS to 63 MiB."""
    try:
        import importlib.util
        if check_only:
            if importlib.util.find_spec("matplotlib") is None:
                raise ImportError("No module named 'matplotlib'")
            return None
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise SystemExit("bench/run.py: error: --plot needs matplotlib (%s): install Debian's "
                         "python3-matplotlib (sh bench/setup.sh --vision) and run bench/run.py "
                         "with /usr/bin/python3" % e)
    return plt


def plot(path, rows, env, plt):
    """Bars of kiln/ORT (median latency) per model, one bar per thread count."""
    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    threads = sorted(set(r["threads"] for r in rows))
    width = 0.8 / max(1, len(threads))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(models) + 2), 4.5))
    for i, t in enumerate(threads):
        xs, ys, missing = [], [], []
        for j, m in enumerate(models):
            r = [r for r in rows if r["model"] == m and r["threads"] == t]
            x = j + (i - (len(threads) - 1) / 2.0) * width
            if r and r[0]["ratio"]:
                xs.append(x)
                ys.append(r[0]["ratio"])
            else:
                missing.append(x)
        bars = ax.bar(xs, ys, width, label="%d thread%s" % (t, "" if t == 1 else "s"))
        for b, y in zip(bars, ys):
            ax.text(b.get_x() + b.get_width() / 2, y, "%.2f" % y, ha="center", va="bottom",
                    fontsize=7)
        for x in missing:
            ax.text(x, 0.05, "failed", rotation=90, ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=1)
    ax.axhline(0.8, color="gray", linewidth=1, linestyle="--")
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels([m.split("/", 1)[-1] for m in models], rotation=30, ha="right")
    ax.set_ylabel("kiln / ONNX Runtime (median latency; < 1: kiln faster)")
    ax.set_title("kiln %s vs onnxruntime-node %s\n%s, %s CPUs, %s" % (
        env.get("kiln_commit", "?"), env.get("onnxruntime_node", "?"), env.get("cpu", "?"),
        env.get("host_cpus", "?"), env.get("date", "?")), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print("# plot: %s" % path, file=sys.stderr)


def run(cmd, timeout):
    """Run cmd to completion: (exit code or None, stdout+stderr, peak RSS in KiB, seconds).

    The child is reaped with os.wait4, whose rusage is that process's own (ru_maxrss: its
    peak resident set; taskset execs the command in the same process)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        except OSError as e:
            return None, str(e), None, 0.0
        timed_out = []
        timer = threading.Timer(timeout, lambda: (timed_out.append(1), p.kill()))
        timer.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        seconds = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if timed_out:
        return None, "timed out after %.0fs" % timeout, usage.ru_maxrss, seconds
    return p.returncode, text, usage.ru_maxrss, seconds


def last_line(out):
    lines = [l for l in out.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "(no output)"


def first_error(out):
    for l in out.splitlines():
        if "error" in l.lower():
            return l.strip()
    return last_line(out)


def check_result(rc, out):
    """Parse kiln-run --test-data-dir: (status, max abs err over outputs, detail)."""
    found = CHECK_RE.findall(out)
    errs = []
    for _, _, detail in found:
        m = MAX_ABS_RE.search(detail)
        if m:
            errs.append(float(m.group(1)))
    max_abs = max(errs) if errs else None
    if rc == 0 and found:
        return "ok", max_abs, ""
    bad = ["%s: %s" % (n, d) for n, ok, d in found if ok != "ok"]
    return "FAIL", max_abs, "; ".join(bad) if bad else "exit %s: %s" % (rc, last_line(out))


def latency(rc, out, rss_kib, seconds):
    m = LATENCY_RE.search(out)
    if rc != 0 or not m:
        return None, "exit %s: %s" % (rc, last_line(out))
    res = dict(zip(("median", "p90", "min", "max"), (float(x) for x in m.groups())))
    res["peak_rss_kib"] = rss_kib
    res["process_s"] = round(seconds, 3)
    return res, None


def loadavg():
    """The 1-minute load average (other work on the machine skews the figures)."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def fma_peaks(args):
    """({threads: GFLOP/s}, round trip ns or None) from bench/fmapeak's kiln-fmapeak in --bin;
    ({}, None) where it is missing. The round trip (a cache line between two threads and back) is
    measured with the largest thread count of 2 or more."""
    tool = os.path.join(args.bin or "", "kiln-fmapeak")
    peaks, trip = {}, None
    if args.no_kiln or not os.access(tool, os.X_OK):
        return peaks, trip
    for t in args.threads:
        rc, out, _, _ = run(["taskset", "-c", args.taskset, tool, "--threads", str(t)]
                            if args.taskset else [tool, "--threads", str(t)], args.timeout)
        m = re.search(r"fma_gflop_per_s=([0-9.]+)", out) if rc == 0 else None
        if m:
            peaks[t] = float(m.group(1))
        m = re.search(r"round_trip_ns=([0-9.]+)", out) if rc == 0 else None
        if m:
            trip = float(m.group(1))
    return peaks, trip


def case_flops(case, args):
    """The model's Conv/ConvTranspose/Gemm/MatMul flops (bench/model_flops.py), or None.

    In a child process: importing onnx here would raise this process's resident set, which
    every model process started after it inherits as its ru_maxrss floor."""
    rc, out, _, _ = run([sys.executable, os.path.join(HERE, "model_flops.py"), case.model], args.timeout)
    m = re.search(r"flops=([0-9]+)", out) if rc == 0 else None
    if not m:
        print("  %s: no flop count (%s)" % (case.name, last_line(out) or "exit %s" % rc), file=sys.stderr)
        return None
    return int(m.group(1))


def environment(args):
    env = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
           "host_cpus": os.cpu_count(), "platform": platform.platform()}
    env["loadavg_start"] = loadavg()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if args.kiln_commit:
        env["kiln_commit"] = args.kiln_commit
    else:
        # The checkout's HEAD, marked when the compiler's sources have uncommitted changes
        # (then --bin may hold a build of something else: say what with --kiln-commit).
        try:
            head = subprocess.check_output(
                ["git", "-C", REPO, "rev-parse", "--short", "HEAD"], stderr=subprocess.DEVNULL,
                universal_newlines=True).strip()
            dirty = subprocess.check_output(
                ["git", "-C", REPO, "status", "--porcelain", "--", ".", ":!bench", ":!docs"],
                stderr=subprocess.DEVNULL, universal_newlines=True).strip()
            env["kiln_commit"] = head + ("+uncommitted" if dirty else "")
        except (OSError, subprocess.CalledProcessError):
            pass
    if not args.no_ort:
        rc, out, _, _ = run(["node", "-e", "const p=require('path');let v='';for(const d of "
                             "[process.env.KILN_ORT_NODE_MODULES||'', p.join(%r,'node_modules')])"
                             "{try{v=require(p.join(d,'onnxruntime-node','package.json')).version;"
                             "break}catch(e){}}console.log(v)" % HERE], 60)
        env["onnxruntime_node"] = out.strip() if rc == 0 else None
        rc, out, _, _ = run(["node", "--version"], 60)
        env["node"] = out.strip() if rc == 0 else None
        # Node.js with onnxruntime-node loaded and no session: the floor of ORT's peak RSS.
        rc, out, rss, _ = run(["node", "-e", "require(%r).loadOrt()" % os.path.join(
            MODELS, "tensor_proto.js")], 60)
        env["node_ort_baseline_rss_kib"] = rss if rc == 0 else None
    return env


def fmt(x):
    if x is None:
        return "-"
    return "%.3f" % x if x < 100 else "%.1f" % x


def mib(kib):
    return "-" if kib is None else "%.0f" % (kib / 1024.0)


def print_table(header, table, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if i < 1 else "---:" for i in range(len(header))) + "|")
        for line in table:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(h), *(len(l[i]) for l in table)) for i, h in enumerate(header)]
        print("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths))))
        for line in table:
            print("  ".join(c.rjust(w) if i else c.ljust(w)
                            for i, (c, w) in enumerate(zip(line, widths))))


def main():
    args = parse_args()
    cases = [Case(spec, args) for spec in expand_cases(args.cases)]
    prefix = ["taskset", "-c", args.taskset] if args.taskset else []
    if not args.no_ort and shutil.which("node") is None:
        raise SystemExit("bench/run.py: error: node not found (or pass --no-ort)")
    if not args.no_kiln:
        kc = os.path.join(args.bin, "kiln-compile")
        kr = os.path.join(args.bin, "kiln-run")
        for b in (kc, kr):
            if not os.access(b, os.X_OK):
                raise SystemExit("bench/run.py: error: %s is not executable" % b)
    if args.plot:
        import_pyplot(check_only=True)
    generate_bench_models(cases, args)
    generate_vision_models(cases, args)
    for case in cases:
        case.load()

    env = environment(args)
    print("# %s, %s CPUs (%s), onnxruntime-node %s, kiln %s" % (
        env.get("cpu", "?"), env["host_cpus"], env["date"], env.get("onnxruntime_node", "-"),
        env.get("kiln_commit", "?")))
    iters = sorted(set("%s=%d/%d" % (c.name, c.iterations, c.warmup) for c in cases),
                   key=lambda x: [c.name for c in cases].index(x.split("=")[0]))
    print("# iterations/warmup per round: %s; rounds=%d threads=%s%s%s" % (
        " ".join(iters), args.rounds, ",".join(map(str, args.threads)),
        (" taskset=" + args.taskset) if args.taskset else "",
        (" kiln-compile " + args.compile_args) if args.compile_args else ""))
    if env.get("node_ort_baseline_rss_kib"):
        print("# ORT peak RSS includes Node.js: node %s with onnxruntime-node loaded and no "
              "session peaks at %s MiB" % (env.get("node", "?"), mib(env["node_ort_baseline_rss_kib"])))
    # The multiply-add peak at each thread count, before the models and again after them (the
    # larger is reported): compute-bound models are judged against it, in the same run.
    peaks_start, trip_start = fma_peaks(args)
    flops = {case.model: case_flops(case, args) for case in cases} if peaks_start else {}
    sys.stdout.flush()

    tmp = tempfile.mkdtemp(prefix="kiln-bench-")
    artifacts, problems, compiles, checks = {}, {}, {}, {}
    rows = []
    try:
        for case in cases:
            key = case.model
            if not args.no_kiln and key not in artifacts:
                art = os.path.join(tmp, "%d.kiln" % len(artifacts))
                rc, out, rss, secs = run([kc, case.model, "-o", art, "--quiet"]
                                         + shlex.split(args.compile_args), args.timeout)
                artifacts[key] = art if rc == 0 else None
                compiles[key] = {"ok": rc == 0, "seconds": round(secs, 2), "peak_rss_kib": rss}
                if rc != 0:
                    problems[key] = "kiln-compile failed (exit %s): %s" % (rc, first_error(out))
                    compiles[key]["error"] = out.strip()[-4000:]
                    print("%s: %s" % (case.name, problems[key]), file=sys.stderr)
                else:
                    print("  compiled %s in %.1f s (peak RSS %s MiB)" % (case.name, secs, mib(rss)),
                          file=sys.stderr)
            check = "no-build" if key in problems else None
            ckey = (key, case.data_dir)
            if not args.no_kiln and artifacts.get(key) and not args.no_check and ckey not in checks:
                rc, out, _, _ = run([kr, artifacts[key], "--test-data-dir", case.data_dir, "--quiet",
                                     "--rtol", repr(case.rtol), "--atol", repr(case.atol)],
                                    args.timeout)
                status, max_abs, detail = check_result(rc, out)
                checks[ckey] = {"case": case.name, "data_set": os.path.basename(case.data_dir),
                                "status": status, "max_abs_err": max_abs, "rtol": case.rtol,
                                "atol": case.atol, "detail": detail,
                                "outputs": [l for l in out.splitlines() if l.startswith("output ")]}
                print("  check %s %s: %s (max abs err %s; rtol %g, atol %g)%s" % (
                    case.name, os.path.basename(case.data_dir), status,
                    "-" if max_abs is None else "%.2e" % max_abs, case.rtol, case.atol,
                    (": " + detail) if detail else ""), file=sys.stderr)
            if ckey in checks:
                check = checks[ckey]["status"]
            for threads in args.threads:
                row = {"model": case.name, "batch": case.batch, "threads": threads,
                       "data_set": os.path.basename(case.data_dir), "check": check,
                       "iterations": case.iterations, "warmup": case.warmup,
                       "kiln_rounds": [], "ort_rounds": [], "errors": []}
                if key in problems:
                    row["errors"].append(problems[key])
                common = ["--iterations", str(case.iterations), "--warmup", str(case.warmup),
                          "--threads", str(threads)]
                for r in range(args.rounds):
                    steps = []
                    if not args.no_kiln and artifacts.get(key):
                        steps.append(("kiln_rounds", prefix + [kr, artifacts[key]] + case.inputs
                                      + common))
                    if not args.no_ort:
                        steps.append(("ort_rounds", prefix + ["node", ORT_BENCH, case.model]
                                      + case.inputs + common))
                    if r % 2:
                        steps.reverse()
                    for which, cmd in steps:
                        res, err = latency(*run(cmd, args.timeout))
                        if res:
                            row[which].append(res)
                        else:
                            row["errors"].append("%s: %s" % (which.split("_")[0], err))
                            print("%s batch %s threads %d: %s failed: %s" % (
                                case.name, case.batch, threads, which.split("_")[0], err),
                                file=sys.stderr)
                for side in ("kiln", "ort"):
                    rounds = row[side + "_rounds"]
                    row[side + "_median"] = statistics.median([x["median"] for x in rounds]) \
                        if rounds else None
                    row[side + "_p90"] = statistics.median([x["p90"] for x in rounds]) \
                        if rounds else None
                    rss = [x["peak_rss_kib"] for x in rounds if x.get("peak_rss_kib")]
                    row[side + "_peak_rss_kib"] = max(rss) if rss else None
                row["ratio"] = (row["kiln_median"] / row["ort_median"]
                                if row["kiln_median"] and row["ort_median"] else None)
                for side in ("kiln", "ort"):
                    mins = [x["min"] for x in row[side + "_rounds"]]
                    row[side + "_min"] = min(mins) if mins else None
                row["min_ratio"] = (row["kiln_min"] / row["ort_min"]
                                    if row["kiln_min"] and row["ort_min"] else None)
                rows.append(row)
                print("  done: %s batch %s threads %d" % (case.name, case.batch, threads),
                      file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    env["loadavg_end"] = loadavg()
    peaks_end, trip_end = fma_peaks(args) if peaks_start else ({}, None)
    peaks = {t: max(peaks_start.get(t, 0), peaks_end.get(t, 0)) for t in peaks_start}
    env["fma_peak_gflop_per_s"] = {"start": peaks_start, "end": peaks_end}
    env["core_round_trip_ns"] = {"start": trip_start, "end": trip_end}
    print("")
    print("# 1-minute load average: %s at the start, %s at the end (%s CPUs)" % (
        env["loadavg_start"], env["loadavg_end"], env["host_cpus"]))
    if peaks:
        print("# f32 multiply-add peak (kiln-fmapeak, GFLOP/s) at the start / end: %s" % ", ".join(
            "%d thread%s %.0f / %s" % (t, "" if t == 1 else "s", peaks_start[t],
                                       "%.0f" % peaks_end[t] if t in peaks_end else "-")
            for t in sorted(peaks)))
        if trip_start or trip_end:
            print("# a cache line's round trip between two threads (kiln-fmapeak) at the start / end: "
                  "%s / %s ns: on a VM it moves with where the host places the vCPUs, and the "
                  "2-thread times of small models move with it" % (
                      "%.0f" % trip_start if trip_start else "-", "%.0f" % trip_end if trip_end else "-"))
        print("# kiln GFLOP/s = the model's Conv/ConvTranspose/Gemm/MatMul flops "
              "(bench/model_flops.py) / kiln's median; % of peak against the larger of the two")
    header = ["model", "batch", "threads", "kiln median ms", "kiln p90 ms",
              "ORT median ms", "ORT p90 ms", "kiln/ORT", "kiln/ORT (min)", "kiln peak MiB", "ORT peak MiB"]
    show_peak = any(flops.values())
    if show_peak:
        header += ["kiln GFLOP/s", "% of FMA peak"]
    if not args.no_kiln and not args.no_check:
        header.append("check")
    table = []
    case_model = {c.name: c.model for c in cases}
    for r in rows:
        line = [r["model"], str(r["batch"]), str(r["threads"]), fmt(r["kiln_median"]),
                fmt(r["kiln_p90"]), fmt(r["ort_median"]), fmt(r["ort_p90"]),
                "%.2f" % r["ratio"] if r["ratio"] else "-",
                "%.2f" % r["min_ratio"] if r["min_ratio"] else "-",
                mib(r["kiln_peak_rss_kib"]), mib(r["ort_peak_rss_kib"])]
        if show_peak:
            f, peak = flops.get(case_model.get(r["model"])), peaks.get(r["threads"])
            rate = f / (r["kiln_median"] * 1e6) if f and r["kiln_median"] else None
            r["kiln_gflop_per_s"] = rate
            r["fma_peak_share"] = rate / peak if rate and peak else None
            line += ["%.1f" % rate if rate else "-",
                     "%.0f%%" % (100 * r["fma_peak_share"]) if r["fma_peak_share"] else "-"]
        if len(header) > len(line):
            line.append(r["check"] or "-")
        table.append(line)
    print("")
    print_table(header, table, args.markdown)

    if compiles or checks:
        print("")
        header2 = ["model", "kiln-compile s", "compile peak MiB", "check data", "rtol", "atol",
                   "max abs err", "check"]
        table2 = []
        seen = set()
        for case in cases:
            ckey = (case.model, case.data_dir)
            if ckey in seen:
                continue
            seen.add(ckey)
            c = compiles.get(case.model, {})
            k = checks.get(ckey, {})
            table2.append([
                case.name, "%.1f" % c["seconds"] if c.get("ok") else ("FAILED" if c else "-"),
                mib(c.get("peak_rss_kib")) if c else "-", os.path.basename(case.data_dir),
                "%g" % case.rtol, "%g" % case.atol,
                "%.2e" % k["max_abs_err"] if k.get("max_abs_err") is not None else "-",
                k.get("status") or ("no-build" if case.model in problems else "-")])
        print_table(header2, table2, args.markdown)

    notes = []
    for case in cases:
        if case.model in problems and problems[case.model] not in notes:
            notes.append("%s: %s" % (case.name, problems[case.model]))
    for k in checks.values():
        if k["status"] != "ok":
            notes.append("%s %s: check FAILED: %s" % (k["case"], k["data_set"], k["detail"]))
    for r in rows:
        for e in r["errors"]:
            if not e.startswith("kiln-compile failed"):
                notes.append("%s threads %d: %s" % (r["model"], r["threads"], e))
    if notes:
        print("")
        for n in notes:
            print(("- " if args.markdown else "note: ") + n)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "rounds": args.rounds, "taskset": args.taskset,
                       "compile_args": args.compile_args,
                       "compiles": {os.path.relpath(k, REPO): v for k, v in compiles.items()},
                       "checks": list(checks.values()), "rows": rows},
                      f, indent=1)
            f.write("\n")
    if args.plot:
        plot(args.plot, rows, env, import_pyplot())
    failed = any(r["errors"] for r in rows) or any(r["check"] == "FAIL" for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
