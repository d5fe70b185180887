#!/usr/bin/python3
"""Generate test/models/qlinear/: integer quantized ops on the paths the ONNX node tests
leave out (int8 operands, per-row and per-column matmul parameters, per-channel conv
weights, int32 bias, groups, strides and pads, an omitted zero point, DynamicQuantizeLinear
on all-zero and all-negative inputs, and a uint8 tensor whose type is known only from its
producer). Models are written as protobuf text and encoded with protoc (no Python onnx
package needed); references are computed here in exact integer arithmetic and in float32
(via struct) / float64 in the order ONNX's reference implementation uses.

    python3 test/models/gen_qlinear.py

Deterministic (fixed seed).
"""
import os, random, shutil, struct, subprocess
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "qlinear")
FLOAT, UINT8, INT8, INT32 = 1, 2, 3, 6
def f32(x): return struct.unpack('f', struct.pack('f', x))[0]

def encode(msg, text, path):
    r = subprocess.run(['protoc', '-I/usr/include/onnx', '--encode=onnx.' + msg, '/usr/include/onnx/onnx.proto'],
                       input=text.encode(), capture_output=True, check=True)
    open(path, 'wb').write(r.stdout)

def shape_of(v):
    s = []
    while isinstance(v, list):
        s.append(len(v)); v = v[0] if v else None
    return s
def flat(v):
    return [y for x in v for y in flat(x)] if isinstance(v, list) else [v]

def tensor_body(name, dt, val):
    """TensorProto fields (8-bit and int32 values go in int32_data)."""
    dims = ''.join(' dims: %d' % d for d in shape_of(val))
    data = ''.join((' float_data: %r' % x) if dt == FLOAT else (' int32_data: %d' % x) for x in flat(val))
    return 'name: "%s" data_type: %d%s%s' % (name, dt, dims, data)

def vi(name, dt, shape):
    dims = ''.join(' dim { dim_value: %d }' % d for d in shape)
    return '{ name: "%s" type { tensor_type { elem_type: %d shape {%s } } } }' % (name, dt, dims)

def model(name, nodes, inputs, outputs, opset, feeds, expected, value_info=()):
    """Writes OUT/name/model.onnx and test_data_set_0 (inputs/outputs: (name, type, shape))."""
    d = os.path.join(OUT, name); os.makedirs(os.path.join(d, 'test_data_set_0'), exist_ok=True)
    g = 'graph { name: "%s" %s %s %s %s }' % (name, ' '.join(nodes),
        ' '.join('input ' + vi(*i) for i in inputs), ' '.join('output ' + vi(*o) for o in outputs),
        ' '.join('value_info ' + vi(*v) for v in value_info))
    encode('ModelProto', 'ir_version: 8 opset_import { domain: "" version: %d } %s' % (opset, g), os.path.join(d, 'model.onnx'))
    for k, ((n, dt, _), v) in enumerate(zip(inputs, feeds)):
        encode('TensorProto', tensor_body(n, dt, v), os.path.join(d, 'test_data_set_0', 'input_%d.pb' % k))
    for k, ((n, dt, _), v) in enumerate(zip(outputs, expected)):
        encode('TensorProto', tensor_body(n, dt, v), os.path.join(d, 'test_data_set_0', 'output_%d.pb' % k))

def node(op, ins, outs, attrs=''):
    return 'node { %s %s op_type: "%s" %s }' % (' '.join('input: "%s"' % i for i in ins),
                                               ' '.join('output: "%s"' % o for o in outs), op, attrs)
def ints_attr(name, vals): return 'attribute { name: "%s" type: INTS %s }' % (name, ' '.join('ints: %d' % v for v in vals))
def int_attr(name, v): return 'attribute { name: "%s" type: INT i: %d }' % (name, v)

shutil.rmtree(OUT, ignore_errors=True)
rng = random.Random(7)
def rand(shape, lo, hi):
    if not shape: return rng.randint(lo, hi)
    return [rand(shape[1:], lo, hi) for _ in range(shape[0])]
