// The optimizers of ONNX's ai.onnx.preview.training domain (Adagrad, Momentum, Adam) as elementwise graph ops.
#include "compiler/importer/OpCreate.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using Results = FailureOr<SmallVector<Value>>;

/// The inputs every optimizer shares: learning rate R, update count T, then
/// `groups` lists of n tensors each (X..., G..., then the per-optimizer states).
struct OptimizerInputs {
  Value rate, count; // R in X's type; T as a scalar of X's type
  Value tIsPositive; // T > 0
  int64_t n = 0;
  Value at(NodeContext &c, int64_t group, int64_t i) const { return c.input(2 + group * n + i); }
};

FailureOr<OptimizerInputs> optimizerInputs(NodeContext &c, Emitter &e, int64_t groups) {
  int64_t tensors = (int64_t)c.inputs.size() - 2;
  if (tensors <= 0 || tensors % groups != 0 || llvm::is_contained(c.inputs, Value())) {
    (void)c.fail("expects R, T and " + Twine(groups) + " lists of equally many tensors");
    return failure();
  }
  OptimizerInputs in;
  in.n = tensors / groups;
  if ((int64_t)c.node.output_size() > (groups - 1) * in.n) {
    (void)c.fail("has more outputs than its " + Twine((groups - 1) * in.n) + " updated tensors");
    return failure();
  }
  Value x0 = c.input(2);
  e.et = cast<RankedTensorType>(x0.getType()).getElementType();
  if (!isa<FloatType>(e.et)) {
    (void)c.fail("the optimized tensors must be floating-point");
    return failure();
  }
  for (int64_t i = 0; i < tensors; ++i)
    if (cast<RankedTensorType>(c.input(2 + i).getType()).getElementType() != e.et) {
      (void)c.fail("the optimized tensors, gradients and states must have one element type");
      return failure();
    }
  auto rt = cast<RankedTensorType>(c.input(0).getType()), tt = cast<RankedTensorType>(c.input(1).getType());
  if (rt.getNumElements() != 1 || !isa<FloatType>(rt.getElementType()) || tt.getNumElements() != 1 ||
      !isa<IntegerType>(tt.getElementType())) {
    (void)c.fail("R must be a floating-point scalar and T an integer scalar");
    return failure();
  }
  in.rate = c.input(0);
  if (rt.getElementType() != e.et)
    in.rate = e.op<CastOp>(in.rate, e.et);
  Type countType = tt.getElementType();
  Value zeroCount = ConstantOp::create(
      c.b, c.loc, DenseElementsAttr::get(RankedTensorType::get({}, countType), c.b.getIntegerAttr(countType, 0)));
  in.tIsPositive = e.op<GreaterOp>(c.input(1), zeroCount);
  in.count = e.op<CastOp>(c.input(1), e.et);
  if (!e.ok)
    return failure();
  return in;
}

/// norm_coefficient * X + G: the gradient of the L2 regularization added.
Value regularized(Emitter &e, float normCoefficient, Value x, Value g) {
  return normCoefficient == 0 ? g : e.add(e.mul(e.scalar(normCoefficient), x), g);
}

/// Adagrad: R / (1 + T * decay_factor) times G over the root of the running sum of G^2.
Results importAdagrad(NodeContext &c) {
  Emitter e{c, Type()};
  auto in = optimizerInputs(c, e, 3);
  if (failed(in))
    return failure();
  float norm = c.floatAttr("norm_coefficient", 0.0f), epsilon = c.floatAttr("epsilon", 1e-6f);
  float decay = c.floatAttr("decay_factor", 0.0f);
  Value rate = e.op<DivOp>(in->rate, e.add(e.scalar(1.0), e.mul(in->count, e.scalar(decay))));
  SmallVector<Value> xs, hs;
  for (int64_t i = 0; i < in->n; ++i) {
    Value x = in->at(c, 0, i), g = regularized(e, norm, x, in->at(c, 1, i)), h = in->at(c, 2, i);
    Value hNew = e.add(h, e.mul(g, g));
    Value root = e.add(e.op<SqrtOp>(hNew), e.scalar(epsilon));
    xs.push_back(e.sub(x, e.op<DivOp>(e.mul(rate, g), root)));
    hs.push_back(hNew);
  }
  if (!e.ok)
    return failure();
  xs.append(hs);
  return xs;
}

