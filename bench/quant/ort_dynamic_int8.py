#!/usr/bin/python3
"""Rewrite an ONNX model the way ONNX Runtime's dynamic int8 quantization does, so ORT can
run the same model with its own int8 kernels beside kiln's --quantize modes.

    /usr/bin/python3 bench/quant/ort_dynamic_int8.py model.onnx out.onnx

Every MatMul whose right operand is a 2-D f32 initializer [K, N] becomes
    DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W_q, x_zero_point) -> Cast(f32)
    -> Mul(x_scale) -> Mul(w_scale[N])
with W_q int8, symmetric per output column (scale = max|w| / 127), as ORT's
quantize_dynamic(per_channel=True, weight_type=QInt8) writes it (activations: uint8,
asymmetric, per tensor). External data is loaded and written inline (the bench models
are small) or next to out.onnx when over 2 GB. Needs Debian's python3-onnx and numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(src, dst):
    model = onnx.load(src)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    nodes = []
    count = 0
    for node in graph.node:
        w = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if w is None or len(w.dims) != 2 or w.data_type != TensorProto.FLOAT:
            nodes.append(node)
            continue
        arr = numpy_helper.to_array(w).astype(np.float32)
        scale = np.abs(arr).max(axis=0) / 127.0
        scale[scale == 0] = 1.0
        q = np.clip(np.round(arr / scale), -127, 127).astype(np.int8)
        p = "%s_q%d" % (node.name or "matmul", count)
        count += 1
        graph.initializer.extend([numpy_helper.from_array(q, p + "_w"),
                                  numpy_helper.from_array(scale.astype(np.float32), p + "_w_scale")])
        x = node.input[0]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [p + "_xq", p + "_xs", p + "_xz"], name=p + "_dql"),
            helper.make_node("MatMulInteger", [p + "_xq", p + "_w", p + "_xz"], [p + "_acc"], name=p + "_mmi"),
            helper.make_node("Cast", [p + "_acc"], [p + "_accf"], name=p + "_cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [p + "_accf", p + "_xs"], [p + "_m1"], name=p + "_mul_x"),
            helper.make_node("Mul", [p + "_m1", p + "_w_scale"], [node.output[0]], name=p + "_mul_w"),
        ]
    del graph.node[:]
    graph.node.extend(nodes)
    used = {i for n in graph.node for i in n.input}
    keep = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    big = sum(len(t.raw_data) for t in graph.initializer) > (2 << 30) - (64 << 20)
    onnx.save(model, dst, save_as_external_data=big, location=os.path.basename(dst) + ".data")
    print("%s: %d MatMuls quantized" % (dst, count))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
