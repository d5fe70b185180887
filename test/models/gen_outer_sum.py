#!/usr/bin/env python3
"""Writes test/models/outer_sum/model.onnx: sum(x[N,1] @ y[1,N]), an N x N intermediate
behind an output of one number (memory-plan tests: the arena grows with N, and a large N
must fail with "out of memory", not crash). Run with /usr/bin/python3 (Debian's python3-onnx)."""
import os

from onnx import TensorProto, helper, save

HERE = os.path.dirname(os.path.abspath(__file__))

graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "y"], ["outer"], name="outer"),
     helper.make_node("ReduceSum", ["outer"], ["sum"], name="sum", keepdims=0)],
    "outer_sum",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1]),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])],
    [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kiln-tests")
out = os.path.join(HERE, "outer_sum")
os.makedirs(out, exist_ok=True)
save(model, os.path.join(out, "model.onnx"))
