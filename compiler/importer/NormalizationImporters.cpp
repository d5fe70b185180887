// LRN and MeanVarianceNormalization, composed from graph ops (pooling, reductions, elementwise).
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

} // namespace

void addNormalizationImporters(llvm::StringMap<NodeImporter> &t) {
  t["LRN"] = importLrn;
  t["MeanVarianceNormalization"] = importMvn;
}

} // namespace kiln
