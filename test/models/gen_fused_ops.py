#!/usr/bin/python3
"""Generate test/models/fused_ops/: models whose ops kiln fuses (passes/fusion/) or imports
as the fused ops directly, with numpy reference outputs (float64 math, stored as float32).

    /usr/bin/python3 test/models/gen_fused_ops.py

- gelu, gelu_tanh, rms_normalization: ONNX Gelu (opset 20) and RMSNormalization
  (opset 23) nodes, imported as graph.gelu / graph.rms_norm.
- *_decomposed: the same functions in the node forms exporters write, which
  kiln-fuse-* turn into those ops; a fused model must match the reference.
- sigmoid_range, silu_range: Sigmoid and x * Sigmoid(x) (fused to graph.silu) over a fixed
  input from -1e30 to 1e30 (the saturated ends, the clamp of kiln's exp(-x) at |x| ~ 87,
  zero, tiny values, and a dense sweep of [-100, 100]).
Deterministic (fixed seed). onnx 1.12 predates opsets 20/23, so models are not checked.
"""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fused_ops")
SHAPE = [2, 3, 16]
EPS = 1e-6


def const(name, value, dtype=np.float32):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(value, dtype=dtype), name))


def save(name, nodes, inputs, opset, reference, initializers=(), xs=None):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE) for n in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)], list(initializers))
    model = helper.make_model(graph, producer_name="kiln test/models/gen_fused_ops.py",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    rng = np.random.default_rng(sum(map(ord, name)))
    if xs is None:
        xs = [(rng.standard_normal(SHAPE) * 2.0).astype(np.float32) for _ in inputs]
    for i, x in enumerate(xs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(x, inputs[i]).SerializeToString())
    with np.errstate(over="ignore"):  # exp(-x) of the most negative inputs is inf: the limit is right
        y = reference(*[x.astype(np.float64) for x in xs]).astype(np.float32)
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


GAMMA = np.linspace(0.5, 1.5, SHAPE[-1]).astype(np.float32)
BETA = np.linspace(-0.2, 0.3, SHAPE[-1]).astype(np.float32)


def rms(x):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * GAMMA


def layer_norm(x):
    d = x - x.mean(axis=-1, keepdims=True)
    return d / np.sqrt(np.mean(d * d, axis=-1, keepdims=True) + EPS) * GAMMA + BETA


def main():
    params = [numpy_helper.from_array(GAMMA, "gamma"), numpy_helper.from_array(BETA, "beta")]
    save("gelu", [helper.make_node("Gelu", ["x"], ["y"])], ["x"], 20, gelu)
    save("gelu_tanh", [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")], ["x"], 20, gelu_tanh)
    save("rms_normalization",
         [helper.make_node("RMSNormalization", ["x", "gamma"], ["y"], axis=-1, epsilon=EPS)],
         ["x"], 23, rms, params[:1])
    # Hugging Face's T5/Llama RMSNorm export: x * Reciprocal(Sqrt(mean(x^2) + eps)) * weight.
    save("rms_norm_decomposed",
         [const("two", 2.0), const("eps", EPS),
          helper.make_node("Pow", ["x", "two"], ["sq"]),
          helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
          helper.make_node("Add", ["ms", "eps"], ["mse"]),
          helper.make_node("Sqrt", ["mse"], ["r"]),
          helper.make_node("Reciprocal", ["r"], ["ir"]),
          helper.make_node("Mul", ["x", "ir"], ["n"]),
          helper.make_node("Mul", ["gamma", "n"], ["y"])],
         ["x"], 13, rms, params[:1])
    # PyTorch's LayerNorm before opset 17 (BERT exports).
    save("layer_norm_decomposed",
         [const("two", 2.0), const("eps", EPS),
          helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1),
          helper.make_node("Sub", ["x", "m"], ["d"]),
          helper.make_node("Pow", ["d", "two"], ["sq"]),
          helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1], keepdims=1),
          helper.make_node("Add", ["var", "eps"], ["ve"]),
          helper.make_node("Sqrt", ["ve"], ["s"]),
          helper.make_node("Div", ["d", "s"], ["n"]),
          helper.make_node("Mul", ["n", "gamma"], ["ng"]),
          helper.make_node("Add", ["ng", "beta"], ["y"])],
         ["x"], 13, layer_norm, params)
    # GPT-2's "gelu_new": 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
    save("gelu_tanh_decomposed",
         [const("half", 0.5), const("one", 1.0), const("three", 3.0), const("c", 0.044715),
          const("k", math.sqrt(2 / math.pi)),
          helper.make_node("Mul", ["half", "x"], ["hx"]),
          helper.make_node("Pow", ["x", "three"], ["x3"]),
          helper.make_node("Mul", ["c", "x3"], ["cx3"]),
          helper.make_node("Add", ["x", "cx3"], ["inner"]),
          helper.make_node("Mul", ["k", "inner"], ["arg"]),
          helper.make_node("Tanh", ["arg"], ["t"]),
          helper.make_node("Add", ["one", "t"], ["onet"]),
          helper.make_node("Mul", ["hx", "onet"], ["y"])],
         ["x"], 13, gelu_tanh)
    # SwiGLU: silu(gate) * up.
    save("swiglu_decomposed",
         [helper.make_node("Sigmoid", ["gate"], ["s"]),
          helper.make_node("Mul", ["gate", "s"], ["silu"]),
          helper.make_node("Mul", ["silu", "up"], ["y"])],
         ["gate", "up"], 13, lambda g, u: g / (1 + np.exp(-g)) * u)
    ends = [-1e30, -1e4, -126.0, -88.0, -87.5, -87.0, -20.0, -1e-30, 0.0, 1e-30, 1e-3, 20.0,
            87.0, 87.5, 88.0, 1e30]
    sweep = np.linspace(-100, 100, int(np.prod(SHAPE)) - len(ends))
    logistic_range = [np.concatenate([ends, sweep]).astype(np.float32).reshape(SHAPE)]
    save("sigmoid_range", [helper.make_node("Sigmoid", ["x"], ["y"])], ["x"], 13,
         lambda x: 1 / (1 + np.exp(-x)), xs=logistic_range)
    save("silu_range",
         [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])],
         ["x"], 13, lambda x: x / (1 + np.exp(-x)), xs=logistic_range)


if __name__ == "__main__":
    main()
