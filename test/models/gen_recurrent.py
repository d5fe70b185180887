#!/usr/bin/python3
"""Writes single-node tests of RNN, GRU, LSTM and the ai.onnx.preview.training
optimizers for what the ONNX suite leaves out: both directions, layout 1,
per-batch sequence_lens (a reverse pass starts at each sequence's own last
step), linear_before_reset, input_forget, clip, activations with alpha/beta,
and optimizer updates after the first (T > 0). Expected outputs come from the
plain-Python references below (the ONNX op docs' formulas, in float64 over
float32 inputs), not from kiln or ONNX Runtime. Needs only protoc and
/usr/include/onnx/onnx.proto (no onnx or numpy package); fixed seed.

Usage: gen_recurrent.py OUT_DIR   (test/models/recurrent)"""
import math, os, random, struct, subprocess, sys

PROTO = "/usr/include/onnx/onnx.proto"
rng = random.Random(11)


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def rand(*shape, scale=0.5):
    n = 1
    for d in shape:
        n *= d
    return [f32(rng.uniform(-scale, scale)) for _ in range(n)], list(shape)


def encode(kind, text, path):
    with open(path, "wb") as f:
        subprocess.run(["protoc", "-I/usr/include/onnx", "--encode=onnx." + kind, PROTO], input=text.encode(),
                       stdout=f, check=True)


def tensor_text(name, flat, shape, dtype):
    field = {1: "float_data", 6: "int32_data", 7: "int64_data"}[dtype]
    vals = " ".join(f"{field}: {repr(v)}" for v in flat)
    return " ".join(f"dims: {d}" for d in shape) + f" data_type: {dtype} {vals} name: \"{name}\""


def value_info(name, shape, dtype):
    dims = " ".join(f"dim {{ dim_value: {d} }}" for d in shape)
    return f'{{ name: "{name}" type {{ tensor_type {{ elem_type: {dtype} shape {{ {dims} }} }} }} }}'


def attr_text(k, v):
    if isinstance(v, str):
        return f'attribute {{ name: "{k}" s: "{v}" type: STRING }}'
    if isinstance(v, float):
        return f'attribute {{ name: "{k}" f: {v} type: FLOAT }}'
    if isinstance(v, int):
        return f'attribute {{ name: "{k}" i: {v} type: INT }}'
    if all(isinstance(x, str) for x in v):
        return f'attribute {{ name: "{k}" ' + " ".join(f'strings: "{x}"' for x in v) + " type: STRINGS }"
    return f'attribute {{ name: "{k}" ' + " ".join(f"floats: {x}" for x in v) + " type: FLOATS }"