/// Momentum, standard or Nesterov; the gradient's coefficient is 1 on the first update (T = 0).
Results importMomentum(NodeContext &c) {
  Emitter e{c, Type()};
  auto in = optimizerInputs(c, e, 3);
  if (failed(in))
    return failure();
  for (const char *required : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!c.attr(required))
      return c.fail("missing attribute '" + Twine(required) + "'");
  std::string mode = c.stringAttr("mode", "");
  if (mode != "standard" && mode != "nesterov")
    return c.fail("unsupported mode '" + mode + "'");
  float alpha = c.floatAttr("alpha", 0), norm = c.floatAttr("norm_coefficient", 0);
  Value beta = e.op<WhereOp>(in->tIsPositive, e.scalar(c.floatAttr("beta", 0)), e.scalar(1.0));
  SmallVector<Value> xs, vs;
  for (int64_t i = 0; i < in->n; ++i) {
    Value x = in->at(c, 0, i), g = regularized(e, norm, x, in->at(c, 1, i)), v = in->at(c, 2, i);
    Value vNew = e.add(e.mul(e.scalar(alpha), v), e.mul(beta, g));
    Value step = mode == "standard" ? vNew : e.add(g, e.mul(e.scalar(alpha), vNew));
    xs.push_back(e.sub(x, e.mul(in->rate, step)));
    vs.push_back(vNew);
  }
  if (!e.ok)
    return failure();
  xs.append(vs);
  return xs;
}

/// Adam with bias-corrected rate after the first update, and optional post-update decay.
Results importAdam(NodeContext &c) {
  Emitter e{c, Type()};
  auto in = optimizerInputs(c, e, 4);
  if (failed(in))
    return failure();
  float alpha = c.floatAttr("alpha", 0.9f), beta = c.floatAttr("beta", 0.999f);
  float epsilon = c.floatAttr("epsilon", 1e-6f), norm = c.floatAttr("norm_coefficient", 0.0f);
  float normPost = c.floatAttr("norm_coefficient_post", 0.0f);
  // T > 0: R * sqrt(1 - beta^T) / (1 - alpha^T); T = 0: R.
  Value alphaPow = e.op<PowOp>(e.scalar(alpha), in->count), betaPow = e.op<PowOp>(e.scalar(beta), in->count);
  Value corrected = e.op<DivOp>(e.mul(in->rate, e.op<SqrtOp>(e.sub(e.scalar(1.0), betaPow))),
                                e.sub(e.scalar(1.0), alphaPow));
  Value rate = e.op<WhereOp>(in->tIsPositive, corrected, in->rate);
  SmallVector<Value> xs, vs, hs;
  for (int64_t i = 0; i < in->n; ++i) {
    Value x = in->at(c, 0, i), g = regularized(e, norm, x, in->at(c, 1, i));
    Value v = in->at(c, 2, i), h = in->at(c, 3, i);
    Value vNew = e.add(e.mul(e.scalar(alpha), v), e.mul(e.scalar(1.0 - (double)alpha), g));
    Value hNew = e.add(e.mul(e.scalar(beta), h), e.mul(e.scalar(1.0 - (double)beta), e.mul(g, g)));
    Value root = e.add(e.op<SqrtOp>(hNew), e.scalar(epsilon));
    Value xNew = e.sub(x, e.mul(rate, e.op<DivOp>(vNew, root)));
    if (normPost != 0)
      xNew = e.mul(e.scalar(1.0 - (double)normPost), xNew);
    xs.push_back(xNew);
    vs.push_back(vNew);
    hs.push_back(hNew);
  }
  if (!e.ok)
    return failure();
  xs.append(vs);
  xs.append(hs);
  return xs;
}

} // namespace

const llvm::StringMap<NodeImporter> &trainingImporters() {
  static const llvm::StringMap<NodeImporter> table = [] {
    llvm::StringMap<NodeImporter> t;
    t["Adagrad"] = importAdagrad;
    t["Momentum"] = importMomentum;
    t["Adam"] = importAdam;
    return t;
  }();
  return table;
}

} // namespace kiln
