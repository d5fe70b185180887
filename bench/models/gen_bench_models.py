#!/usr/bin/python3
"""Generate the benchmark models of bench/run.py (fixed seeds, batch 1, fp32, opset 17).

Run with Debian's Python, which has onnx and numpy:

    /usr/bin/python3 bench/models/gen_bench_models.py                 # all, into bench/models/out/
    /usr/bin/python3 bench/models/gen_bench_models.py --out DIR resnet
    /usr/bin/python3 bench/models/gen_bench_models.py --if-stale      # only missing/outdated ones
    /usr/bin/python3 bench/models/gen_bench_models.py --no-reference --out DIR   # models and inputs
                                              # only, no ONNX Runtime needed (compile checks, CI)

Each model NAME gets DIR/NAME/model.onnx and DIR/NAME/test_data_set_0/{input_K.pb,
output_K.pb} (ONNX backend-test layout). The outputs are ONNX Runtime's
(test/models/ort_reference.js: onnxruntime-node, one thread, graph optimizations
disabled; needs bench/setup.sh once), so `kiln-run x.kiln --test-data-dir DIR`
checks kiln against ORT. DIR/NAME/STAMP holds a hash of the generator sources;
--if-stale skips a model whose STAMP matches. The models have 11-60 MB of weights
each, so they are generated at bench time and never committed (bench/.gitignore).

The graphs imitate what exporters emit (PyTorch's torch.onnx.export of Hugging
Face / torchvision modules), because kiln's graph passes are meant to recognise
these forms:

  mlp     x[1,768] -> MatMul+Add+Relu (768->3072) -> Gemm(transB=1)+Relu (3072->3072)
          -> MatMul+Add+Relu (3072->768) -> Gemm(transB=1) (768->1000) -> logits[1,1000].
  resnet  image[1,3,224,224]: ResNet-18 layout with widths 32/64/128/256, BatchNorm
          folded into the convolutions (Conv with bias, as torch.onnx.export does in
          eval mode): stem Conv 7x7/2 + Relu + MaxPool 3x3/2, 4 stages x 2 basic
          blocks (Conv3x3+Relu, Conv3x3, Add skip, Relu), the first block of stages
          2-4 downsampling with a stride-2 Conv3x3 and a 1x1/2 projection Conv on the
          skip; 20 Convs. GlobalAveragePool, Flatten, Gemm(transB=1) -> logits[1,1000].
  bert    input_ids[1,128] int64, attention_mask[1,128] int64 (last 16 positions 0)
          -> last_hidden_state[1,128,256]. BERT encoder (post-LN), hidden 256, 4 heads
          of 64, FFN 1024, 4 layers, vocab 4096. Embeddings: Gather(word) +
          Gather(position, constant ids), LayerNorm. Mask bias as HF:
          Unsqueeze(axes 1,2), Cast, Sub(1, m), Mul(-10000). LayerNorm decomposed:
          ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta.
          GELU erf form: Div(x, sqrt 2), Erf, Add 1, Mul(x, .), Mul 0.5. Attention:
          MatMul+Add per Q/K/V, Reshape [0,0,4,64], Q/V Transpose [0,2,1,3], K one
          Transpose [0,2,3,1] (PyTorch folds permute + transpose(-1,-2) into one),
          MatMul(Q, K^T), Div 8, Add mask bias, Softmax(-1), MatMul V, Transpose
          [0,2,1,3], Reshape [0,0,256].
  gpt     input_ids[1,128] int64 -> logits[1,128,4096]. GPT-2 decoder forward without
          KV cache (pre-LN), hidden 256, 4 heads of 64, FFN 1024, 4 layers, vocab 4096.
          Gather(wte) + Gather(wpe, constant positions); LayerNormalization op; fused
          QKV MatMul+Add then Split; K as Transpose [0,2,1,3] then Transpose
          [0,1,3,2] (two nodes, as when present.key is also an output); MatMul(Q, K^T),
          Div 8, Where(causal bool constant [1,1,128,128], s, float32 min), Softmax,
          MatMul V; tanh GELU as HF's gelu_new: Mul(x, 0.5), Pow(x, 3), Mul 0.044715,
          Add x, Mul sqrt(2/pi), Tanh, Add 1, Mul; final LayerNormalization, untied
          head MatMul [256,4096].
"""

import argparse
import hashlib
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TEST_MODELS = os.path.join(REPO, "test", "models")
sys.path.insert(0, TEST_MODELS)
# Helpers shared with the test-model generators.
from gen_models import have_ort, he, load_tensor, run_ort, save_model, save_tensor  # noqa: E402
from gen_lm import Graph, Weights  # noqa: E402