def save(root, name, op, inputs, outputs, attrs, domain=""):
    """inputs: list of (name, flat, shape, dtype) with name '' for omitted; outputs likewise."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    node = "node { " + " ".join(f'input: "{n}"' for n, *_ in inputs) + " " + \
        " ".join(f'output: "{n}"' for n, *_ in outputs) + f' op_type: "{op}" domain: "{domain}" ' + \
        " ".join(attr_text(k, v) for k, v in attrs.items()) + " }"
    opset = 1 if domain else 14
    graph = f'ir_version: 8 opset_import {{ domain: "{domain}" version: {opset} }} graph {{ name: "{name}" {node} ' + \
        " ".join("input " + value_info(n, s, t) for n, _, s, t in inputs if n) + " " + \
        " ".join("output " + value_info(n, s, t) for n, _, s, t in outputs if n) + " }"
    encode("ModelProto", graph, os.path.join(d, "model.onnx"))
    k = 0
    for n, flat, s, t in inputs:
        if n:
            encode("TensorProto", tensor_text(n, flat, s, t), os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
            k += 1
    k = 0
    for n, flat, s, t in outputs:
        if n:
            encode("TensorProto", tensor_text(n, flat, s, t), os.path.join(d, "test_data_set_0", f"output_{k}.pb"))
            k += 1
    print(d)


ACT = {
    "Sigmoid": lambda x, a, b: 1 / (1 + math.exp(-x)),
    "Tanh": lambda x, a, b: math.tanh(x),
    "Relu": lambda x, a, b: max(x, 0.0),
    "LeakyRelu": lambda x, a, b: x if x >= 0 else a * x,
    "HardSigmoid": lambda x, a, b: max(0.0, min(1.0, a * x + b)),
    "Affine": lambda x, a, b: a * x + b,
    "ScaledTanh": lambda x, a, b: a * math.tanh(b * x),
    "Elu": lambda x, a, b: x if x >= 0 else a * (math.exp(x) - 1),
    "Softsign": lambda x, a, b: x / (1 + abs(x)),
}


def matvec(m, rows, cols, row0, v):
    """rows [row0, row0+rows) of the [*, cols] matrix m times v."""
    return [sum(m[(row0 + r) * cols + k] * v[k] for k in range(cols)) for r in range(rows)]


def reference(cell, x, xs, w, r, b, lens, h0, c0, p, hidden, direction, layout, acts, clip, lbr, input_forget):
    """Returns Y [T, D, B, H] and Y_h, Y_c [D, B, H] (flat, layout 0) per the spec: each batch entry runs over
    its own length, reverse from its last valid step; Y is 0 past the length."""
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[cell]
    if layout == 1:
        B, T, I = xs
        xat = lambda t, n: x[(n * T + t) * I:(n * T + t + 1) * I]
    else:
        T, B, I = xs
        xat = lambda t, n: x[(t * B + n) * I:(t * B + n + 1) * I]
    D = 2 if direction == "bidirectional" else 1
    H = hidden
    state_at = lambda s, d, n: (s[(d * B + n) * H:(d * B + n + 1) * H] if layout == 0 else
                                s[(n * D + d) * H:(n * D + d + 1) * H]) if s else [0.0] * H
    cl = (lambda v: max(-clip, min(clip, v))) if clip is not None else (lambda v: v)
    Y = [[[[0.0] * H for _ in range(B)] for _ in range(D)] for _ in range(T)]
    YH = [[None] * B for _ in range(D)]
    YC = [[None] * B for _ in range(D)]
    for d in range(D):
        rev = direction == "reverse" or d == 1
        A = acts[d * len(acts) // D:(d + 1) * len(acts) // D]
        fn = lambda k, v: ACT[A[k][0]](v, A[k][1], A[k][2])
        wd = w[d * G * H * I:(d + 1) * G * H * I]
        rd = r[d * G * H * H:(d + 1) * G * H * H]
        bd = b[d * 2 * G * H:(d + 1) * 2 * G * H] if b else [0.0] * (2 * G * H)
        pd = p[d * 3 * H:(d + 1) * 3 * H] if p else [0.0] * (3 * H)
        for n in range(B):
            L = lens[n] if lens else T
            h = state_at(h0, d, n)
            c = state_at(c0, d, n)
            order = list(range(L))[::-1] if rev else list(range(L))
            for t in order:
                xv = xat(t, n)
                wx = [a + bb for a, bb in zip(matvec(wd, G * H, I, 0, xv), bd[:G * H])]
                rh = [a + bb for a, bb in zip(matvec(rd, G * H, H, 0, h), bd[G * H:])]
                if cell == "RNN":
                    h = [fn(0, cl(wx[j] + rh[j])) for j in range(H)]
                elif cell == "LSTM":
                    g = [wx[j] + rh[j] for j in range(4 * H)]
                    i = [fn(0, cl(g[j] + pd[j] * c[j])) for j in range(H)]
                    f = [1 - i[j] for j in range(H)] if input_forget else \
                        [fn(0, cl(g[2 * H + j] + pd[2 * H + j] * c[j])) for j in range(H)]
                    cc = [fn(1, cl(g[3 * H + j])) for j in range(H)]
                    c = [f[j] * c[j] + i[j] * cc[j] for j in range(H)]
                    o = [fn(0, cl(g[H + j] + pd[H + j] * c[j])) for j in range(H)]
                    h = [o[j] * fn(2, c[j]) for j in range(H)]
                else:
                    z = [fn(0, cl(wx[j] + rh[j])) for j in range(H)]
                    rr = [fn(0, cl(wx[H + j] + rh[H + j])) for j in range(H)]
                    if lbr:
                        hh = [fn(1, cl(wx[2 * H + j] + rr[j] * rh[2 * H + j])) for j in range(H)]
                    else:
                        rhv = [rr[j] * h[j] for j in range(H)]
                        rr_h = matvec(rd, H, H, 2 * H, rhv)
                        hh = [fn(1, cl(wx[2 * H + j] + rr_h[j] + bd[G * H + 2 * H + j])) for j in range(H)]
                    h = [(1 - z[j]) * hh[j] + z[j] * h[j] for j in range(H)]
                Y[t][d][n] = h
            YH[d][n] = h
            YC[d][n] = c
    if layout == 0:
        y = [v for t in range(T) for d in range(D) for n in range(B) for v in Y[t][d][n]]
        yh = [v for d in range(D) for n in range(B) for v in YH[d][n]]
        yc = [v for d in range(D) for n in range(B) for v in YC[d][n]]
        return y, [T, D, B, H], yh, yc, [D, B, H]
    y = [v for n in range(B) for t in range(T) for d in range(D) for v in Y[t][d][n]]
    yh = [v for n in range(B) for d in range(D) for v in YH[d][n]]
    yc = [v for n in range(B) for d in range(D) for v in YC[d][n]]
    return y, [B, T, D, H], yh, yc, [B, D, H]


DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
ALPHA = {"LeakyRelu": 0.01, "HardSigmoid": 0.2, "Affine": 1.0, "ScaledTanh": 1.0, "Elu": 1.0}
BETA = {"HardSigmoid": 0.5, "Affine": 0.0, "ScaledTanh": 1.0}


def case(root, name, cell, T, B, I, H, direction="forward", layout=0, bias=True, lens=None, h0=False, c0=False,
         peep=False, acts=None, alphas=(), betas=(), clip=None, lbr=0, input_forget=0, outputs=("Y", "Y_h", "Y_c")):
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[cell]
    D = 2 if direction == "bidirectional" else 1
    xs = [B, T, I] if layout else [T, B, I]
    ss = [B, D, H] if layout else [D, B, H]
    x, _ = rand(*xs, scale=1.0)
    w, _ = rand(D, G * H, I)
    r, _ = rand(D, G * H, H)
    b = rand(D, 2 * G * H)[0] if bias else None
    hv = rand(*ss)[0] if h0 else None
    cv = rand(*ss)[0] if c0 else None
    pv = rand(D, 3 * H)[0] if peep else None
    names = acts or DEFAULT_ACTS[cell] * D
    al, be = list(alphas), list(betas)
    resolved = []
    for a in names:
        aa = al.pop(0) if a in ALPHA and al else ALPHA.get(a, 0.0)
        bb = be.pop(0) if a in BETA and be else BETA.get(a, 0.0)
        resolved.append((a, f32(aa), f32(bb)))
    if len(resolved) == len(DEFAULT_ACTS[cell]) and D == 2:
        resolved = resolved * 2
    y, ys, yh, yc, hs = reference(cell, x, xs, w, r, b, lens, hv, cv, pv, H, direction, layout, resolved, clip, lbr,
                                  input_forget)
    ins = [("X", x, xs, 1), ("W", w, [D, G * H, I], 1), ("R", r, [D, G * H, H], 1),
           ("B" if bias else "", b, [D, 2 * G * H], 1), ("sequence_lens" if lens else "", lens, [B], 6),
           ("initial_h" if h0 else "", hv, ss, 1)]
    if cell == "LSTM":
        ins += [("initial_c" if c0 else "", cv, ss, 1), ("P" if peep else "", pv, [D, 3 * H], 1)]
    while ins and not ins[-1][0]:
        ins.pop()
    outs = [("Y" if "Y" in outputs else "", y, ys, 1), ("Y_h" if "Y_h" in outputs else "", yh, hs, 1)]
    if cell == "LSTM":
        outs.append(("Y_c" if "Y_c" in outputs else "", yc, hs, 1))
    while outs and not outs[-1][0]:
        outs.pop()
    attrs = {"hidden_size": H}
    if direction != "forward":
        attrs["direction"] = direction
    if layout:
        attrs["layout"] = layout
    if acts:
        attrs["activations"] = acts
    if alphas:
        attrs["activation_alpha"] = list(alphas)
    if betas:
        attrs["activation_beta"] = list(betas)
    if clip is not None:
        attrs["clip"] = clip
    if lbr:
        attrs["linear_before_reset"] = 1
    if input_forget:
        attrs["input_forget"] = 1
    save(root, name, cell, ins, outs, attrs)


TRAINING = "ai.onnx.preview.training"


def optimizer(root, name, op, t, groups, attrs, shapes=((2,), (3, 2))):
    """Adagrad/Momentum/Adam on tensors of `shapes` at update count t, per the formulas of ONNX's op docs."""
    r = f32(0.1)
    norm = f32(attrs.get("norm_coefficient", 0.0))
    tensors = [[rand(*s, scale=2.0)[0] for s in shapes] for _ in range(groups)]
    if op != "Momentum":  # accumulated squares are non-negative
        tensors[-1] = [[abs(v) for v in h] for h in tensors[-1]]
    outs = [[] for _ in range(groups - 1)]
    for k in range(len(shapes)):
        x, g = tensors[0][k], [norm * a + b for a, b in zip(tensors[0][k], tensors[1][k])]
        if op == "Adagrad":
            eps, decay = f32(attrs.get("epsilon", 1e-6)), f32(attrs.get("decay_factor", 0.0))
            rate = r / (1 + t * decay)
            h = [a + b * b for a, b in zip(tensors[2][k], g)]
            outs[0].append([a - rate * b / (math.sqrt(c) + eps) for a, b, c in zip(x, g, h)])
            outs[1].append(h)
        elif op == "Momentum":
            alpha, beta = f32(attrs["alpha"]), f32(attrs["beta"]) if t > 0 else 1.0
            v = [alpha * a + beta * b for a, b in zip(tensors[2][k], g)]
            step = v if attrs["mode"] == "standard" else [b + alpha * a for a, b in zip(v, g)]
            outs[0].append([a - r * b for a, b in zip(x, step)])
            outs[1].append(v)
        else:
            alpha, beta = f32(attrs.get("alpha", 0.9)), f32(attrs.get("beta", 0.999))
            eps, post = f32(attrs.get("epsilon", 1e-6)), f32(attrs.get("norm_coefficient_post", 0.0))
            v = [alpha * a + (1 - alpha) * b for a, b in zip(tensors[2][k], g)]
            h = [beta * a + (1 - beta) * b * b for a, b in zip(tensors[3][k], g)]
            rate = r * math.sqrt(1 - beta ** t) / (1 - alpha ** t) if t > 0 else r
            outs[0].append([(1 - post) * (a - rate * b / (math.sqrt(c) + eps)) for a, b, c in zip(x, v, h)])
            outs[1].append(v)
            outs[2].append(h)
    letters = {"Adagrad": "XGH", "Momentum": "XGV", "Adam": "XGVH"}[op]
    ins = [("R", [r], [], 1), ("T", [t], [], 7)]
    for gi in range(groups):
        ins += [(f"{letters[gi]}{k}", tensors[gi][k], list(shapes[k]), 1) for k in range(len(shapes))]
    res = []
    for gi in range(groups - 1):
        res += [(f"{letters[0 if gi == 0 else gi + 1]}{k}_new", outs[gi][k], list(shapes[k]), 1)
                for k in range(len(shapes))]
    save(root, name, op, ins, res, attrs, domain=TRAINING)


