#!/usr/bin/env python3
"""Benchmark kiln against ONNX Runtime on the same models, inputs and threads.

    bench/run.py --bin build/bin                      # default cases, threads 1 and 2
    bench/run.py --bin build/bin --cases cnn:1 --threads 1,2,4 --rounds 5 --markdown
    bench/run.py --no-kiln                            # ORT side only (no kiln build)

A case is NAME:K = test/models/NAME with the inputs of its test_data_set_K
(K=0 is batch 1, K=1 is batch 7), or DIR:K for any test directory. Defaults:
mlp:0 mlp:1 cnn:0 cnn:1.

For each model: `kiln-compile model.onnx -o TMP/x.kiln --quiet` once, then a
correctness check `kiln-run x.kiln --test-data-dir DS --quiet` (skip with
--no-check). Then for each thread count and each of --rounds rounds, it runs

    kiln-run x.kiln INPUT.pb... --iterations N --warmup W --threads T
    node bench/ort_bench.js model.onnx INPUT.pb... --iterations N --warmup W --threads T

alternating which goes first, each a fresh process. Both print
`latency_ms median=.. p90=.. min=.. max=.. iterations=N threads=T`. The table
shows, per case and thread count, the median over rounds of each round's median
and p90, and kiln/ORT = kiln median / ORT median (below 1: kiln is faster).

ORT needs onnxruntime-node in bench/node_modules: run bench/setup.sh once
(the only step that needs network). Standard library only.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODELS = os.path.join(REPO, "test", "models")
ORT_BENCH = os.path.join(HERE, "ort_bench.js")
LATENCY_RE = re.compile(r"latency_ms\s+median=([0-9.eE+-]+)\s+p90=([0-9.eE+-]+)"
                        r"\s+min=([0-9.eE+-]+)\s+max=([0-9.eE+-]+)")
DEFAULT_CASES = "mlp:0,mlp:1,cnn:0,cnn:1"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("KILN_BIN"),
                    help="directory with kiln-compile and kiln-run (default: $KILN_BIN)")
    ap.add_argument("--cases", default=DEFAULT_CASES,
                    help="comma-separated NAME:K or DIR:K (default: %s)" % DEFAULT_CASES)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--iterations", type=int, default=200, help="timed runs per round (default 200)")
    ap.add_argument("--warmup", type=int, default=20, help="warm-up runs per round (default 20)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating kiln/ORT rounds per case and thread count (default 3)")
    ap.add_argument("--taskset", metavar="CPUS",
                    help="pin both runners with `taskset -c CPUS` (e.g. 0-1)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per command (default 600)")
    ap.add_argument("--no-kiln", action="store_true", help="time ORT only")
    ap.add_argument("--no-ort", action="store_true", help="time kiln only")
    ap.add_argument("--no-check", action="store_true", help="skip kiln's correctness check")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--json", metavar="FILE", help="write all measurements as JSON")
    args = ap.parse_args()
    if args.no_kiln and args.no_ort:
        ap.error("--no-kiln and --no-ort leave nothing to run")
    if not args.no_kiln and not args.bin:
        ap.error("--bin DIR (or $KILN_BIN) is required unless --no-kiln")
    try:
        args.threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        ap.error("--threads wants integers, e.g. 1,2")
    if not args.threads or min(args.threads) < 1 or args.rounds < 1 or args.iterations < 1:
        ap.error("threads, rounds and iterations must be at least 1")
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

class Case(object):
    def __init__(self, spec):
        if ":" not in spec:
            raise SystemExit("bench/run.py: error: case '%s' is not NAME:K or DIR:K" % spec)
        where, k = spec.rsplit(":", 1)
        test_dir = where if os.path.isdir(where) and os.sep in where else os.path.join(MODELS, where)
        self.name = os.path.basename(os.path.normpath(test_dir))
        self.model = os.path.join(test_dir, "model.onnx")
        self.data_dir = os.path.join(test_dir, "test_data_set_%s" % k)
        if not os.path.isfile(self.model) or not os.path.isdir(self.data_dir):
            raise SystemExit("bench/run.py: error: no %s or %s" % (self.model, self.data_dir))
        pat = re.compile(r"^input_(\d+)\.pb$")
        files = sorted((int(pat.match(f).group(1)), f) for f in os.listdir(self.data_dir)
                       if pat.match(f))
        self.inputs = [os.path.join(self.data_dir, f) for _, f in files]
        dims = tensor_dims(self.inputs[0]) if self.inputs else []
        self.batch = dims[0] if dims else "-"


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, universal_newlines=True)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        return None, "timed out after %.0fs" % timeout
    except OSError as e:
        return None, str(e)


def latency(rc, out):
    m = LATENCY_RE.search(out)
    if rc != 0 or not m:
        last = [l for l in out.strip().splitlines() if l.strip()]
        return None, "exit %s: %s" % (rc, last[-1] if last else "(no output)")
    return dict(zip(("median", "p90", "min", "max"), (float(x) for x in m.groups()))), None


def environment(args):
    env = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
           "host_cpus": os.cpu_count(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        env["kiln_commit"] = subprocess.check_output(
            ["git", "-C", REPO, "rev-parse", "--short", "HEAD"], stderr=subprocess.DEVNULL,
            universal_newlines=True).strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    if not args.no_ort:
        rc, out = run(["node", "-e", "const p=require('path');let v='';for(const d of "
                       "[process.env.KILN_ORT_NODE_MODULES||'', p.join(%r,'node_modules')])"
                       "{try{v=require(p.join(d,'onnxruntime-node','package.json')).version;"
                       "break}catch(e){}}console.log(v)" % HERE], 60)
        env["onnxruntime_node"] = out.strip() if rc == 0 else None
    return env


def fmt(x):
    if x is None:
        return "-"
    return "%.3f" % x if x < 100 else "%.1f" % x


def main():
    args = parse_args()
    cases = [Case(s.strip()) for s in args.cases.split(",") if s.strip()]
    prefix = ["taskset", "-c", args.taskset] if args.taskset else []
    if not args.no_ort and shutil.which("node") is None:
        raise SystemExit("bench/run.py: error: node not found (or pass --no-ort)")
    if not args.no_kiln:
        kc = os.path.join(args.bin, "kiln-compile")
        kr = os.path.join(args.bin, "kiln-run")
        for b in (kc, kr):
            if not os.access(b, os.X_OK):
                raise SystemExit("bench/run.py: error: %s is not executable" % b)

    env = environment(args)
    print("# %s, %s CPUs (%s), onnxruntime-node %s, kiln %s" % (
        env.get("cpu", "?"), env["host_cpus"], env["date"], env.get("onnxruntime_node", "-"),
        env.get("kiln_commit", "?")))
    print("# iterations=%d warmup=%d rounds=%d threads=%s%s" % (
        args.iterations, args.warmup, args.rounds, ",".join(map(str, args.threads)),
        (" taskset=" + args.taskset) if args.taskset else ""))
    sys.stdout.flush()

    tmp = tempfile.mkdtemp(prefix="kiln-bench-")
    artifacts, problems = {}, {}
    rows = []
    try:
        for case in cases:
            key = case.model
            if not args.no_kiln and key not in artifacts:
                art = os.path.join(tmp, "%d.kiln" % len(artifacts))
                rc, out = run([kc, case.model, "-o", art, "--quiet"], args.timeout)
                artifacts[key] = art if rc == 0 else None
                if rc != 0:
                    problems[key] = "compile failed: " + (out.strip().splitlines() or ["?"])[-1]
                    print("%s: %s" % (case.name, problems[key]), file=sys.stderr)
            check = "no-build" if key in problems else None
            if not args.no_kiln and artifacts.get(key) and not args.no_check:
                rc, out = run([kr, artifacts[key], "--test-data-dir", case.data_dir, "--quiet"],
                              args.timeout)
                check = "ok" if rc == 0 else "FAIL"
                if rc != 0:
                    print("%s %s: kiln-run check failed (exit %s): %s" % (
                        case.name, os.path.basename(case.data_dir), rc,
                        (out.strip().splitlines() or [""])[-1]), file=sys.stderr)
            for threads in args.threads:
                row = {"model": case.name, "batch": case.batch, "threads": threads,
                       "data_set": os.path.basename(case.data_dir), "check": check,
                       "kiln_rounds": [], "ort_rounds": [], "errors": []}
                if key in problems:
                    row["errors"].append(problems[key])
                common = ["--iterations", str(args.iterations), "--warmup", str(args.warmup),
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
                row["ratio"] = (row["kiln_median"] / row["ort_median"]
                                if row["kiln_median"] and row["ort_median"] else None)
                rows.append(row)
                print("  done: %s batch %s threads %d" % (case.name, case.batch, threads),
                      file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    header = ["model", "batch", "threads", "kiln median ms", "kiln p90 ms",
              "ORT median ms", "ORT p90 ms", "kiln/ORT"]
    if not args.no_kiln and not args.no_check:
        header.append("check")
    table = []
    for r in rows:
        line = [r["model"], str(r["batch"]), str(r["threads"]), fmt(r["kiln_median"]),
                fmt(r["kiln_p90"]), fmt(r["ort_median"]), fmt(r["ort_p90"]),
                "%.2f" % r["ratio"] if r["ratio"] else "-"]
        if len(header) > len(line):
            line.append(r["check"] or "-")
        table.append(line)
    print("")
    if args.markdown:
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
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "iterations": args.iterations, "warmup": args.warmup,
                       "rounds": args.rounds, "taskset": args.taskset, "rows": rows},
                      f, indent=1)
            f.write("\n")
    failed = any(r["errors"] for r in rows) or any(r["check"] == "FAIL" for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