OPSET = 17
IR_VERSION = 8
PRODUCER = "kiln bench/models/gen_bench_models.py"
DEFAULT_OUT = os.path.join(HERE, "out")
SOURCES = [os.path.abspath(__file__), os.path.join(TEST_MODELS, "gen_models.py"),
           os.path.join(TEST_MODELS, "gen_lm.py"), os.path.join(TEST_MODELS, "ort_reference.js")]

SEQ = 128
HIDDEN = 256
HEADS = 4
HEAD_DIM = HIDDEN // HEADS
FFN = 1024
LAYERS = 4
VOCAB = 4096
LN_EPS = 1e-12          # BERT's
GPT_LN_EPS = 1e-5       # GPT-2's
FLOAT_MIN = float(np.finfo(np.float32).min)


def finish(g, W, name, inputs, outputs):
    graph = helper.make_graph(g.nodes, name, inputs, outputs,
                              initializer=W.protos + g.const_protos)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name=PRODUCER, producer_version="1")
    model.ir_version = IR_VERSION
    return model


def linear(g, W, p, x, fan_in, fan_out, std=None):
    """torch.nn.Linear as exported: MatMul(x, W^T stored [in,out]) then Add(bias)."""
    w = W.normal(p + ".weight", (fan_in, fan_out), std if std is not None else 1.0 / np.sqrt(fan_in))
    b = W.normal(p + ".bias", (fan_out,), 0.05)
    mm = g.op("MatMul", [x, w], "/" + p + "/MatMul")
    return g.op("Add", [b, mm], "/" + p + "/Add")


# --------------------------------------------------------------------------

def build_mlp():
    W = Weights(7101)
    g = Graph()
    rng = W.rng
    x = linear(g, W, "fc1", "x", 768, 3072, std=np.sqrt(2.0 / 768))
    x = g.op("Relu", [x], "/relu1/Relu")
    w2 = W.add("fc2.weight", he(rng, (3072, 3072), 3072))          # Gemm transB=1: [out,in]
    b2 = W.normal("fc2.bias", (3072,), 0.05)
    x = g.op("Gemm", [x, w2, b2], "/fc2/Gemm", transB=1)
    x = g.op("Relu", [x], "/relu2/Relu")
    x = linear(g, W, "fc3", x, 3072, 768, std=np.sqrt(2.0 / 3072))
    x = g.op("Relu", [x], "/relu3/Relu")
    w4 = W.add("fc4.weight", he(rng, (1000, 768), 768) * np.float32(0.5))
    b4 = W.normal("fc4.bias", (1000,), 0.05)
    g.op("Gemm", [x, w4, b4], "/fc4/Gemm", outputs=["logits"], transB=1)
    model = finish(g, W, "bench_mlp",
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 768])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])])
    r = np.random.default_rng(7102)
    return model, [r.standard_normal((1, 768)).astype(np.float32)]


def build_resnet():
    W = Weights(7201)
    g = Graph()
    rng = W.rng
    n_conv = [0]

    def conv(p, x, cin, cout, k, stride, gain=1.0):
        n_conv[0] += 1
        w = W.add(p + ".weight", he(rng, (cout, cin, k, k), cin * k * k) * np.float32(gain))
        b = W.normal(p + ".bias", (cout,), 0.05)       # BatchNorm folded in
        pad = k // 2
        return g.op("Conv", [x, w, b], "/" + p + "/Conv", kernel_shape=[k, k],
                    strides=[stride, stride], pads=[pad] * 4, dilations=[1, 1], group=1)

    x = conv("conv1", "image", 3, 32, 7, 2)
    x = g.op("Relu", [x], "/relu/Relu")
    x = g.op("MaxPool", [x], "/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1], ceil_mode=0)
    cin = 32
    for stage, cout in enumerate((32, 64, 128, 256), start=1):
        for block in range(2):
            p = "layer%d.%d" % (stage, block)
            stride = 2 if stage > 1 and block == 0 else 1
            h = conv(p + ".conv1", x, cin, cout, 3, stride)
            h = g.op("Relu", [h], "/" + p + "/relu/Relu")
            h = conv(p + ".conv2", h, cout, cout, 3, 1, gain=0.5)
            skip = x
            if stride != 1 or cin != cout:
                skip = conv(p + ".downsample.0", x, cin, cout, 1, stride)
            x = g.op("Add", [h, skip], "/" + p + "/Add")
            x = g.op("Relu", [x], "/" + p + "/relu_1/Relu")
            cin = cout
    x = g.op("GlobalAveragePool", [x], "/avgpool/GlobalAveragePool")
    x = g.op("Flatten", [x], "/Flatten", axis=1)
    fw = W.add("fc.weight", he(rng, (1000, 256), 256))
    fb = W.normal("fc.bias", (1000,), 0.05)
    g.op("Gemm", [x, fw, fb], "/fc/Gemm", outputs=["logits"], alpha=1.0, beta=1.0, transB=1)
    assert n_conv[0] >= 10, n_conv[0]
    model = finish(g, W, "bench_resnet",
                   [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 224, 224])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])])
    r = np.random.default_rng(7202)
    return model, [r.uniform(-1.0, 1.0, (1, 3, 224, 224)).astype(np.float32)]