root = sys.argv[1]
case(root, "lstm_bidirectional_lens", "LSTM", 4, 3, 2, 3, "bidirectional", lens=[4, 2, 1], h0=True, c0=True, peep=True)
case(root, "lstm_reverse_layout1_forget_clip", "LSTM", 3, 2, 3, 2, "reverse", layout=1, input_forget=1, clip=0.4,
     lens=[3, 2], outputs=("Y", "Y_c"))
case(root, "lstm_activations", "LSTM", 3, 2, 2, 3, acts=["HardSigmoid", "ScaledTanh", "Affine"],
     alphas=[0.3, 0.8, 0.5], betas=[0.4, 1.2, 0.1], bias=False, outputs=("Y_h",))
case(root, "gru_reverse_lbr_layout1_lens", "GRU", 4, 3, 2, 3, "reverse", layout=1, lbr=1, h0=True, lens=[2, 4, 3])
case(root, "gru_bidirectional_clip", "GRU", 3, 2, 3, 4, "bidirectional", clip=0.6, h0=True)
case(root, "gru_lbr_zero_state", "GRU", 2, 2, 2, 2, lbr=1, bias=False)
case(root, "rnn_bidirectional_relu_lens", "RNN", 3, 2, 2, 3, "bidirectional", acts=["Relu", "LeakyRelu"],
     alphas=[0.2], lens=[1, 3], h0=True)
case(root, "rnn_layout1_reverse_elu", "RNN", 4, 2, 3, 2, "reverse", layout=1, acts=["Elu"], alphas=[0.7],
     outputs=("Y",))
optimizer(root, "adagrad_t3", "Adagrad", 3, 3, {"norm_coefficient": 0.01, "decay_factor": 0.1, "epsilon": 1e-5})
optimizer(root, "momentum_t2", "Momentum", 2, 3, {"alpha": 0.9, "beta": 0.3, "mode": "standard",
                                                  "norm_coefficient": 0.02})
optimizer(root, "nesterov_t2", "Momentum", 2, 3, {"alpha": 0.8, "beta": 0.5, "mode": "nesterov",
                                                  "norm_coefficient": 0.0})
optimizer(root, "adam_t3", "Adam", 3, 4, {"alpha": 0.85, "beta": 0.95, "epsilon": 1e-4, "norm_coefficient": 0.01,
                                          "norm_coefficient_post": 0.05})
optimizer(root, "adam_defaults_t1", "Adam", 1, 4, {})
