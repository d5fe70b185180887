#!/usr/bin/env python3
"""Decoding through the CUDA pipeline without a GPU: greedy tokens equal to the x86 path's.

The tiny decoders (test/models/lm/gpt2, llama) are compiled with a KV cache for x86 and for
--target=cuda-emulated (the kernels the CUDA pipeline forms, run on the CPU thread by thread), then
decoded with `kiln-run generate` from a batch of one and a left-padded batch of two. In f32 the
emulated tokens must equal the x86 ones; with --precision=fp16 and bf16 (weights rounded to 2
bytes) at least the first --half-prefix (8) tokens of each sequence must: the random tiny models
have near-ties that rounding flips later (gpt2 in bf16 parts after 15 tokens in one sequence of
the batch), while a broken half-precision path differs from the first token. How many agree is
printed. A last f32 build, `fp32-split`, splits attention's keys over blocks of 128
(--gpu-attention-split-keys=128) and decodes from prompts of 100 tokens (a batch of one, and 60 and
100 left-padded), so that 148 keys take two blocks a row and the combining launch: its tokens must
equal x86's too. The `paged` builds page the KV cache in blocks of 16 tokens (--kv-block-size=16,
x86's reference staying contiguous): the fused kernel reads the pools through the block table
(alone and with split keys), the unfused attention reads the gathered view; all must give x86's
tokens. The quantized builds (`int8`, `int4` in groups of 32, `int8-dynamic`: the GPU layout of
one output column per panel, each product one reduction per output) are compared with x86
builds quantized the same way (the CPU's panel kernels): their tokens must all be equal too.

    check_cuda_emulated_decode.py --bin build/bin --models test/models/lm [--tokens 48]
"""

import argparse
import os
import subprocess
import sys
import tempfile

PROMPTS = [["--prompt-ids", "1,2,3,4,5"], ["--prompt-ids", "7,8,9", "--prompt-ids", "10,11,12,13,14,15"]]
ids = lambda first, last: ",".join(str(i) for i in range(first, last + 1))
LONG_PROMPTS = [["--prompt-ids", ids(1, 100)], ["--prompt-ids", ids(201, 260), "--prompt-ids", ids(101, 200)]]
# name: (kiln-compile flags, prompts); the x86 reference is built with the --quantize flags.
BUILDS = {
    "fp32": (["--precision=fp32"], PROMPTS),
    "fp16": (["--precision=fp16"], PROMPTS),
    "bf16": (["--precision=bf16"], PROMPTS),
    "fp32-split": (["--precision=fp32", "--gpu-attention-split-keys=128"], LONG_PROMPTS),
    "fp32-paged": (["--precision=fp32", "--kv-block-size=16"], PROMPTS),
    "fp32-paged-split": (["--precision=fp32", "--kv-block-size=16", "--gpu-attention-split-keys=128"], LONG_PROMPTS),
    "fp32-paged-unfused": (["--precision=fp32", "--kv-block-size=16", "--gpu-attention=unfused"], PROMPTS),
    "int8": (["--quantize=int8"], PROMPTS),
    "int4": (["--quantize=int4", "--quantize-group=32"], PROMPTS),
    "int8-dynamic": (["--quantize=int8-dynamic"], PROMPTS),
}
EXACT = ("fp32", "int")  # builds whose tokens must all equal the reference's


def compile_model(bin_dir, model, out, *flags):
    cmd = [os.path.join(bin_dir, "kiln-compile"), "--quiet", "--kv-cache=true", model, "-o", out] + list(flags)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), (r.stderr or r.stdout).strip()))


def generate(bin_dir, artifact, prompt, tokens):
    cmd = [os.path.join(bin_dir, "kiln-run"), "generate", artifact] + prompt + [
        "--ids", "--max-new-tokens", str(tokens)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    # One "[i] token" pair per step for a batch, plain tokens for one sequence: per sequence lists.
    words = r.stdout.split()
    if not words or not words[0].startswith("["):
        return [words]
    seqs = {}
    for tag, tok in zip(words[0::2], words[1::2]):
        seqs.setdefault(tag, []).append(tok)
    return [seqs[k] for k in sorted(seqs)]


def agreeing(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", required=True, help="the folder holding gpt2/ and llama/")
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--half-prefix", type=int, default=8)
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kiln-emulated-decode-") as tmp:
        for lm in ("gpt2", "llama"):
            model = os.path.join(args.models, lm, "model.onnx")
            refs = {}
            for precision, (flags, prompts) in BUILDS.items():
                art = os.path.join(tmp, "%s-%s.kiln" % (lm, precision))
                quantize = tuple(f for f in flags if f.startswith("--quantize"))
                ref = os.path.join(tmp, "%s-x86%s.kiln" % (lm, "".join(quantize).replace("--quantize", "-")))
                try:
                    if quantize not in refs:
                        compile_model(args.bin, model, ref, *quantize)
                        refs[quantize] = ref
                    compile_model(args.bin, model, art, "--target=cuda-emulated", *flags)
                except RuntimeError as e:
                    print("FAIL %s %s: %s" % (lm, precision, e))
                    failures += 1
                    continue
                for prompt in prompts:
                    try:
                        want = generate(args.bin, ref, prompt, args.tokens)
                        got = generate(args.bin, art, prompt, args.tokens)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print("FAIL %s %s: %s" % (lm, precision, e))
                        failures += 1
                        continue
                    need = args.tokens if precision.startswith(EXACT) else min(args.half_prefix, args.tokens)
                    same = [agreeing(w, g) for w, g in zip(want, got)]
                    ok = len(want) == len(got) and all(len(w) == args.tokens for w in want) and \
                        all(n >= need for n in same)
                    shown = " ".join(p if len(p) < 40 else p[:20] + "..." for p in prompt)
                    print("%s %s %s (%s): first %s tokens of %d equal to x86's (need %d)" % (
                        "ok  " if ok else "FAIL", lm, precision, shown, "/".join(map(str, same)),
                        args.tokens, need))
                    failures += 0 if ok else 1
    print("emulated decoding: %s" % ("all equal" if failures == 0 else "%d failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
