#!/usr/bin/python3
"""Writes test/models/external_weights: a small embedding + MLP whose weights cover each case of
kiln-compile --weights=external (docs/artifact.md "External weights section"):
  E  [50, 32]  external, data/weights.bin offset 0      (gathered as is: referenced in place)
  W1 [32, 64]  external, offset 6400                    (a matrix-product weight: packed on x86,
                                                          so it goes to the kiln weights file)
  b1 [64]      external, offset 14592
  W2 [64, 16]  external, offset 14852                   (not 64-byte aligned)
  E2 [50, 16]  external, offset 18948                   (not 64-byte aligned: kiln weights file)
  b2 [16]      inline raw_data in model.onnx
y = (relu(E[ids] @ W1 + b1) @ W2 + b2) + E2[ids]. Small constants may be folded into the code.
Run with Debian's /usr/bin/python3 (onnx, numpy)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "external_weights")


def main():
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((32, 64)).astype(np.float32) * 0.2
    b1 = rng.standard_normal(64).astype(np.float32) * 0.1
    w2 = rng.standard_normal((64, 16)).astype(np.float32) * 0.2
    e = rng.standard_normal((50, 32)).astype(np.float32)
    e2 = rng.standard_normal((50, 16)).astype(np.float32)
    b2 = rng.standard_normal(16).astype(np.float32) * 0.1
    ids = np.array([3, 41, 0], dtype=np.int64)

    layout = [("E", e, 0), ("W1", w1, 6400), ("b1", b1, 14592), ("W2", w2, 14852), ("E2", e2, 18948)]
    blob = bytearray(18948 + e2.nbytes + 100)  # trailing bytes no weight uses
    for _, arr, off in layout:
        blob[off:off + arr.nbytes] = arr.tobytes()
    os.makedirs(os.path.join(OUT, "data"), exist_ok=True)
    with open(os.path.join(OUT, "data", "weights.bin"), "wb") as f:
        f.write(bytes(blob))

    inits = []
    for name, arr, off in layout:
        t = TensorProto()
        t.name, t.data_type = name, TensorProto.FLOAT
        t.dims.extend(arr.shape)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "data/weights.bin"), ("offset", str(off)), ("length", str(arr.nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = k, v
        inits.append(t)
    inits.append(numpy_helper.from_array(b2, "b2"))
    nodes = [
        helper.make_node("Gather", ["E", "ids"], ["x"], name="embed"),
        helper.make_node("MatMul", ["x", "W1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
        helper.make_node("MatMul", ["h2", "W2"], ["h3"], name="mm2"),
        helper.make_node("Add", ["h3", "b2"], ["h4"], name="add2"),
        helper.make_node("Gather", ["E2", "ids"], ["g2"], name="embed2"),
        helper.make_node("Add", ["h4", "g2"], ["y"], name="skip"),
    ]
    graph = helper.make_graph(nodes, "kiln_external_weights",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])], inits)
    model = helper.make_model(graph, producer_name="kiln-gen-external-weights",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(os.path.join(OUT, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())

    y = (np.maximum(e[ids] @ w1 + b1, 0) @ w2 + b2) + e2[ids]
    data = os.path.join(OUT, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(data, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(ids, "ids").SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y.astype(np.float32), "y").SerializeToString())


if __name__ == "__main__":
    main()
