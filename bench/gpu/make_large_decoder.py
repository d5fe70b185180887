#!/usr/bin/python3
"""The large decoder of the GPU check: the llama family of test/models/gen_lm.py (RMSNorm, RoPE,
SiLU-gated MLP, grouped-query attention, Hugging Face "with past" inputs/outputs, so kiln's KV-cache
pass takes it) at TinyLlama-1.1B's shape by default: hidden 2048, 22 layers, 32 heads, 4 KV heads,
head dim 64, MLP 5632, vocab 32000. Weights are float32 from numpy's default_rng(seed), written as
raw little-endian bytes into ONNX external data (one file, model.onnx.data, each tensor at a
4096-byte boundary), so the same seed gives the same bytes on any machine: weights.sha256 records
them (sha256sum format) and --check compares a regenerated copy against a recorded one.

    /usr/bin/python3 bench/gpu/make_large_decoder.py --seed 5303 --out DIR [--layers N] [--hidden H ...]
    ... --graph-only      model.onnx only (the external-data offsets as with the weights; no data)
    ... --check FILE      after writing, compare DIR's weights.sha256 with FILE (exit 1 if they differ)

Runs with Debian's python3 (onnx 1.12, numpy 1.24) and newer (onnx/numpy 2.x): only numpy's
Generator.standard_normal(dtype=float32) and the file layout decide the bytes. Full size: 1.1e9
weights, 4.4 GB on disk.
"""
import argparse
import hashlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "test", "models"))
import numpy as np  # noqa: E402
import gen_lm  # noqa: E402  (the llama builder and the streaming external-data writer)

DATA = "model.onnx.data"


class GraphOnlyWeights(gen_lm.ExternalWeights):
    """The same protos and offsets as ExternalWeights, nothing generated or written."""

    def __init__(self, seed, dir_path, file_name):
        gen_lm.Weights.__init__(self, seed)
        self.file_name = file_name
        self.offset = 0

    def _begin(self):
        self.offset += (-self.offset) % self.ALIGN
        return self.offset

    def normal(self, name, shape, std, mean=0.0):
        start = self._begin()
        self.offset += int(np.prod(shape)) * 4
        return self._proto(name, shape, start)

    def add(self, name, array):
        array = np.ascontiguousarray(array, dtype="<f4")
        start = self._begin()
        self.offset += array.nbytes
        return self._proto(name, list(array.shape), start)

    def close(self):
        pass


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 24)
            if not b:
                return h.hexdigest()
            h.update(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    t = gen_lm.TINYLLAMA
    ap.add_argument("--seed", type=int, default=t["seed"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=t["layers"])
    ap.add_argument("--hidden", type=int, default=t["hidden"])
    ap.add_argument("--heads", type=int, default=t["heads"])
    ap.add_argument("--kv-heads", type=int, default=t["kv_heads"])
    ap.add_argument("--head-dim", type=int, default=0, help="default hidden / heads")
    ap.add_argument("--ffn", type=int, default=t["ffn"])
    ap.add_argument("--vocab", type=int, default=t["vocab"])
    ap.add_argument("--max-positions", type=int, default=t["max_positions"])
    ap.add_argument("--graph-only", action="store_true")
    ap.add_argument("--check", metavar="FILE", help="a weights.sha256 the new one must equal")
    args = ap.parse_args()
    cfg = dict(t, seed=args.seed, layers=args.layers, hidden=args.hidden, heads=args.heads,
               kv_heads=args.kv_heads, ffn=args.ffn, vocab=args.vocab, max_positions=args.max_positions,
               head_dim=args.head_dim or args.hidden // args.heads)
    if cfg["heads"] * cfg["head_dim"] != cfg["hidden"] or cfg["heads"] % cfg["kv_heads"]:
        raise SystemExit("make_large_decoder: heads x head_dim must be hidden, heads a multiple of kv heads")
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    W = (GraphOnlyWeights if args.graph_only else gen_lm.ExternalWeights)(cfg["seed"], args.out, DATA)
    try:
        model = gen_lm.build(cfg, W)
    finally:
        W.close()
    path = os.path.join(args.out, "model.onnx")
    gen_lm.write_bytes(path, model.SerializeToString())
    config = dict(gen_lm.generation_config(cfg, cfg["vocab"] - 1), seed=cfg["seed"],
                  intermediate_size=cfg["ffn"])
    gen_lm.write_bytes(os.path.join(args.out, "generation.json"),
                       (json.dumps(config, indent=1, sort_keys=True) + "\n").encode())
    nweights = sum(int(np.prod(p.dims)) for p in W.protos)
    msg = "%s: %d layers, hidden %d, %d weights (%.2f GB f32), seed %d" % (
        args.out, cfg["layers"], cfg["hidden"], nweights, nweights * 4 / 1e9, cfg["seed"])
    if not args.graph_only:
        with open(os.path.join(args.out, "weights.sha256"), "w") as f:
            f.write("%s  %s\n" % (sha256(os.path.join(args.out, DATA)), DATA))
        msg += ", data %d bytes" % os.path.getsize(os.path.join(args.out, DATA))
    print("%s, %.1f s" % (msg, time.time() - t0))
    if args.check:
        mine = open(os.path.join(args.out, "weights.sha256")).read().split()
        want = open(args.check).read().split()
        if mine != want:
            print("make_large_decoder: weights.sha256 differs: got %s want %s" % (mine, want))
            return 1
        print("weights.sha256 matches %s" % args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
