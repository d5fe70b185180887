#!/usr/bin/python3
"""Generate kiln's tiny language models for token decoding under test/models/lm/.

Run with Debian's Python, which has onnx and numpy:

    /usr/bin/python3 test/models/gen_lm.py             # models, tokenizers, ORT references
    /usr/bin/python3 test/models/gen_lm.py --no-ort    # models only; keep and re-check the references
    /usr/bin/python3 test/models/gen_lm.py --tinyllama /tmp/tinyllama [--layers N] [--successor-cycle C]
                                                       # the llama family at TinyLlama-1.1B's
                                                       # shape (~4.4 GB, external data; not in CI)

Two decoder-only families in the Hugging Face / Optimum "with past" layout:
`gpt2` (opset 17: learned positions, LayerNormalization, erf GELU, fused QKV,
tied output head) and `llama` (opset 14: RMSNorm, rotary embeddings from
position_ids, SwiGLU, grouped-query attention, untied head). Each model's
present.{i}.key/value is Concat(past_key_values.{i}.key/value, new, axis=2).
A byte-level BPE tokenizer.json (Hugging Face format) is trained here on a fixed
text. Reference greedy decodings come from ONNX Runtime through
test/models/ort_generate.js (needs onnxruntime-node: bench/setup.sh) and are
cross-checked against a numpy float64 forward pass of each family. Everything
is deterministic: rerunning gives byte-identical files. See test/models/lm/README.md.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# File helpers shared with the other model generator in this folder.
from gen_models import load_tensor, save_model, save_tensor, write_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LM_DIR = os.path.join(HERE, "lm")
PRODUCER = "kiln test/models/gen_lm.py"

# numpy float64 reference vs ONNX Runtime float32.
CHECK_RTOL = 1e-4
CHECK_ATOL = 1e-5
MASK_NEG = -1e9          # added to the scores of keys a query may not see
NEW_TOKENS = 64
MIN_DISTINCT = 16        # greedy decoding must not be degenerate
MIN_MARGIN = 1e-3        # smallest top-1 minus top-2 logit in the references, so that a
                         # correct float32 implementation picks the same tokens
PAD_ID = 0

GPT2 = dict(family="gpt2", opset=17, ir_version=8, vocab=512, hidden=64, layers=2,
            heads=4, kv_heads=4, head_dim=16, ffn=256, max_positions=256,
            norm_eps=1e-5, seed=5101)
LLAMA = dict(family="llama", opset=14, ir_version=7, vocab=512, hidden=64, layers=2,
             heads=4, kv_heads=2, head_dim=16, ffn=172, max_positions=256,
             norm_eps=1e-5, rope_theta=10000.0, seed=5202)
TINYLLAMA = dict(family="llama", opset=14, ir_version=7, vocab=32000, hidden=2048, layers=22,
                 heads=32, kv_heads=4, head_dim=64, ffn=5632, max_positions=2048,
                 norm_eps=1e-5, rope_theta=10000.0, seed=5303)

# Reference runs: (name, prompt names). Batch 1 for each prompt, then one
# left-padded batch of 4 whose first three rows repeat the batch-1 prompts.
PROMPT_LENGTHS = {"p1": 1, "p7": 7, "p23": 23, "p13": 13}
RUNS = [("b1_p1", ["p1"]), ("b1_p7", ["p7"]), ("b1_p23", ["p23"]),
        ("b4_mixed", ["p7", "p23", "p1", "p13"])]


# --------------------------------------------------------------------------
# tokenizer: byte-level BPE trained on a fixed English text

TRAIN_TEXT = """\
The kiln stood at the edge of the village, a low dome of brick and clay that had
been fired so many times its walls rang like a bell when you knocked on them. In
the spring the potters brought their work down from the hill: bowls and cups,
tall jars for oil and grain, plates with a thin blue line painted around the rim.
They stacked the pieces on shelves inside the chamber, closed the door with loose
bricks, and sealed the cracks with wet mud. Then the fire was lit.

For the first day the fire was kept small. Water that still hid in the clay had
to leave slowly, or it would turn to steam and split the pots apart. On the
second day the stokers fed the fire with split pine, one armful every few
minutes, and the heat climbed until the spy hole glowed orange, then yellow,
then a white so bright that nobody could look at it for long. An old woman who
had fired the kiln for forty years could tell the temperature by the color of
the flame and the sound of the draft. She said the kiln talked to her, and that
a good firing sounded like a cat that was almost asleep.

When the fire was finally allowed to die, the kiln needed three more days to
cool. Opening it too early would crack the glaze. The children of the village
waited on the wall and guessed which pots had survived. Some years almost every
piece came out whole and shining; other years a shelf had fallen, or the ash had
blown across the glaze and left it rough and speckled. The potters did not
throw the speckled pieces away. They sold them at the market for a little less,
and people often liked them better, because no two of them were alike.

A compiler is a kind of kiln for programs. The source goes in soft and shapeless,
easy to change and easy to break, and what comes out is hard and fast and cannot
be reshaped without starting again. Between the two there is heat: passes that
rewrite the program, fold constants, fuse loops, pick registers, and lay the
instructions out in memory. A good compiler, like a good firing, leaves no trace
of itself in the result. You only notice it when something cracks.

The model reads one token at a time. It looks back at everything it has seen,
weighs each earlier token by how much it matters now, and guesses what comes
next. Then it writes that guess down and reads it back as if someone else had
written it. The numbers it keeps from earlier steps are stored in a cache, so
that each new step only has to do a small amount of new work. Without the cache
the model would read the whole text again for every word, and a long answer
would take a very long time.

