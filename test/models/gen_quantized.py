#!/usr/bin/python3
"""Generate test/models/quantized/: matrix products whose f32 weights lie exactly on the
int8 or int4 grid kiln-quantize-weights uses, so a quantized build must match the float
reference to rounding (any error is the kernel's: packing, nibble order, scale indexing,
row and panel edges), with numpy float64 references stored as float32.

    /usr/bin/python3 test/models/gen_quantized.py

Column c, group g (of GROUP consecutive k) holds integers in [-Q, Q] times a power of
two that varies with c and g, with +-Q present in every group, so scale = max|w| / Q is
that power of two (exact in f32 and f16) and every w / scale an integer.
- int8/ (compile with --quantize=int8, Q = 127, one group per column):
  matmul_3d x[b,s,128] @ W[128,192] + bias (panels of 64, b=2 s=5: row blocks and a tail);
  gemm_transb Gemm(x[n,96], W[80,96], C[80], transB=1, alpha=0.5, beta=2) (panels of 16);
  matmul_tall x[70,64] @ W[64,32] (two row tiles of 64, a 6-row tail);
  matmul_padded x[b,4,64] @ W[64,100] (N = 100: a last panel padded to 112 columns).
- int4/ (compile with --quantize=int4 --quantize-group=32, Q = 7): the same three models.
- int8_dynamic/ (compile with --quantize=int8-dynamic): the int8 models with inputs on the
  grid too (each row integers in [-127, 127] times a power of two, +-127 present), so that
  quantizing activations per row is exact and the integer products must match.
- qdq/ (compiled as they are): QDQ models as quantization tools write them,
  DequantizeLinear(int8 or uint8 weight, scale, zero point) -> MatMul, which kiln-fold-qdq
  turns into quantized products over the model's own values (int8 or uint8 minus its zero
  point, per column or per tensor) or keeps as imported when q - zero point leaves int8;
  references from the dequantized weights in float64; and conv_per_channel, a QDQ
  convolution weight (per output channel), which kiln-fold-qdq dequantizes once at compile time.
- integer/ (compiled as they are): MatMulInteger (uint8 activations with a zero point, int8
  weights with per-column zero points) and QLinearMatMul by constant int8 weights, which
  kiln-fold-integer-matmul turns into 16-bit pair products; exact integer references.
Deterministic (fixed seeds).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "quantized")
GROUP = 32


def grid_weight(rng, k, n, q, group):
    """[k, n] f32 on the grid: integers in [-q, q] times 2^-e(c, g), +-q in each group."""
    w = np.zeros((k, n), np.float64)
    for g in range(k // group):
        for c in range(n):
            ints = rng.integers(-q, q + 1, size=group)
            ints[rng.integers(group)] = q if rng.random() < 0.5 else -q
            w[g * group:(g + 1) * group, c] = ints * 2.0 ** -(4 + (c + 2 * g) % 5)
    return w.astype(np.float32)


def save(kind, name, nodes, inputs, outputs, initializers, feeds, expected):
    """Writes OUT/kind/name: the model, its inputs, and `expected` (an array, or a function of
    the inputs in float64 whose result is stored as float32)."""
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, producer_name="kiln test/models/gen_quantized.py",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    d = os.path.join(OUT, kind, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for i, (n, x) in enumerate(feeds):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(x, n).SerializeToString())
    if callable(expected):
        expected = expected(*[x.astype(np.float64) for _, x in feeds]).astype(np.float32)
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(expected, "y").SerializeToString())


def grid_rows(rng, shape):
    """Activations whose every row quantizes exactly: max |row| = 127 * 2^-e."""
    x = rng.integers(-127, 128, size=shape).astype(np.float64)
    rows = x.reshape(-1, shape[-1])
    for i, row in enumerate(rows):
        row[rng.integers(shape[-1])] = 127 if i % 2 else -127
        row *= 2.0 ** -(3 + i % 4)
    return rows.reshape(shape).astype(np.float32)


def models(kind, q, group, grid_inputs=False):
    rng = np.random.default_rng(7 if kind.startswith("int8") else 11)
    normal = rng.standard_normal
    inputs = (lambda shape: grid_rows(rng, shape)) if grid_inputs else (lambda shape: normal(shape).astype(np.float32))
    g = lambda k: min(group, k)  # int8: one group per column
    f32 = TensorProto.FLOAT

    w = grid_weight(rng, 128, 192, q, g(128))
    bias = rng.standard_normal(192).astype(np.float32)
    x = inputs((2, 5, 128))
    save(kind, "matmul_3d",
         [helper.make_node("MatMul", ["x", "w"], ["xw"], name="proj"),
          helper.make_node("Add", ["xw", "bias"], ["y"], name="bias_add")],
         [helper.make_tensor_value_info("x", f32, ["b", "s", 128])],
         [helper.make_tensor_value_info("y", f32, ["b", "s", 192])],
         [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")],
         [("x", x)], lambda x: x @ w.astype(np.float64) + bias)

    wt = grid_weight(rng, 96, 80, q, g(96)).T.copy()  # stored [N, K] for transB
    c = rng.standard_normal(80).astype(np.float32)
    x = inputs((3, 96))
    save(kind, "gemm_transb",
         [helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="fc", transB=1, alpha=0.5, beta=2.0)],
         [helper.make_tensor_value_info("x", f32, ["n", 96])],
         [helper.make_tensor_value_info("y", f32, ["n", 80])],
         [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(c, "c")],
         [("x", x)], lambda x: 0.5 * (x @ wt.T.astype(np.float64)) + 2.0 * c)

    w = grid_weight(rng, 64, 32, q, g(64))
    x = inputs((70, 64))
    save(kind, "matmul_tall",
         [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
         [helper.make_tensor_value_info("x", f32, [70, 64])],
         [helper.make_tensor_value_info("y", f32, [70, 32])],
         [numpy_helper.from_array(w, "w")],
         [("x", x)], lambda x: x @ w.astype(np.float64))

    w = grid_weight(rng, 64, 100, q, g(64))
    x = inputs((3, 4, 64))
    save(kind, "matmul_padded",
         [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
         [helper.make_tensor_value_info("x", f32, ["b", 4, 64])],
         [helper.make_tensor_value_info("y", f32, ["b", 4, 100])],
         [numpy_helper.from_array(w, "w")],
         [("x", x)], lambda x: x @ w.astype(np.float64))


def qdq_models():
    rng = np.random.default_rng(5)
    f32 = TensorProto.FLOAT
    cases = [  # name, K, N, weight dtype, per column, zero point range
        ("per_column_int8", 96, 128, np.int8, True, 0),
        ("per_tensor_int8_zero_point", 64, 48, np.int8, False, 3),
        ("per_column_uint8", 64, 32, np.uint8, True, 0),
        ("per_tensor_uint8_wide", 64, 32, np.uint8, False, 0),  # q - zp outside int8: kept dequantized
    ]
    for name, k, n, dtype, per_column, zp_range in cases:
        info = np.iinfo(dtype)
        lo, hi = (info.min + zp_range + 1, info.max - zp_range) if dtype == np.int8 else (0, 255)
        q = rng.integers(lo, hi + 1, size=(k, n)).astype(dtype)
        scale = (rng.random(n if per_column else 1) * 0.02 + 0.001).astype(np.float32)
        if dtype == np.uint8:
            zp = np.full(scale.shape, 0 if name.endswith("wide") else 128, np.uint8)
        else:
            zp = rng.integers(-zp_range, zp_range + 1, size=scale.shape).astype(np.int8)
        w = (q.astype(np.float64) - zp.astype(np.float64)) * scale.astype(np.float64)
        x = rng.standard_normal((2, 3, k)).astype(np.float32)
        shape_s = scale if per_column else scale.reshape(())
        shape_z = zp if per_column else zp.reshape(())
        save("qdq", name,
             [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="dequant", axis=1),
              helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
             [helper.make_tensor_value_info("x", f32, ["b", "s", k])],
             [helper.make_tensor_value_info("y", f32, ["b", "s", n])],
             [numpy_helper.from_array(q, "wq"), numpy_helper.from_array(shape_s, "ws"),
              numpy_helper.from_array(shape_z, "wz")],
             [("x", x)], lambda x, w=w: x @ w)


def conv2d(x, w, b, pad):
    """NCHW convolution, stride 1, float64."""
    n, c, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, co, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + oh, j:j + ow]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y + b.reshape(1, co, 1, 1)


def qdq_conv_model():
    """DequantizeLinear(int8 weight, per output channel, axis 0) -> Conv: kiln-fold-qdq computes
    the f32 weight once, with the graph's own f32 operations."""
    rng = np.random.default_rng(17)
    co, ci = 16, 8
    q = rng.integers(-127, 128, size=(co, ci, 3, 3)).astype(np.int8)
    scale = (rng.random(co) * 0.02 + 0.001).astype(np.float32)
    zp = rng.integers(-2, 3, size=co).astype(np.int8)
    w = (q.astype(np.float32) - zp.reshape(co, 1, 1, 1).astype(np.float32)) * scale.reshape(co, 1, 1, 1)
    bias = rng.standard_normal(co).astype(np.float32)
    x = rng.standard_normal((2, ci, 10, 10)).astype(np.float32)
    f32 = TensorProto.FLOAT
    save("qdq", "conv_per_channel",
         [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="dequant", axis=0),
          helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
         [helper.make_tensor_value_info("x", f32, ["n", ci, 10, 10])],
         [helper.make_tensor_value_info("y", f32, ["n", co, 10, 10])],
         [numpy_helper.from_array(q, "wq"), numpy_helper.from_array(scale, "ws"),
          numpy_helper.from_array(zp, "wz"), numpy_helper.from_array(bias, "b")],
         [("x", x)], lambda x: conv2d(x, w.astype(np.float64), bias.astype(np.float64), 1))


