#!/usr/bin/env python3
"""kiln-compile --weights=external end to end (docs/artifact.md "External weights section").

For each target (x86, and cuda-emulated when it compiles the model), test/models/external_weights is
compiled twice, embedded and external; kiln-run must give byte-identical outputs for both. Then
the refusals: the artifact moved without its kiln weights file, run without --weights-dir (the
source file is not beside it), a source file changed by one byte, truncated, and replaced by a
symlink to a file outside the weights directory. Each must fail with one clear line naming the file.
Needs only the standard library (the model and its inputs are checked in; gen_external_weights.py)."""
import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True, help="the repository")
    args = ap.parse_args()
    compile_ = os.path.join(args.bin, "kiln-compile")
    run_ = os.path.join(args.bin, "kiln-run")
    inspect = os.path.join(args.bin, "kiln-inspect")
    src = os.path.join(args.root, "test", "models", "external_weights")
    with tempfile.TemporaryDirectory(prefix="kiln-extw-") as tmp:
        # A private copy of the model directory, so the refusal cases can damage it.
        model_dir = os.path.join(tmp, "model")
        shutil.copytree(src, model_dir)
        model = os.path.join(model_dir, "model.onnx")
        inputs = os.path.join(model_dir, "test_data_set_0")
        for target in ("x86", "cuda-emulated"):
            out = os.path.join(tmp, target)
            os.makedirs(out)
            emb, ext = os.path.join(out, "emb.kiln"), os.path.join(out, "ext.kiln")
            rc, text = run([compile_, "--quiet", "--target=" + target, model, "-o", emb])
            if rc != 0 and target != "x86":
                print("skip " + target + ": does not compile this model: " + text.strip().splitlines()[-1])
                continue
            check(rc == 0, target + ": embedded compile (" + text.strip() + ")")
            rc, text = run([compile_, "--quiet", "--target=" + target, "--weights=external", model, "-o", ext])
            check(rc == 0, target + ": --weights=external compile (" + text.strip() + ")")
            if rc != 0:
                continue
            rc, text = run([inspect, "--json", ext])
            manifest = json.loads(text).get("external_weights") if rc == 0 else None
            check(manifest is not None, target + ": kiln-inspect --json shows the manifest")
            if manifest:
                origins = {f["name"]: f["origin"] for f in manifest["files"]}
                check(origins.get("data/weights.bin") == "source", target + ": data/weights.bin referenced in place")
                check(origins.get("ext.kiln.weights") == "kiln" and os.path.exists(ext + ".weights"),
                      target + ": transformed/unaligned/inline weights in ext.kiln.weights")
            check(os.path.getsize(ext) < os.path.getsize(emb), target + ": the external artifact is smaller")
            outs = {}
            for name, path, extra in (("emb", emb, []), ("ext", ext, ["--weights-dir", model_dir])):
                outs[name] = os.path.join(out, name + "-out")
                rc, text = run([run_, path, "--test-data-dir", inputs, "--quiet", "--output-dir", outs[name]] + extra)
                check(rc == 0, target + ": kiln-run " + name + " matches the reference (" + text.strip() + ")")
            files = sorted(os.listdir(outs["emb"]))
            same = files and files == sorted(os.listdir(outs["ext"])) and all(
                filecmp.cmp(os.path.join(outs["emb"], f), os.path.join(outs["ext"], f), shallow=False) for f in files)
            check(bool(same), target + ": embedded and external outputs are byte-identical")

            def refused(what, cmd, *needles):
                rc, text = run(cmd + ["--test-data-dir", inputs, "--quiet"])
                lines = text.strip().splitlines()
                ok = rc == 1 and len(lines) == 1 and all(n in text for n in needles)
                check(ok, target + ": " + what + " -> " + text.strip())

            # The artifact moved without its kiln weights file.
            moved = os.path.join(tmp, target + "-moved")
            os.makedirs(moved)
            shutil.copy(ext, moved)
            refused("artifact moved without its weights", [run_, os.path.join(moved, "ext.kiln"), "--weights-dir",
                                                           model_dir], "ext.kiln.weights", "not found")
            # No --weights-dir: the source file is not beside the artifact.
            refused("no --weights-dir", [run_, ext], "data/weights.bin", "not found")
        # Damaged source files (a copy of the weights directory per case).
        ext = os.path.join(tmp, "x86", "ext.kiln")

        def damaged(name, damage, *needles):
            d = os.path.join(tmp, "damaged-" + name)
            shutil.copytree(model_dir, d)
            damage(os.path.join(d, "data", "weights.bin"))
            rc, text = run([run_, ext, "--weights-dir", d, "--test-data-dir", inputs, "--quiet"])
            check(rc == 1 and len(text.strip().splitlines()) == 1 and all(n in text for n in needles),
                  "x86: " + name + " -> " + text.strip())

        def flip(path):
            with open(path, "r+b") as f:
                f.seek(100)
                b = f.read(1)
                f.seek(100)
                f.write(bytes([b[0] ^ 1]))

        def truncate(path):
            with open(path, "r+b") as f:
                f.truncate(os.path.getsize(path) - 1)

        def symlink_outside(path):
            outside = os.path.join(tmp, "outside.bin")
            shutil.copy(path, outside)
            os.remove(path)
            os.symlink(outside, path)

        damaged("one byte changed", flip, "data/weights.bin", "does not match", "sha256")
        damaged("truncated", truncate, "data/weights.bin", "bytes", "compiled against")
        damaged("symlink outside", symlink_outside, "data/weights.bin", "symlink")
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
