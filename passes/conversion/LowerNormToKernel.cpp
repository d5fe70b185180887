// For the GPU: graph.layer_norm, graph.rms_norm, graph.softmax and graph.log_softmax over the last
// axis -> kiln_kernel.row_norm, which survives bufferization for kiln-form-norm-blocks (one block per row).
//
// The generic lowering (LowerNn) makes a norm two or three loop nests: a reduction for the mean,
// another for the variance, then the elementwise normalization, each a launch of its own on the
// GPU (plus the host's choice between a block and a thread per row), and the input read three
// times from memory. The kernel reads each row into the cache once and makes one launch.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/kernel/IR/Kernel.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

/// `p` (a scale or bias) as a rank-1 tensor of the row's `n` elements or of one, when it
/// broadcasts to the row as exactly those elements or as a single one; null otherwise.
Value rowOperand(OpBuilder &b, Location loc, Value p, int64_t n) {
  auto pt = cast<RankedTensorType>(p.getType());
  if (!pt.getElementType().isF32() || !pt.hasStaticShape())
    return {};
  int64_t elements = pt.getNumElements();
  if (elements != 1 && (elements != n || pt.getShape().back() != n))
    return {};
  if (pt.getRank() == 1)
    return p;
  // All static: collapsing (or expanding a scalar) to rank 1 is a view.
  auto flat = RankedTensorType::get({elements}, pt.getElementType());
  if (pt.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flat, p, ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t i = 0; i < pt.getRank(); ++i)
    all.push_back(i);
  return tensor::CollapseShapeOp::create(b, loc, flat, p, ArrayRef<ReassociationIndices>{all});
}

/// Lowers a norm of `x` over its last axis as a row_norm, or fails (the generic lowering then
/// takes it). Norms over several axes keep the generic lowering: viewing them as rows would need
/// a memref.expand_shape of dynamic sizes afterwards, which MLIR 22's expand-strided-metadata
/// cannot lower (it crashes).
LogicalResult lowerToRowNorm(Operation *op, Value x, Value scale, Value bias, int64_t axis, StringRef kind,
                             FloatAttr epsilon, ConversionPatternRewriter &rewriter) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  if (!xt.getElementType().isF32() || rank == 0 || wrapAxis(axis, rank) != rank - 1)
    return rewriter.notifyMatchFailure(op, "not an f32 norm over the last axis");
  int64_t n = xt.getDimSize(rank - 1);
  if (ShapedType::isDynamic(n) || n == 0)
    return rewriter.notifyMatchFailure(op, "a row of dynamic or no length");
  Location loc = op->getLoc();
  Value rowScale = scale ? rowOperand(rewriter, loc, scale, n) : Value();
  Value rowBias = bias ? rowOperand(rewriter, loc, bias, n) : Value();
  if ((scale && !rowScale) || (bias && !rowBias))
    return rewriter.notifyMatchFailure(op, "a scale or bias that is neither the row's shape nor one element");
  Value init = emptyTensor(rewriter, loc, xt, dimsOf(rewriter, loc, x));
  auto norm = kernel::RowNormOp::create(rewriter, loc, TypeRange{xt}, x, rowScale, rowBias, init,
                                        rewriter.getStringAttr(kind), epsilon);
  SmallVector<Value> results = {norm.getResult()[0]};
  results.resize(op->getNumResults()); // LayerNormalization's unused mean and inv_std_dev
  rewriter.replaceOp(op, results);
  return success();
}

struct LayerNormToKernelPattern : OpConversionPattern<graph::LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(graph::LayerNormOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    // The kernel keeps the mean and 1/stddev in shared memory only.
    if (!op.getMean().use_empty() || !op.getInvStdDev().use_empty())
      return rewriter.notifyMatchFailure(op, "its mean or inv_std_dev is used");
    return lowerToRowNorm(op, adaptor.getInput(), adaptor.getScale(), adaptor.getBias(), op.getAxis(), "layer",
                          op.getEpsilonAttr(), rewriter);
  }
};

struct RmsNormToKernelPattern : OpConversionPattern<graph::RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(graph::RmsNormOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    return lowerToRowNorm(op, adaptor.getInput(), adaptor.getScale(), Value(), op.getAxis(), "rms",
                          op.getEpsilonAttr(), rewriter);
  }
};

/// Softmax and LogSoftmax: a max, a sum of exponentials and the row, in one launch instead of
/// two block reductions and an elementwise pass.
template <typename OpTy>
struct SoftmaxToKernelPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    constexpr bool isLog = std::is_same_v<OpTy, graph::LogSoftmaxOp>;
    return lowerToRowNorm(op, adaptor.getInput(), Value(), Value(), op.getAxis(), isLog ? "log_softmax" : "softmax",
                          rewriter.getF32FloatAttr(0.0f), rewriter);
  }
};

} // namespace

void populateNormToKernelPatterns(RewritePatternSet &patterns) {
  patterns.add<LayerNormToKernelPattern, RmsNormToKernelPattern, SoftmaxToKernelPattern<graph::SoftmaxOp>,
               SoftmaxToKernelPattern<graph::LogSoftmaxOp>>(patterns.getContext(), /*benefit=*/2);
}

} // namespace kiln