def layer_norm_decomposed(g, W, p, x, outputs=None):
    """What torch.onnx.export emits for nn.LayerNorm below opset 17."""
    gamma = W.normal(p + ".weight", (HIDDEN,), 0.1, 1.0)
    beta = W.normal(p + ".bias", (HIDDEN,), 0.1)
    q = "/" + p
    mean = g.op("ReduceMean", [x], q + "/ReduceMean", axes=[-1], keepdims=1)
    d = g.op("Sub", [x, mean], q + "/Sub")
    sq = g.op("Pow", [d, g.f32(2.0)], q + "/Pow")
    var = g.op("ReduceMean", [sq], q + "/ReduceMean_1", axes=[-1], keepdims=1)
    var = g.op("Add", [var, g.f32(LN_EPS)], q + "/Add")
    std = g.op("Sqrt", [var], q + "/Sqrt")
    n = g.op("Div", [d, std], q + "/Div")
    n = g.op("Mul", [n, gamma], q + "/Mul")
    return g.op("Add", [n, beta], q + "/Add_1", outputs=outputs)


def heads(g, q, x):
    return g.op("Reshape", [x, g.i64([0, 0, HEADS, HEAD_DIM])], q + "/Reshape")


def merge_heads(g, q, x):
    x = g.op("Transpose", [x], q + "/Transpose_merge", perm=[0, 2, 1, 3])
    return g.op("Reshape", [x, g.i64([0, 0, HIDDEN])], q + "/Reshape_merge")


def build_bert():
    W = Weights(7301)
    g = Graph()
    word = W.normal("embeddings.word_embeddings.weight", (VOCAB, HIDDEN), 1.0)
    pos = W.normal("embeddings.position_embeddings.weight", (512, HIDDEN), 0.5)
    pos_ids = g.i64(np.arange(SEQ, dtype=np.int64).reshape(1, SEQ))
    e = g.op("Gather", [word, "input_ids"], "/embeddings/word_embeddings/Gather", axis=0)
    pe = g.op("Gather", [pos, pos_ids], "/embeddings/position_embeddings/Gather", axis=0)
    x = g.op("Add", [e, pe], "/embeddings/Add")
    x = layer_norm_decomposed(g, W, "embeddings.LayerNorm", x)
    # Extended attention mask: (1 - mask[:, None, None, :]) * -10000.
    m = g.op("Unsqueeze", ["attention_mask", g.i64([1])], "/Unsqueeze")
    m = g.op("Unsqueeze", [m, g.i64([2])], "/Unsqueeze_1")
    m = g.op("Cast", [m], "/Cast", to=TensorProto.FLOAT)
    m = g.op("Sub", [g.f32(1.0), m], "/Sub")
    bias = g.op("Mul", [m, g.f32(-10000.0)], "/Mul")
    for i in range(LAYERS):
        p = "encoder.layer.%d" % i
        a = p + ".attention.self"
        q = linear(g, W, a + ".query", x, HIDDEN, HIDDEN)
        k = linear(g, W, a + ".key", x, HIDDEN, HIDDEN)
        v = linear(g, W, a + ".value", x, HIDDEN, HIDDEN)
        qa = "/" + a
        q = g.op("Transpose", [heads(g, qa + "/q", q)], qa + "/Transpose", perm=[0, 2, 1, 3])
        kt = g.op("Transpose", [heads(g, qa + "/k", k)], qa + "/Transpose_1", perm=[0, 2, 3, 1])
        v = g.op("Transpose", [heads(g, qa + "/v", v)], qa + "/Transpose_2", perm=[0, 2, 1, 3])
        s = g.op("MatMul", [q, kt], qa + "/MatMul")
        s = g.op("Div", [s, g.f32(np.sqrt(HEAD_DIM))], qa + "/Div")
        s = g.op("Add", [s, bias], qa + "/Add")
        s = g.op("Softmax", [s], qa + "/Softmax", axis=-1)
        o = merge_heads(g, qa, g.op("MatMul", [s, v], qa + "/MatMul_1"))
        o = linear(g, W, p + ".attention.output.dense", o, HIDDEN, HIDDEN)
        o = g.op("Add", [o, x], "/" + p + "/attention/output/Add")
        x = layer_norm_decomposed(g, W, p + ".attention.output.LayerNorm", o)
        f = linear(g, W, p + ".intermediate.dense", x, HIDDEN, FFN)
        q = "/" + p + "/intermediate/intermediate_act_fn"
        erf = g.op("Erf", [g.op("Div", [f, g.f32(1.4142135381698608)], q + "/Div")], q + "/Erf")
        erf = g.op("Add", [erf, g.f32(1.0)], q + "/Add")
        f = g.op("Mul", [g.op("Mul", [f, erf], q + "/Mul"), g.f32(0.5)], q + "/Mul_1")
        f = linear(g, W, p + ".output.dense", f, FFN, HIDDEN)
        f = g.op("Add", [f, x], "/" + p + "/output/Add")
        x = layer_norm_decomposed(g, W, p + ".output.LayerNorm", f,
                                  outputs=["last_hidden_state"] if i == LAYERS - 1 else None)
    model = finish(g, W, "bench_bert",
                   [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, SEQ]),
                    helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, SEQ])],
                   [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                                  [1, SEQ, HIDDEN])])
    r = np.random.default_rng(7302)
    ids = r.integers(0, VOCAB, (1, SEQ), dtype=np.int64)
    mask = np.ones((1, SEQ), dtype=np.int64)
    mask[:, SEQ - 16:] = 0
    return model, [ids, mask]


