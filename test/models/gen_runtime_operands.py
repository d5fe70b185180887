#!/usr/bin/python3
"""Writes test/models/runtime_operands: models whose shape-like inputs (axes, split
sizes, repeats, pads) are graph inputs, for cases the ONNX 1.12 suite lacks:
opset-18 Reduce* ops with an axes input, and values ONNX calls invalid, which
kiln must answer inside the buffers in the way graph.dynamic_* document
(ignored axis, clamped slice, fallback shape). References are computed here in
plain Python (no numpy, no onnx package); protoc encodes the text protos.

Usage: /usr/bin/python3 test/models/gen_runtime_operands.py [OUT_DIR]
"""
import functools, itertools, math, os, struct, subprocess, sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "runtime_operands")
PROTO_DIR = "/usr/include/onnx"
FLOAT, INT64, FLOAT16 = 1, 7, 10


def encode(message, text, path):
    data = subprocess.run(["protoc", "--encode=onnx." + message, "-I" + PROTO_DIR, "onnx.proto"],
                          input=text.encode(), stdout=subprocess.PIPE, check=True, cwd=PROTO_DIR).stdout
    with open(path, "wb") as f:
        f.write(data)


def tensor_text(name, dtype, shape, values):
    field = "float_data" if dtype == FLOAT else "int64_data"
    if dtype == FLOAT16:  # stored as the bits of each half, in int32_data
        field, values = "int32_data", [struct.unpack("<H", struct.pack("<e", v))[0] for v in values]
    body = "".join("dims: %d " % d for d in shape)
    body += "data_type: %d " % dtype
    body += "".join("%s: %r " % (field, v) for v in values)
    return body + 'name: "%s"' % name


def value_info(name, dtype, shape):
    dims = "".join("dim { dim_value: %d } " % d for d in shape)
    return 'name: "%s" type { tensor_type { elem_type: %d shape { %s} } }' % (name, dtype, dims)


class Tensor:
    def __init__(self, shape, values, dtype=FLOAT):
        self.shape, self.values, self.dtype = list(shape), list(values), dtype

    def at(self, idx):
        flat = 0
        for i, d in zip(idx, self.shape):
            flat = flat * d + i
        return self.values[flat]


def write_test(name, opset, nodes, inputs, outputs):
    """inputs: [(name, Tensor)]; outputs: [(name, Tensor)] (the references)."""
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    graph = 'name: "%s" ' % name + " ".join("node { %s }" % n for n in nodes)
    graph += " ".join(" input { %s }" % value_info(n, t.dtype, t.shape) for n, t in inputs)
    graph += " ".join(" output { %s }" % value_info(n, t.dtype, t.shape) for n, t in outputs)
    encode("ModelProto", 'ir_version: 8 producer_name: "gen_runtime_operands" '
           'opset_import { domain: "" version: %d } graph { %s }' % (opset, graph), os.path.join(d, "model.onnx"))
    for kind, group in (("input", inputs), ("output", outputs)):
        for k, (n, t) in enumerate(group):
            encode("TensorProto", tensor_text(n, t.dtype, t.shape, t.values),
                   os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, k)))


def node(op, ins, outs, **attrs):
    text = 'op_type: "%s" ' % op + "".join('input: "%s" ' % i for i in ins) + "".join('output: "%s" ' % o for o in outs)
    for k, v in attrs.items():
        text += 'attribute { name: "%s" i: %d type: INT } ' % (k, v)
    return text


def reduce_ref(x, axes, keepdims, init, step, post=lambda acc, n: acc):
    rank = len(x.shape)
    red = {a % rank for a in axes}
    out_shape = [1 if i in red else d for i, d in enumerate(x.shape)]
    values = []
    for o in itertools.product(*[range(d) for d in out_shape]):
        ranges = [range(x.shape[i]) if i in red else [o[i]] for i in range(rank)]
        acc, n = init, 0
        for idx in itertools.product(*ranges):
            acc, n = step(acc, x.at(idx)), n + 1
        values.append(post(acc, n))
    shape = out_shape if keepdims else [d for i, d in enumerate(x.shape) if i not in red]
    return Tensor(shape, values)


