#!/usr/bin/python3
"""Generate test/models/convnets/: small convolutional segments of the kinds vision and OCR
models ship, for kiln's channels-last layout (passes/cpu/ChooseChannelsLast.cpp) and its
fallbacks, with ONNX Runtime's outputs as references.

    /usr/bin/python3 test/models/gen_convnets.py [NAME...] # needs bench/setup.sh (onnxruntime-node)

- depthwise: MobileNet-style inverted residual blocks: 1x1 expand + Clip (ReLU6), depthwise
  3x3 stride 1 and 5x5 stride 2 (pads 2), HardSwish, 1x1 project with a residual Add, global
  average pooling, Flatten, Gemm.
- se_concat: an LCNet-style block with squeeze-and-excitation (GlobalAveragePool, 1x1 convs,
  Relu, HardSigmoid, Mul), a second branch concatenated on the channels, max pooling with
  ceil_mode and padding, average pooling (2x2/2), an unfolded BatchNorm's Mul/Add by [C,1,1]
  constants.
- odd_channels: what stays NCHW, mixed with what does not: Cout 24 (not a multiple of 16), a
  grouped (not depthwise) conv, a dilated 3x3, a depthwise conv with a channel multiplier of 1
  on 6 channels (too few to vectorize), stride 2 1x1 and 3x3 convs, average pooling with
  padding not counted, Sigmoid.
- fpn: FPN-style top-down path: 1x1 laterals, nearest Resize x2 by scales and to fixed sizes
  (batch 1: the sizes name it), Add, a 3x3 conv with 8 outputs (padded to 16), Sigmoid.
- implicit_windows: the implicit-GEMM convolution's cases (passes/conversion/LowerContraction.cpp)
  and the depthwise kernel's position blocks: a 7x7 stride-2 stem on 3 channels (window rows of
  21 floats), max pooling, a dilated 3x3 on 3 channels (patch rows), a dilated 3x3 on 16 channels
  (taps one by one), 1x1 convs with ReLU and a residual Add in their epilogue, a depthwise 3x3 on
  output rows of 6 (a block of 4 positions, then 2 one by one) and of 4, odd sizes (13x11).
- winograd: the 3x3 stride-1 convolutions kiln computes with Winograd's F(m x m, 3x3)
  (passes/cpu/WinogradConvs.cpp): F(4x4) on 28x27 maps with a residual Add and ReLU after it, with
  asymmetric pads (27x26 outputs: a last row and column of tiles past the output), 40 channels
  (vectors of 8 channels) and no bias; F(2x2) on 13x13 maps after max pooling; a 3-channel
  3x3 conv that stays direct.
- shuffle: ShuffleNet v2 units (passes/cpu/ChooseChannelsLast.cpp keeps them channels-last): the
  channel split as two Slices, 1x1 / depthwise 3x3 / 1x1 branches, Concat, the channel shuffle
  as Reshape [N, 2, C/2, H, W] (batch copied by a 0), Transpose, Reshape; a stride-2 unit with
  two branches; ReduceMean over H and W without keepdims.
- se_project: EfficientNet-style blocks at batch 1 (static): SiLU as Sigmoid + Mul, a
  squeeze-and-excitation scale multiplied into the 1x1 projection's input, which
  kiln-fold-channel-scales (passes/cpu/FoldChannelScales.cpp) moves into the projection's
  weight rows on the 24x24 map and leaves on the 3x3 one (there the weight is the larger).
- bands: inverted residual blocks on a 96x80 map whose expanded maps (96 channels, 2.9 MB per
  sample) kiln computes in row bands (passes/cpu/BandConvChains.cpp): depthwise 3x3 with a
  residual Add, a dilated depthwise 3x3 (pads 2), a 5x5 stride-2 one with HardSwish; the bands'
  edge rows, the padding of the first and last band and the residual's rows are what it checks.
- band_sections: one sample (static shapes) of an inverted residual block at 112x112 whose 4.8 MB
  expansion is computed in four row bands, two per section, the sections on separate threads.
The others have a symbolic batch and two data sets (batch 1 and 3). Deterministic (fixed seeds).
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "convnets")
OPSET = 14  # HardSwish


class Graph:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, prefix):
        self.count += 1
        return "%s_%d" % (prefix, self.count)

    def const(self, array):
        n = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), n))
        return n

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, pad=None, dilation=1, group=1, bias=True):
        pad = (k // 2) * dilation if pad is None else pad
        pads = list(pad) if isinstance(pad, (list, tuple)) else [pad] * 4
        fan_in = cin // group * k * k
        w = self.const(self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in))
        inputs = [x, w] + ([self.const(self.rng.standard_normal(cout) * 0.1)] if bias else [])
        return self.node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=pads,
                         dilations=[dilation, dilation], group=group)

    def const_i64(self, values):
        n = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), n))
        return n

    def relu6(self, x):
        return self.node("Clip", [x, self.const(0.0), self.const(6.0)])

    def save(self, name, x_shape, y, y_shape, batches=(1, 3)):
        graph = helper.make_graph(self.nodes, name,
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                                  [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)], self.inits)
        model = helper.make_model(graph, producer_name="kiln test/models/gen_convnets.py",
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 7
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        dirs = []
        for k, batch in enumerate(batches):
            ds = os.path.join(d, "test_data_set_%d" % k)
            os.makedirs(ds, exist_ok=True)
            shape = [batch] + list(x_shape[1:])
            x = self.rng.standard_normal(shape).astype(np.float32)
            with open(os.path.join(ds, "input_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(x, "x").SerializeToString())
            dirs.append(ds)
        subprocess.run(["node", os.path.join(HERE, "ort_reference.js"), os.path.join(d, "model.onnx")] + dirs,
                       check=True)


def depthwise():
    g = Graph(2101)
    x = g.conv("x", 3, 16, 3, stride=2)                       # 3 -> 16, 32x32 -> 16x16
    x = g.relu6(x)
    # Inverted residual, stride 1: expand 16 -> 64, depthwise 3x3, project 64 -> 16, add.
    h = g.relu6(g.conv(x, 16, 64, 1))
    h = g.relu6(g.conv(h, 64, 64, 3, group=64))
    h = g.conv(h, 64, 16, 1)
    x = g.node("Add", [x, h])
    # Stride 2 with a 5x5 depthwise and HardSwish: 16x16 -> 8x8.
    h = g.node("HardSwish", [g.conv(x, 16, 32, 1)])
    h = g.node("HardSwish", [g.conv(h, 32, 32, 5, stride=2, group=32)])
    h = g.conv(h, 32, 48, 1)
    p = g.node("GlobalAveragePool", [h])
    f = g.node("Flatten", [p], axis=1)
    y = g.node("Gemm", [f, g.const(g.rng.standard_normal((10, 48)) * 0.2), g.const(np.zeros(10))], transB=1)
    g.save("depthwise", ["batch", 3, 32, 32], y, ["batch", 10])


def se_concat():
    g = Graph(2102)
    x = g.node("Relu", [g.conv("x", 4, 32, 3)])                # 4 -> 32 at 24x24
    # Unfolded BatchNorm: Mul and Add by [C, 1, 1] constants.
    x = g.node("Mul", [x, g.const(g.rng.uniform(0.5, 1.5, (32, 1, 1)))])
    x = g.node("Add", [x, g.const(g.rng.standard_normal((32, 1, 1)) * 0.1)])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)  # 12x12
    h = g.node("HardSwish", [g.conv(x, 32, 32, 3, group=32)])
    s = g.node("GlobalAveragePool", [h])
    s = g.node("Relu", [g.conv(s, 32, 16, 1)])
    s = g.node("HardSigmoid", [g.conv(s, 16, 32, 1)], alpha=1.0 / 6, beta=0.5)
    h = g.node("Mul", [h, s])
    other = g.node("Relu", [g.conv(x, 32, 16, 1)])
    cat = g.node("Concat", [h, other], axis=1)                 # 48 channels
    y = g.conv(cat, 48, 32, 3, stride=2)                       # 6x6
    y = g.node("AveragePool", [y], kernel_shape=[2, 2], strides=[2, 2])  # 3x3
    g.save("se_concat", ["batch", 4, 24, 24], y, ["batch", 32, 3, 3])


def odd_channels():
    g = Graph(2103)
    x = g.node("Relu", [g.conv("x", 6, 24, 3)])                # Cout 24: stays NCHW
    x = g.node("Relu", [g.conv(x, 24, 24, 3, group=3)])        # grouped: stays NCHW
    x = g.conv(x, 24, 32, 3, dilation=2)                       # dilated, packed
    x = g.node("Sigmoid", [g.conv(x, 32, 32, 1, stride=2)])    # 1x1 stride 2: 10x10 -> 5x5
    x = g.conv(x, 32, 6, 1, bias=False)                        # Cout 6: NCHW
    x = g.conv(x, 6, 6, 3, group=6)                            # depthwise on 6 channels: NCHW
    x = g.node("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
               count_include_pad=0)
    y = g.conv(x, 6, 16, 3, stride=2)                          # 5x5 -> 3x3
    g.save("odd_channels", ["batch", 6, 10, 10], y, ["batch", 16, 3, 3])


def fpn():
    g = Graph(2104)
    c2 = g.node("Relu", [g.conv("x", 3, 16, 3, stride=2)])      # 16x16
    c3 = g.node("Relu", [g.conv(c2, 16, 32, 3, stride=2)])      # 8x8
    lat2 = g.conv(c2, 16, 24, 1)
    lat3 = g.conv(c3, 32, 24, 1)
    # FPN top-down: nearest x2 by scales, and by sizes, then Add.
    up = g.node("Resize", [lat3, "", g.const([1.0, 1.0, 2.0, 2.0])], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    p2 = g.node("Add", [lat2, up])
    sizes = g.name("sizes")
    g.inits.append(numpy_helper.from_array(np.array([1, 24, 32, 32], dtype=np.int64), sizes))
    big = g.node("Resize", [p2, "", "", sizes], mode="nearest")
    y = g.node("Sigmoid", [g.conv(big, 24, 8, 3)])
    g.save("fpn", [1, 3, 32, 32], y, [1, 8, 32, 32], batches=(1,))


def implicit_windows():
    g = Graph(2105)
    x = g.node("Relu", [g.conv("x", 3, 16, 7, stride=2)])      # 26x22 -> 13x11
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    d = g.conv("x", 3, 16, 3, stride=2, dilation=2)            # dilated, 3 channels: 13x11
    x = g.node("Add", [x, d])
    x = g.conv(x, 16, 16, 3, dilation=2)                       # dilated, 16 channels
    h = g.node("Relu", [g.conv(x, 16, 32, 1)])                 # 1x1 + ReLU
    h = g.relu6(g.conv(h, 32, 32, 3, stride=2, group=32))      # depthwise: 13x11 -> 7x6
    h = g.conv(h, 32, 32, 1)
    h = g.node("Add", [h, g.conv(h, 32, 32, 3)])               # residual
    h = g.relu6(g.conv(h, 32, 32, 3, stride=1, pad=0, group=32))  # 7x6 -> 5x4
    y = g.conv(h, 32, 16, 1)
    g.save("implicit_windows", ["batch", 3, 26, 22], y, ["batch", 16, 5, 4])


def winograd():
    g = Graph(2106)
    h = g.node("Relu", [g.conv("x", 3, 32, 3)])                # 3 channels: direct, 28x27
    h = g.node("Relu", [g.node("Add", [h, g.conv(h, 32, 32, 3)])])  # F(4x4), 28 rows: epilogue fused
    h = g.node("Relu", [g.conv(h, 32, 40, 3, pad=[0, 1, 1, 0])])  # F(4x4), 27x26, Cout 40
    h = g.conv(h, 40, 40, 3, bias=False)                       # F(4x4), 40 channels, no bias
    h = g.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])  # 13x13
    a = g.conv(h, 40, 32, 3)                                   # F(2x2): 7 x 7 tiles
    b = g.conv(h, 40, 32, 3)
    y = g.node("Relu", [g.node("Add", [a, b])])
    g.save("winograd", ["batch", 3, 28, 27], y, ["batch", 32, 13, 13])


def shuffle():
    g = Graph(2107)

    def channel_shuffle(x, c, hw):
        shape = g.name("shape")
        g.inits.append(numpy_helper.from_array(np.array([0, 2, c // 2, hw, hw], dtype=np.int64), shape))
        back = g.name("shape")
        g.inits.append(numpy_helper.from_array(np.array([0, c, hw, hw], dtype=np.int64), back))
        x = g.node("Reshape", [x, shape])
        x = g.node("Transpose", [x], perm=[0, 2, 1, 3, 4])
        return g.node("Reshape", [x, back])

    def branch(x, c, stride):
        h = g.node("Relu", [g.conv(x, c, c, 1)])
        h = g.conv(h, c, c, 3, stride=stride, group=c)
        return g.node("Relu", [g.conv(h, c, c, 1)])

    x = g.node("Relu", [g.conv("x", 3, 32, 3)])                # 16x16x32
    # Stride 1: split, one branch, concat, shuffle.
    x1 = g.node("Slice", [x, g.const_i64([0]), g.const_i64([16]), g.const_i64([1])])
    x2 = g.node("Slice", [x, g.const_i64([16]), g.const_i64([32]), g.const_i64([1])])
    x = channel_shuffle(g.node("Concat", [x1, branch(x2, 16, 1)], axis=1), 32, 16)
    # Stride 2: both branches see the whole input.
    b1 = g.node("Relu", [g.conv(g.conv(x, 32, 32, 3, stride=2, group=32), 32, 32, 1)])
    x = channel_shuffle(g.node("Concat", [b1, branch(x, 32, 2)], axis=1), 64, 8)
    y = g.node("ReduceMean", [x], axes=[2, 3], keepdims=0)
    g.save("shuffle", ["batch", 3, 16, 16], y, ["batch", 64])


def se_project():
    g = Graph(2108)

    def silu(x):
        return g.node("Mul", [x, g.node("Sigmoid", [x])])

    def block(x, cin, cexp, cout, stride):
        h = silu(g.conv(x, cin, cexp, 1))
        h = silu(g.conv(h, cexp, cexp, 3, stride=stride, group=cexp))
        s = g.node("GlobalAveragePool", [h])
        s = silu(g.conv(s, cexp, cexp // 4, 1))
        s = g.node("Sigmoid", [g.conv(s, cexp // 4, cexp, 1)])
        return g.conv(g.node("Mul", [h, s]), cexp, cout, 1)

    x = silu(g.conv("x", 3, 16, 3, stride=2))                  # 24x24x16
    x = g.node("Add", [x, block(x, 16, 64, 16, 1)])            # folded: 24*24*64 > 64*16 weights
    x = block(x, 16, 96, 32, 2)                                # 12x12: folded
    x = block(x, 32, 128, 64, 4)                               # 3x3: 9*128 < 128*64, left alone
    g.save("se_project", [1, 3, 48, 48], x, [1, 64, 3, 3], batches=(1,))


def bands():
    g = Graph(2109)
    x = "x"                                                    # 8 channels at 96x80
    # Expand 8 -> 96 (2.9 MB per sample), depthwise 3x3, project 96 -> 8, residual add.
    h = g.relu6(g.conv(x, 8, 96, 1))
    h = g.relu6(g.conv(h, 96, 96, 3, group=96))
    x = g.node("Add", [x, g.conv(h, 96, 8, 1)])
    # The same with a dilated depthwise window (two rows of halo on each side of a band).
    h = g.relu6(g.conv(x, 8, 96, 1))
    h = g.relu6(g.conv(h, 96, 96, 3, dilation=2, group=96))
    x = g.node("Add", [x, g.conv(h, 96, 8, 1)])
    # Stride 2 with a 5x5 window and HardSwish: 96x80 -> 48x40.
    h = g.node("HardSwish", [g.conv(x, 8, 96, 1)])
    h = g.node("HardSwish", [g.conv(h, 96, 96, 5, stride=2, group=96)])
    y = g.conv(h, 96, 16, 1)
    g.save("bands", ["batch", 8, 96, 80], y, ["batch", 16, 48, 40])


def band_sections():
    g = Graph(2110)
    # One sample (static shapes, so CSE merges the bands' same-shaped destinations: what
    # kiln-separate-band-buffers undoes): expand 4 -> 96 at 112x112 (4.8 MB), four row bands,
    # two per section; each section runs on its own thread (kiln-run-band-sections), so two
    # bands sharing a buffer across the sections would race.
    x = "x"
    h = g.relu6(g.conv(x, 4, 96, 1))
    h = g.relu6(g.conv(h, 96, 96, 3, group=96))
    y = g.node("Add", [x, g.conv(h, 96, 4, 1)])
    g.save("band_sections", [1, 4, 112, 112], y, [1, 4, 112, 112], batches=(1, 1))


def main():
    names = sys.argv[1:] or ["depthwise", "se_concat", "odd_channels", "fpn", "implicit_windows", "winograd",
                             "shuffle", "se_project", "bands", "band_sections"]
    for name in names:
        globals()[name]()
    print("wrote", OUT)


if __name__ == "__main__":
    sys.exit(main())
