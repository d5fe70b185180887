#!/usr/bin/env python3
"""Quantization benchmark: fp32 vs int8 vs int4 vs int8-dynamic, kiln beside ONNX Runtime, one table.

    python3 bench/quantize.py --bin build/bin [--tinyllama /tmp/tl] [--threads 1] [--markdown]

Forward models (bench/models/out: mlp, bert, gpt; gen_bench_models.py): for each kiln
precision, the artifact size, kiln-run's median latency on test_data_set_0, and the
accuracy of the outputs against kiln's fp32 build on the same input (max relative error =
max |q - f| / max |f|, cosine similarity). ONNX Runtime runs the fp32 model and the model
rewritten as ORT's own dynamic int8 quantization (bench/quant/ort_dynamic_int8.py:
DynamicQuantizeLinear + MatMulInteger, per-column int8 weights) in the same run.

Decoding models (the tiny llama of test/models/lm, and the TinyLlama-shaped model of
gen_lm.py --tinyllama when given): decode tokens/s from `kiln-run generate --stats`
(greedy, --no-eos, synthetic prompt), the bandwidth bound (weight bytes of the artifact
read per token, i.e. all but the embedding table, of which a step gathers one row, vs
the read bandwidth kiln-membw measures with the same threads) and the greedy tokens' agreement with fp32
(how many of the first 16 generated tokens equal the fp32 build's), for each --decode-threads.

Rounds alternate the order of kiln and ORT; figures are medians over rounds. Standard
library only (ORT via bench/node_modules, the converter via /usr/bin/python3 with onnx).
"""
import argparse
import json
import math
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ORT_BENCH = os.path.join(HERE, "ort_bench.js")
CONVERT = os.path.join(HERE, "quant", "ort_dynamic_int8.py")
MODES = [("fp32", []), ("int8", ["--quantize=int8"]), ("int4", ["--quantize=int4", "--quantize-group=64"]),
         ("int8-dynamic", ["--quantize=int8-dynamic"])]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench/quantize.py: %s failed:\n%s%s" % (" ".join(cmd[:4]), p.stdout[-2000:], p.stderr[-2000:]))
    return p


def median_latency(out):
    return float(re.search(r"latency_ms median=([0-9.]+)", out).group(1))