def build_gpt():
    W = Weights(7401)
    g = Graph()
    out_std = 1.0 / np.sqrt(2.0 * LAYERS)

    def ln(p, x):
        gamma = W.normal(p + ".weight", (HIDDEN,), 0.1, 1.0)
        beta = W.normal(p + ".bias", (HIDDEN,), 0.1)
        return g.op("LayerNormalization", [x, gamma, beta], "/" + p + "/LayerNormalization",
                    axis=-1, epsilon=GPT_LN_EPS)

    wte = W.normal("transformer.wte.weight", (VOCAB, HIDDEN), 0.5)
    wpe = W.normal("transformer.wpe.weight", (SEQ, HIDDEN), 0.1)
    causal = g.const(np.tril(np.ones((SEQ, SEQ), dtype=bool)).reshape(1, 1, SEQ, SEQ), np.bool_)
    pos_ids = g.i64(np.arange(SEQ, dtype=np.int64).reshape(1, SEQ))
    x = g.op("Add", [g.op("Gather", [wte, "input_ids"], "/transformer/wte/Gather", axis=0),
                     g.op("Gather", [wpe, pos_ids], "/transformer/wpe/Gather", axis=0)],
             "/transformer/Add")
    for i in range(LAYERS):
        p = "transformer.h.%d" % i
        qa = "/" + p + "/attn"
        a = ln(p + ".ln_1", x)
        qkv = linear(g, W, p + ".attn.c_attn", a, HIDDEN, 3 * HIDDEN)
        q, k, v = g.op("Split", [qkv, g.i64([HIDDEN] * 3)], qa + "/Split", n_out=3, axis=2)
        q = g.op("Transpose", [heads(g, qa + "/q", q)], qa + "/Transpose", perm=[0, 2, 1, 3])
        k = g.op("Transpose", [heads(g, qa + "/k", k)], qa + "/Transpose_1", perm=[0, 2, 1, 3])
        v = g.op("Transpose", [heads(g, qa + "/v", v)], qa + "/Transpose_2", perm=[0, 2, 1, 3])
        kt = g.op("Transpose", [k], qa + "/Transpose_3", perm=[0, 1, 3, 2])
        s = g.op("MatMul", [q, kt], qa + "/MatMul")
        s = g.op("Div", [s, g.f32(np.sqrt(HEAD_DIM))], qa + "/Div")
        s = g.op("Where", [causal, s, g.f32(FLOAT_MIN)], qa + "/Where")
        s = g.op("Softmax", [s], qa + "/Softmax", axis=-1)
        o = merge_heads(g, qa, g.op("MatMul", [s, v], qa + "/MatMul_1"))
        o = linear(g, W, p + ".attn.c_proj", o, HIDDEN, HIDDEN, std=out_std / np.sqrt(HIDDEN))
        x = g.op("Add", [x, o], "/" + p + "/Add")
        m = ln(p + ".ln_2", x)
        m = linear(g, W, p + ".mlp.c_fc", m, HIDDEN, FFN)
        q = "/" + p + "/mlp/act"
        half = g.op("Mul", [m, g.f32(0.5)], q + "/Mul")
        cube = g.op("Pow", [m, g.f32(3.0)], q + "/Pow")
        t = g.op("Mul", [cube, g.f32(0.044715)], q + "/Mul_1")
        t = g.op("Add", [m, t], q + "/Add")
        t = g.op("Mul", [t, g.f32(0.7978845608028654)], q + "/Mul_2")
        t = g.op("Tanh", [t], q + "/Tanh")
        t = g.op("Add", [t, g.f32(1.0)], q + "/Add_1")
        m = g.op("Mul", [half, t], q + "/Mul_3")
        m = linear(g, W, p + ".mlp.c_proj", m, FFN, HIDDEN, std=out_std / np.sqrt(FFN))
        x = g.op("Add", [x, m], "/" + p + "/Add_1")
    x = ln("transformer.ln_f", x)
    head = W.normal("lm_head.weight", (HIDDEN, VOCAB), 1.0 / np.sqrt(HIDDEN))
    g.op("MatMul", [x, head], "/lm_head/MatMul", outputs=["logits"])
    model = finish(g, W, "bench_gpt",
                   [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, SEQ])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, SEQ, VOCAB])])
    r = np.random.default_rng(7402)
    return model, [r.integers(0, VOCAB, (1, SEQ), dtype=np.int64)]