def rscale(n): return [f32(rng.uniform(0.001, 0.05)) for _ in range(n)]
def sat(v, unsigned): return max(0 if unsigned else -128, min(255 if unsigned else 127, v))
def requant(acc, s, zp, unsigned): return sat(round(acc * s + zp), unsigned)

# (a) QLinearMatMul: int8 a per row, uint8 b per column, int8 y.
M, K, N = 5, 7, 6
a = rand([M, K], -128, 127); b = rand([K, N], 0, 255)
asc = rscale(M); azp = rand([M], -20, 20); bsc = rscale(N); bzp = rand([N], 100, 150)
ysc = [f32(0.02)]; yzp = [-3]
y = [[requant(sum((a[m][k] - azp[m]) * (b[k][n] - bzp[n]) for k in range(K)),
              f32(f32(asc[m] * bsc[n]) / ysc[0]), yzp[0], False) for n in range(N)] for m in range(M)]
model('qlinearmatmul_perrow_percol', [node('QLinearMatMul', ['a', 'as', 'az', 'b', 'bs', 'bz', 'ys', 'yz'], ['y'])],
      [('a', INT8, [M, K]), ('as', FLOAT, [M]), ('az', INT8, [M]), ('b', UINT8, [K, N]), ('bs', FLOAT, [N]),
       ('bz', UINT8, [N]), ('ys', FLOAT, [1]), ('yz', INT8, [1])], [('y', INT8, [M, N])], 10,
      [a, asc, azp, b, bsc, bzp, ysc, yzp], [y])

# (b) MatMulInteger: int8 A per-row zp, int8 B per-column zp, batched B.
Bt = 2
A = rand([M, K], -128, 127); B = rand([Bt, K, N], -128, 127); az2 = rand([M], -5, 5); bz2 = rand([N], -5, 5)
Y = [[[sum((A[m][k] - az2[m]) * (B[t][k][n] - bz2[n]) for k in range(K)) for n in range(N)] for m in range(M)] for t in range(Bt)]
model('matmulinteger_int8_perrow', [node('MatMulInteger', ['A', 'B', 'az', 'bz'], ['Y'])],
      [('A', INT8, [M, K]), ('B', INT8, [Bt, K, N]), ('az', INT8, [M]), ('bz', INT8, [N])], [('Y', INT32, [Bt, M, N])], 10,
      [A, B, az2, bz2], [Y])