def read_npy(path):
    """float32 .npy (kiln-run --output-dir) as a flat list."""
    with open(path, "rb") as f:
        data = f.read()
    header_len = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + header_len].decode("latin1")
    if "'<f4'" not in header:
        return None
    body = data[10 + header_len:]
    return struct.unpack("<%df" % (len(body) // 4), body)


def compare(ref, got):
    scale = max(abs(x) for x in ref) or 1.0
    err = max(abs(a - b) for a, b in zip(ref, got)) / scale
    dot = sum(a * b for a, b in zip(ref, got))
    norm = math.sqrt(sum(a * a for a in ref) * sum(b * b for b in got)) or 1.0
    return err, dot / norm


def outputs(bin_dir, artifact, data_dir, out_dir):
    inputs = sorted(f for f in os.listdir(data_dir) if f.startswith("input_"))
    run([os.path.join(bin_dir, "kiln-run"), artifact] + [os.path.join(data_dir, f) for f in inputs] +
        ["--output-dir", out_dir, "--quiet"])
    return [read_npy(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir)) if f.endswith(".npy")]


def forward_rows(args, tmp):
    rows = []
    for name in args.models.split(","):
        model = os.path.join(REPO, "bench", "models", "out", name, "model.onnx")
        data = os.path.join(os.path.dirname(model), "test_data_set_0")
        if not os.path.exists(model):
            sys.exit("bench/quantize.py: %s missing: run /usr/bin/python3 bench/models/gen_bench_models.py" % model)
        ortq = os.path.join(tmp, name + "_ort_int8.onnx")
        run(["/usr/bin/python3", CONVERT, model, ortq])
        ref = None
        for mode, flags in MODES:
            artifact = os.path.join(tmp, "%s-%s.kiln" % (name, mode))
            run([os.path.join(args.bin, "kiln-compile"), model, "-o", artifact, "--quiet"] + flags)
            outs = outputs(args.bin, artifact, data, tempfile.mkdtemp(dir=tmp))
            if ref is None:
                ref = outs
            acc = [compare(r, o) for r, o in zip(ref, outs) if r is not None and o is not None]
            kt, ot = [], []
            for r in range(args.rounds):
                for which in ([0, 1] if r % 2 == 0 else [1, 0]):
                    if which == 0:
                        # Input files, not --test-data-dir: quantized outputs differ from the expected ones.
                        inputs = [os.path.join(data, f) for f in sorted(os.listdir(data)) if f.startswith("input_")]
                        kt.append(median_latency(run([os.path.join(args.bin, "kiln-run"), artifact] + inputs +
                                                     ["--quiet", "--iterations", str(args.iterations),
                                                      "--warmup", "5", "--threads", str(args.threads)]).stdout))
                    elif mode in ("fp32", "int8-dynamic"):
                        ort_model = model if mode == "fp32" else ortq
                        ot.append(median_latency(run(["node", ORT_BENCH, ort_model, "--test-data-dir", data,
                                                      "--iterations", str(args.iterations), "--warmup", "5",
                                                      "--threads", str(args.threads)]).stdout))
            rows.append({"model": name, "mode": mode, "size_mb": os.path.getsize(artifact) / 1e6,
                         "kiln_ms": statistics.median(kt), "ort_ms": statistics.median(ot) if ot else None,
                         "max_rel_err": max(a[0] for a in acc), "cosine": min(a[1] for a in acc)})
            print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def decode_rows(args, tmp):
    cases = [("llama-tiny", os.path.join(REPO, "test", "models", "lm", "llama", "model.onnx"), 64)]
    if args.tinyllama:
        cases.append(("tinyllama-4-layers", os.path.join(args.tinyllama, "model.onnx"), 16))
    threads = [int(t) for t in args.decode_threads.split(",")]
    bw = {t: float(re.search(r"read_gb_per_s=([0-9.]+)", run([os.path.join(args.bin, "kiln-membw"), "--threads",
                                                                str(t)]).stdout).group(1)) * 1e9 for t in threads}
    rows = []
    for name, model, new in cases:
        gen = json.load(open(os.path.join(os.path.dirname(model), "generation.json")))
        vocab = gen["vocab_size"]
        ids = ",".join(str((1 + 13 * i) % (vocab - 1)) for i in range(32))
        ref_tokens = None
        for mode, flags in MODES:
            artifact = os.path.join(tmp, "%s-%s.kiln" % (name, mode))
            run([os.path.join(args.bin, "kiln-compile"), model, "-o", artifact, "--quiet", "--max-context", "256"]
                + flags)
            gen_cmd = [os.path.join(args.bin, "kiln-run"), "generate", artifact, "--prompt-ids", ids, "--no-eos"]
            tokens = run(gen_cmd + ["--max-new-tokens", "16", "--ids", "--threads", "1"]).stdout.split()
            if ref_tokens is None:
                ref_tokens = tokens
            agree = sum(1 for a, b in zip(ref_tokens, tokens) if a == b)
            info = run([os.path.join(args.bin, "kiln-inspect"), artifact]).stdout
            m = re.search(r"weights:\s+\d+ tensors, (\d+) bytes", info)
            # Bytes read per token: every weight but the f32 embedding table, of which a step
            # gathers one row (the output head is a separate, or separately quantized, matrix).
            wbytes = (int(m.group(1)) if m else 0) - gen["vocab_size"] * gen["hidden_size"] * 4
            for t in threads:
                tps = []
                for _ in range(args.rounds):
                    p = run(gen_cmd + ["--max-new-tokens", str(new), "--quiet", "--stats", "--warmup", "1",
                                       "--threads", str(t)])
                    tps.append(json.loads(p.stderr.strip().splitlines()[-1])["tokens_per_second"])
                rows.append({"model": name, "mode": mode, "threads": t, "size_mb": os.path.getsize(artifact) / 1e6,
                             "read_mb": wbytes / 1e6, "tps": statistics.median(tps),
                             "bound_tps": bw[t] / wbytes if wbytes > 0 else 0, "bw_gbs": bw[t] / 1e9,
                             "greedy_agree": "%d/16" % agree})
                print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    ap.add_argument("--models", default="mlp,bert,gpt")
    ap.add_argument("--tinyllama", help="directory of gen_lm.py --tinyllama output")
    ap.add_argument("--threads", type=int, default=1, help="forward models' threads")
    ap.add_argument("--decode-threads", default="1,2", help="decoding thread counts")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fwd = forward_rows(args, tmp) if args.models else []
        dec = decode_rows(args, tmp)
    if not args.markdown:
        print(json.dumps({"forward": fwd, "decode": dec}, indent=1))
        return
    print("| model | precision | artifact MB | kiln ms | ORT ms (same precision) | kiln/ORT | max rel err vs fp32 "
          "| cosine |")
    print("|---|---|---|---|---|---|---|---|")
    for r in fwd:
        ort = "%.3f" % r["ort_ms"] if r["ort_ms"] else "-"
        ratio = "%.2fx" % (r["kiln_ms"] / r["ort_ms"]) if r["ort_ms"] else "-"
        print("| %s | %s | %.2f | %.3f | %s | %s | %.2e | %.6f |" % (
            r["model"], r["mode"], r["size_mb"], r["kiln_ms"], ort, ratio, r["max_rel_err"], r["cosine"]))
    print()
    print("| model | precision | threads | artifact MB | MB read per token | tokens/s | bound tokens/s (GB/s) "
          "| % of bound | greedy tokens = fp32 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in dec:
        print("| %s | %s | %d | %.1f | %.1f | %.1f | %.1f (%.1f) | %.0f%% | %s |" % (
            r["model"], r["mode"], r["threads"], r["size_mb"], r["read_mb"], r["tps"], r["bound_tps"], r["bw_gbs"],
            100 * r["tps"] / r["bound_tps"] if r["bound_tps"] else 0, r["greedy_agree"]))

if __name__ == "__main__":
    main()
