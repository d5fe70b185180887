#!/usr/bin/python3
"""Generate kiln's checked-in test models under test/models/.

Run with Debian's Python, which has onnx and numpy:

    /usr/bin/python3 test/models/gen_models.py            # regenerate everything
    /usr/bin/python3 test/models/gen_models.py --no-ort   # models/inputs only, keep existing outputs

Everything is deterministic (fixed seeds). Reference outputs (output_K.pb) are
computed by ONNX Runtime through test/models/ort_reference.js (needs
onnxruntime-node in bench/node_modules: run bench/setup.sh once, which needs
network) and cross-checked here against a plain numpy implementation.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OPSET = 13
IR_VERSION = 7
PRODUCER = "kiln test/models/gen_models.py"

# numpy reference vs ONNX Runtime (float32 vs float64 math).
CHECK_RTOL = 1e-4
CHECK_ATOL = 1e-5


# --------------------------------------------------------------------------
# helpers

def make_model(graph):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name=PRODUCER,
        producer_version="1",
    )
    model.ir_version = IR_VERSION
    return model


def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def save_model(model, path, check=True):
    if check:
        onnx.checker.check_model(model)
        onnx.shape_inference.infer_shapes(model, strict_mode=True)
    write_bytes(path, model.SerializeToString())


def save_tensor(array, name, path):
    write_bytes(path, numpy_helper.from_array(array, name).SerializeToString())


def load_tensor(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t), t.name


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def he(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


# --------------------------------------------------------------------------
# numpy reference implementations (float64)

def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def conv2d(x, w, b, strides, pads, dilations, group):
    """x [N,C,H,W], w [M,C/group,kh,kw], pads [top,left,bottom,right]."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    assert c == cg * group and m % group == 0
    sh, sw = strides
    dh, dw = dilations
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    oh = (xp.shape[2] - ekh) // sh + 1
    ow = (xp.shape[3] - ekw) // sw + 1
    out = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * mg:(g + 1) * mg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, ws[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def pool2d(x, kernel, strides, pads, mode):
    """Max or average pool (average excludes padding: count_include_pad=0)."""
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = strides
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=fill)
    ones = np.pad(np.ones((h, w)), ((pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - kh) // sh + 1
    ow = (xp.shape[3] - kw) // sw + 1
    out = np.empty((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            if mode == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = ones[i * sh:i * sh + kh, j * sw:j * sw + kw].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out


# --------------------------------------------------------------------------
# models

def build_mlp():
    """x[batch,64] -> MatMul+Add -> Relu -> Gemm(transB=1) -> Tanh -> Gemm -> Softmax."""
    rng = np.random.default_rng(1001)
    w1 = he(rng, (64, 48), 64)
    b1 = (rng.standard_normal(48) * 0.1).astype(np.float32)
    w2t = he(rng, (32, 48), 48)          # Gemm with transB=1: weight stored [out,in]
    b2 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w3 = he(rng, (32, 10), 32) * np.float32(2.0)   # sharper softmax
    b3 = (rng.standard_normal(10) * 0.1).astype(np.float32)

    nodes = [
        helper.make_node("MatMul", ["x", "fc1.weight"], ["fc1.mm"], name="fc1_matmul"),
        helper.make_node("Add", ["fc1.mm", "fc1.bias"], ["fc1.out"], name="fc1_add"),
        helper.make_node("Relu", ["fc1.out"], ["relu1"], name="relu1"),
        helper.make_node("Gemm", ["relu1", "fc2.weight", "fc2.bias"], ["fc2.out"],
                         name="fc2_gemm", transB=1),
        helper.make_node("Tanh", ["fc2.out"], ["tanh2"], name="tanh2"),
        helper.make_node("Gemm", ["tanh2", "fc3.weight", "fc3.bias"], ["fc3.out"],
                         name="fc3_gemm", alpha=1.0, beta=1.0),
        helper.make_node("Softmax", ["fc3.out"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "kiln_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        initializer=[init("fc1.weight", w1), init("fc1.bias", b1),
                     init("fc2.weight", w2t), init("fc2.bias", b2),
                     init("fc3.weight", w3), init("fc3.bias", b3)],
    )

    def reference(x):
        x = x.astype(np.float64)
        h = np.maximum(x @ w1 + b1, 0.0)
        h = np.tanh(h @ w2t.T.astype(np.float64) + b2)
        return [softmax(h @ w3 + b3, axis=-1)]

    def make_input(seed, batch):
        r = np.random.default_rng(seed)
        return [(r.standard_normal((batch, 64))).astype(np.float32)]

    return make_model(graph), reference, make_input


def build_cnn():
    """image[batch,3,32,32] -> logits[batch,10]."""
    rng = np.random.default_rng(2002)
    c1, c2 = 32, 64
    conv1_w = he(rng, (c1, 3, 5, 5), 75)
    conv1_b = (rng.standard_normal(c1) * 0.05).astype(np.float32)
    bn_scale = rng.uniform(0.5, 1.5, c1).astype(np.float32)
    bn_bias = (rng.standard_normal(c1) * 0.1).astype(np.float32)
    bn_mean = (rng.standard_normal(c1) * 0.1).astype(np.float32)
    bn_var = rng.uniform(0.5, 2.0, c1).astype(np.float32)
    bn_eps = 1e-5
    group = 2
    conv2_w = he(rng, (c2, c1 // group, 3, 3), (c1 // group) * 9)
    conv2_b = (rng.standard_normal(c2) * 0.05).astype(np.float32)
    fc_in = c2 * 8 * 8
    fc_w = he(rng, (10, fc_in), fc_in)    # Gemm transB=1
    fc_b = (rng.standard_normal(10) * 0.1).astype(np.float32)

    # Shapes (N = batch):
    #   conv1  k5 s2 p2      : [N,3,32,32]  -> [N,32,16,16]
    #   bn, relu
    #   maxpool k3 s1 p1     : -> [N,32,16,16]
    #   conv2  k3 d2 p2 g2   : -> [N,64,16,16]
    #   relu
    #   avgpool k2 s2        : -> [N,64,8,8]
    #   flatten              : -> [N,4096]
    #   gemm                 : -> [N,10]
    # About 3 MMACs per image.
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["conv1.out"],
                         name="conv1", kernel_shape=[5, 5], strides=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("BatchNormalization",
                         ["conv1.out", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"],
                         ["bn1.out"], name="bn1", epsilon=bn_eps),
        helper.make_node("Relu", ["bn1.out"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="maxpool1",
                         kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["pool1", "conv2.weight", "conv2.bias"], ["conv2.out"],
                         name="conv2", kernel_shape=[3, 3], group=group, dilations=[2, 2],
                         pads=[2, 2, 2, 2], strides=[1, 1]),
        helper.make_node("Relu", ["conv2.out"], ["relu2"], name="relu2"),
        helper.make_node("AveragePool", ["relu2"], ["pool2"], name="avgpool2",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"],
                         name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "kiln_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        initializer=[init("conv1.weight", conv1_w), init("conv1.bias", conv1_b),
                     init("bn1.scale", bn_scale), init("bn1.bias", bn_bias),
                     init("bn1.mean", bn_mean), init("bn1.var", bn_var),
                     init("conv2.weight", conv2_w), init("conv2.bias", conv2_b),
                     init("fc.weight", fc_w), init("fc.bias", fc_b)],
    )

    def reference(x):
        f = lambda a: a.astype(np.float64)
        h = conv2d(f(x), f(conv1_w), f(conv1_b), (2, 2), (2, 2, 2, 2), (1, 1), 1)
        h = ((h - f(bn_mean).reshape(1, -1, 1, 1))
             / np.sqrt(f(bn_var).reshape(1, -1, 1, 1) + f(np.float32(bn_eps)))
             * f(bn_scale).reshape(1, -1, 1, 1) + f(bn_bias).reshape(1, -1, 1, 1))
        h = np.maximum(h, 0.0)
        h = pool2d(h, (3, 3), (1, 1), (1, 1, 1, 1), "max")
        h = conv2d(h, f(conv2_w), f(conv2_b), (1, 1), (2, 2, 2, 2), (2, 2), group)
        h = np.maximum(h, 0.0)
        h = pool2d(h, (2, 2), (2, 2), (0, 0, 0, 0), "avg")
        h = h.reshape(h.shape[0], -1)
        return [h @ f(fc_w).T + f(fc_b)]

    def make_input(seed, batch):
        r = np.random.default_rng(seed)
        return [r.uniform(-1.0, 1.0, (batch, 3, 32, 32)).astype(np.float32)]

    return make_model(graph), reference, make_input


def external_tensor(name, dims, location, offset, length, dtype=TensorProto.FLOAT):
    """A TensorProto whose data lives in an external file."""
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = t.external_data.add()
        entry.key = key
        entry.value = value
    return t


def external_graph(location, offset=0, w_len=None, name="kiln_external"):
    """y[batch,8] = Relu(x[batch,16] @ W[16,8] + b[8]); W and b live in `location`.

    W occupies bytes [offset, offset+512), b the next 32 bytes at offset+512.
    """
    w_bytes = 16 * 8 * 4
    b_bytes = 8 * 4
    w = external_tensor("W", [16, 8], location, offset, w_len if w_len is not None else w_bytes)
    b = external_tensor("b", [8], location, offset + w_bytes, b_bytes)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "b"], ["xwb"], name="add"),
        helper.make_node("Relu", ["xwb"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        initializer=[w, b],
    )
    return make_model(graph)


def build_external_ok():
    rng = np.random.default_rng(3003)
    w = (rng.standard_normal((16, 8)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(8) * 0.1).astype(np.float32)
    pad = 64  # weights start at a non-zero offset, to exercise `offset`
    blob = bytes(pad) + w.astype("<f4").tobytes() + b.astype("<f4").tobytes()
    model = external_graph("weights.bin", offset=pad, name="kiln_external_ok")

    def reference(x):
        return [np.maximum(x.astype(np.float64) @ w + b, 0.0)]

    def make_input(seed, batch):
        r = np.random.default_rng(seed)
        return [r.standard_normal((batch, 16)).astype(np.float32)]

    return model, blob, reference, make_input


# --------------------------------------------------------------------------
# test data + ORT reference

def have_ort():
    if shutil.which("node") is None:
        return False
    return bool(os.environ.get("KILN_ORT_NODE_MODULES")) or os.path.isdir(
        os.path.join(REPO, "bench", "node_modules", "onnxruntime-node"))


def run_ort(model_path, dataset_dirs):
    cmd = ["node", os.path.join(HERE, "ort_reference.js"), model_path] + dataset_dirs
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def write_test_data(model_dir, model, reference, make_input, datasets, use_ort):
    """datasets: list of (seed, batch). Writes test_data_set_K/input_*.pb and output_*.pb."""
    in_names = [i.name for i in model.graph.input
                if i.name not in {t.name for t in model.graph.initializer}]
    out_names = [o.name for o in model.graph.output]
    dirs, expected = [], []
    for k, (seed, batch) in enumerate(datasets):
        d = os.path.join(model_dir, "test_data_set_%d" % k)
        if use_ort and os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d, exist_ok=True)
        inputs = make_input(seed, batch)
        for i, (name, arr) in enumerate(zip(in_names, inputs)):
            save_tensor(arr, name, os.path.join(d, "input_%d.pb" % i))
        dirs.append(d)
        expected.append(reference(*inputs))
    if use_ort:
        run_ort(os.path.join(model_dir, "model.onnx"), dirs)
    # Cross-check ORT's outputs (fresh or checked in) against numpy.
    for d, ref in zip(dirs, expected):
        for i, (name, want) in enumerate(zip(out_names, ref)):
            path = os.path.join(d, "output_%d.pb" % i)
            if not os.path.exists(path):
                raise SystemExit("missing %s (run without --no-ort; needs bench/setup.sh)" % path)
            got, got_name = load_tensor(path)
            if got_name != name or got.dtype != np.float32 or got.shape != want.shape:
                raise SystemExit("%s: got %s %s%s, want %s float32%s" % (
                    path, got_name, got.dtype, got.shape, name, want.shape))
            err = np.abs(got.astype(np.float64) - want)
            tol = CHECK_ATOL + CHECK_RTOL * np.abs(want)
            if not np.all(err <= tol):
                raise SystemExit("%s: ORT and numpy disagree, max abs err %g" % (path, err.max()))
            print("  %s: ORT == numpy (max abs err %.2e)" % (os.path.relpath(path, HERE), err.max()))


# --------------------------------------------------------------------------
# bad inputs

def gen_bad(mlp_bytes, use_ort):
    bad = os.path.join(HERE, "bad")
    os.makedirs(bad, exist_ok=True)

    # A valid model cut in half.
    truncated = mlp_bytes[:len(mlp_bytes) // 2]
    write_bytes(os.path.join(bad, "truncated.onnx"), truncated)
    # Random bytes.
    random_bytes = np.random.default_rng(4004).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    write_bytes(os.path.join(bad, "random.onnx"), random_bytes)
    for name, data in (("truncated.onnx", truncated), ("random.onnx", random_bytes)):
        try:
            onnx.load_model_from_string(data)
        except Exception:
            continue
        # Protobuf accepted it; it must at least fail the checker.
        try:
            onnx.checker.check_model(onnx.load_model_from_string(data))
        except Exception:
            continue
        raise SystemExit("bad/%s unexpectedly parses as a valid model" % name)

    # A node of an op kiln does not support (Bernoulli, opset 15: random
    # sampling, which kiln does not implement).
    nodes = [
        helper.make_node("Abs", ["x"], ["r"], name="abs"),
        helper.make_node("Bernoulli", ["r"], ["y"], name="weird_node", seed=1.0),
    ]
    graph = helper.make_graph(
        nodes, "kiln_unsupported_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])],
    )
    model = make_model(graph)
    model.opset_import[0].version = 15
    save_model(model, os.path.join(bad, "unsupported_op.onnx"))

    # A node input that is neither a graph input, an initializer nor produced by a node.
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "missing_bias"], ["y"], name="add_missing"),
    ]
    graph = helper.make_graph(
        nodes, "kiln_missing_initializer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        initializer=[init("W", np.eye(4, dtype=np.float32))],
    )
    save_model(make_model(graph), os.path.join(bad, "missing_initializer.onnx"), check=False)

    # Range bounds that are not scalars. An empty `start` initializer crashed
    # kiln-compile (its value was read without a size check); a 2-element
    # `delta` was folded from its first element. Both are errors naming the
    # node and the input. The first is also test/fuzz/corpus/fuzz_model/range-empty-start.
    for name, start, delta in (("range_empty_start", np.zeros([0], np.float32), np.float32(1)),
                               ("range_vector_delta", np.float32(0), np.ones([2], np.float32))):
        graph = helper.make_graph(
            [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name=name + "_node")],
            "kiln_" + name, [],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])],
            initializer=[init("start", start), init("limit", np.float32(4)), init("delta", delta)],
        )
        save_model(make_model(graph), os.path.join(bad, name + ".onnx"), check=False)

    # External data whose location escapes the model directory. The target
    # exists (bad/secret.bin), so only a path check can stop the load.
    write_bytes(os.path.join(bad, "secret.bin"), b"SECRET!!" * 128)
    save_model(external_graph("../secret.bin"), os.path.join(bad, "external_escape", "model.onnx"),
               check=False)
    # Absolute location.
    save_model(external_graph("/etc/passwd", w_len=None),
               os.path.join(bad, "external_abs", "model.onnx"), check=False)
    # Location is a symlink pointing outside the model directory (target exists).
    write_bytes(os.path.join(bad, "outside.bin"), b"OUTSIDE!" * 128)
    link = os.path.join(bad, "external_symlink", "link.bin")
    save_model(external_graph("link.bin"), os.path.join(bad, "external_symlink", "model.onnx"),
               check=False)
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../outside.bin", link)
    # offset+length beyond the end of the file: weights.bin has 256 bytes,
    # W claims [128, 640).
    d = os.path.join(bad, "external_overflow")
    write_bytes(os.path.join(d, "weights.bin"), bytes(range(256)))
    save_model(external_graph("weights.bin", offset=128), os.path.join(d, "model.onnx"), check=False)

    # A valid external-data model, with test data and ORT reference outputs.
    model, blob, reference, make_input = build_external_ok()
    d = os.path.join(bad, "external_ok")
    write_bytes(os.path.join(d, "weights.bin"), blob)
    save_model(model, os.path.join(d, "model.onnx"), check=False)
    onnx.checker.check_model(os.path.join(d, "model.onnx"))
    loaded = onnx.load(os.path.join(d, "model.onnx"))  # resolves the external data
    w = numpy_helper.to_array(loaded.graph.initializer[0])
    assert w.shape == (16, 8)
    print("bad/external_ok")
    write_test_data(d, model, reference, make_input, [(3101, 1), (3102, 3)], use_ort)

    # Wrong inputs for the mlp (expects float[batch,64]).
    save_tensor(np.arange(64, dtype=np.int64).reshape(1, 64), "x",
                os.path.join(bad, "wrong_dtype_input.pb"))
    save_tensor(np.zeros((2, 65), dtype=np.float32), "x",
                os.path.join(bad, "wrong_shape_input.pb"))


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-ort", action="store_true",
                    help="do not run ONNX Runtime; keep (and check) the existing output_*.pb")
    args = ap.parse_args()
    use_ort = not args.no_ort
    if use_ort and not have_ort():
        raise SystemExit("onnxruntime-node not found: run bench/setup.sh (needs network) "
                         "or pass --no-ort to keep the checked-in reference outputs")

    mlp_bytes = None
    for name, build in (("mlp", build_mlp), ("cnn", build_cnn)):
        model, reference, make_input = build()
        d = os.path.join(HERE, name)
        path = os.path.join(d, "model.onnx")
        save_model(model, path)
        if name == "mlp":
            mlp_bytes = model.SerializeToString()
        nweights = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
        print("%s: %d weights (%d bytes)" % (name, nweights, os.path.getsize(path)))
        seeds = {"mlp": 100, "cnn": 200}[name]
        write_test_data(d, model, reference, make_input, [(seeds, 1), (seeds + 1, 7)], use_ort)

    gen_bad(mlp_bytes, use_ort)
    print("done")


if __name__ == "__main__":
    main()
