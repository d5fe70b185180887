#!/usr/bin/python3
"""Writes small ONNX attention models in the forms exporters produce, with
numpy float64 references, to test kiln-fuse-attention's fused kernel end to end
(test/models/attention/). Each is MatMul -> scale -> mask -> Softmax -> MatMul:

  mha_additive   GPT-2's form: Transpose(K), * 1/sqrt(d), + float mask [1,1,Sq,Sk],
                 symbolic Sq/Sk; data sets Sq x Sk = 5 x 77, 1 x 130 (a decode
                 step), 20 x 20 (two query blocks), 3 x 0 (no keys: zeros);
                 masked entries -1e9.
  where_causal   rank 3, Dv != D, / sqrt(d), Where(keep, scores, -inf): rows whose
                 first 64 keys are all masked (the first key tile is all -inf) and
                 one row with every key masked (NaN, as ONNX's Softmax gives).
  gqa_expand     Llama's grouped-query form: 2 key/value heads repeated to 4 by
                 Unsqueeze/Expand/Reshape with shapes from Shape/Gather/Concat,
                 the scale applied to Q, symbolic key length (67).
  pretransposed  K^T given as an input [B, D, Sk] (no Transpose), rank-1 mask.
  plain_2d       rank 2 (no batch), no scale or mask, head size 24 (vectors of 8),
                 Dv = 5 (no whole vectors: linalg products), 100 keys.
  where_lowest   Hugging Face's GPT-2 mask: Where(causal, scores, finfo.min), with a
                 row that sees no key (uniform: the mean of V, not NaN).
  late_max       scores growing with the key index over 300 keys (every key tile's max
                 exceeds the last: rescaling checked), 11 query rows, rows whose first
                 128 or 256 keys are masked, a row with none (NaN).
  odd_head       heads of 15 (an SVTR block's), whose scores take the keys in the vector
                 lanes (K^T tiles): Sq x Sk = 20 x 70 (two query blocks, a last key tile
                 of 6), 1 x 5, 17 x 130 (a last tile of 2).

Run with /usr/bin/python3 (needs onnx and numpy): gen_attention.py [OUT_DIR]
(default test/models/attention). Deterministic: rerunning gives the same files.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "attention")
rng = np.random.default_rng(4242)


def softmax(x):
    # As ONNX defines it: a row of -inf gives exp(-inf - -inf) = NaN.
    with np.errstate(invalid="ignore"):
        m = np.max(x, axis=-1, keepdims=True)
        e = np.exp(x - m)
        return e / np.sum(e, axis=-1, keepdims=True)


def attention(q, k, v, scale, mask=None):
    if k.shape[-2] == 0:  # no keys: the product with an empty V is 0
        return np.zeros(q.shape[:-1] + v.shape[-1:], np.float32)
    s = np.matmul(q.astype(np.float64), np.swapaxes(k.astype(np.float64), -1, -2)) * scale
    if mask is not None:
        s = s + mask
    return np.matmul(softmax(s), v.astype(np.float64)).astype(np.float32)


def f32(shape):
    return rng.standard_normal(shape).astype(np.float32)


def const(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


# The producer recorded in each model; gen_reductions.py, which writes its models with save(), sets its own.
PRODUCER = "kiln test/models/gen_attention.py"


def save(name, nodes, inputs, outputs, initializers, data_sets, opset=17):
    """inputs/outputs: (name, elem_type, shape with str dims); data_sets: [[arrays in], [arrays out]]."""
    vi = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
    graph = helper.make_graph(nodes, name, [vi(*i) for i in inputs], [vi(*o) for o in outputs],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name=PRODUCER)
    model.ir_version = 8
    onnx.checker.check_model(model)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for s, (ins, outs) in enumerate(data_sets):
        ds = os.path.join(d, "test_data_set_%d" % s)
        os.makedirs(ds, exist_ok=True)
        for k, ((n, _, _), a) in enumerate(zip(inputs, ins)):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(ds, "input_%d.pb" % k))
        for k, ((n, _, _), a) in enumerate(zip(outputs, outs)):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(ds, "output_%d.pb" % k))
    print(d)


def gpt2_nodes():
    """GPT-2's form: Transpose(K), MatMul, * scale, + mask, Softmax, MatMul (rank 4)."""
    return [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Mul", ["qk", "scale"], ["scaled"]),
        helper.make_node("Add", ["scaled", "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["out"]),
    ]


def gpt2_inputs(heads, head, mask_dims):
    """gpt2_nodes()'s inputs: q [1, heads, sq, head], k and v [1, heads, sk, head], the mask."""
    F = TensorProto.FLOAT
    return [("q", F, [1, heads, "sq", head]), ("k", F, [1, heads, "sk", head]),
            ("v", F, [1, heads, "sk", head]), ("mask", F, mask_dims)]


def mha_additive():
    H, D = 4, 16
    nodes = gpt2_nodes()
    F = TensorProto.FLOAT
    inputs = gpt2_inputs(H, D, [1, 1, "sq", "sk"])
    sets = []
    for sq, sk in ((5, 77), (1, 130), (20, 20), (3, 0)):
        q, k, v = f32((1, H, sq, D)), f32((1, H, sk, D)), f32((1, H, sk, D))
        # Causal with the queries at the end, plus a few random holes.
        past = sk - sq
        allowed = np.arange(sk)[None, :] <= past + np.arange(sq)[:, None]
        allowed &= rng.random((sq, sk)) > 0.1
        allowed[:, :1] = True
        mask = np.where(allowed, 0.0, -1e9).astype(np.float32).reshape(1, 1, sq, sk)
        sets.append(([q, k, v, mask], [attention(q, k, v, np.float32(0.25), mask.astype(np.float64))]))
    save("mha_additive", nodes, inputs, [("out", F, [1, H, "sq", D])],
         [const("scale", 0.25, np.float32)], sets)


def where_causal():
    B, SQ, SK, D, DV = 3, 20, 70, 8, 12
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Div", ["qk", "sqrt_d"], ["scaled"]),
        helper.make_node("Where", ["keep", "scaled", "neg_inf"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["out"]),
    ]
    F = TensorProto.FLOAT
    q, k, v = f32((B, SQ, D)), f32((B, SK, D)), f32((B, SK, DV))
    keep = rng.random((SQ, SK)) > 0.3
    keep[:, 0] = True
    keep[3:8, :64] = False   # the first key tile is all -inf for these rows
    keep[3:8, 64] = True
    keep[11, :] = False      # no key at all: NaN, as the unfused Softmax gives
    sqrt_d = np.float32(np.sqrt(D))
    mask = np.where(keep, 0.0, -np.inf)
    ref = attention(q, k, v, 1.0 / np.float64(sqrt_d), mask)
    assert np.isnan(ref[:, 11]).all() and not np.isnan(np.delete(ref, 11, axis=1)).any()
    save("where_causal", nodes,
         [("q", F, [B, SQ, D]), ("k", F, [B, SK, D]), ("v", F, [B, SK, DV]), ("keep", TensorProto.BOOL, [SQ, SK])],
         [("out", F, [B, SQ, DV])],
         [const("sqrt_d", sqrt_d, np.float32), const("neg_inf", -np.inf, np.float32)],
         [([q, k, v, keep], [ref])])


def gqa_expand():
    B, H, KV, SQ, T, D = 2, 4, 2, 3, 67, 8
    rep = H // KV
    nodes = [helper.make_node("Mul", ["q", "scale"], ["q_scaled"])]
    for t in ("k", "v"):
        nodes += [
            helper.make_node("Shape", [t], [t + "_shape"]),
            helper.make_node("Gather", [t + "_shape", "i0"], [t + "_b"], axis=0),
            helper.make_node("Gather", [t + "_shape", "i2"], [t + "_t"], axis=0),
            helper.make_node("Unsqueeze", [t, "axis2"], [t + "_u"]),
            helper.make_node("Concat", [t + "_b", "kv_rep", t + "_t", "d"], [t + "_eshape"], axis=0),
            helper.make_node("Expand", [t + "_u", t + "_eshape"], [t + "_e"]),
            helper.make_node("Concat", [t + "_b", "heads", t + "_t", "d"], [t + "_rshape"], axis=0),
            helper.make_node("Reshape", [t + "_e", t + "_rshape"], [t + "_r"]),
        ]
    nodes += [
        helper.make_node("Transpose", ["k_r"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q_scaled", "kt"], ["qk"]),
        helper.make_node("Softmax", ["qk"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v_r"], ["out"]),
    ]
    F = TensorProto.FLOAT
    q, k, v = f32((B, H, SQ, D)), f32((B, KV, T, D)), f32((B, KV, T, D))
    ref = attention(q, np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1), np.float64(np.float32(0.35)))
    init = [const("scale", 0.35, np.float32), const("i0", [0], np.int64), const("i2", [2], np.int64),
            const("axis2", [2], np.int64), const("kv_rep", [KV, rep], np.int64), const("heads", [H], np.int64),
            const("d", [D], np.int64)]
    save("gqa_expand", nodes,
         [("q", F, [B, H, SQ, D]), ("k", F, [B, KV, "t", D]), ("v", F, [B, KV, "t", D])],
         [("out", F, [B, H, SQ, D])], init, [([q, k, v], [ref])])


def pretransposed():
    B, SQ, SK, D = 2, 6, 40, 16
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Div", ["qk", "four"], ["scaled"]),
        helper.make_node("Add", ["bias", "scaled"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["out"]),
    ]
    F = TensorProto.FLOAT
    q, kt, v = f32((B, SQ, D)), f32((B, D, SK)), f32((B, SK, D))
    bias = (rng.standard_normal(SK) * 2).astype(np.float32)
    ref = attention(q, np.swapaxes(kt, -1, -2), v, 0.25, bias.astype(np.float64))
    save("pretransposed", nodes,
         [("q", F, [B, SQ, D]), ("kt", F, [B, D, SK]), ("v", F, [B, SK, D]), ("bias", F, [SK])],
         [("out", F, [B, SQ, D])], [const("four", 4.0, np.float32)], [([q, kt, v, bias], [ref])])


def where_lowest():
    B, H, SQ, SK, D = 1, 2, 6, 90, 16
    lowest = np.finfo(np.float32).min
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Div", ["qk", "four"], ["scaled"]),
        helper.make_node("Where", ["causal", "scaled", "lowest"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["out"]),
    ]
    F = TensorProto.FLOAT
    q, k, v = f32((B, H, SQ, D)), f32((B, H, SK, D)), f32((B, H, SK, D))
    causal = np.arange(SK)[None, :] <= (SK - SQ) + np.arange(SQ)[:, None]
    causal[4, :] = False     # no key: a uniform softmax (every entry is finfo.min), not NaN
    causal = causal.reshape(1, 1, SQ, SK)
    s = np.matmul(q.astype(np.float64), np.swapaxes(k.astype(np.float64), -1, -2)) / 4.0
    s = np.where(causal, s, np.float64(lowest))
    ref = np.matmul(softmax(s), v.astype(np.float64)).astype(np.float32)
    assert np.allclose(ref[:, :, 4], v.mean(axis=2), atol=1e-6)
    save("where_lowest", nodes,
         [("q", F, [B, H, SQ, D]), ("k", F, [B, H, SK, D]), ("v", F, [B, H, SK, D]),
          ("causal", TensorProto.BOOL, [1, 1, SQ, SK])],
         [("out", F, [B, H, SQ, D])],
         [const("four", 4.0, np.float32), const("lowest", lowest, np.float32)], [([q, k, v, causal], [ref])])


def plain_2d():
    SQ, SK, D, DV = 7, 100, 24, 5
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Softmax", ["qk"], ["p"], axis=1),
        helper.make_node("MatMul", ["p", "v"], ["out"]),
    ]
    F = TensorProto.FLOAT
    q, k, v = f32((SQ, D)), f32((SK, D)), f32((SK, DV))
    save("plain_2d", nodes, [("q", F, [SQ, D]), ("k", F, [SK, D]), ("v", F, [SK, DV])],
         [("out", F, [SQ, DV])], [], [([q, k, v], [attention(q, k, v, 1.0)])])


def late_max():
    """Scores that grow with the key index, over three tiles of the GPU kernel's 128 keys (and five
    of the CPU's 64), so each tile's max exceeds the last: the running sum and the accumulators must
    be rescaled by exp(m - m') at every tile. 11 query rows (a second block of 8 with 3). Rows 2-4
    see no key in the first 128 (rows 3-4: none in the first 256 either), row 6 sees none (NaN)."""
    H, SQ, SK, D = 2, 11, 300, 16
    nodes = gpt2_nodes()
    F = TensorProto.FLOAT
    q = np.abs(f32((1, H, SQ, D))) + 0.5
    k = (np.abs(f32((1, H, SK, D))) + 0.5) * (np.arange(SK, dtype=np.float32) / 60.0 + 0.1)[:, None]
    v = f32((1, H, SK, D))
    keep = rng.random((SQ, SK)) > 0.2
    keep[:, 0] = True
    keep[2:5, :128] = False
    keep[3:5, :256] = False
    keep[2:5, 299] = True
    keep[6, :] = False
    mask = np.where(keep, 0.0, -np.inf).astype(np.float32)
    ref = attention(q, k, v, np.float64(np.float32(0.125)), mask.astype(np.float64))
    assert np.isnan(ref[:, :, 6]).all() and not np.isnan(np.delete(ref, 6, axis=2)).any()
    save("late_max", nodes,
         gpt2_inputs(H, D, ["sq", "sk"]),
         [("out", F, [1, H, "sq", D])], [const("scale", 0.125, np.float32)], [([q, k, v, mask], [ref])])


def odd_head():
    H, D = 3, 15
    nodes = gpt2_nodes()
    F = TensorProto.FLOAT
    inputs = gpt2_inputs(H, D, [1, 1, "sq", "sk"])
    scale = np.float32(1 / np.sqrt(D))
    sets = []
    for sq, sk in ((20, 70), (1, 5), (17, 130)):
        q, k, v = f32((1, H, sq, D)), f32((1, H, sk, D)), f32((1, H, sk, D))
        allowed = rng.random((sq, sk)) > 0.2
        allowed[:, -1] = True
        mask = np.where(allowed, 0.0, -1e9).astype(np.float32).reshape(1, 1, sq, sk)
        sets.append(([q, k, v, mask], [attention(q, k, v, scale, mask.astype(np.float64))]))
    save("odd_head", nodes, inputs, [("out", F, [1, H, "sq", D])], [const("scale", scale, np.float32)], sets)


if __name__ == "__main__":
    mha_additive()
    where_causal()
    gqa_expand()
    pretransposed()
    plain_2d()
    where_lowest()
    late_max()
    odd_head()
