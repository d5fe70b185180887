#!/usr/bin/python3
"""Writes test/models/reductions: reductions in the shapes kiln's CUDA target gives one block per
output (kiln-form-block-reductions), with numpy references, so that each runs end to end on the
CPU in CI and on a GPU in bench/gpu-check.sh:

  sum_rows        ReduceSum over 1000 columns of [r, 1000], r symbolic (16 and 3 rows)
  max_min_rows    ReduceMax and ReduceMin over 300 columns of [8, 300] (kiln's compare-and-select)
  sum_all         ReduceSum of a whole [n] (n symbolic: 5000 and 1): one output, one block
  sum_columns     ReduceSum down the 3000 rows of [3000, 8]: 8 outputs reading strided columns
  softmax_decode  Softmax over k keys of [1, 4, 1, k] (k symbolic: 700, and 5 for the host's
                  one-thread choice), a decode step's attention probabilities
  softmax_rows    Softmax over the 1001 of [3, 4, 1001] (x86: one row kernel, 16-lane passes and a
                  9-element tail) with -inf entries (masked: exactly 0), spreads past the f32 exp's
                  range (-1e30 next to 1e30: 0) and values 86-100 below the row max
  log_softmax_rows LogSoftmax over the 37 of [2, 5, 37] (finite, spreads up to 1e6)
  layer_norm      LayerNormalization over 768 of [3, 768] with scale and bias
  norm_rows       LayerNormalizations of [b, 3, 300] (b symbolic: 2 and 1): over the last axis
                  with a scale and no bias, with a one-element scale and a bias (the CUDA
                  target's row kernel: rows of a rank-3 input, 300 columns over 256 threads), and
                  over the last two axes (the generic lowering)
  int_max_sum     ReduceMax of int32 and ReduceSum of int64 over 400 of [5, 400]
  sum_square      ReduceSumSquare over 500 of [4, 500] (the value is computed before it is folded)

Inputs of the sums are small multiples of 1/4, so every partial sum is exact in f32 and any order
of summation (the GPU's is not the CPU's) gives the reference exactly.

Usage: /usr/bin/python3 test/models/gen_reductions.py [OUT_DIR] (deterministic).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_attention as onnx_files  # noqa: E402  (its save(): model, check, data sets)

onnx_files.OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "reductions")
onnx_files.PRODUCER = "kiln test/models/gen_reductions.py"
rng = np.random.default_rng(2026)
F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64


def quarters(shape):
    return (rng.integers(-8, 9, size=shape) / 4).astype(np.float32)


def save(name, nodes, inputs, outputs, data_sets, initializers=()):
    """inputs/outputs: (name, elem_type, shape with str dims); data_sets: [[arrays in], [arrays out]]."""
    onnx_files.save(name, nodes, inputs, outputs, list(initializers), data_sets)


def axes(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def sum_rows():
    sets = []
    for r in (16, 3):
        x = quarters((r, 1000))
        sets.append([[x], [x.astype(np.float64).sum(axis=1).astype(np.float32)]])
    save("sum_rows", [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
         [("x", F, ["r", 1000])], [("y", F, ["r"])], sets, [axes("axes", [1])])


def max_min_rows():
    x = rng.standard_normal((8, 300)).astype(np.float32)
    save("max_min_rows",
         [helper.make_node("ReduceMax", ["x"], ["max"], axes=[-1], keepdims=1),
          helper.make_node("ReduceMin", ["x"], ["min"], axes=[-1], keepdims=0)],
         [("x", F, [8, 300])], [("max", F, [8, 1]), ("min", F, [8])],
         [[[x], [x.max(axis=1, keepdims=True), x.min(axis=1)]]])


def sum_all():
    sets = []
    for n in (5000, 1):
        x = quarters((n,))
        sets.append([[x], [np.array(x.astype(np.float64).sum(), np.float32)]])
    save("sum_all", [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)],
         [("x", F, ["n"])], [("y", F, [])], sets)


def sum_columns():
    x = quarters((3000, 8))
    save("sum_columns", [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
         [("x", F, [3000, 8])], [("y", F, [8])],
         [[[x], [x.astype(np.float64).sum(axis=0).astype(np.float32)]]], [axes("axes", [0])])


def softmax_decode():
    sets = []
    for k in (700, 5):
        x = (rng.standard_normal((1, 4, 1, k)) * 3).astype(np.float32)
        e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
        sets.append([[x], [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]])
    save("softmax_decode", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
         [("x", F, [1, 4, 1, "k"])], [("y", F, [1, 4, 1, "k"])], sets)


def softmax_rows():
    x = (rng.standard_normal((3, 4, 1001)) * 4).astype(np.float32)
    x[0, 0, ::7] = -np.inf
    x[0, 1, :5] = [1e30, -1e30, 3e29, -5.0, 0.0]
    x[0, 2, :8] = [0.0, -86.0, -87.0, -87.3, -87.5, -88.0, -100.0, -1e4]
    x[0, 2, 8:] = -200.0
    x[1, 3, -9:] = [50.0, -np.inf, 49.0, -np.inf, 10.0, 0.0, -1.0, 51.0, -np.inf]
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    save("softmax_rows", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
         [("x", F, [3, 4, 1001])], [("y", F, [3, 4, 1001])],
         [[[x], [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]]])


def log_softmax_rows():
    x = (rng.standard_normal((2, 5, 37)) * 4).astype(np.float32)
    x[1, 2, :4] = [1e6, -1e6, 0.0, 5e5]
    d = x.astype(np.float64) - x.max(axis=-1, keepdims=True)
    y = d - np.log(np.exp(d).sum(axis=-1, keepdims=True))
    save("log_softmax_rows", [helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)],
         [("x", F, [2, 5, 37])], [("y", F, [2, 5, 37])], [[[x], [y.astype(np.float32)]]])


def layer_norm():
    x = rng.standard_normal((3, 768)).astype(np.float32)
    scale = rng.standard_normal(768).astype(np.float32)
    bias = rng.standard_normal(768).astype(np.float32)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)
    y = ((x64 - mean) / np.sqrt(var + 1e-5) * scale + bias).astype(np.float32)
    save("layer_norm",
         [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1, epsilon=1e-5)],
         [("x", F, [3, 768])], [("y", F, [3, 768])], [[[x], [y]]],
         [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(bias, "bias")])


def int_max_sum():
    a = rng.integers(-1000000, 1000000, size=(5, 400)).astype(np.int32)
    b = rng.integers(-(1 << 40), 1 << 40, size=(5, 400)).astype(np.int64)
    save("int_max_sum",
         [helper.make_node("ReduceMax", ["a"], ["max"], axes=[1], keepdims=0),
          helper.make_node("ReduceSum", ["b", "axes"], ["sum"], keepdims=0)],
         [("a", I32, [5, 400]), ("b", I64, [5, 400])], [("max", I32, [5]), ("sum", I64, [5])],
         [[[a, b], [a.max(axis=1), b.sum(axis=1)]]], [axes("axes", [1])])


def sum_square():
    x = quarters((4, 500))
    save("sum_square", [helper.make_node("ReduceSumSquare", ["x"], ["y"], axes=[1], keepdims=0)],
         [("x", F, [4, 500])], [("y", F, [4])],
         [[[x], [(x.astype(np.float64) ** 2).sum(axis=1).astype(np.float32)]]])


def layer_norm_reference(x, axis, scale, bias):
    x64 = x.astype(np.float64)
    axes_ = tuple(range(axis % x.ndim, x.ndim))
    mean = x64.mean(axis=axes_, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=axes_, keepdims=True)
    y = (x64 - mean) / np.sqrt(var + 1e-5) * scale
    return (y if bias is None else y + bias).astype(np.float32)


def norm_rows():
    scale = rng.standard_normal(300).astype(np.float32)
    one = np.array([1.5], np.float32)
    bias = rng.standard_normal(300).astype(np.float32)
    wide = rng.standard_normal((3, 300)).astype(np.float32)
    sets = []
    for b in (2, 1):
        x = (rng.standard_normal((b, 3, 300)) * 3 + 1).astype(np.float32)
        sets.append([[x], [layer_norm_reference(x, -1, scale, None), layer_norm_reference(x, -1, one, bias),
                           layer_norm_reference(x, -2, wide, None)]])
    save("norm_rows",
         [helper.make_node("LayerNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-5),
          helper.make_node("LayerNormalization", ["x", "one", "bias"], ["y_one"], axis=-1, epsilon=1e-5),
          helper.make_node("LayerNormalization", ["x", "wide"], ["y_wide"], axis=-2, epsilon=1e-5)],
         [("x", F, ["b", 3, 300])], [("y", F, ["b", 3, 300]), ("y_one", F, ["b", 3, 300]),
                                     ("y_wide", F, ["b", 3, 300])], sets,
         [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(one, "one"),
          numpy_helper.from_array(bias, "bias"), numpy_helper.from_array(wide, "wide")])


# New models go last: the generator's one random stream keeps the earlier models' data.
for make in (sum_rows, max_min_rows, sum_all, sum_columns, softmax_decode, layer_norm, int_max_sum, sum_square,
             softmax_rows, log_softmax_rows, norm_rows):
    make()