# (c) QLinearConv: uint8 x, int8 w per output channel, int32 bias, group 2, pads, stride 2, int8 y.
Nb, C, H, W, Mo, G, KH, KW = 1, 4, 6, 5, 4, 2, 3, 2
pads, strides = [1, 0, 1, 1], [2, 1]
x = rand([Nb, C, H, W], 0, 255); w = rand([Mo, C // G, KH, KW], -128, 127)
xs = [f32(0.03)]; xz = [128]; wsc = rscale(Mo); wz = rand([Mo], -3, 3); ys2 = [f32(0.5)]; yz2 = [5]
bias = rand([Mo], -500, 500)
OH = (H + pads[0] + pads[2] - KH) // strides[0] + 1; OW = (W + pads[1] + pads[3] - KW) // strides[1] + 1
def xat(n, c, i, j):
    i -= pads[0]; j -= pads[1]
    return x[n][c][i][j] - xz[0] if 0 <= i < H and 0 <= j < W else 0
def conv(xat, w, wz, bias, n, m, oh, ow):
    g = m // (Mo // G); s = bias[m] if bias else 0
    for ic in range(C // G):
        for kh in range(KH):
            for kw in range(KW):
                s += xat(n, g * (C // G) + ic, oh * strides[0] + kh, ow * strides[1] + kw) * (w[m][ic][kh][kw] - wz[m])
    return s
yc = [[[[requant(conv(xat, w, wz, bias, n, m, i, j), f32(f32(xs[0] * wsc[m]) / ys2[0]), yz2[0], False)
         for j in range(OW)] for i in range(OH)] for m in range(Mo)] for n in range(Nb)]
attrs = ints_attr('pads', pads) + ints_attr('strides', strides) + int_attr('group', G)
model('qlinearconv_perchannel_bias_group', [node('QLinearConv', ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz', 'B'], ['y'], attrs)],
      [('x', UINT8, [Nb, C, H, W]), ('xs', FLOAT, []), ('xz', UINT8, []), ('w', INT8, [Mo, C // G, KH, KW]),
       ('ws', FLOAT, [Mo]), ('wz', INT8, [Mo]), ('ys', FLOAT, []), ('yz', INT8, []), ('B', INT32, [Mo])],
      [('y', INT8, [Nb, Mo, OH, OW])], 10, [x, xs[0], xz[0], w, wsc, wz, ys2[0], yz2[0], bias], [yc])

# (d) ConvInteger: int8 x, uint8 w per output channel zp, no x zp, pads, group 1.
G = 1
x = rand([Nb, C, H, W], -128, 127); w = rand([Mo, C, KH, KW], 0, 255); wz = rand([Mo], 120, 135); xz = [0]
yi = [[[[conv(xat, w, wz, None, n, m, i, j) for j in range(OW)] for i in range(OH)] for m in range(Mo)] for n in range(Nb)]
attrs = ints_attr('pads', pads) + ints_attr('strides', strides)
model('convinteger_perchannel', [node('ConvInteger', ['x', 'w', '', 'wz'], ['y'], attrs)],
      [('x', INT8, [Nb, C, H, W]), ('w', UINT8, [Mo, C, KH, KW]), ('wz', UINT8, [Mo])],
      [('y', INT32, [Nb, Mo, OH, OW])], 10, [x, w, wz], [yi])

# (e) DynamicQuantizeLinear on all zeros (scale 1) and all negative inputs.
def dql(xs):
    mx = f32(max(0.0, max(xs))); mn = f32(min(0.0, min(xs)))
    sc = f32(1.0) if mx == mn else f32((mx - mn) / 255.0)
    zp = round(max(0.0, min(255.0, f32(0.0 - f32(mn / sc)))))
    return [sat(round(f32(v / sc)) + zp, True) for v in xs], sc, zp
for nm, xs in [('zeros', [0.0] * 5), ('negative', [f32(-rng.uniform(0.1, 9)) for _ in range(5)])]:
    yq, sc, zp = dql(xs)
    model('dynamicquantizelinear_' + nm, [node('DynamicQuantizeLinear', ['x'], ['y', 's', 'z'])],
          [('x', FLOAT, [5])], [('y', UINT8, [5]), ('s', FLOAT, []), ('z', UINT8, [])], 11, [xs], [yq, sc, zp])

# (f) QuantizeLinear -> QLinearMatMul with no value_info on the uint8 intermediate (type traced from producers).
xq = [[f32(rng.uniform(-1, 1)) for _ in range(K)] for _ in range(M)]
qs = f32(0.01); qz = 128
aq = [[sat(round(f32(v / qs)) + qz, True) for v in row] for row in xq]
b = rand([K, N], -128, 127); bs = f32(0.02); ysc3 = f32(0.05); yz3 = 100
y3 = [[requant(sum((aq[m][k] - qz) * b[k][n] for k in range(K)), f32(f32(qs * bs) / ysc3), yz3, True) for n in range(N)] for m in range(M)]
model('quantize_then_qlinearmatmul', [
    node('QuantizeLinear', ['x', 'qs', 'qz'], ['xq']),
    node('Reshape', ['xq', 'shape'], ['xr']),
    node('QLinearMatMul', ['xr', 'qs', 'qz', 'b', 'bs', 'bz', 'ys', 'yz'], ['y'])],
    [('x', FLOAT, [M, K]), ('qs', FLOAT, []), ('qz', UINT8, []), ('shape', 7, [2]), ('b', INT8, [K, N]), ('bs', FLOAT, []),
     ('bz', INT8, []), ('ys', FLOAT, []), ('yz', UINT8, [])], [('y', UINT8, [M, N])], 13,
    [xq, qs, qz, [M, K], b, bs, 0, ysc3, yz3], [y3])