In the evening the wind turned to the north and the first rain of the autumn
began to fall. The potters covered the wood pile, counted the finished pieces,
and wrote the numbers in a book that had been kept since their grandparents were
young: three hundred and twelve bowls, ninety cups, forty jars, seventeen plates.
Below the numbers somebody had drawn a small picture of the kiln with smoke
rising from it, and under the picture, in careful letters, the words: it was a
good year.
"""

PROMPT_TEXTS = {
    "p1": "The",
    "p7": "The model reads one token at a time and guesses what comes next.",
    "p23": ("In the spring the potters brought their work down from the hill, and the "
            "children waited on the wall to guess which pots had survived the fire."),
    "p13": "A compiler is a kind of kiln for programs: what comes out is hard and fast.",
}

# GPT-2's pre-tokenizer regex restricted to ASCII (\p{L} -> [A-Za-z], \p{N} -> [0-9]).
PRETOKEN_RE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")
EOS_TOKEN = "<|endoftext|>"


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character mapping."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_CHARS = bytes_to_unicode()


def pretokenize(text):
    assert all(ord(c) < 128 for c in text), "tokenizer texts must be ASCII"
    return PRETOKEN_RE.findall(text)


def train_bpe(text, vocab_size):
    """Ids 0..255 are the bytes (id == byte value), then one token per merge
    (most frequent adjacent pair first, ties broken by the pair's strings), and
    the last id is <|endoftext|>. Returns (vocab: token -> id, merges: [(a, b)])."""
    vocab = {BYTE_CHARS[b]: b for b in range(256)}
    words = {}
    for w in pretokenize(text):
        key = tuple(BYTE_CHARS[b] for b in w.encode("ascii"))
        words[key] = words.get(key, 0) + 1
    words = [[list(k), c] for k, c in sorted(words.items())]
    merges = []
    while len(vocab) < vocab_size - 1:
        counts = {}
        for syms, c in words:
            for pair in zip(syms, syms[1:]):
                counts[pair] = counts.get(pair, 0) + c
        best = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        pair, count = best
        assert count >= 2, "training text too short for %d tokens" % vocab_size
        merged = pair[0] + pair[1]
        merges.append(pair)
        if merged not in vocab:
            vocab[merged] = len(vocab)
        for item in words:
            syms, out, i = item[0], [], 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == pair[0] and syms[i + 1] == pair[1]:
                    out.append(merged)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            item[0] = out
    vocab[EOS_TOKEN] = len(vocab)
    assert len(vocab) == vocab_size
    return vocab, merges


def bpe_encode(text, vocab, merges):
    """Encode like Hugging Face's BPE model: per pre-token, repeatedly merge the
    adjacent pair of lowest merge rank."""
    ranks = {p: i for i, p in enumerate(merges)}
    ids = []
    for w in pretokenize(text):
        syms = [BYTE_CHARS[b] for b in w.encode("ascii")]
        while len(syms) > 1:
            pairs = [(ranks.get(p, 1 << 30), i) for i, p in enumerate(zip(syms, syms[1:]))]
            r, i = min(pairs)
            if r == 1 << 30:
                break
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        ids.extend(vocab[s] for s in syms)
    return ids


def bpe_decode(ids, vocab):
    inv = {i: t for t, i in vocab.items()}
    chars = {c: b for b, c in BYTE_CHARS.items()}
    return bytes(chars[c] for i in ids if inv[i] != EOS_TOKEN for c in inv[i]).decode("latin-1")


def tokenizer_json(vocab, merges):
    """A tokenizer.json laid out as GPT-2's (byte-level BPE)."""
    eos = vocab[EOS_TOKEN]
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eos, "content": EOS_TOKEN, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False,
                  "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
                  "merges": ["%s %s" % p for p in merges]},
    }
    return (json.dumps(tok, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# --------------------------------------------------------------------------
# ONNX graph building

class Weights:
    """Initializers kept in memory (tiny models); arrays kept for the numpy reference."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.arrays = {}
        self.protos = []

    def normal(self, name, shape, std, mean=0.0):
        a = (self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
             + np.float32(mean)).astype(np.float32)
        return self.add(name, a)

    def add(self, name, array):
        array = np.ascontiguousarray(array, dtype=np.float32)
        self.arrays[name] = array
        self.protos.append(numpy_helper.from_array(array, name))
        return name

    def close(self):
        pass


class ExternalWeights(Weights):
    """Initializers streamed one by one into a single external-data file; only
    the tensor being written is in memory. Each tensor starts at a multiple of
    ALIGN bytes."""
    ALIGN = 4096
    CHUNK = 1 << 24   # values generated and written at a time

    def __init__(self, seed, dir_path, file_name):
        super().__init__(seed)
        self.file_name = file_name
        self.f = open(os.path.join(dir_path, file_name), "wb")
        self.offset = 0

    def _begin(self):
        pad = (-self.offset) % self.ALIGN
        if pad:
            self.f.write(bytes(pad))
            self.offset += pad
        return self.offset

    def _proto(self, name, shape, start):
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        length = int(np.prod(shape)) * 4
        for k, v in (("location", self.file_name), ("offset", str(start)), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.protos.append(t)
        return name

    def normal(self, name, shape, std, mean=0.0):
        start = self._begin()
        total = int(np.prod(shape))
        done = 0
        while done < total:
            n = min(self.CHUNK, total - done)
            a = self.rng.standard_normal(n, dtype=np.float32) * np.float32(std) + np.float32(mean)
            self.f.write(a.astype("<f4").tobytes())
            done += n
        self.offset += total * 4
        return self._proto(name, shape, start)

    def add(self, name, array):
        array = np.ascontiguousarray(array, dtype="<f4")
        start = self._begin()
        self.f.write(array.tobytes())
        self.offset += array.nbytes
        return self._proto(name, list(array.shape), start)

    def close(self):
        self.f.close()


class Graph:
    def __init__(self):
        self.nodes = []
        self.consts = {}
        self.const_protos = []
        self.names = set()

    def op(self, op_type, inputs, name, outputs=None, n_out=1, **attrs):
        assert name not in self.names, name
        self.names.add(name)
        if outputs is None:
            outputs = [name + "/out%d" % k if n_out > 1 else name + "/out" for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs if len(outputs) > 1 else outputs[0]

    def const(self, value, dtype):
        """A small constant initializer, shared by value."""
        a = np.array(value, dtype=dtype)
        key = (a.dtype.str, a.shape, a.tobytes())
        if key not in self.consts:
            name = "const.%s.%d" % ("f" if a.dtype == np.float32 else "i", len(self.consts))
            self.consts[key] = name
            self.const_protos.append(numpy_helper.from_array(a, name))
        return self.consts[key]

    def i64(self, value):
        return self.const(value, np.int64)

    def f32(self, value):
        return self.const(value, np.float32)


def io_info(cfg):
    kv, d, L = cfg["kv_heads"], cfg["head_dim"], cfg["layers"]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence_length"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                      ["batch", "total_sequence_length"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "sequence_length"]),
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                             ["batch", "sequence_length", cfg["vocab"]])]
    for i in range(L):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                "past_key_values.%d.%s" % (i, kind), TensorProto.FLOAT,
                ["batch", kv, "past_sequence_length", d]))
            outputs.append(helper.make_tensor_value_info(
                "present.%d.%s" % (i, kind), TensorProto.FLOAT,
                ["batch", kv, "total_sequence_length", d]))
    return inputs, outputs


def sequence_positions(g):
    """Scalars sequence_length, total_sequence_length and the query/key
    absolute positions q_pos [S,1] and k_pos [1,T] (past = T - S)."""
    seq = g.op("Gather", [g.op("Shape", ["input_ids"], "mask/ids_shape"), g.i64(1)],
               "mask/seq_len", axis=0)
    total = g.op("Gather", [g.op("Shape", ["attention_mask"], "mask/mask_shape"), g.i64(1)],
                 "mask/total_len", axis=0)
    past = g.op("Sub", [total, seq], "mask/past_len")
    q = g.op("Range", [past, total, g.i64(1)], "mask/q_range")
    k = g.op("Range", [g.i64(0), total, g.i64(1)], "mask/k_range")
    q_pos = g.op("Unsqueeze", [q, g.i64([1])], "mask/q_pos")
    k_pos = g.op("Unsqueeze", [k, g.i64([0])], "mask/k_pos")
    return q_pos, k_pos


def attention_bias_gpt2(g):
    """[B,1,S,T] float: Where(key after query, -1e9, 0) + (1 - mask) * -1e9."""
    q_pos, k_pos = sequence_positions(g)
    future = g.op("Less", [q_pos, k_pos], "mask/future")
    causal = g.op("Where", [future, g.f32(MASK_NEG), g.f32(0.0)], "mask/causal_bias")
    m = g.op("Cast", ["attention_mask"], "mask/mask_float", to=TensorProto.FLOAT)
    pad = g.op("Mul", [g.op("Sub", [g.f32(1.0), m], "mask/not_mask"), g.f32(MASK_NEG)],
               "mask/pad_bias")
    pad = g.op("Unsqueeze", [pad, g.i64([1, 2])], "mask/pad_bias_4d")
    return g.op("Add", [causal, pad], "mask/bias")


def attention_bias_llama(g):
    """[B,1,S,T] float: Where(k_pos <= q_pos And mask, 0, -1e9)."""
    q_pos, k_pos = sequence_positions(g)
    causal = g.op("LessOrEqual", [k_pos, q_pos], "mask/causal")
    keep = g.op("Cast", ["attention_mask"], "mask/mask_bool", to=TensorProto.BOOL)
    keep = g.op("Unsqueeze", [keep, g.i64([1, 2])], "mask/mask_4d")
    allowed = g.op("And", [causal, keep], "mask/allowed")
    return g.op("Where", [allowed, g.f32(0.0), g.f32(MASK_NEG)], "mask/bias")


def sdpa(g, p, q, k, v, bias, cfg):
    """softmax(q @ k^T / sqrt(d) + bias) @ v, heads merged back to [B,S,H*D]."""
    kt = g.op("Transpose", [k], p + "/k_t", perm=[0, 1, 3, 2])
    s = g.op("MatMul", [q, kt], p + "/qk")
    s = g.op("Mul", [s, g.f32(1.0 / np.sqrt(cfg["head_dim"]))], p + "/scale")
    s = g.op("Add", [s, bias], p + "/add_mask")
    a = g.op("Softmax", [s], p + "/softmax", axis=-1)
    o = g.op("MatMul", [a, v], p + "/av")
    o = g.op("Transpose", [o], p + "/merge_t", perm=[0, 2, 1, 3])
    return g.op("Reshape", [o, g.i64([0, 0, cfg["heads"] * cfg["head_dim"]])], p + "/merge")


def split_heads(g, p, x, heads, cfg):
    x = g.op("Reshape", [x, g.i64([0, 0, heads, cfg["head_dim"]])], p + "/reshape")
    return g.op("Transpose", [x], p + "/transpose", perm=[0, 2, 1, 3])


def build_gpt2(cfg, W):
    g = Graph()
    h_, v_, f_, L = cfg["hidden"], cfg["vocab"], cfg["ffn"], cfg["layers"]
    eps = cfg["norm_eps"]
    # Scales chosen so that greedy decoding wanders (see MIN_DISTINCT).
    wte = W.normal("transformer.wte.weight", (v_, h_), 0.3)
    wpe = W.normal("transformer.wpe.weight", (cfg["max_positions"], h_), 0.3)
    bias = attention_bias_gpt2(g)
    x = g.op("Add", [g.op("Gather", [wte, "input_ids"], "wte", axis=0),
                     g.op("Gather", [wpe, "position_ids"], "wpe", axis=0)], "embed")
    for i in range(L):
        p = "h.%d" % i
        n = "transformer.h.%d." % i

        def ln(name, inp):
            gamma = W.normal(n + name + ".weight", (h_,), 0.1, 1.0)
            beta = W.normal(n + name + ".bias", (h_,), 0.1)
            return g.op("LayerNormalization", [inp, gamma, beta], p + "/" + name, axis=-1,
                        epsilon=eps)

        a = ln("ln_1", x)
        qkv = g.op("Add", [g.op("MatMul", [a, W.normal(n + "attn.c_attn.weight", (h_, 3 * h_),
                                                          1.5 / np.sqrt(h_))],
                                p + "/attn/c_attn/MatMul"),
                           W.normal(n + "attn.c_attn.bias", (3 * h_,), 0.1)],
                   p + "/attn/c_attn/Add")
        q, k, v = g.op("Split", [qkv], p + "/attn/split", n_out=3, axis=-1)
        q = split_heads(g, p + "/attn/q", q, cfg["heads"], cfg)
        k = split_heads(g, p + "/attn/k", k, cfg["heads"], cfg)
        v = split_heads(g, p + "/attn/v", v, cfg["heads"], cfg)
        pk = g.op("Concat", ["past_key_values.%d.key" % i, k], p + "/attn/present_key",
                  outputs=["present.%d.key" % i], axis=2)
        pv = g.op("Concat", ["past_key_values.%d.value" % i, v], p + "/attn/present_value",
                  outputs=["present.%d.value" % i], axis=2)
        o = sdpa(g, p + "/attn", q, pk, pv, bias, cfg)
        o = g.op("Add", [g.op("MatMul", [o, W.normal(n + "attn.c_proj.weight", (h_, h_),
                                                      1.0 / np.sqrt(h_))],
                              p + "/attn/c_proj/MatMul"),
                         W.normal(n + "attn.c_proj.bias", (h_,), 0.1)], p + "/attn/c_proj/Add")
        x = g.op("Add", [x, o], p + "/residual_attn")
        m = ln("ln_2", x)
        m = g.op("Add", [g.op("MatMul", [m, W.normal(n + "mlp.c_fc.weight", (h_, f_),
                                                      2.0 / np.sqrt(h_))],
                              p + "/mlp/c_fc/MatMul"),
                         W.normal(n + "mlp.c_fc.bias", (f_,), 0.1)], p + "/mlp/c_fc/Add")
        # GELU, erf form: 0.5 * x * (1 + erf(x / sqrt(2)))
        e = g.op("Erf", [g.op("Div", [m, g.f32(np.sqrt(2.0))], p + "/mlp/gelu/div")],
                 p + "/mlp/gelu/erf")
        e = g.op("Add", [e, g.f32(1.0)], p + "/mlp/gelu/add")
        m = g.op("Mul", [g.op("Mul", [m, e], p + "/mlp/gelu/mul"), g.f32(0.5)],
                 p + "/mlp/gelu/half")
        m = g.op("Add", [g.op("MatMul", [m, W.normal(n + "mlp.c_proj.weight", (f_, h_),
                                                      1.0 / np.sqrt(f_))],
                              p + "/mlp/c_proj/MatMul"),
                         W.normal(n + "mlp.c_proj.bias", (h_,), 0.1)], p + "/mlp/c_proj/Add")
        x = g.op("Add", [x, m], p + "/residual_mlp")
    # ln_f's gain has random signs: with tied embeddings, a positive gain would
    # make every token predict itself (its own embedding is in the residual).
    gamma = W.normal("transformer.ln_f.weight", (h_,), 1.5)
    beta = W.normal("transformer.ln_f.bias", (h_,), 0.1)
    x = g.op("LayerNormalization", [x, gamma, beta], "ln_f", axis=-1, epsilon=eps)
    # Tied output head: logits = x @ wte^T.
    head = g.op("Transpose", [wte], "lm_head/wte_t", perm=[1, 0])
    g.op("MatMul", [x, head], "lm_head", outputs=["logits"])
    return g


def build_llama(cfg, W):
    g = Graph()
    h_, v_, f_, L = cfg["hidden"], cfg["vocab"], cfg["ffn"], cfg["layers"]
    H, KV, D = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    eps = cfg["norm_eps"]
    rep = H // KV
    # Residual-branch outputs scaled down with depth to keep big models sane.
    out_std = 1.0 / np.sqrt(2.0 * L) if L > 2 else 1.0

    def rms(name, inp, w_name):
        w = W.normal(w_name, (h_,), 0.1, 1.0)
        sq = g.op("Pow", [inp, g.f32(2.0)], name + "/pow")
        var = g.op("ReduceMean", [sq], name + "/mean", axes=[-1], keepdims=1)
        r = g.op("Sqrt", [g.op("Add", [var, g.f32(eps)], name + "/add_eps")], name + "/sqrt")
        return g.op("Mul", [g.op("Div", [inp, r], name + "/div"), w], name + "/mul_weight")

    cycle = cfg.get("successor_cycle", 0)
    if cycle:
        # A model whose greedy output repeats text: the output head's column for
        # token succ[t] is token t's embedding, so the token after t is succ[t]
        # (the embedding dominates the residual stream; the layers still run and
        # perturb it). succ cycles through blocks of `cycle` shuffled tokens, so a
        # context holding one pass of a cycle is continued by repeating it: the
        # case prompt-lookup speculation is for, at the real model's cost.
        emb_a = W.rng.standard_normal((v_, h_), dtype=np.float32)
        emb = W.add("model.embed_tokens.weight", emb_a)
    else:
        emb = W.normal("model.embed_tokens.weight", (v_, h_), 1.0)
    bias = attention_bias_llama(g)
    # Rotary embedding, shared by all layers: cos/sin [B,1,S,D].
    inv_freq = (1.0 / (cfg["rope_theta"] ** (np.arange(0, D, 2, dtype=np.float64) / D)))
    inv = W.add("model.rotary_emb.inv_freq", inv_freq.astype(np.float32).reshape(1, D // 2))
    pos = g.op("Cast", ["position_ids"], "rotary/pos_float", to=TensorProto.FLOAT)
    pos = g.op("Unsqueeze", [pos, g.i64([2])], "rotary/pos_col")
    freqs = g.op("MatMul", [pos, inv], "rotary/freqs")
    ang = g.op("Concat", [freqs, freqs], "rotary/emb", axis=-1)
    cos = g.op("Unsqueeze", [g.op("Cos", [ang], "rotary/cos_raw"), g.i64([1])], "rotary/cos")
    sin = g.op("Unsqueeze", [g.op("Sin", [ang], "rotary/sin_raw"), g.i64([1])], "rotary/sin")

    def rope(p, t):
        x1 = g.op("Slice", [t, g.i64([0]), g.i64([D // 2]), g.i64([3])], p + "/x1")
        x2 = g.op("Slice", [t, g.i64([D // 2]), g.i64([np.iinfo(np.int64).max]), g.i64([3])],
                  p + "/x2")
        rot = g.op("Concat", [g.op("Neg", [x2], p + "/neg"), x1], p + "/rotate_half", axis=-1)
        return g.op("Add", [g.op("Mul", [t, cos], p + "/mul_cos"),
                            g.op("Mul", [rot, sin], p + "/mul_sin")], p + "/rope")

    def repeat_kv(p, t):
        """[B,KV,T,D] -> [B,KV*rep,T,D] as HF's repeat_kv: Unsqueeze, Expand, Reshape."""
        shp = g.op("Shape", [t], p + "/shape")
        b = g.op("Gather", [shp, g.i64([0])], p + "/batch", axis=0)
        t_len = g.op("Gather", [shp, g.i64([2])], p + "/len", axis=0)
        u = g.op("Unsqueeze", [t, g.i64([2])], p + "/unsqueeze")
        eshape = g.op("Concat", [b, g.i64([KV, rep]), t_len, g.i64([D])], p + "/expand_shape",
                      axis=0)
        e = g.op("Expand", [u, eshape], p + "/expand")
        rshape = g.op("Concat", [b, g.i64([KV * rep]), t_len, g.i64([D])], p + "/reshape_shape",
                      axis=0)
        return g.op("Reshape", [e, rshape], p + "/reshape")

    x = g.op("Gather", [emb, "input_ids"], "embed_tokens", axis=0)
    for i in range(L):
        p = "layers.%d" % i
        n = "model.layers.%d." % i
        a = rms(p + "/input_layernorm", x, n + "input_layernorm.weight")
        q = g.op("MatMul", [a, W.normal(n + "self_attn.q_proj.weight", (h_, H * D),
                                        1.0 / np.sqrt(h_))], p + "/attn/q_proj")
        k = g.op("MatMul", [a, W.normal(n + "self_attn.k_proj.weight", (h_, KV * D),
                                        1.0 / np.sqrt(h_))], p + "/attn/k_proj")
        v = g.op("MatMul", [a, W.normal(n + "self_attn.v_proj.weight", (h_, KV * D),
                                        1.0 / np.sqrt(h_))], p + "/attn/v_proj")
        q = rope(p + "/attn/q_rope", split_heads(g, p + "/attn/q", q, H, cfg))
        k = rope(p + "/attn/k_rope", split_heads(g, p + "/attn/k", k, KV, cfg))
        v = split_heads(g, p + "/attn/v", v, KV, cfg)
        pk = g.op("Concat", ["past_key_values.%d.key" % i, k], p + "/attn/present_key",
                  outputs=["present.%d.key" % i], axis=2)
        pv = g.op("Concat", ["past_key_values.%d.value" % i, v], p + "/attn/present_value",
                  outputs=["present.%d.value" % i], axis=2)
        o = sdpa(g, p + "/attn", q, repeat_kv(p + "/attn/repeat_k", pk),
                 repeat_kv(p + "/attn/repeat_v", pv), bias, cfg)
        o = g.op("MatMul", [o, W.normal(n + "self_attn.o_proj.weight", (H * D, h_),
                                        out_std / np.sqrt(H * D))], p + "/attn/o_proj")
        x = g.op("Add", [x, o], p + "/residual_attn")
        m = rms(p + "/post_attention_layernorm", x, n + "post_attention_layernorm.weight")
        gate = g.op("MatMul", [m, W.normal(n + "mlp.gate_proj.weight", (h_, f_),
                                           1.0 / np.sqrt(h_))], p + "/mlp/gate_proj")
        up = g.op("MatMul", [m, W.normal(n + "mlp.up_proj.weight", (h_, f_), 1.0 / np.sqrt(h_))],
                  p + "/mlp/up_proj")
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate], p + "/mlp/sigmoid")], p + "/mlp/silu")
        m = g.op("Mul", [silu, up], p + "/mlp/gate_mul_up")
        m = g.op("MatMul", [m, W.normal(n + "mlp.down_proj.weight", (f_, h_),
                                        out_std / np.sqrt(f_))], p + "/mlp/down_proj")
        x = g.op("Add", [x, m], p + "/residual_mlp")
    x = rms("norm", x, "model.norm.weight")
    if cycle:
        # Its own generator, so that models of any depth (a draft and its target) share it.
        order = np.random.default_rng(cfg["seed"] + 1).permutation(v_)
        head = np.empty((h_, v_), dtype=np.float32)
        for start in range(0, v_, cycle):
            block = order[start:start + cycle]
            head[:, np.roll(block, -1)] = emb_a[block].T * np.float32(3.0 / np.sqrt(h_))
        head_name = W.add("lm_head.weight", head)
        del head, emb_a
    else:
        head_name = W.normal("lm_head.weight", (h_, v_), 3.0 / np.sqrt(h_))
    g.op("MatMul", [x, head_name], "lm_head", outputs=["logits"])
    return g


