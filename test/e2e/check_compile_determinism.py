#!/usr/bin/env python3
"""Compiles each model twice with the same flags and checks that the two artifacts are byte-identical.

The second compile reads a copy of the model directory, through a relative path, from another working
directory, with another TMPDIR and (where taskset exists) on one core instead of all, so neither paths,
the environment nor the core count (the accuracy check of --quantize runs on every core) may reach
the artifact. On a difference it names the section (docs/artifact.md) and the first differing offset.
Then the same models go through `kiln-compile --batch` (one process per flag set, the models one
after another), which must give the same bytes.

    check_compile_determinism.py --bin build/bin --root . [--onnx-root /usr/share/libonnx-testdata/data]
        [--extra DIR ...]     also every DIR/model.onnx (e.g. the bench models), plain and --quantize=int8/int4
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile

# (model directory, kiln-compile flags). "{cwd}" cases run both compiles inside their model directory,
# because a flag they name (--calibration) is recorded as given (docs/artifact.md).
OWN_MODELS = [
    ("test/models/cnn", []),
    ("test/models/mlp", []),
    ("test/models/mlp", ["--quantize=int8-dynamic", "--check-accuracy"]),
    ("test/models/mlp", ["--quantize=int8", "--calibration=."]),
    ("test/models/attention/mha_additive", []),
    ("test/models/recurrent/gru_bidirectional_clip", []),
    ("test/models/data_dependent/nms", []),
    ("test/models/quantized/qdq/conv_per_channel", []),
    ("test/models/bad/external_ok", []),
    ("test/models/lm/gpt2", ["--max-context", "256"]),
    ("test/models/lm/llama", ["--max-context", "256", "--kv-block-size", "16"]),  # a paged KV cache
    ("test/models/lm/llama", ["--quantize=int8-dynamic"]),  # integer products, packed int8 panels
    # A decoder's accuracy report (perplexities, top-1 agreement) measured on 1 core and on all.
    ("test/models/lm/gpt2", ["--quantize=int4", "--quantize-group=32", "--check-accuracy",
                             "--calibration-samples=1"]),
]
CONFORMANCE = [
    "node/test_conv_with_strides_padding",
    "node/test_gru_defaults",
    "node/test_if",
    "node/test_lrn",
    "node/test_resize_upsample_scales_linear",
    "node/test_scan9_sum",
    "pytorch-converted/test_Conv2d",
    "simple/test_sequence_model1",
]
SECTION_NAMES = {1: "metadata", 2: "code", 3: "weights", 4: "decoder", 5: "quantization", 6: "cuda"}


def sections(data):
    """[(name, offset, size)] from the artifact header, or [] if it does not parse."""
    if len(data) < 24 or data[:8] != b"\x89KILN\r\n\x1a":
        return []
    count = struct.unpack_from("<I", data, 12)[0]
    out = []
    for i in range(min(count, 16)):
        kind, _, off, size = struct.unpack_from("<IIQQ", data, 24 + 24 * i)
        out.append((SECTION_NAMES.get(kind, "kind %d" % kind), off, size))
    return out


def describe_difference(a, b):
    if len(a) != len(b):
        where = "sizes %d and %d" % (len(a), len(b))
    else:
        where = "same size %d" % len(a)
    first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    section = "header"
    for name, off, size in sections(a):
        if off <= first < off + size:
            section = "%s section (offset %d in it)" % (name, first - off)
    return "%s; first difference at byte %d, in the %s" % (where, first, section)


def compile_once(kiln_compile, model_dir, flags, out, cwd, env, one_core):
    cmd = [kiln_compile, "--quiet", os.path.relpath(os.path.join(model_dir, "model.onnx"), cwd), "-o", out] + flags
    if one_core and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0"] + cmd
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), r.stderr.strip()))


def check(kiln_compile, model_dir, flags, work):
    """None when the two compiles agree, else a message."""
    model_dir = os.path.abspath(model_dir)
    in_place = any(f.startswith("--calibration") for f in flags)
    shutil.rmtree(os.path.join(work, "copy"), ignore_errors=True)
    copy = os.path.join(work, "copy", "elsewhere")
    shutil.copytree(model_dir, copy)
    outs = []
    for i, (src, cwd) in enumerate([(model_dir, model_dir if in_place else "/"),
                                    (copy, copy if in_place else os.path.join(work, "copy"))]):
        tmp = os.path.join(work, "tmp%d" % i)
        os.makedirs(tmp, exist_ok=True)
        out = os.path.join(work, "%d.kiln" % i)
        compile_once(kiln_compile, src, flags, out, cwd, dict(os.environ, TMPDIR=tmp, PWD=cwd), i == 1)
        with open(out, "rb") as f:
            outs.append(f.read())
    return (None if outs[0] == outs[1] else describe_difference(outs[0], outs[1])), outs[0]


def batch_differences(kiln_compile, cases, artifacts, work):
    """[(label, message)]: the cases compiled again, those of one flag set in one `kiln-compile
    --batch` process (the test runners' mode), one after another. Each artifact must equal the one
    the process of its own wrote: nothing of one compile reaches the next."""
    groups = {}
    for model_dir, flags in cases:
        # Not the --calibration cases (they name files relative to their cwd), nor the decoders (each
        # compile takes seconds, and a dozen small models already follow one another).
        if not any(f.startswith("--calibration") for f in flags) and "/lm/" not in model_dir.replace(os.sep, "/"):
            groups.setdefault(tuple(flags), []).append(model_dir)
    problems = []
    for flags, dirs in sorted(groups.items()):
        jobs = [(d, os.path.join(work, "batch-%d.kiln" % i)) for i, d in enumerate(dirs)]
        r = subprocess.run([kiln_compile, "--quiet", "--batch"] + list(flags),
                           input="".join("%s\t%s\n" % (os.path.join(os.path.abspath(d), "model.onnx"), out)
                                         for d, out in jobs),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        done = r.stderr.count("kiln-compile: batch done 0\n")
        if r.returncode != 0 or done != len(jobs):
            problems.append((" ".join(flags) or "(no flags)", "kiln-compile --batch: %d of %d compiled, exit %d: %s" % (
                done, len(jobs), r.returncode, r.stderr.strip()[-300:])))
            continue
        for d, out in jobs:
            with open(out, "rb") as f:
                data = f.read()
            expected = artifacts.get((d, flags))
            if expected is not None and data != expected:
                problems.append((" ".join([d] + list(flags)), describe_difference(expected, data)))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True, help="the repository")
    ap.add_argument("--onnx-root", help="ONNX backend test data (skipped when absent)")
    ap.add_argument("--extra", nargs="*", default=[], help="more model directories")
    args = ap.parse_args()
    kiln_compile = os.path.abspath(os.path.join(args.bin, "kiln-compile"))
    cases = [(os.path.join(args.root, d), f) for d, f in OWN_MODELS]
    if args.onnx_root and os.path.isdir(args.onnx_root):
        cases += [(os.path.join(args.onnx_root, t), []) for t in CONFORMANCE]
    for d in args.extra:
        cases += [(d, []), (d, ["--quantize=int8"]), (d, ["--quantize=int4"])]
    failures = 0
    artifacts = {}  # (model_dir, flags) -> the first compile's bytes
    with tempfile.TemporaryDirectory(prefix="kiln-determinism-") as work:
        for model_dir, flags in cases:
            name = os.path.relpath(model_dir, args.root) if model_dir.startswith(args.root) else model_dir
            label = " ".join([name] + flags)
            try:
                diff, artifacts[(model_dir, tuple(flags))] = check(kiln_compile, model_dir, flags, work)
            except RuntimeError as e:
                diff = str(e)
            if diff:
                failures += 1
                print("DIFFERENT  %s: %s" % (label, diff))
            else:
                print("identical  %s" % label)
        batch = batch_differences(kiln_compile, cases, artifacts, work)
        for label, diff in batch:
            print("DIFFERENT  %s with --batch: %s" % (label, diff))
    print("%d of %d compiles were not byte-identical" % (failures, len(cases)))
    print("--batch: %s" % ("%d differences" % len(batch) if batch else "every artifact identical"))
    return 1 if failures or batch else 0


if __name__ == "__main__":
    sys.exit(main())
