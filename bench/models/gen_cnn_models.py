#!/usr/bin/python3
"""Generate the vision and OCR benchmark models of bench/run.py (`vision:NAME`) with PyTorch.

Run with Debian's Python, which has onnx and numpy, after `bench/setup.sh --vision`
(Debian's python3-torch 1.13 and python3-torchvision 0.14):

    /usr/bin/python3 bench/models/gen_cnn_models.py                   # all, into bench/models/out/
    /usr/bin/python3 bench/models/gen_cnn_models.py --out DIR resnet18 ocr_det
    /usr/bin/python3 bench/models/gen_cnn_models.py --if-stale        # only missing/outdated ones
    /usr/bin/python3 bench/models/gen_cnn_models.py --no-reference    # no ONNX Runtime needed

Each model NAME gets DIR/cnn_NAME/model.onnx and DIR/cnn_NAME/test_data_set_0/{input_0.pb,
output_0.pb} (ONNX backend-test layout). Unlike gen_bench_models.py, whose graphs are
written node by node, these are exported by the exporter users use: torch.onnx.export
(opset 13, do_constant_folding=True) of the module in eval mode, batch 1, fp32, so
BatchNorm is folded into the convolutions and the graphs have exactly the forms
PyTorch emits (HardSwish as HardSigmoid + Mul, SiLU as Sigmoid + Mul, LayerNorm and
GELU decomposed, channel shuffle as Reshape/Transpose/Reshape, nearest Resize).

Weights are random with fixed seeds (torch.manual_seed), not trained: torchvision's
own initialisation (weights=None); then each BatchNorm's running statistics are
calibrated on a few random batches in training mode (so activations keep a sane
scale through 50+ layers) and its affine parameters drawn from U(0.8, 1.2) and
N(0, 0.1), so that the folded convolutions are not the identity scaling. The input
is N(0, 1) from a fixed numpy seed. The reference outputs are ONNX Runtime's
(test/models/ort_reference.js: onnxruntime-node, one thread, graph optimizations
disabled; bench/setup.sh), cross-checked against PyTorch's own output (the max
difference is printed). DIR/cnn_NAME/STAMP holds a hash of the generator sources and
the torch version; --if-stale skips a model whose STAMP matches. The files are 3-102 MB
and never committed (bench/.gitignore).

The models (params: trainable parameters of the torch module, BatchNorm included;
GMACs: multiply-accumulates of the Conv, ConvTranspose, Linear layers and attention
products, counted with forward hooks; batch 1):

  name                input        output         params   GMACs  ONNX MB
  resnet18            1x3x224x224  1x1000         11.69M   1.81    46.7
  resnet50            1x3x224x224  1x1000         25.56M   4.09   102.1
  mobilenet_v2        1x3x224x224  1x1000          3.50M   0.30    14.0
  mobilenet_v3_small  1x3x224x224  1x1000          2.54M   0.06    10.2
  efficientnet_b0     1x3x224x224  1x1000          5.29M   0.39    21.1
  shufflenet_v2_x1_0  1x3x224x224  1x1000          2.28M   0.15     9.1
  squeezenet1_1       1x3x224x224  1x1000          1.24M   0.35     5.0
  ocr_det             1x3x480x640  1x1x480x640     0.76M   1.71     3.1
  ocr_rec             1x3x48x320   1x80x6625       1.34M   0.14     5.4

(params and GMACs are printed by `--stats`, which exports nothing; the sizes are the
exported files'.)

ocr_det: a PP-OCR-style text detector. Backbone: PP-LCNet x0.75 (stem Conv 3x3/2 +
BN + HardSwish; depthwise-separable blocks: depthwise 3x3 or 5x5 Conv + BN +
HardSwish, [squeeze-and-excitation: GlobalAveragePool, 1x1 Conv, ReLU, 1x1 Conv,
HardSigmoid, Mul], pointwise 1x1 Conv + BN + HardSwish; stages of 1/2/2/6/2 blocks,
SE in the last stage) giving feature maps at strides 4/8/16/32 (48/96/192/384
channels). DB head: FPN (1x1 lateral Convs to 96 channels, nearest Resize x2 + Add
top-down, 3x3 Convs to 24 channels, nearest Resize to stride 4, Concat -> 96), then
Conv 3x3 + BN + ReLU, ConvTranspose 2x2/2 + BN + ReLU, ConvTranspose 2x2/2, Sigmoid
-> probability map [1,1,480,640]. The exporter folds no BatchNorm into a ConvTranspose,
so that one stays a BatchNormalization node, as in PaddleOCR's exported detectors.

ocr_rec: a PP-OCRv4-style CTC recognizer. Backbone: PP-LCNet x0.5 with strides that
take the height from 48 to 2 and the width from 320 to 80 (stem 2x2, then stages
with strides (2,2), (2,1), (2,1), (2,1): REC_CONFIG; SE in the last stage), AvgPool
(2,1) over the remaining height -> [1,256,1,80]. SVTR-style neck: 1x1 Conv + BN + HardSwish to 120
channels, the 80 columns as a sequence [1,80,120], 2 pre-LN transformer blocks
(LayerNorm, 8-head self-attention: one QKV Linear, Reshape/Transpose, MatMul,
scale, Softmax, MatMul, Linear; MLP 120 -> 240 -> 120 with GELU), final LayerNorm,
then the CTC head Linear 120 -> 6625 (weights N(0, 0.25^2): peaked probabilities, max
about 0.4, rather than a near-uniform 1/6625) and Softmax -> [1,80,6625].
"""

