#!/usr/bin/env python3
"""Writes test/models/outer_sum/model.onnx: sum(x[N,2] @ y[2,N]), an N x N intermediate
behind an output of one number (memory-plan tests: the arena grows with N, and a large N
must fail with "out of memory", not crash). Its data sets (n = 3 and 7) hold small integers, whose
products and sums are exact in float32, so numpy's sum of the product is the exact answer. The
inner dim is 2, not 1: a product over one term is an elementwise outer product, which kiln fuses
into the sum, and the N x N intermediate the tests are about would not exist.
Run with /usr/bin/python3 (Debian's python3-onnx and python3-numpy)."""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))

graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "y"], ["outer"], name="outer"),
     helper.make_node("ReduceSum", ["outer"], ["sum"], name="sum", keepdims=0)],
    "outer_sum",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2]),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "n"])],
    [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kiln-tests")
out = os.path.join(HERE, "outer_sum")
os.makedirs(out, exist_ok=True)
save(model, os.path.join(out, "model.onnx"))

for k, n in enumerate((3, 7)):
    rng = np.random.default_rng(k)
    x = rng.integers(-8, 9, size=(n, 2)).astype(np.float32)
    y = rng.integers(-8, 9, size=(2, n)).astype(np.float32)
    ds = os.path.join(out, "test_data_set_%d" % k)
    os.makedirs(ds, exist_ok=True)
    for name, t in (("input_0", numpy_helper.from_array(x, "x")), ("input_1", numpy_helper.from_array(y, "y")),
                    ("output_0", numpy_helper.from_array(np.array((x @ y).sum(), np.float32), "sum"))):
        with open(os.path.join(ds, name + ".pb"), "wb") as f:
            f.write(t.SerializeToString())
