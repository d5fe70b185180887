// Normalizations: BatchNormalization (also training), LayerNormalization, RMSNormalization, InstanceNormalization, LRN, MVN.
#include "compiler/importer/ImporterHelpers.h"
#include "compiler/importer/OpCreate.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// LRN: y = x / (bias + alpha / size * sum of x^2 over a window of `size`
/// channels, floor((size-1)/2) before and ceil((size-1)/2) after, clipped at
/// the edges)^beta. The window sum is an average pool over the channel axis
/// (made a spatial axis by inserting a unit axis before it) that counts the
/// zero padding, times size; times alpha/size leaves alpha * mean.
Results importLrn(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  if (!isa<FloatType>(et))
    return c.fail("unsupported LRN input type (float expected)");
  if (xt.getRank() < 3)
    return c.fail("LRN input must have rank >= 3");
  if (!c.attr("size"))
    return c.fail("size is required");
  int64_t size = c.intAttr("size", 1);
  if (size < 1)
    return c.fail("size must be positive");
  double alpha = c.floatAttr("alpha", 1e-4f), beta = c.floatAttr("beta", 0.75f),
         bias = c.floatAttr("bias", 1.0f);
  auto sq = create<MulOp>(c, x, x);
  if (failed(sq))
    return failure();
  auto lifted = create<UnsqueezeOp>(c, *sq, ArrayRef<int64_t>{1});
  if (failed(lifted))
    return failure();
  int64_t spatial = xt.getRank() - 1; // channels and the original spatial axes
  SmallVector<int64_t> kernel(spatial, 1), pads(2 * spatial, 0), ones(spatial, 1);
  kernel[0] = size;
  pads[0] = (size - 1) / 2;
  pads[spatial] = size - 1 - (size - 1) / 2;
  auto mean = create<AveragePoolOp>(c, *lifted, kernel, pads, ones, ones, (int64_t)0, (int64_t)1,
                                     StringAttr());
  if (failed(mean))
    return failure();
  auto windowMean = create<SqueezeOp>(c, *mean, ArrayRef<int64_t>{1});
  if (failed(windowMean))
    return failure();
  auto scaled = create<MulOp>(c, *windowMean, scalarConstant(c, et, alpha));
  if (failed(scaled))
    return failure();
  auto base = create<AddOp>(c, *scaled, scalarConstant(c, et, bias));
  if (failed(base))
    return failure();
  auto denom = create<PowOp>(c, *base, scalarConstant(c, et, beta));
  if (failed(denom))
    return failure();
  return single(create<DivOp>(c, x, *denom));
}

/// MeanVarianceNormalization: (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9)
/// over `axes` (default N, H, W), as ONNX's function body computes it.
Results importMvn(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  if (!isa<FloatType>(et))
    return c.fail("unsupported MeanVarianceNormalization input type (float expected)");
  SmallVector<int64_t> axes = c.intsAttr("axes").value_or(SmallVector<int64_t>{0, 2, 3});
  auto mean = create<ReduceMeanOp>(c, x, axes, (int64_t)1);
  if (failed(mean))
    return failure();
  auto sq = create<MulOp>(c, x, x);
  if (failed(sq))
    return failure();
  auto meanSq = create<ReduceMeanOp>(c, *sq, axes, (int64_t)1);
  if (failed(meanSq))
    return failure();
  auto sqMean = create<MulOp>(c, *mean, *mean);
  if (failed(sqMean))
    return failure();
  auto var = create<SubOp>(c, *meanSq, *sqMean);
  if (failed(var))
    return failure();
  auto sd = create<SqrtOp>(c, *var);
  if (failed(sd))
    return failure();
  auto denom = create<AddOp>(c, *sd, scalarConstant(c, et, 1e-9));
  if (failed(denom))
    return failure();
  auto centered = create<SubOp>(c, x, *mean);
  if (failed(centered))
    return failure();
  return single(create<DivOp>(c, *centered, *denom));
}