def build(cfg, W):
    g = (build_gpt2 if cfg["family"] == "gpt2" else build_llama)(cfg, W)
    inputs, outputs = io_info(cfg)
    graph = helper.make_graph(g.nodes, "kiln_lm_%s" % cfg["family"], inputs, outputs,
                              initializer=W.protos + g.const_protos)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", cfg["opset"])],
                              producer_name=PRODUCER, producer_version="1")
    model.ir_version = cfg["ir_version"]
    return model


def generation_config(cfg, eos):
    return {"eos_token_id": eos, "num_layers": cfg["layers"], "num_kv_heads": cfg["kv_heads"],
            "num_heads": cfg["heads"], "head_dim": cfg["head_dim"], "hidden_size": cfg["hidden"],
            "vocab_size": cfg["vocab"], "max_positions": cfg["max_positions"],
            "family": cfg["family"], "pad_token_id": PAD_ID}


# --------------------------------------------------------------------------
# numpy float64 reference

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mask_bias(mask, seq):
    b, t = mask.shape
    past = t - seq
    q = np.arange(past, t)[:, None]
    k = np.arange(t)[None, :]
    allowed = (k <= q)[None, None] & (mask[:, None, None, :] == 1)
    return np.where(allowed, 0.0, MASK_NEG)


def heads(x, n, d):
    b, s, _ = x.shape
    return x.reshape(b, s, n, d).transpose(0, 2, 1, 3)