def gen_reduce_opset18():
    x = Tensor([3, 2, 4], [math.sin(0.7 * k) * 2 + 0.5 for k in range(24)])
    axes = Tensor([2], [0, -1], INT64)
    kinds = [
        ("ReduceMean", 0, 0.0, lambda a, v: a + v, lambda a, n: a / n),
        ("ReduceL1", 1, 0.0, lambda a, v: a + abs(v), lambda a, n: a),
        ("ReduceL2", 0, 0.0, lambda a, v: a + v * v, lambda a, n: math.sqrt(a)),
        ("ReduceSumSquare", 1, 0.0, lambda a, v: a + v * v, lambda a, n: a),
        ("ReduceMax", 0, -math.inf, max, lambda a, n: a),
        ("ReduceMin", 1, math.inf, min, lambda a, n: a),
        ("ReduceProd", 0, 1.0, lambda a, v: a * v, lambda a, n: a),
        ("ReduceLogSumExp", 1, 0.0, lambda a, v: a + math.exp(v), lambda a, n: math.log(a)),
    ]
    nodes, outputs = [], []
    for op, keep, init, step, post in kinds:
        out = op[len("Reduce"):].lower()
        nodes.append(node(op, ["x", "axes"], [out], keepdims=keep))
        outputs.append((out, reduce_ref(x, axes.values, keep, init, step, post)))
    # ReduceLogSum of positive values: log of the sum.
    pos = Tensor(x.shape, [abs(v) + 0.25 for v in x.values])
    nodes.append(node("Abs", ["x"], ["ax"]))
    nodes.append('op_type: "Constant" output: "q" attribute { name: "value_float" f: 0.25 type: FLOAT }')
    nodes.append(node("Add", ["ax", "q"], ["pos"]))
    nodes.append(node("ReduceLogSum", ["pos", "axes"], ["logsum"], keepdims=0))
    outputs.append(("logsum", reduce_ref(pos, axes.values, 0, 0.0, lambda a, v: a + v, lambda a, n: math.log(a))))
    write_test("reduce_axes_input_opset18", 18, nodes, [("x", x), ("axes", axes)], outputs)


def gen_out_of_range():
    """Values ONNX calls invalid: kiln's documented answers, never a read outside."""
    x = Tensor([6], [float(k) for k in range(6)])
    m = Tensor([2, 3], [float(k) for k in range(6)])
    split = Tensor([2], [4, 5], INT64)            # sums to 9 > 6: the second part is clamped to [4, 6)
    repeats = Tensor([2], [-1, 2], INT64)         # a negative repeat counts as 0: empty result
    uaxes = Tensor([2], [0, 0], INT64)            # repeated positions: inserted in front
    starts = Tensor([2], [1, 2], INT64)
    ends = Tensor([2], [100, 0], INT64)
    saxes = Tensor([2], [7, 1], INT64)            # axis 7 does not exist: ignored
    steps = Tensor([2], [1, -1], INT64)
    nodes = [
        node("Split", ["x", "split"], ["part0", "part1"], axis=0),
        node("Tile", ["m", "repeats"], ["tiled"]),
        node("Unsqueeze", ["m", "uaxes"], ["unsq"]),
        node("Slice", ["m", "starts", "ends", "saxes", "steps"], ["sliced"]),
    ]
    outputs = [
        ("part0", Tensor([4], [0.0, 1.0, 2.0, 3.0])),
        ("part1", Tensor([2], [4.0, 5.0])),
        ("tiled", Tensor([0, 6], [])),
        ("unsq", Tensor([1, 1, 2, 3], m.values)),
        # axis 1 from 2 down to (but excluding) 0: columns 2, 1
        ("sliced", Tensor([2, 2], [2.0, 1.0, 5.0, 4.0])),
    ]
    inputs = [("x", x), ("split", split), ("m", m), ("repeats", repeats), ("uaxes", uaxes), ("starts", starts),
              ("ends", ends), ("saxes", saxes), ("steps", steps)]
    write_test("out_of_range_values", 13, nodes, inputs, outputs)


def gen_pad_wide_reflect():
    """Reflect pads wider than the input repeat the reflection (numpy's 'reflect')."""
    x = Tensor([1, 3], [1.0, 2.0, 3.0])
    pads = Tensor([4], [0, 5, 0, 4], INT64)
    period = 4
    def src(j):
        m = j % period
        return m if m < 3 else period - m
    values = [x.values[src(c - 5)] for c in range(3 + 9)]
    write_test("pad_reflect_wide", 13, ['op_type: "Pad" input: "x" input: "pads" output: "y" '
                                        'attribute { name: "mode" s: "reflect" type: STRING }'],
               [("x", x), ("pads", pads)], [("y", Tensor([1, 12], values))])


def int_pow(b, p):
    """kiln's integer Pow (passes/host/ExpandIntegerPower.cpp): wrapping int64 products; a negative
    power, which has no integer answer except for bases 1 and -1, gives 0."""
    if p < 0:
        return 1 if b == 1 else (-1 if p % 2 else 1) if b == -1 else 0
    r = b ** p % (1 << 64)
    return r - (1 << 64) if r >= 1 << 63 else r


def gen_pow_integer():
    """Integer Pow, negative powers and wrap-around included: the CPU and CUDA targets share one
    expansion, whose answers are these."""
    base = [0, 1, -1, -1, 2, 2, 3, -3, 0, 7, 2, 10]
    power = [-1, -5, -3, -4, -1, 0, 4, 5, 0, 1, 63, 19]
    write_test("pow_integer", 13, [node("Pow", ["b", "p"], ["y"])],
               [("b", Tensor([12], base, INT64)), ("p", Tensor([12], power, INT64))],
               [("y", Tensor([12], [int_pow(b, p) for b, p in zip(base, power)], INT64))])


if __name__ == "__main__":
    gen_reduce_opset18()
    gen_out_of_range()
    gen_pad_wide_reflect()
    gen_pow_integer()