// BatchNormalization with training_mode=1 normalizes with the batch's own
// statistics (mean and population variance over every axis but the
// channels) and returns the running statistics moved towards them:
// running = input * momentum + batch * (1 - momentum).
Results importBatchNormTraining(NodeContext &c) {
  Value x = c.input(0), scale = c.input(1), bias = c.input(2), inMean = c.input(3), inVar = c.input(4);
  auto xt = cast<RankedTensorType>(x.getType());
  Type ft = xt.getElementType();
  int64_t rank = xt.getRank();
  if (!isa<FloatType>(ft) || rank < 2)
    return c.fail("training mode needs a float input of rank >= 2");
  for (Value v : {scale, bias, inMean, inVar}) {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getRank() != 1 || vt.getElementType() != ft)
      return c.fail("scale, B, mean and var must be 1-D tensors of the input's type");
  }
  SmallVector<int64_t> axes{0};
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  auto scalar = RankedTensorType::get({}, ft);
  auto cst = [&](double v) -> Value {
    return ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(scalar, FloatAttr::get(ft, v).getValue()));
  };
  double momentum = c.floatAttr("momentum", 0.9f);
  auto mean = create<ReduceMeanOp>(c, x, axes, (int64_t)1);
  if (failed(mean))
    return failure();
  auto d = create<SubOp>(c, x, *mean);
  if (failed(d))
    return failure();
  auto sq = create<MulOp>(c, *d, *d);
  if (failed(sq))
    return failure();
  auto var = create<ReduceMeanOp>(c, *sq, axes, (int64_t)1);
  if (failed(var))
    return failure();
  auto ve = create<AddOp>(c, *var, cst(c.floatAttr("epsilon", 1e-5f)));
  if (failed(ve))
    return failure();
  auto sd = create<SqrtOp>(c, *ve);
  if (failed(sd))
    return failure();
  auto norm = create<DivOp>(c, *d, *sd);
  auto s = alongAxis(c, scale, rank, 1), b = alongAxis(c, bias, rank, 1);
  if (failed(norm) || failed(s) || failed(b))
    return failure();
  auto y = create<MulOp>(c, *norm, *s);
  if (failed(y))
    return failure();
  y = create<AddOp>(c, *y, *b);
  if (failed(y))
    return failure();
  SmallVector<Value> results{*y};
  for (auto [batch, running] : {std::pair{*mean, inMean}, std::pair{*var, inVar}}) {
    if (results.size() >= (size_t)c.node.output_size() || c.node.output(results.size()).empty())
      break;
    // [1, C, 1...] -> [C]: the reduced axes squeezed (works for a symbolic C).
    auto flat = create<SqueezeOp>(c, batch, axes);
    if (failed(flat))
      return failure();
    auto kept = create<MulOp>(c, running, cst(momentum));
    auto moved = create<MulOp>(c, *flat, cst(1.0 - momentum));
    if (failed(kept) || failed(moved))
      return failure();
    auto r = create<AddOp>(c, *kept, *moved);
    if (failed(r))
      return failure();
    results.push_back(*r);
  }
  for (int i = (int)results.size(); i < c.node.output_size(); ++i)
    if (!c.node.output(i).empty())
      return c.fail("only Y, running_mean and running_var are supported");
  return results;
}

Results importBatchNorm(NodeContext &c) {
  if (failed(require(c, 5)))
    return failure();
  if (c.intAttr("training_mode", 0) != 0)
    return importBatchNormTraining(c);
  for (int i = 1; i < c.node.output_size(); ++i)
    if (!c.node.output(i).empty())
      return c.fail("training outputs (running mean/var) are not supported");
  return single(create<BatchNormOp>(c, c.input(0), c.input(1), c.input(2),
                                    c.input(3), c.input(4),
                                    c.b.getF32FloatAttr(c.floatAttr("epsilon", 1e-5f))));
}

/// RMSNormalization (opset 23): the mean square over the axes from `axis` on.
Results importRmsNorm(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (c.intAttr("stash_type", 1) != 1)
    return c.fail("stash_type other than float is not supported");
  return single(create<RmsNormOp>(c, c.input(0), c.input(1), c.b.getI64IntegerAttr(c.intAttr("axis", -1)),
                                  c.b.getF32FloatAttr(c.floatAttr("epsilon", 1e-5f))));
}

Results importLayerNorm(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (c.intAttr("stash_type", 1) != 1)
    return c.fail("stash_type other than float is not supported");
  auto y = createOperation<LayerNormOp, 3>(c, c.input(0), c.input(1), c.input(2),
                                           c.b.getI64IntegerAttr(c.intAttr("axis", -1)),
                                           c.b.getF32FloatAttr(c.floatAttr("epsilon", 1e-5f)));
  if (failed(y))
    return failure();
  Operation *op = *y;
  return SmallVector<Value>(op->getResults().begin(), op->getResults().end());
}

Results importInstanceNorm(NodeContext &c) {
  if (failed(require(c, 3)))
    return failure();
  return single(create<InstanceNormOp>(c, c.input(0), c.input(1), c.input(2),
                                       c.b.getF32FloatAttr(c.floatAttr("epsilon", 1e-5f))));
}

} // namespace

void addNormalizationImporters(llvm::StringMap<NodeImporter> &t) {
  t["BatchNormalization"] = importBatchNorm;
  t["LayerNormalization"] = importLayerNorm;
  t["RMSNormalization"] = importRmsNorm;
  t["InstanceNormalization"] = importInstanceNorm;
  t["LRN"] = importLrn;
  t["MeanVarianceNormalization"] = importMvn;
}

} // namespace kiln