import argparse
import hashlib
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TEST_MODELS = os.path.join(REPO, "test", "models")
sys.path.insert(0, TEST_MODELS)
from gen_models import have_ort, load_tensor, run_ort, save_tensor  # noqa: E402

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
except ImportError as e:  # pragma: no cover
    raise SystemExit("gen_cnn_models.py: %s: needs Debian's python3-torch and python3-torchvision "
                     "(sh bench/setup.sh --vision) and Debian's /usr/bin/python3" % e)

OPSET = 13
DEFAULT_OUT = os.path.join(HERE, "out")
SOURCES = [os.path.abspath(__file__), os.path.join(TEST_MODELS, "gen_models.py"),
           os.path.join(TEST_MODELS, "ort_reference.js")]
SEED = 1234


def make_divisible(v, divisor=8, min_value=None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


# --- PP-LCNet blocks ---------------------------------------------------------

class ConvBNAct(nn.Sequential):
    def __init__(self, cin, cout, k, stride=1, groups=1, act=True):
        pad = (k - 1) // 2
        layers = [nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.Hardswish())
        super().__init__(*layers)


class SE(nn.Module):
    def __init__(self, c, reduction=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.conv1 = nn.Conv2d(c, c // reduction, 1)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c // reduction, c, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        s = self.gate(self.conv2(self.relu(self.conv1(self.pool(x)))))
        return x * s


class DepthwiseSeparable(nn.Module):
    def __init__(self, cin, cout, k, stride, use_se):
        super().__init__()
        self.dw = ConvBNAct(cin, cin, k, stride, groups=cin)
        self.se = SE(cin) if use_se else nn.Identity()
        self.pw = ConvBNAct(cin, cout, 1)

    def forward(self, x):
        return self.pw(self.se(self.dw(x)))


# PP-LCNet's NET_CONFIG: per stage, blocks of (kernel, in, out, stride, SE).
DET_CONFIG = [
    [(3, 16, 32, 1, False)],
    [(3, 32, 64, 2, False), (3, 64, 64, 1, False)],
    [(3, 64, 128, 2, False), (3, 128, 128, 1, False)],
    [(3, 128, 256, 2, False)] + [(5, 256, 256, 1, False)] * 5,
    [(5, 256, 512, 2, True), (5, 512, 512, 1, True)],
]
# The recognizer's: strides (h, w) that take 48x320 (after the 2x2 stem: 24x160) to 2x80.
REC_CONFIG = [
    [(3, 16, 32, 1, False)],
    [(3, 32, 64, (2, 2), False), (3, 64, 64, 1, False)],
    [(3, 64, 128, (2, 1), False), (3, 128, 128, 1, False)],
    [(3, 128, 256, (2, 1), False)] + [(5, 256, 256, 1, False)] * 5,
    [(5, 256, 512, (2, 1), True), (5, 512, 512, 1, True)],
]


class LCNet(nn.Module):
    def __init__(self, config, scale, return_stages=(1, 2, 3, 4)):
        super().__init__()
        self.stem = ConvBNAct(3, make_divisible(16 * scale), 3, 2)
        self.stages = nn.ModuleList()
        for blocks in config:
            self.stages.append(nn.Sequential(*[
                DepthwiseSeparable(make_divisible(cin * scale), make_divisible(cout * scale), k, s, se)
                for k, cin, cout, s, se in blocks]))
        self.return_stages = return_stages
        self.out_channels = [make_divisible(config[i][-1][2] * scale) for i in return_stages]

    def forward(self, x):
        x = self.stem(x)
        outs = []
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i in self.return_stages:
                outs.append(x)
        return outs


class DBHead(nn.Module):
    """DBFPN + DBHead (probability map only, as in inference)."""

    def __init__(self, in_channels, c=96):
        super().__init__()
        self.lateral = nn.ModuleList([nn.Conv2d(ci, c, 1, bias=False) for ci in in_channels])
        self.smooth = nn.ModuleList([nn.Conv2d(c, c // 4, 3, padding=1, bias=False)
                                     for _ in in_channels])
        q = c // 4
        self.conv = nn.Sequential(nn.Conv2d(c, q, 3, padding=1, bias=False), nn.BatchNorm2d(q),
                                  nn.ReLU())
        self.up1 = nn.Sequential(nn.ConvTranspose2d(q, q, 2, 2), nn.BatchNorm2d(q), nn.ReLU())
        self.up2 = nn.ConvTranspose2d(q, 1, 2, 2)

    def forward(self, feats):
        c2, c3, c4, c5 = [l(f) for l, f in zip(self.lateral, feats)]
        p4 = c4 + F.interpolate(c5, scale_factor=2.0, mode="nearest")
        p3 = c3 + F.interpolate(p4, scale_factor=2.0, mode="nearest")
        p2 = c2 + F.interpolate(p3, scale_factor=2.0, mode="nearest")
        s2, s3, s4, s5 = [s(p) for s, p in zip(self.smooth, (p2, p3, p4, c5))]
        s5 = F.interpolate(s5, scale_factor=8.0, mode="nearest")
        s4 = F.interpolate(s4, scale_factor=4.0, mode="nearest")
        s3 = F.interpolate(s3, scale_factor=2.0, mode="nearest")
        x = torch.cat([s5, s4, s3, s2], dim=1)
        return torch.sigmoid(self.up2(self.up1(self.conv(x))))


class OcrDet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = LCNet(DET_CONFIG, 0.75)
        self.head = DBHead(self.backbone.out_channels)

    def forward(self, x):
        return self.head(self.backbone(x))


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.macs = 0

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = torch.softmax((q @ k.transpose(-2, -1)) * (self.hd ** -0.5), dim=-1)
        self.macs = 2 * b * self.heads * n * n * self.hd
        return self.proj((a @ v).transpose(1, 2).reshape(b, n, c))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=2.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class OcrRec(nn.Module):
    def __init__(self, hidden=120, heads=8, depth=2, classes=6625):
        super().__init__()
        self.backbone = LCNet(REC_CONFIG, 0.5, return_stages=(4,))
        cin = self.backbone.out_channels[-1]
        self.pool = nn.AvgPool2d((2, 1))
        self.neck_in = ConvBNAct(cin, hidden, 1)
        self.blocks = nn.Sequential(*[Block(hidden, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, classes)
        # Peaked, not near-uniform, class probabilities (logits' std about 3), so that the
        # check compares something: a trained CTC head is confident on most columns.
        nn.init.normal_(self.head.weight, std=0.25)

    def forward(self, x):
        x = self.pool(self.backbone(x)[-1])          # [1, C, 1, W/4]
        x = self.neck_in(x).flatten(2).transpose(1, 2)  # [1, W/4, hidden]
        x = self.norm(self.blocks(x))
        return torch.softmax(self.head(x), dim=-1)


# --- the set -----------------------------------------------------------------

def tv(name):
    return lambda: getattr(torchvision.models, name)(weights=None)


MODELS = {
    "resnet18": (tv("resnet18"), (1, 3, 224, 224)),
    "resnet50": (tv("resnet50"), (1, 3, 224, 224)),
    "mobilenet_v2": (tv("mobilenet_v2"), (1, 3, 224, 224)),
    "mobilenet_v3_small": (tv("mobilenet_v3_small"), (1, 3, 224, 224)),
    "efficientnet_b0": (tv("efficientnet_b0"), (1, 3, 224, 224)),
    "shufflenet_v2_x1_0": (tv("shufflenet_v2_x1_0"), (1, 3, 224, 224)),
    "squeezenet1_1": (tv("squeezenet1_1"), (1, 3, 224, 224)),
    "ocr_det": (OcrDet, (1, 3, 480, 640)),
    "ocr_rec": (OcrRec, (1, 3, 48, 320)),
}


def build(name):
    """The module in eval mode (random weights, calibrated BatchNorm) and its input."""
    ctor, shape = MODELS[name]
    torch.manual_seed(SEED)
    model = ctor()
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if bns:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None          # cumulative average over the calibration batches
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn((2,) + tuple(shape[1:])))
        with torch.no_grad():
            for m in bns:
                m.weight.uniform_(0.8, 1.2)
                m.bias.normal_(0.0, 0.1)
    model.eval()
    x = np.random.default_rng(SEED).standard_normal(shape).astype(np.float32)
    return model, x


def count(model, x):
    """(params, MACs) of one forward."""
    macs = [0]

    def hook(m, inp, out):
        if isinstance(m, nn.Conv2d):
            macs[0] += out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, nn.ConvTranspose2d):
            macs[0] += inp[0].numel() * (m.out_channels // m.groups) * m.kernel_size[0] * \
                m.kernel_size[1]
        elif isinstance(m, nn.Linear):
            macs[0] += out.numel() * m.in_features

    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear))]
    with torch.no_grad():
        model(torch.from_numpy(x))
    for h in hs:
        h.remove()
    macs[0] += sum(m.macs for m in model.modules() if isinstance(m, Attention))
    return sum(p.numel() for p in model.parameters()), macs[0]


def stamp():
    h = hashlib.sha256()
    for path in SOURCES:
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(("torch %s torchvision %s" % (torch.__version__, torchvision.__version__)).encode())
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
    import onnx
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    model, x = build(name)
    params, macs = count(model, x)
    path = os.path.join(d, "model.onnx")
    with torch.no_grad():
        want_out = model(torch.from_numpy(x)).numpy()
        torch.onnx.export(model, (torch.from_numpy(x),), path, opset_version=OPSET,
                          do_constant_folding=True, input_names=["input"],
                          output_names=["output"], training=torch.onnx.TrainingMode.EVAL)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    ds = os.path.join(d, "test_data_set_0")
    save_tensor(x, m.graph.input[0].name, os.path.join(ds, "input_0.pb"))
    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print("%s: %.2fM params, %.3f GMACs, %d nodes, %.1f MB" % (
        name, params / 1e6, macs / 1e9, len(m.graph.node), os.path.getsize(path) / 1e6))
    print("  ops: " + ", ".join("%s x%d" % kv for kv in sorted(ops.items())))
    if not reference:
        return
    run_ort(path, [ds])
    out, oname = load_tensor(os.path.join(ds, "output_0.pb"))
    std = float(out.std())
    if oname != m.graph.output[0].name or not np.all(np.isfinite(out)) or \
            std <= 1e-4 * float(np.abs(out).max()):
        raise SystemExit("%s: ORT output %s is degenerate (name %s, std %g)" % (
            name, m.graph.output[0].name, oname, float(np.nan_to_num(out).std())))
    print("  ORT %s%s mean %.3g std %.3g max|x| %.3g; max |torch - ORT| %.2e" % (
        oname, list(out.shape), out.mean(), std, np.abs(out).max(),
        float(np.abs(out - want_out).max())))
    with open(os.path.join(d, "STAMP"), "w") as f:
        f.write(want + "\n")


def stats(names):
    print("  %-18s  %-12s %-14s %7s  %6s" % ("name", "input", "output", "params", "GMACs"))
    for n in names:
        model, x = build(n)
        params, macs = count(model, x)
        with torch.no_grad():
            y = model(torch.from_numpy(x))
        print("  %-18s  %-12s %-14s %6.2fM  %6.2f" % (
            n, "x".join(map(str, x.shape)), "x".join(map(str, y.shape)), params / 1e6, macs / 1e9))


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
    ap.add_argument("--stats", action="store_true",
                    help="print params and GMACs per model and export nothing")
    args = ap.parse_args()
    names = args.names or list(MODELS)
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %r (have %s)" % (n, ", ".join(MODELS)))
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    if args.stats:
        stats(names)
        return
    want = stamp()
    todo = [n for n in names
            if not (args.if_stale and up_to_date(os.path.join(args.out, "cnn_" + n), want))]
    if todo and not args.no_reference and not have_ort():
        raise SystemExit("gen_cnn_models.py: onnxruntime-node not found: run bench/setup.sh "
                         "(needs network) for the reference outputs")
    for n in names:
        d = os.path.join(args.out, "cnn_" + n)
        if n in todo:
            generate(n, d, want, reference=not args.no_reference)
        else:
            print("%s: up to date (%s)" % (n, d))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
