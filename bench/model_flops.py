#!/usr/bin/env python3
"""Floating-point work of an ONNX model, counted from its graph (not from any compiler's estimate).

    /usr/bin/python3 bench/model_flops.py model.onnx    # prints flops=N ops=K

Counts 2 flops per multiply-add of the ops that dominate a CNN or transformer: Conv,
ConvTranspose, Gemm and MatMul, with shapes from ONNX shape inference (elementwise ops,
pooling and normalization are left out, so the figure is a lower bound on the work).
bench/run.py divides it by kiln's median latency to report GFLOP/s and the share of the
machine's multiply-add peak (bench/fmapeak). Needs the onnx package (Debian's python3-onnx).
"""

import sys


def _shapes(model):
    import onnx
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    shapes = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if not vi.type.tensor_type.HasField("shape"):
            continue  # rank unknown
        dims = vi.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = [d.dim_value for d in dims]
    for init in inferred.graph.initializer:
        shapes[init.name] = list(init.dims)
    return shapes


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def model_flops(path):
    """(flops, number of ops counted); raises if a counted op's shapes are unknown."""
    import onnx
    model = onnx.load(path)
    shapes = _shapes(model)
    flops, counted = 0, 0
    for node in model.graph.node:
        op = node.op_type
        if op not in ("Conv", "ConvTranspose", "Gemm", "MatMul"):
            continue
        ins = [shapes.get(n) for n in node.input[:2]]
        out = shapes.get(node.output[0])
        if ins[0] is None or ins[1] is None or out is None:
            raise ValueError("%s node %s: shapes unknown after shape inference" % (op, node.name))
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if op == "Conv":
            # W is [Cout, Cin/group, k...]: every output element is Cin/group * prod(k) multiply-adds.
            flops += 2 * _prod(out) * _prod(ins[1][1:])
        elif op == "ConvTranspose":
            # Every input element is scattered into Cout/group * prod(k) outputs (W is [Cin, Cout/group, k...]).
            flops += 2 * _prod(ins[0]) * _prod(ins[1][1:])
        elif op == "Gemm":
            k = ins[0][0] if attrs.get("transA", 0) else ins[0][1]
            flops += 2 * _prod(out) * k
        else:  # MatMul: every output element is a dot product over A's last dim
            flops += 2 * _prod(out) * ins[0][-1]
        counted += 1
    return flops, counted


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: model_flops.py model.onnx")
    f, n = model_flops(sys.argv[1])
    print("flops=%d ops=%d" % (f, n))
