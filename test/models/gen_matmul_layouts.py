#!/usr/bin/python3
"""Writes test/models/matmul_layouts: MatMul and Gemm in the layouts kiln's CUDA target hands to
cuBLASLt: a batch folded into the rows, broadcast batches, a transposed right operand read in
place, Gemm's transposes and alpha, vector operands, half precision; and products with epilogues
cuBLASLt computes in the same call (a bias row; a bias, a residual and ReLU; Gemm's C and ReLU). Each model is one
product (with its epilogue) and nothing else, so under the mock driver (which runs no kernel) and the mock cuBLASLt (which
computes on host memory) its output is right only if the product went through cuBLASLt with the
right layout. References are computed here in plain Python; the values are small multiples of
1/4, so every type holds the products and sums exactly.

Usage: /usr/bin/python3 test/models/gen_matmul_layouts.py [OUT_DIR]
"""
import itertools, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_runtime_operands as onnx_text  # noqa: E402  (the text-proto writer and Tensor)
from gen_runtime_operands import FLOAT, FLOAT16, Tensor, node  # noqa: E402

onnx_text.OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "matmul_layouts")


def filled(shape, seed, dtype=FLOAT):
    count = 1
    for d in shape:
        count *= d
    return Tensor(shape, [((i * 7 + seed * 3) % 9 - 4) / 4 for i in range(count)], dtype)


def element(t, idx, i, j, vec):
    """t's element (i, j) in batch idx (right-aligned, size-1 dims broadcast); vec is "row" for a
    1-D left operand (j indexes it), "col" for a 1-D right one (i does)."""
    nb = len(t.shape) - (1 if vec else 2)
    own = [x if d > 1 else 0 for x, d in zip(idx[len(idx) - nb:], t.shape[:nb])] if nb else []
    return t.at(own + ([j] if vec == "row" else [i] if vec == "col" else [i, j]))


def matmul(a, b):
    """numpy.matmul: 1-D operands promoted, batch dims broadcast."""
    ash, bsh = list(a.shape), list(b.shape)
    a_vec, b_vec = len(ash) == 1, len(bsh) == 1
    ash = [1] + ash if a_vec else ash
    bsh = bsh + [1] if b_vec else bsh
    m, k, n = ash[-2], ash[-1], bsh[-1]
    assert bsh[-2] == k
    rank = max(len(ash), len(bsh)) - 2
    ab = [1] * (rank - len(ash) + 2) + ash[:-2]
    bb = [1] * (rank - len(bsh) + 2) + bsh[:-2]
    batch = [max(x, y) for x, y in zip(ab, bb)]

    values = []
    for idx in itertools.product(*[range(d) for d in batch]):
        for i in range(m):
            for j in range(n):
                values.append(sum(element(a, idx, i, l, "row" if a_vec else "") *
                                  element(b, idx, l, j, "col" if b_vec else "") for l in range(k)))
    shape = batch + ([] if a_vec else [m]) + ([] if b_vec else [n])
    return Tensor(shape, values, a.dtype)


def transposed(t):
    """The last two dims swapped."""
    *batch, r, c = t.shape
    values = []
    for idx in itertools.product(*[range(d) for d in batch]):
        for j in range(c):
            for i in range(r):
                values.append(t.at(list(idx) + [i, j]))
    return Tensor(batch + [c, r], values, t.dtype)


def product_model(name, a, b):
    onnx_text.write_test(name, 13, [node("MatMul", ["a", "b"], ["y"])], [("a", a), ("b", b)], [("y", matmul(a, b))])


if __name__ == "__main__":
    product_model("matmul_2d", filled([3, 5], 1), filled([5, 4], 2))
    product_model("matmul_batch_into_rows", filled([2, 3, 5], 3), filled([5, 4], 4))
    product_model("matmul_broadcast_4d", filled([2, 1, 3, 5], 5), filled([1, 3, 5, 4], 6))
    product_model("matmul_vector_lhs", filled([5], 7), filled([5, 4], 8))
    product_model("matmul_vector_rhs", filled([2, 3, 5], 9), filled([5], 10))
    product_model("matmul_f16", filled([2, 3, 5], 11, FLOAT16), filled([5, 4], 12, FLOAT16))
    # Attention's Q K^T: the transpose is read in place (no kernel).
    x, y = filled([2, 3, 5], 13), filled([2, 4, 5], 14)
    onnx_text.write_test("matmul_transposed_rhs", 13,
                         [node("Transpose", ["y"], ["yt"]) +
                          'attribute { name: "perm" ints: 0 ints: 2 ints: 1 type: INTS }',
                          node("MatMul", ["x", "yt"], ["z"])],
                         [("x", x), ("y", y)], [("z", matmul(x, transposed(y)))])
    # Epilogues: y = x w + bias, and y = relu(x w + bias + r) (the residual as cuBLASLt's C).
    x, w, bias, r = filled([2, 3, 5], 17), filled([5, 4], 18), filled([4], 19), filled([2, 3, 4], 20)
    xw = matmul(x, w)
    biased = Tensor(xw.shape, [v + bias.values[i % 4] for i, v in enumerate(xw.values)])
    onnx_text.write_test("matmul_bias", 13, [node("MatMul", ["x", "w"], ["xw"]), node("Add", ["xw", "bias"], ["y"])],
                         [("x", x), ("w", w), ("bias", bias)], [("y", biased)])
    relu = Tensor(xw.shape, [max(v + rv, 0.0) for v, rv in zip(biased.values, r.values)])
    onnx_text.write_test("matmul_bias_residual_relu", 13,
                         [node("MatMul", ["x", "w"], ["xw"]), node("Add", ["xw", "bias"], ["xb"]),
                          node("Add", ["r", "xb"], ["s"]), node("Relu", ["s"], ["y"])],
                         [("x", x), ("w", w), ("bias", bias), ("r", r)], [("y", relu)])
    # Gemm's C, a row broadcast into the accumulator, as the bias of a ReLU epilogue.
    a, b, c = filled([3, 5], 21), filled([5, 4], 22), filled([4], 23)
    ab = matmul(a, b)
    onnx_text.write_test("gemm_bias_relu", 13, [node("Gemm", ["a", "b", "c"], ["g"]), node("Relu", ["g"], ["y"])],
                         [("a", a), ("b", b), ("c", c)],
                         [("y", Tensor(ab.shape, [max(v + c.values[i % 4], 0.0) for i, v in enumerate(ab.values)]))])
    # Gemm with both operands transposed and alpha, no C.
    a, b = filled([5, 3], 15), filled([4, 5], 16)
    ref = matmul(transposed(a), transposed(b))
    ref.values = [0.5 * v for v in ref.values]
    onnx_text.write_test("gemm_transposed_alpha", 13,
                         [node("Gemm", ["a", "b"], ["y"], transA=1, transB=1) +
                          'attribute { name: "alpha" f: 0.5 type: FLOAT }'],
                         [("a", a), ("b", b)], [("y", ref)])