MODELS = {"mlp": build_mlp, "resnet": build_resnet, "bert": build_bert, "gpt": build_gpt}


# --------------------------------------------------------------------------

def stamp():
    h = hashlib.sha256()
    for path in SOURCES:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def up_to_date(d, want):
    try:
        with open(os.path.join(d, "STAMP")) as f:
            have = f.read().strip()
    except OSError:
        return False
    return have == want and os.path.isfile(os.path.join(d, "model.onnx")) and \
        os.path.isfile(os.path.join(d, "test_data_set_0", "output_0.pb"))


def generate(name, d, want, reference=True):
    if os.path.isdir(d):
        shutil.rmtree(d)
    model, inputs = MODELS[name]()
    path = os.path.join(d, "model.onnx")
    save_model(model, path)
    ds = os.path.join(d, "test_data_set_0")
    in_names = [i.name for i in model.graph.input]
    for k, (iname, arr) in enumerate(zip(in_names, inputs)):
        save_tensor(arr, iname, os.path.join(ds, "input_%d.pb" % k))
    if not reference:
        print("%s: %s (no reference outputs)" % (name, path))
        return
    run_ort(path, [ds])
    nweights = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    for k, o in enumerate(model.graph.output):
        out, oname = load_tensor(os.path.join(ds, "output_%d.pb" % k))
        # A reference worth checking against: finite and not (nearly) constant.
        if oname != o.name or not np.all(np.isfinite(out)) or float(out.std()) < 1e-2:
            raise SystemExit("%s: ORT output %s is degenerate (name %s, std %g)" % (
                name, o.name, oname, float(np.nan_to_num(out).std())))
        print("%s: %d nodes, %d weights (%.1f MB); ORT %s%s mean %.3g std %.3g max|x| %.3g" % (
            name, len(model.graph.node), nweights, os.path.getsize(path) / 1e6, oname,
            list(out.shape), out.mean(), out.std(), np.abs(out).max()))
    print("  ops: " + ", ".join("%s x%d" % kv for kv in sorted(ops.items())))
    with open(os.path.join(d, "STAMP"), "w") as f:
        f.write(want + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="models (default: all of %s)" % ", ".join(MODELS))
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default bench/models/out)")
    ap.add_argument("--if-stale", action="store_true",
                    help="skip models whose files exist and whose STAMP matches the sources")
    ap.add_argument("--no-reference", action="store_true",
                    help="write the models and inputs without ONNX Runtime's outputs (and no STAMP)")
    args = ap.parse_args()
    names = args.names or list(MODELS)
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %r (have %s)" % (n, ", ".join(MODELS)))
    want = stamp()
    todo = [n for n in names if not (args.if_stale and up_to_date(os.path.join(args.out, n), want))]
    if todo and not args.no_reference and not have_ort():
        raise SystemExit("gen_bench_models.py: onnxruntime-node not found: run bench/setup.sh "
                         "(needs network) for the reference outputs")
    for n in names:
        d = os.path.join(args.out, n)
        if n in todo:
            generate(n, d, want, reference=not args.no_reference)
        else:
            print("%s: up to date (%s)" % (n, d))


if __name__ == "__main__":
    main()
