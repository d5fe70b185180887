// RNN, GRU and LSTM as graph ops: the time loop unrolled, one input product per direction, one state product per step.
#include "compiler/importer/OpCreate.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using Results = FailureOr<SmallVector<Value>>;

enum class Cell { Rnn, Gru, Lstm };

/// One entry of `activations` with its parameters resolved.
struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

/// The activation functions ONNX lists for recurrent ops: which take alpha/beta and their defaults.
struct ActivationKind {
  const char *name;
  bool hasAlpha;
  float alpha;
  bool hasBeta;
  float beta;
};
constexpr ActivationKind kActivations[] = {
    {"Relu", false, 0, false, 0},        {"Tanh", false, 0, false, 0},
    {"Sigmoid", false, 0, false, 0},     {"Softsign", false, 0, false, 0},
    {"Softplus", false, 0, false, 0},    {"LeakyRelu", true, 0.01f, false, 0},
    {"ThresholdedRelu", true, 1.0f, false, 0}, {"Elu", true, 1.0f, false, 0},
    {"HardSigmoid", true, 0.2f, true, 0.5f},   {"Affine", true, 1.0f, true, 0.0f},
    {"ScaledTanh", true, 1.0f, true, 1.0f},
};

Value applyActivation(Emitter &e, const Activation &a, Value x) {
  auto f32 = [&](float v) { return e.c.b.getF32FloatAttr(v); };
  StringRef n = a.name;
  if (n == "Sigmoid")
    return e.op<SigmoidOp>(x);
  if (n == "Tanh")
    return e.op<TanhOp>(x);
  if (n == "Relu")
    return e.op<ReluOp>(x);
  if (n == "Softsign")
    return e.op<SoftsignOp>(x);
  if (n == "Softplus")
    return e.op<SoftplusOp>(x);
  if (n == "LeakyRelu")
    return e.op<LeakyReluOp>(x, f32(a.alpha), f32(0));
  if (n == "ThresholdedRelu")
    return e.op<ThresholdedReluOp>(x, f32(a.alpha), f32(0));
  if (n == "Elu")
    return e.op<EluOp>(x, f32(a.alpha), f32(0));
  if (n == "HardSigmoid")
    return e.op<HardSigmoidOp>(x, f32(a.alpha), f32(a.beta));
  if (n == "Affine")
    return e.add(e.mul(x, e.scalar(a.alpha)), e.scalar(a.beta));
  // ScaledTanh (the names were checked when parsed).
  return e.mul(e.op<TanhOp>(e.mul(x, e.scalar(a.beta))), e.scalar(a.alpha));
}

/// `activations` (perCell names per direction, ONNX defaults when absent) with
/// activation_alpha/beta consumed in order by the functions that take them.
FailureOr<SmallVector<Activation>> parseActivations(NodeContext &c, ArrayRef<const char *> defaults,
                                                    int64_t directions) {
  SmallVector<std::string> names;
  if (const auto *a = c.attr("activations"))
    for (const std::string &s : a->strings())
      names.push_back(s);
  size_t perCell = defaults.size();
  if (names.empty())
    for (int64_t d = 0; d < directions; ++d)
      names.append(defaults.begin(), defaults.end());
  else if (names.size() == perCell && directions == 2)
    names.append(SmallVector<std::string>(names)); // one list for both directions
  if (names.size() != perCell * directions) {
    (void)c.fail("activations must name " + Twine(perCell * directions) + " functions, not " +
                 Twine(names.size()));
    return failure();
  }
  SmallVector<float> alphas, betas;
  if (const auto *a = c.attr("activation_alpha"))
    alphas.assign(a->floats().begin(), a->floats().end());
  if (const auto *a = c.attr("activation_beta"))
    betas.assign(a->floats().begin(), a->floats().end());
  size_t nextAlpha = 0, nextBeta = 0;
  SmallVector<Activation> result;
  for (const std::string &name : names) {
    const ActivationKind *kind = nullptr;
    for (const ActivationKind &k : kActivations)
      if (StringRef(name).equals_insensitive(k.name))
        kind = &k;
    if (!kind) {
      (void)c.fail("unsupported activation '" + name + "'");
      return failure();
    }
    Activation act{kind->name, kind->alpha, kind->beta};
    if (kind->hasAlpha && nextAlpha < alphas.size())
      act.alpha = alphas[nextAlpha++];
    if (kind->hasBeta && nextBeta < betas.size())
      act.beta = betas[nextBeta++];
    result.push_back(act);
  }
  return result;
}