def integer_models():
    rng = np.random.default_rng(13)
    k, n = 96, 80
    a = rng.integers(0, 256, size=(2, 5, k)).astype(np.uint8)
    a_zp = np.array(131, np.uint8)
    b = rng.integers(-120, 121, size=(k, n)).astype(np.int8)
    b_zp = rng.integers(-3, 4, size=n).astype(np.int8)
    y = (a.astype(np.int64) - int(a_zp)) @ (b.astype(np.int64) - b_zp.astype(np.int64))
    save("integer", "matmulinteger_const_b",
             [helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"], name="mmi")],
             [helper.make_tensor_value_info("a", TensorProto.UINT8, ["batch", 5, k])],
             [helper.make_tensor_value_info("y", TensorProto.INT32, ["batch", 5, n])],
             [numpy_helper.from_array(b, "b"), numpy_helper.from_array(a_zp, "a_zp"),
              numpy_helper.from_array(b_zp, "b_zp")],
             [("a", a)], y.astype(np.int32))

    k, n = 64, 48
    a = rng.integers(-128, 128, size=(7, k)).astype(np.int8)
    b = rng.integers(-127, 128, size=(k, n)).astype(np.int8)
    a_s, b_s, y_s = np.float32(0.02), np.float32(0.01), np.float32(0.5)
    y_zp = np.array(-5, np.int8)
    acc = a.astype(np.int64) @ b.astype(np.int64)
    mult = np.float64(np.float32(a_s * b_s) / y_s)
    y = np.clip(np.rint(acc.astype(np.float64) * mult) + int(y_zp), -128, 127).astype(np.int8)
    scalar = lambda v, name: numpy_helper.from_array(np.array(v), name)
    save("integer", "qlinearmatmul_const_b",
             [helper.make_node("QLinearMatMul", ["a", "a_s", "a_zp", "b", "b_s", "b_zp", "y_s", "y_zp"], ["y"],
                               name="qmm")],
             [helper.make_tensor_value_info("a", TensorProto.INT8, ["m", k])],
             [helper.make_tensor_value_info("y", TensorProto.INT8, ["m", n])],
             [scalar(a_s, "a_s"), scalar(np.int8(0), "a_zp"), numpy_helper.from_array(b, "b"),
              scalar(b_s, "b_s"), scalar(np.int8(0), "b_zp"), scalar(y_s, "y_s"),
              numpy_helper.from_array(y_zp, "y_zp")],
             [("a", a)], y)


if __name__ == "__main__":
    models("int8", 127, 10 ** 9)
    models("int4", 7, GROUP)
    models("int8_dynamic", 127, 10 ** 9, grid_inputs=True)
    qdq_models()
    qdq_conv_model()
    integer_models()
