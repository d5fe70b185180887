#!/usr/bin/env python3
"""Decoding benchmark: kiln's generator against ONNX Runtime's own greedy loop, same model, same run.

    bench/decode.py --bin build/bin                         # tiny gpt2 and llama, threads 1 and 2
    bench/decode.py --bin build/bin --tinyllama /tmp/tl     # also the 1.1B model (gen_lm.py --tinyllama)
    bench/decode.py --bin build/bin --markdown
    bench/decode.py --bin build/bin --tinyllama /tmp/tl --long-context 4096   # also decode steps at 4k context

For each model: `kiln-compile` once (with --max-context), a greedy check that kiln's tokens equal
ORT's for the benchmark prompt, then --rounds rounds alternating which runtime goes first, each a
fresh process:

    kiln-run generate X.kiln --prompt-ids IDS --max-new-tokens N --no-eos --quiet --stats
                     --warmup W --threads T
    node test/models/ort_generate.js --model M --prompt-len L --new-tokens N --threads T
                     --bench --warmup W --rounds 1

Both decode greedily, exactly N tokens, from the same synthetic prompt of L tokens (id
(1 + 13*i) % (vocab - 1)). Reported per model and thread count, medians over rounds: time to
first token (the prompt's forward pass + first sample; compute-bound), the median decode step,
tokens/s (decode steps only), and the bandwidth bound: weight bytes read per token / the read
bandwidth kiln-membw measures with the same threads, both runtimes as % of it.

With --long-context N, the llama-family models (no learned position table) are also compiled with
--max-context N and decode --new tokens after a prompt of N - new - 1 tokens (kiln only, one round):
the step time at that context next to the step time after the short prompt, the attention's cost
growing with the cache it reads.

ORT needs onnxruntime-node in bench/node_modules (bench/setup.sh, the only step with network).
Standard library only.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ORT_GENERATE = os.path.join(REPO, "test", "models", "ort_generate.js")
LM = os.path.join(REPO, "test", "models", "lm")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit("bench/decode.py: %s failed:\n%s%s" % (" ".join(cmd[:3]), p.stdout[-2000:], p.stderr[-2000:]))
    return p


def weight_bytes(bin_dir, artifact):
    out = run([os.path.join(bin_dir, "kiln-inspect"), artifact]).stdout
    m = re.search(r"weights:\s+\d+ tensors, (\d+) bytes", out)
    return int(m.group(1)) if m else 0


def bandwidth(bin_dir, threads):
    out = run([os.path.join(bin_dir, "kiln-membw"), "--threads", str(threads)]).stdout
    return float(re.search(r"read_gb_per_s=([0-9.]+)", out).group(1)) * 1e9


def prompt_ids(length, vocab):
    return [(1 + 13 * i) % (vocab - 1) for i in range(length)]


def kiln_round(bin_dir, artifact, ids, new, threads, warmup):
    p = run([os.path.join(bin_dir, "kiln-run"), "generate", artifact, "--prompt-ids", ",".join(map(str, ids)),
             "--max-new-tokens", str(new), "--no-eos", "--quiet", "--stats", "--warmup", str(warmup),
             "--threads", str(threads)])
    s = json.loads(p.stderr.strip().splitlines()[-1])
    return {"ttft": s["time_to_first_token_ms"], "step": s["inter_token_median_ms"], "tps": s["tokens_per_second"],
            "rss_mb": s["peak_memory_mb"]}


def ort_round(model, length, new, threads, warmup):
    p = run(["node", ORT_GENERATE, "--model", model, "--prompt-len", str(length), "--new-tokens", str(new),
             "--threads", str(threads), "--bench", "--warmup", str(warmup), "--rounds", "1"])
    s = json.loads(p.stdout.strip().splitlines()[-1])
    return {"ttft": s["ttft_ms"]["median"], "step": s["decode_ms"]["median"], "tps": s["decode_tokens_per_s"]}


def greedy_check(bin_dir, artifact, model, ids, new, threads):
    kiln = run([os.path.join(bin_dir, "kiln-run"), "generate", artifact, "--prompt-ids", ",".join(map(str, ids)),
                "--max-new-tokens", str(new), "--no-eos", "--ids", "--threads", str(threads)]).stdout.split()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ort.json")
        run(["node", ORT_GENERATE, "--model", model, "--prompt", ",".join(map(str, ids)), "--new-tokens", str(new),
             "--threads", str(threads), "--out", out])
        ort = json.load(open(out))["batches"][0]["tokens"][0]
    return [int(t) for t in kiln] == ort


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("KILN_BIN", os.path.join(REPO, "build", "bin")))
    ap.add_argument("--tinyllama", help="directory of gen_lm.py --tinyllama output (model.onnx + data)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--long-context", type=int, default=0, metavar="N",
                    help="also decode at an N-token context (llama-family models, kiln only)")
    args = ap.parse_args()

    # (name, model, prompt length, new tokens, warm-ups, max context)
    cases = [("gpt2-tiny", os.path.join(LM, "gpt2", "model.onnx"), 32, 64, 2, 256),
             ("llama-tiny", os.path.join(LM, "llama", "model.onnx"), 32, 64, 2, 256)]
    if args.tinyllama:
        # Three warm-ups each: kiln maps the 4.4 GB of weights and the first two prompts of a process
        # still fault pages in (kiln-run generate's TTFT on 1 thread: 725 ms after one warm-up, 505 ms
        # after three, the steady state; ORT copies the weights into its heap when it loads).
        cases.append(("tinyllama-1.1B", os.path.join(args.tinyllama, "model.onnx"), 32, 16, 3, 2048))
    threads = [int(t) for t in args.threads.split(",")]
    bw = {t: bandwidth(args.bin, t) for t in threads}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, length, new, warmup, ctx in cases:
            artifact = os.path.join(tmp, name + ".kiln")
            run([os.path.join(args.bin, "kiln-compile"), model, "-o", artifact, "--quiet", "--max-context", str(ctx)])
            vocab = json.load(open(os.path.join(os.path.dirname(model), "generation.json")))["vocab_size"]
            ids = prompt_ids(length, vocab)
            same = greedy_check(args.bin, artifact, model, ids, min(new, 16), threads[-1])
            wbytes = weight_bytes(args.bin, artifact)
            for t in threads:
                k, o = [], []
                for r in range(args.rounds):
                    order = [0, 1] if r % 2 == 0 else [1, 0]
                    for which in order:
                        if which == 0:
                            k.append(kiln_round(args.bin, artifact, ids, new, t, warmup))
                        else:
                            o.append(ort_round(model, length, new, t, warmup))
                med = lambda xs, key: statistics.median(x[key] for x in xs)
                bound = bw[t] / wbytes if wbytes else 0
                rows.append({"model": name, "threads": t, "prompt": length, "new": new, "greedy_equal": same,
                             "weights_mb": wbytes / 1e6, "bw_gbs": bw[t] / 1e9, "bound_tps": bound,
                             "kiln_ttft": med(k, "ttft"), "ort_ttft": med(o, "ttft"),
                             "kiln_step": med(k, "step"), "ort_step": med(o, "step"),
                             "kiln_tps": med(k, "tps"), "ort_tps": med(o, "tps"), "kiln_rss_mb": med(k, "rss_mb")})
                print(json.dumps(rows[-1]), file=sys.stderr)
        long_rows = []
        for name, model, length, new, warmup, ctx in cases if args.long_context else []:
            if "llama" not in name:
                continue  # gpt2's learned position table stops at its trained context
            artifact = os.path.join(tmp, name + "-long.kiln")
            run([os.path.join(args.bin, "kiln-compile"), model, "-o", artifact, "--quiet", "--max-context",
                 str(args.long_context)])
            vocab = json.load(open(os.path.join(os.path.dirname(model), "generation.json")))["vocab_size"]
            ids = prompt_ids(args.long_context - new - 1, vocab)
            for t in threads:
                k = kiln_round(args.bin, artifact, ids, new, t, 0)
                short = next(r["kiln_step"] for r in rows if r["model"] == name and r["threads"] == t)
                long_rows.append({"model": name, "threads": t, "context": args.long_context, "prompt": len(ids),
                                  "ttft_ms": k["ttft"], "step_ms": k["step"], "short_step_ms": short})
                print(json.dumps(long_rows[-1]), file=sys.stderr)
    if args.markdown and args.long_context:
        print("| model | threads | prompt tokens | prefill (ms) | step at %d context (ms) | step after %d tokens (ms) | ratio |"
              % (args.long_context, cases[0][2]))
        print("|---|---|---|---|---|---|---|")
        for r in long_rows:
            print("| %s | %d | %d | %.0f | %.3f | %.3f | %.2fx |" % (r["model"], r["threads"], r["prompt"], r["ttft_ms"],
                                                                   r["step_ms"], r["short_step_ms"],
                                                                   r["step_ms"] / r["short_step_ms"] if r["short_step_ms"] else 0))
        print()
    if args.markdown:
        print("| model | threads | greedy = ORT | TTFT kiln / ORT (ms) | step kiln / ORT (ms) | tokens/s kiln / ORT "
              "| kiln/ORT tokens/s | bound tokens/s (GB/s) | kiln % bound | ORT % bound |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            pct = lambda tps: "%.0f%%" % (100 * tps / r["bound_tps"]) if r["bound_tps"] else "-"
            print("| %s | %d | %s | %.2f / %.2f | %.3f / %.3f | %.1f / %.1f | %.2fx | %.1f (%.1f) | %s | %s |" % (
                r["model"], r["threads"], "yes" if r["greedy_equal"] else "NO", r["kiln_ttft"], r["ort_ttft"],
                r["kiln_step"], r["ort_step"], r["kiln_tps"], r["ort_tps"], r["kiln_tps"] / r["ort_tps"],
                r["bound_tps"], r["bw_gbs"], pct(r["kiln_tps"]), pct(r["ort_tps"])))
    else:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