/// Checks that an optional per-direction input has the static dims it must have (-1: any).
LogicalResult checkShape(NodeContext &c, Value v, StringRef what, ArrayRef<int64_t> dims) {
  if (!v)
    return success();
  auto t = cast<RankedTensorType>(v.getType());
  bool fits = t.getRank() == (int64_t)dims.size();
  for (size_t i = 0; fits && i < dims.size(); ++i)
    fits = dims[i] < 0 || t.isDynamicDim(i) || t.getDimSize(i) == dims[i];
  if (!fits) {
    std::string want;
    for (int64_t d : dims)
      want += (want.empty() ? "" : "x") + (d < 0 ? std::string("?") : std::to_string(d));
    return c.fail(what + " must have shape " + want);
  }
  return success();
}

Results importRecurrent(NodeContext &c, Cell cell) {
  if (failed(require(c, 3)))
    return failure();
  Value x = c.input(0), w = c.input(1), r = c.input(2), bias = c.input(3), lens = c.input(4),
        h0 = c.input(5);
  Value c0 = cell == Cell::Lstm ? c.input(6) : Value(), peep = cell == Cell::Lstm ? c.input(7) : Value();
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  if (!isa<FloatType>(et))
    return c.fail("X must be a floating-point tensor");
  std::string direction = c.stringAttr("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return c.fail("unsupported direction '" + direction + "'");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t layout = c.intAttr("layout", 0);
  if (layout != 0 && layout != 1)
    return c.fail("unsupported layout " + Twine(layout));
  int64_t gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  auto wt = cast<RankedTensorType>(w.getType()), rt = cast<RankedTensorType>(r.getType());
  if (xt.getRank() != 3 || wt.getRank() != 3 || rt.getRank() != 3 || !wt.hasStaticShape() ||
      !rt.hasStaticShape())
    return c.fail("X must be 3-D, W and R 3-D of static shape");
  int64_t hidden = rt.getDimSize(2), inputSize = wt.getDimSize(2);
  if (c.attr("hidden_size") && c.intAttr("hidden_size", 0) != hidden)
    return c.fail("hidden_size " + Twine(c.intAttr("hidden_size", 0)) + " does not match R's last dim " +
                  Twine(hidden));
  if (wt.getDimSize(0) != dirs || rt.getDimSize(0) != dirs || wt.getDimSize(1) != gates * hidden ||
      rt.getDimSize(1) != gates * hidden || wt.getElementType() != et || rt.getElementType() != et)
    return c.fail("W and R must be [" + Twine(dirs) + ", " + Twine(gates) + "*hidden_size, ...] of X's type");
  int64_t gh = gates * hidden;
  // The state inputs are [dirs, batch, hidden], or [batch, dirs, hidden] with layout 1.
  int64_t stateDirAxis = layout == 0 ? 0 : 1;
  SmallVector<int64_t> stateDims = layout == 0 ? SmallVector<int64_t>{dirs, -1, hidden}
                                               : SmallVector<int64_t>{-1, dirs, hidden};
  if (failed(checkShape(c, bias, "B", {dirs, 2 * gh})) || failed(checkShape(c, lens, "sequence_lens", {-1})) ||
      failed(checkShape(c, h0, "initial_h", stateDims)) || failed(checkShape(c, c0, "initial_c", stateDims)) ||
      failed(checkShape(c, peep, "P", {dirs, 3 * hidden})))
    return failure();
  if (lens && !isa<IntegerType>(cast<RankedTensorType>(lens.getType()).getElementType()))
    return c.fail("sequence_lens must be an integer tensor");
  std::optional<float> clip;
  if (c.attr("clip"))
    clip = c.floatAttr("clip", 0);
  bool linearBeforeReset = cell == Cell::Gru && c.intAttr("linear_before_reset", 0) != 0;
  bool inputForget = cell == Cell::Lstm && c.intAttr("input_forget", 0) != 0;

  SmallVector<const char *> defaults;
  if (cell == Cell::Rnn)
    defaults = {"Tanh"};
  else if (cell == Cell::Gru)
    defaults = {"Sigmoid", "Tanh"};
  else
    defaults = {"Sigmoid", "Tanh", "Tanh"};
  auto acts = parseActivations(c, defaults, dirs);
  if (failed(acts))
    return failure();

  Emitter e{c, et};
  // Sequence-major [T, batch, input] from here on.
  if (layout == 1)
    x = e.transpose(x, {1, 0, 2});
  if (!e.ok)
    return failure();
  int64_t steps = cast<RankedTensorType>(x.getType()).getDimSize(0);
  if (steps == ShapedType::kDynamic)
    return c.fail("unsupported: " + c.node.op_type() + " with a dynamic sequence length");
  if (steps == 0)
    return c.fail("unsupported: " + c.node.op_type() + " over an empty sequence");

  // Steps at or past a sequence's length keep the state and output zeros:
  // keep[t] = t < sequence_lens, one [batch, 1] mask per step.
  SmallVector<Value> keep;
  if (lens) {
    auto lt = cast<RankedTensorType>(lens.getType());
    for (int64_t t = 0; t < steps; ++t) {
      Value tv = ConstantOp::create(c.b, c.loc,
                                    DenseElementsAttr::get(RankedTensorType::get({}, lt.getElementType()),
                                                           c.b.getIntegerAttr(lt.getElementType(), t)));
      keep.push_back(e.unsqueeze(e.op<LessOp>(tv, lens), {1}));
    }
  }
  Value zero = e.scalar(0.0);
  Value one = e.scalar(1.0);
  auto clipped = [&](Value v) {
    return clip ? e.op<ClipOp>(v, e.scalar(-*clip), e.scalar(*clip)) : v;
  };
  // Null stands for an all-zero tensor (no initial state, no bias): its terms are left out.
  auto plus = [&](Value a, Value b) { return !a ? b : !b ? a : e.add(a, b); };
  auto times = [&](Value a, Value b) { return !a || !b ? Value() : e.mul(a, b); };
  auto masked = [&](Value m, Value v, Value prev) { return m ? e.op<WhereOp>(m, v, prev ? prev : zero) : v; };

  // All steps' input products at once: [T*batch, input] x W^T -> [T, batch, gates*hidden].
  Value flat = e.op<ReshapeOp>(x, c.i64Constant({-1, inputSize}), (int64_t)0);

  auto wanted = [&](int i) { return c.node.output_size() > i && !c.node.output(i).empty(); };
  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    const Activation *act = &(*acts)[d * defaults.size()];
    bool reverse = direction == "reverse" || d == 1;
    Value wd = e.pick(w, 0, d), rd = e.pick(r, 0, d);
    Value wb, rb;
    if (bias) {
      Value bd = e.pick(bias, 0, d);
      wb = e.slice(bd, 0, 0, gh);
      rb = e.slice(bd, 0, gh, 2 * gh);
    }
    // With linear_before_reset, R's bias is applied inside the reset product;
    // otherwise every bias term is constant over time and joins the input product.
    Value inputBias = linearBeforeReset ? wb : plus(wb, rb);
    Value proj = e.gemmT(flat, wd, inputBias);
    proj = e.op<ReshapeOp>(proj, c.i64Constant({steps, -1, gh}), (int64_t)0);
    Value h = h0 ? e.pick(h0, stateDirAxis, d) : Value();
    Value cst = c0 ? e.pick(c0, stateDirAxis, d) : Value();
    Value pi, po, pf;
    if (peep) {
      Value pd = e.pick(peep, 0, d);
      pi = e.slice(pd, 0, 0, hidden);
      po = e.slice(pd, 0, hidden, 2 * hidden);
      pf = e.slice(pd, 0, 2 * hidden, 3 * hidden);
    }
    Value rzr, rh;
    if (cell == Cell::Gru && !linearBeforeReset) {
      rzr = e.slice(rd, 0, 0, 2 * hidden);
      rh = e.slice(rd, 0, 2 * hidden, 3 * hidden);
    }
    // Gate k of a [..., gates*hidden] value (a bias alone is 1-D). Null once an op has failed
    // (a hostile model's shapes): the emitter then skips every later op.
    auto gate = [&](Value v, int64_t k) -> Value {
      if (!v)
        return {};
      return e.slice(v, cast<RankedTensorType>(v.getType()).getRank() - 1, k * hidden, (k + 1) * hidden);
    };

    SmallVector<Value> y(steps);
    for (int64_t s = 0; s < steps; ++s) {
      int64_t t = reverse ? steps - 1 - s : s;
      Value xs = e.pick(proj, 0, t); // [batch, gates*hidden]
      Value hNew, cNew;
      if (cell == Cell::Rnn) {
        Value pre = h ? e.gemmT(h, rd, xs) : xs;
        hNew = applyActivation(e, act[0], clipped(pre));
      } else if (cell == Cell::Lstm) {
        // Gate order i, o, f, c; peepholes see the previous cell state (the new one for o).
        Value g = h ? e.gemmT(h, rd, xs) : xs;
        Value i = applyActivation(e, act[0], clipped(plus(gate(g, 0), times(pi, cst))));
        Value f = inputForget ? e.sub(one, i)
                              : applyActivation(e, act[0], clipped(plus(gate(g, 2), times(pf, cst))));
        Value cand = applyActivation(e, act[1], clipped(gate(g, 3)));
        cNew = plus(times(f, cst), e.mul(i, cand));
        Value o = applyActivation(e, act[0], clipped(plus(gate(g, 1), times(po, cNew))));
        hNew = e.mul(o, applyActivation(e, act[2], cNew));
      } else {
        // Gate order z, r, h.
        Value z, rg, cand;
        if (linearBeforeReset) {
          Value hr = h ? e.gemmT(h, rd, rb) : rb; // h R^T + Rb, or just Rb at a zero state
          z = applyActivation(e, act[0], clipped(plus(gate(xs, 0), hr ? gate(hr, 0) : Value())));
          rg = applyActivation(e, act[0], clipped(plus(gate(xs, 1), hr ? gate(hr, 1) : Value())));
          cand = applyActivation(e, act[1], clipped(plus(gate(xs, 2), times(rg, hr ? gate(hr, 2) : Value()))));
        } else {
          Value xzr = e.slice(xs, 1, 0, 2 * hidden);
          Value zr = h ? e.gemmT(h, rzr, xzr) : xzr;
          z = applyActivation(e, act[0], clipped(gate(zr, 0)));
          rg = applyActivation(e, act[0], clipped(gate(zr, 1)));
          Value xh = gate(xs, 2);
          cand = applyActivation(e, act[1], clipped(h ? e.gemmT(e.mul(rg, h), rh, xh) : xh));
        }
        // (1 - z) * cand + z * h
        hNew = h ? e.add(cand, e.mul(z, e.sub(h, cand))) : e.sub(cand, e.mul(z, cand));
      }
      Value m = keep.empty() ? Value() : keep[t];
      y[t] = m ? e.op<WhereOp>(m, hNew, zero) : hNew;
      h = masked(m, hNew, h);
      if (cell == Cell::Lstm)
        cst = masked(m, cNew, cst);
      if (!e.ok)
        return failure();
    }
    if (wanted(0)) {
      SmallVector<Value> perStep;
      for (Value v : y)
        perStep.push_back(e.unsqueeze(v, {0, 1}));
      ys.push_back(e.concat(perStep, 0)); // [T, 1, batch, hidden]
    }
    hs.push_back(e.unsqueeze(h, {0}));
    if (cst)
      cs.push_back(e.unsqueeze(cst, {0}));
  }

  SmallVector<Value> results(3);
  if (wanted(0)) {
    results[0] = e.concat(ys, 1);
    if (layout == 1)
      results[0] = e.transpose(results[0], {2, 0, 1, 3});
  }
  if (wanted(1)) {
    results[1] = e.concat(hs, 0);
    if (layout == 1)
      results[1] = e.transpose(results[1], {1, 0, 2});
  }
  if (cell == Cell::Lstm && wanted(2)) {
    results[2] = e.concat(cs, 0);
    if (layout == 1)
      results[2] = e.transpose(results[2], {1, 0, 2});
  }
  if (!e.ok)
    return failure();
  if (cell != Cell::Lstm)
    results.pop_back();
  return results;
}

} // namespace

void registerRecurrentImporters(llvm::StringMap<NodeImporter> &table) {
  table["RNN"] = [](NodeContext &c) { return importRecurrent(c, Cell::Rnn); };
  table["GRU"] = [](NodeContext &c) { return importRecurrent(c, Cell::Gru); };
  table["LSTM"] = [](NodeContext &c) { return importRecurrent(c, Cell::Lstm); };
}

} // namespace kiln
