#!/usr/bin/env python3
"""Writes the seed corpus of a fuzz target (test/fuzz/*.cpp) into a directory.

Seeds come from files already on the machine: the ONNX backend suite's models and test data
(Debian's libonnx-testdata), kiln's own models in test/models, the artifacts built for
fuzz_request and the bundled tokenizers. Each target's input layout is described at the top of
its source file; this script only packs existing files into those layouts.
"""
import argparse
import copy
import glob
import hashlib
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "test", "models")
ONNX_DATA = "/usr/share/libonnx-testdata/data"
MAX_LEN = 262144  # scripts/fuzz.sh passes the same -max_len


def read(path):
    with open(path, "rb") as f:
        return f.read()


def u16(n):
    return struct.pack("<H", min(n, 0xFFFF))


def model_files():
    paths = sorted(glob.glob(os.path.join(ONNX_DATA, "*", "*", "model.onnx")))
    paths += sorted(glob.glob(os.path.join(MODELS, "**", "model.onnx"), recursive=True))
    return [p for p in paths if os.path.getsize(p) <= MAX_LEN]


def seeds_model(_):
    for p in model_files():
        yield read(p)


def seeds_model_dir(_):
    # The bad/ models carry their external data next to them; the others get none.
    for d in sorted(glob.glob(os.path.join(MODELS, "bad", "external_*"))):
        model = read(os.path.join(d, "model.onnx"))
        data = b""
        for name in ("weights.bin", "link.bin"):
            if os.path.isfile(os.path.join(d, name)) and not os.path.islink(os.path.join(d, name)):
                data = read(os.path.join(d, name))
        yield u16(len(model)) + model + u16(len(data)) + data
    for p in model_files()[::10]:
        model = read(p)
        if len(model) < 0xFFFF:
            yield u16(len(model)) + model + u16(0)


def seeds_artifact(args):
    for p in sorted(glob.glob(os.path.join(args.artifacts, "*.kiln"))):
        if os.path.getsize(p) <= MAX_LEN * 4:
            yield read(p)


# fuzz_request's artifacts, in its order, with the directory of their test data.
REQUEST_MODELS = ["mlp", "dynamic_slice", "data_dependent/unique", "outer_sum", "data_dependent/nms"]


def seeds_request(_):
    for index, name in enumerate(REQUEST_MODELS):
        for ds in sorted(glob.glob(os.path.join(MODELS, name, "test_data_set_*"))):
            inputs = sorted(glob.glob(os.path.join(ds, "input_*.pb")))
            blob = bytes([index, len(inputs)])
            for p in inputs:
                b = b"\x01" + read(p)
                blob += u16(len(b)) + b
            yield blob
        # No inputs at all, and one raw tensor of the wrong dtype.
        yield bytes([index, 0])
        yield bytes([index, 1]) + u16(7) + bytes([2, 7, 1, 4]) + b"abc"


def seeds_tokenizer(_):
    corpus = read(os.path.join(MODELS, "tokenizers", "corpus.txt")).split(b"\n")
    for i, line in enumerate(corpus):
        if line:
            yield bytes([i & 1]) + line
            yield bytes([(i & 1) | 0x04]) + line  # KILN_TOKENIZER_PARSE_SPECIAL
    yield bytes([0x40]) + struct.pack("<8i", 0, 1, 2, 3, 100, 255, 256, -1)
    for name in ("gpt2", "llama"):
        yield bytes([0x80]) + read(os.path.join(MODELS, "lm", name, "tokenizer.json"))
    yield from seeds_sentencepiece()


def sentencepiece_files():
    """The SentencePiece-style forms, from test/models/tokenizers/sentencepiece_tiny.json (the Llama 2
    layout): Gemma's (NFC + Replace normalizer, literal Split, merges as pairs, no Strip decoder),
    Metaspace (prepend first, Metaspace decoder), normalized added tokens, and the same file as a
    Unigram model (refused)."""
    base = json.loads(read(os.path.join(MODELS, "tokenizers", "sentencepiece_tiny.json")))
    yield base
    gemma = copy.deepcopy(base)
    replace = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
    gemma["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}, replace]}
    gemma["pre_tokenizer"] = {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
                              "invert": False}
    gemma["decoder"]["decoders"] = gemma["decoder"]["decoders"][:3]
    gemma["model"]["merges"] = [m.split(" ", 1) for m in gemma["model"]["merges"]]
    yield gemma
    meta = copy.deepcopy(base)
    meta["normalizer"] = None
    meta["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False}
    meta["decoder"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}
    yield meta
    normalized = copy.deepcopy(base)  # added tokens matched after normalization
    normalized["added_tokens"][1]["normalized"] = True
    normalized["added_tokens"].append({"id": 512, "content": "a b", "single_word": False, "lstrip": True,
                                       "rstrip": False, "normalized": True, "special": False})
    yield normalized
    unigram = copy.deepcopy(base)
    unigram["model"] = {"type": "Unigram", "unk_id": 0, "byte_fallback": True,
                        "vocab": [[t, -float(i)] for t, i in sorted(base["model"]["vocab"].items(), key=lambda x: x[1])]}
    yield unigram


def seeds_sentencepiece():
    for j in sentencepiece_files():
        yield bytes([0x80]) + json.dumps(j, ensure_ascii=False).encode()
    # Text for the bundled SentencePiece tokenizer (mode bit 0x10), plain and with PARSE_SPECIAL.
    for text in ("hello  hello", " <s>hello</s> ", "\u2581x \t\n\u4e2d\u65e5 e\u0301 \U0001F600", "\x00\x7f\u0085\u3000"):
        yield bytes([0x10]) + text.encode()
        yield bytes([0x14]) + text.encode()
    # Ids to decode: <s>, byte tokens that are not valid UTF-8 together, "\u2581", "\u2581hello".
    yield bytes([0x50]) + struct.pack("<8i", 1, 3 + 0xE4, 3 + 0xB8, 259, 271, 3 + 0x20, 2, 3 + 0xFF)


TARGETS = {
    "fuzz_model": seeds_model,
    "fuzz_model_dir": seeds_model_dir,
    "fuzz_artifact": seeds_artifact,
    "fuzz_request": seeds_request,
    "fuzz_tokenizer": seeds_tokenizer,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target", choices=sorted(TARGETS))
    ap.add_argument("out", help="corpus directory (created; seeds are named by their SHA-1)")
    ap.add_argument("--artifacts", default=os.path.join(ROOT, "build-asan", "test", "fuzz", "artifacts"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    n = 0
    for seed in TARGETS[args.target](args):
        with open(os.path.join(args.out, hashlib.sha1(seed).hexdigest()), "wb") as f:
            f.write(seed)
        n += 1
    print(f"make_seeds: {n} seeds for {args.target} in {args.out}")
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