def merge(x):
    b, h, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, h * d)


def attend(q, k, v, bias, d):
    return merge(softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias) @ v)


def forward(cfg, w, ids, mask, pos, past):
    """One model call, weights w as float64. past: list of (key, value) arrays.
    Returns (logits [B,S,V], presents)."""
    H, KV, D = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    eps = cfg["norm_eps"]
    bias = mask_bias(mask, ids.shape[1])
    presents = []
    if cfg["family"] == "gpt2":
        def ln(x, n):
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) / np.sqrt(var + eps) * w[n + ".weight"] + w[n + ".bias"]

        x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][pos]
        for i in range(cfg["layers"]):
            n = "transformer.h.%d." % i
            a = ln(x, n + "ln_1")
            qkv = a @ w[n + "attn.c_attn.weight"] + w[n + "attn.c_attn.bias"]
            q, k, v = (heads(t, H, D) for t in np.split(qkv, 3, axis=-1))
            k = np.concatenate([past[i][0], k], axis=2)
            v = np.concatenate([past[i][1], v], axis=2)
            presents.append((k, v))
            o = attend(q, k, v, bias, D)
            x = x + o @ w[n + "attn.c_proj.weight"] + w[n + "attn.c_proj.bias"]
            m = ln(x, n + "ln_2") @ w[n + "mlp.c_fc.weight"] + w[n + "mlp.c_fc.bias"]
            m = 0.5 * m * (1.0 + ERF(m / np.sqrt(2.0)).astype(np.float64))
            x = x + m @ w[n + "mlp.c_proj.weight"] + w[n + "mlp.c_proj.bias"]
        x = ln(x, "transformer.ln_f")
        return x @ w["transformer.wte.weight"].T, presents

    def rms(x, n):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * w[n]

    inv = w["model.rotary_emb.inv_freq"].astype(np.float32)
    # The graph computes the angles in float32 (Cast + MatMul with K=1 is one
    # rounded product); cos/sin of those.
    ang = (pos.astype(np.float32)[:, :, None] * inv[0][None, None, :]).astype(np.float64)
    ang = np.concatenate([ang, ang], axis=-1)
    cos, sin = np.cos(ang)[:, None], np.sin(ang)[:, None]

    def rope(t):
        rot = np.concatenate([-t[..., D // 2:], t[..., :D // 2]], axis=-1)
        return t * cos + rot * sin

    x = w["model.embed_tokens.weight"][ids]
    for i in range(cfg["layers"]):
        n = "model.layers.%d." % i
        a = rms(x, n + "input_layernorm.weight")
        q = rope(heads(a @ w[n + "self_attn.q_proj.weight"], H, D))
        k = rope(heads(a @ w[n + "self_attn.k_proj.weight"], KV, D))
        v = heads(a @ w[n + "self_attn.v_proj.weight"], KV, D)
        k = np.concatenate([past[i][0], k], axis=2)
        v = np.concatenate([past[i][1], v], axis=2)
        presents.append((k, v))
        o = attend(q, np.repeat(k, H // KV, axis=1), np.repeat(v, H // KV, axis=1), bias, D)
        x = x + o @ w[n + "self_attn.o_proj.weight"]
        m = rms(x, n + "post_attention_layernorm.weight")
        gate = m @ w[n + "mlp.gate_proj.weight"]
        m = gate / (1.0 + np.exp(-gate)) * (m @ w[n + "mlp.up_proj.weight"])
        x = x + m @ w[n + "mlp.down_proj.weight"]
    return rms(x, "model.norm.weight") @ w["lm_head.weight"], presents


ERF = np.frompyfunc(math.erf, 1, 1)


def left_pad(prompts):
    """ids, mask, position_ids for a left-padded batch (pad id 0, mask 0 on
    pads, position_ids = max(cumsum(mask) - 1, 0))."""
    n = max(len(p) for p in prompts)
    ids = np.full((len(prompts), n), PAD_ID, dtype=np.int64)
    mask = np.zeros((len(prompts), n), dtype=np.int64)
    for b, p in enumerate(prompts):
        ids[b, n - len(p):] = p
        mask[b, n - len(p):] = 1
    pos = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
    return ids, mask, pos


def numpy_generate(cfg, weights, prompts, tokens, steps=None):
    """Teacher-forced replay of a greedy run: feeds the given tokens and returns
    the last-position logits [steps, B, V] of each model call."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    ids, mask, pos = left_pad(prompts)
    B = len(prompts)
    past = [(np.zeros((B, cfg["kv_heads"], 0, cfg["head_dim"])),) * 2
            for _ in range(cfg["layers"])]
    out = []
    steps = steps or len(tokens[0])
    for step in range(steps):
        logits, past = forward(cfg, w, ids, mask, pos, past)
        out.append(logits[:, -1])
        if step + 1 == steps:
            break
        ids = np.array([[t[step]] for t in tokens], dtype=np.int64)
        mask = np.concatenate([mask, np.ones((B, 1), dtype=np.int64)], axis=1)
        pos = pos[:, -1:] + 1
    return np.stack(out)


# --------------------------------------------------------------------------
# ONNX Runtime (ort_generate.js)

def have_ort():
    if shutil.which("node") is None:
        return False
    return bool(os.environ.get("KILN_ORT_NODE_MODULES")) or os.path.isdir(
        os.path.join(REPO, "bench", "node_modules", "onnxruntime-node"))


def ort_generate(model_path, prompts, batch, out_json, new_tokens=NEW_TOKENS):
    with tempfile.TemporaryDirectory() as tmp:
        pf = os.path.join(tmp, "prompts.json")
        with open(pf, "w") as f:
            json.dump(prompts, f)
        cmd = ["node", os.path.join(HERE, "ort_generate.js"), "--model", model_path,
               "--prompts-file", pf, "--batch", str(batch), "--new-tokens", str(new_tokens),
               "--threads", "1", "--opt-level", "disabled", "--out", out_json]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out_json) as f:
        return json.load(f)


def read_logits(path, steps, batch, vocab):
    a = np.fromfile(path, dtype="<f4")
    assert a.size == steps * batch * vocab, (path, a.size)
    return a.reshape(steps, batch, vocab)


def compact_json(obj, indent=""):
    """JSON with one key per line and each list of numbers (or of such lists,
    one per line) kept short."""
    inner = indent + "  "
    if isinstance(obj, dict):
        items = ['%s%s: %s' % (inner, json.dumps(k), compact_json(v, inner)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        return "[\n" + ",\n".join(inner + compact_json(x, inner) for x in obj) + "\n" + indent + "]"
    if isinstance(obj, list) and obj and all(isinstance(x, list) for x in obj):
        return "[\n" + ",\n".join(inner + json.dumps(x) for x in obj) + "\n" + indent + "]"
    return json.dumps(obj)


def op_types(model):
    return sorted({n.op_type for n in model.graph.node})


def make_references(name, cfg, model, weights, prompts, use_ort):
    """Writes reference/index.json and one logits .bin per run (or, with
    --no-ort, re-checks the checked-in ones), cross-checked with numpy."""
    d = os.path.join(LM_DIR, name)
    ref = os.path.join(d, "reference")
    V = cfg["vocab"]
    runs = []
    if use_ort:
        if os.path.isdir(ref):
            shutil.rmtree(ref)
        os.makedirs(ref)
        with tempfile.TemporaryDirectory() as tmp:
            for run, pnames in RUNS:
                ps = [prompts[p] for p in pnames]
                out = ort_generate(os.path.join(d, "model.onnx"), ps, len(ps),
                                   os.path.join(tmp, run + ".json"))
                assert len(out["batches"]) == 1
                bt = out["batches"][0]
                assert bt["prompts"] == ps
                shutil.copyfile(os.path.join(tmp, out["logits"]["file"]),
                                os.path.join(ref, run + ".logits.bin"))
                n = max(len(p) for p in ps)
                runs.append({
                    "name": run,
                    "batch": len(ps),
                    "prompt_names": pnames,
                    "prompts": ps,
                    "prompt_lengths": [len(p) for p in ps],
                    "padded_length": n,
                    "tokens": bt["tokens"],
                    "logits_file": run + ".logits.bin",
                    "logits_shape": [NEW_TOKENS, len(ps), V],
                })
        index = {
            "format": "kiln-lm-reference-1",
            "model": "../model.onnx",
            "family": cfg["family"],
            "new_tokens": NEW_TOKENS,
            "vocab_size": V,
            "pad_token_id": PAD_ID,
            "eos_token_id": V - 1,
            "decoding": "greedy (argmax, lowest id on ties), no stop at EOS, left padding",
            "ort": "onnxruntime-node, intra_op_num_threads=1, graph optimizations disabled",
            "logits_dtype": "float32 little-endian",
            "logits_layout": "[new_tokens][batch][vocab], row-major: step s, row b, id v at "
                             "float index (s*batch + b)*vocab + v",
            "runs": runs,
        }
        write_bytes(os.path.join(ref, "index.json"), (compact_json(index) + "\n").encode())
    else:
        if not os.path.exists(os.path.join(ref, "index.json")):
            raise SystemExit("missing %s/index.json (run without --no-ort; needs bench/setup.sh)" % ref)
        with open(os.path.join(ref, "index.json")) as f:
            runs = json.load(f)["runs"]
    # Checks: numpy agrees on every step, decoding is not degenerate, a padded
    # row decodes like the same prompt alone, every logit row is finite.
    by_prompt = {}
    for r in runs:
        ps = r["prompts"]
        assert ps == [prompts[p] for p in r["prompt_names"]], "prompts changed: rerun with ORT"
        got = read_logits(os.path.join(ref, r["logits_file"]), NEW_TOKENS, r["batch"], V)
        assert np.all(np.isfinite(got))
        toks = np.array(r["tokens"])
        assert toks.shape == (r["batch"], NEW_TOKENS)
        assert np.array_equal(got.argmax(-1).T, toks), r["name"]
        want = numpy_generate(cfg, weights, ps, r["tokens"])
        err = np.abs(got - want)
        tol = CHECK_ATOL + CHECK_RTOL * np.abs(want)
        if not np.all(err <= tol):
            s = int(np.argwhere(err > tol)[0][0])
            raise SystemExit("%s/%s: ORT and numpy disagree at step %d, max abs err %g" % (
                name, r["name"], s, err.max()))
        top2 = np.sort(got, axis=-1)[..., -2:]
        margin = (top2[..., 1] - top2[..., 0]).min()
        if margin < MIN_MARGIN:
            raise SystemExit("%s/%s: near tie in greedy decoding (top-2 margin %g)" % (
                name, r["name"], margin))
        for b, p in enumerate(r["prompt_names"]):
            distinct = len(set(r["tokens"][b]))
            if distinct < MIN_DISTINCT:
                raise SystemExit("%s/%s row %d: degenerate greedy decoding (%d distinct tokens)" % (
                    name, r["name"], b, distinct))
            if p in by_prompt:
                t0, l0 = by_prompt[p]
                assert t0 == r["tokens"][b], "%s: %s decodes differently when padded" % (name, p)
                assert np.allclose(l0, got[:, b], rtol=1e-4, atol=1e-4), (name, p)
            else:
                by_prompt[p] = (r["tokens"][b], got[:, b])
        print("  %s/%s: batch %d, lengths %s: ORT == numpy over %d steps (max abs err %.1e), "
              "distinct tokens %s, min top-2 margin %.2e" % (
                  name, r["name"], r["batch"], r["prompt_lengths"], NEW_TOKENS, err.max(),
                  [len(set(t)) for t in r["tokens"]], margin))


def write_test_data(name, cfg, model, weights, prompts, use_ort):
    """Single model calls in the ONNX backend-test layout (input_J.pb named
    after the J-th graph input, output_K.pb from ONNX Runtime through
    ort_reference.js), cross-checked with numpy:
      test_data_set_0: prefill of prompt p7 at batch 1 (empty past);
      test_data_set_1: the first decode call of run b4_mixed (batch 4, left
      padded, one new token per row, past of length 23 from the prefill)."""
    d = os.path.join(LM_DIR, name)
    with open(os.path.join(d, "reference", "index.json")) as f:
        run = {r["name"]: r for r in json.load(f)["runs"]}["b4_mixed"]
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    L, KV, D = cfg["layers"], cfg["kv_heads"], cfg["head_dim"]
    cases = []
    ids, mask, pos = left_pad([prompts["p7"]])
    past = [np.zeros((1, KV, 0, D), dtype=np.float32)] * (2 * L)
    cases.append((ids, mask, pos, past))
    ids, mask, pos = left_pad(run["prompts"])
    empty = [(np.zeros((4, KV, 0, D)),) * 2] * L
    _, presents = forward(cfg, w, ids, mask, pos, empty)
    past = [t.astype(np.float32) for kv in presents for t in kv]
    ids = np.array([[t[0]] for t in run["tokens"]], dtype=np.int64)
    mask = np.concatenate([mask, np.ones((4, 1), dtype=np.int64)], axis=1)
    pos = pos[:, -1:] + 1
    cases.append((ids, mask, pos, past))
    in_names = [i.name for i in model.graph.input]
    out_names = [o.name for o in model.graph.output]
    dirs = []
    for k, (ids, mask, pos, past) in enumerate(cases):
        ds = os.path.join(d, "test_data_set_%d" % k)
        if use_ort and os.path.isdir(ds):
            shutil.rmtree(ds)
        os.makedirs(ds, exist_ok=True)
        for j, (n, a) in enumerate(zip(in_names, [ids, mask, pos] + past)):
            save_tensor(a, n, os.path.join(ds, "input_%d.pb" % j))
        dirs.append(ds)
    if use_ort:
        subprocess.run(["node", os.path.join(HERE, "ort_reference.js"),
                        os.path.join(d, "model.onnx")] + dirs, check=True, stdout=subprocess.DEVNULL)
    for ds, (ids, mask, pos, past) in zip(dirs, cases):
        pw = [(past[2 * i].astype(np.float64), past[2 * i + 1].astype(np.float64)) for i in range(L)]
        logits, presents = forward(cfg, w, ids, mask, pos, pw)
        want = [logits] + [t for kv in presents for t in kv]
        errs = []
        for k, (n, ref) in enumerate(zip(out_names, want)):
            path = os.path.join(ds, "output_%d.pb" % k)
            if not os.path.exists(path):
                raise SystemExit("missing %s (run without --no-ort; needs bench/setup.sh)" % path)
            got, got_name = load_tensor(path)
            if got_name != n or got.dtype != np.float32 or got.shape != ref.shape:
                raise SystemExit("%s: got %s %s%s, want %s float32%s" % (
                    path, got_name, got.dtype, got.shape, n, ref.shape))
            err = np.abs(got - ref)
            if not np.all(err <= CHECK_ATOL + CHECK_RTOL * np.abs(ref)):
                raise SystemExit("%s: ORT and numpy disagree, max abs err %g" % (path, err.max()))
            errs.append(err.max())
        print("  %s/%s: input_ids %s, past length %d: ORT == numpy (max abs err %.1e)" % (
            name, os.path.basename(ds), list(ids.shape), past[0].shape[2], max(errs)))


# --------------------------------------------------------------------------

def gen_tiny(use_ort):
    vocab, merges = train_bpe(TRAIN_TEXT, GPT2["vocab"])
    tok = tokenizer_json(vocab, merges)
    eos = vocab[EOS_TOKEN]
    prompts = {}
    for p, n in PROMPT_LENGTHS.items():
        ids = bpe_encode(PROMPT_TEXTS[p], vocab, merges)
        assert bpe_decode(ids, vocab) == PROMPT_TEXTS[p]
        assert len(ids) >= n, (p, len(ids))
        prompts[p] = ids[:n]
    if use_ort and not have_ort():
        raise SystemExit("onnxruntime-node not found: run bench/setup.sh (needs network) "
                         "or pass --no-ort to keep the checked-in references")
    for cfg in (GPT2, LLAMA):
        name = cfg["family"]
        d = os.path.join(LM_DIR, name)
        W = Weights(cfg["seed"])
        model = build(cfg, W)
        save_model(model, os.path.join(d, "model.onnx"))
        write_bytes(os.path.join(d, "tokenizer.json"), tok)
        write_bytes(os.path.join(d, "generation.json"),
                    (json.dumps(generation_config(cfg, eos), indent=1) + "\n").encode())
        nweights = sum(a.size for a in W.arrays.values())
        print("%s: %d weights, %d bytes, opset %d, ops: %s" % (
            name, nweights, os.path.getsize(os.path.join(d, "model.onnx")), cfg["opset"],
            " ".join(op_types(model))))
        make_references(name, cfg, model, W.arrays, prompts, use_ort)
        write_test_data(name, cfg, model, W.arrays, prompts, use_ort)


def gen_tinyllama(out_dir, layers, successor_cycle):
    """The llama family at TinyLlama-1.1B's shape, weights streamed to
    model.onnx.data (one file) next to model.onnx."""
    cfg = dict(TINYLLAMA)
    if layers:
        cfg["layers"] = layers
    cfg["successor_cycle"] = successor_cycle
    os.makedirs(out_dir, exist_ok=True)
    W = ExternalWeights(cfg["seed"], out_dir, "model.onnx.data")
    try:
        model = build(cfg, W)
    finally:
        W.close()
    path = os.path.join(out_dir, "model.onnx")
    write_bytes(path, model.SerializeToString())
    onnx.checker.check_model(path)
    write_bytes(os.path.join(out_dir, "generation.json"),
                (json.dumps(generation_config(cfg, cfg["vocab"] - 1), indent=1) + "\n").encode())
    nweights = sum(int(np.prod(t.dims)) for t in W.protos)
    print("%s: %d layers, %d weights, model.onnx %d bytes, model.onnx.data %d bytes" % (
        out_dir, cfg["layers"], nweights, os.path.getsize(path),
        os.path.getsize(os.path.join(out_dir, "model.onnx.data"))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-ort", action="store_true",
                    help="do not run ONNX Runtime; keep (and re-check) the checked-in references")
    ap.add_argument("--tinyllama", metavar="DIR",
                    help="only write the TinyLlama-1.1B-shaped llama (about 4.4 GB) into DIR")
    ap.add_argument("--layers", type=int, default=0,
                    help="with --tinyllama: number of layers (default 22)")
    ap.add_argument("--successor-cycle", type=int, default=0, metavar="C",
                    help="with --tinyllama: an output head that makes the greedy continuation "
                         "walk fixed cycles of C tokens (for prompt-lookup speculation benchmarks)")
    args = ap.parse_args()
    if args.successor_cycle and not args.tinyllama:
        ap.error("--successor-cycle needs --tinyllama")
    if args.tinyllama:
        gen_tinyllama(args.tinyllama, args.layers, args.successor_cycle)
    else:
        gen_tiny(not args.no_ort)
    print("done")


if __name__ == "__main__":
    main()
