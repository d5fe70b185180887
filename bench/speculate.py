#!/usr/bin/env python3
"""Speculative decoding (prompt lookup, draft model): tokens/s with and without it, same artifact, same run.

    /usr/bin/python3 test/models/gen_lm.py --tinyllama /tmp/tlc --successor-cycle 256
    build/bin/kiln-compile /tmp/tlc/model.onnx -o /tmp/tlc/m.kiln --quiet
    bench/speculate.py --artifact /tmp/tlc/m.kiln --threads 2 --markdown
    bench/speculate.py --artifact /tmp/tlc/m.kiln --edit-every 10     # an inexact copy in the prompt
    bench/speculate.py --artifact /tmp/tlc/m.kiln --lookup "" --draft-model /tmp/tlcd/m.kiln
                       # a 1-layer draft (gen_lm.py --tinyllama /tmp/tlcd --layers 1 --successor-cycle 256)

Speculation pays when the output repeats text already in the context (code edits, quotes,
summaries). Random-weight models never repeat their context, so the 1.1B model here is the
TinyLlama-shaped decoder generated with --successor-cycle C: its output head makes the greedy
token after t a fixed successor of t, cycling through C tokens (the 22 layers still run and
perturb the residual; a step costs exactly what the random model's does). The benchmark:

1. decodes --context tokens greedily after a fixed 8-token preamble (one plain run);
2. makes the prompt preamble + that continuation, so the model's next tokens repeat text in its
   prompt; with --edit-every E every E-th copied token is replaced by another id, so drafts taken
   from the prompt are wrong there and get rejected (acceptance below 100%);
3. runs, in --rounds alternating rounds, each a fresh process with --warmup runs first:

       kiln-run generate A --prompt-ids IDS --max-new-tokens N --no-eos --ids --stats --threads T
                         [--speculate lookup:K | --speculate draft:D:K]

A draft model D is a smaller decoder with the same vocabulary: it proposes K greedy tokens, the
target verifies them in one run. The draft's own steps are part of the timed decode.

Reported, medians over rounds: tokens/s of the decode steps (kiln's --stats: new tokens after the
first over their time), model runs after the first token, drafted and accepted tokens, and the
speed-up over plain decoding. Every speculative run's tokens must equal the plain run's (exit 1
otherwise). Standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PREAMBLE = [5, 17, 300, 42, 99, 7, 256, 11]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench/speculate.py: %s failed:\n%s%s" % (" ".join(cmd[:3]), p.stdout[-2000:], p.stderr[-2000:]))
    return p


def generate(args, ids, new, speculate=None, warmup=0):
    cmd = [os.path.join(args.bin, "kiln-run"), "generate", args.artifact, "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new), "--no-eos", "--ids", "--stats", "--threads", str(args.threads),
           "--warmup", str(warmup)]
    if speculate:
        cmd += ["--speculate", speculate]
    p = run(cmd)
    stats = json.loads(p.stderr.strip().splitlines()[-1])
    return [int(t) for t in p.stdout.split()], stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("KILN_BIN", os.path.join(REPO, "build", "bin")))
    ap.add_argument("--artifact", required=True, help="a decoder artifact (kiln-compile of gen_lm.py's model)")
    ap.add_argument("--context", type=int, default=256, help="tokens decoded into the prompt (default 256)")
    ap.add_argument("--new", type=int, default=200, help="new tokens per measured run (default 200)")
    ap.add_argument("--lookup", default="4,8", help="prompt-lookup draft lengths K to measure (default 4,8; '' none)")
    ap.add_argument("--draft-model", action="append", default=[], metavar="D",
                    help="a draft decoder artifact to measure (repeatable)")
    ap.add_argument("--draft-k", default="4", help="draft-model draft lengths K (default 4)")
    ap.add_argument("--edit-every", type=int, default=0, metavar="E",
                    help="replace every E-th copied prompt token (an inexact copy; default none)")
    ap.add_argument("--vocab", type=int, default=32000, help="vocabulary size, for the edits (default 32000)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2,
                    help="generations before the timed one in each process (default 2: the first fault the "
                         "mapped weights in)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    continuation, _ = generate(args, PREAMBLE, args.context)
    copied = list(continuation)
    if args.edit_every:
        for i in range(args.edit_every - 1, len(copied), args.edit_every):
            copied[i] = (copied[i] + 1) % args.vocab
    prompt = PREAMBLE + copied
    configs = [None] + ["lookup:%s" % k for k in args.lookup.split(",") if k]
    configs += ["draft:%s:%s" % (d, k) for d in args.draft_model for k in args.draft_k.split(",") if k]

    results = {c: [] for c in configs}
    reference = None
    for r in range(args.rounds):
        order = configs if r % 2 == 0 else list(reversed(configs))
        for c in order:
            tokens, stats = generate(args, prompt, args.new, c, args.warmup)
            if c is None:
                reference = reference or tokens
            results[c].append((tokens, stats))
    failed = False
    rows = []
    plain_tps = statistics.median(s["tokens_per_second"] for _, s in results[None])
    for c in configs:
        runs = results[c]
        equal = all(t == reference for t, _ in runs)
        failed |= not equal
        s = runs[-1][1]
        tps = statistics.median(st["tokens_per_second"] for _, st in runs)
        drafted, accepted = s.get("draft_tokens", 0), s.get("accepted_tokens", 0)
        rows.append({"config": c or "plain", "tps": tps, "speedup": tps / plain_tps, "runs": s["steps"],
                     "drafted": drafted, "accepted": accepted,
                     "acceptance": accepted / drafted if drafted else None, "equal": equal,
                     "step_ms": statistics.median(st["inter_token_median_ms"] for _, st in runs)})
    in_prompt = set(prompt)
    repeats = sum(1 for t in reference if t in in_prompt)
    print("# %s, %d threads, prompt %d tokens (%s), %d new tokens, %d of them in the prompt, %d rounds" % (
        args.artifact, args.threads, len(prompt),
        "copy edited every %d tokens" % args.edit_every if args.edit_every else "exact copy",
        args.new, repeats, args.rounds))
    if args.markdown:
        print("| decoding | tokens/s | speed-up | model runs after the first token | drafted / accepted | "
              "tokens equal plain |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            spec = "-" if r["acceptance"] is None else "%d / %d (%.0f%%)" % (
                r["drafted"], r["accepted"], 100 * r["acceptance"])
            print("| %s | %.2f | %.2fx | %d | %s | %s |" % (r["config"], r["tps"], r["speedup"], r["runs"], spec,
                                                         "yes" if r["equal"] else "NO"))
    else:
        for r in rows:
            print(json.dumps(r))
    if failed:
        sys.exit("bench/speculate.py: speculative tokens differ from plain decoding")


if __name__ == "__main__":
    main()
