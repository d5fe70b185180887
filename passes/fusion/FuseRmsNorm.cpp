// Recognizes RMSNormalization exported as Pow/ReduceMean/Add/Sqrt/Div (the Llama form) as graph.rms_norm.
#include "passes/fusion/FusionUtils.h"
#include "passes/fusion/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSERMSNORMPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln::fusion;

namespace kiln {
namespace {

/// Rooted at the op that divides: x / sqrt(mean(x^2) + eps), or x * (1 / sqrt(...)),
/// then an optional gain that nothing else reads the value before.
struct FuseRmsNormPattern : RewritePattern {
  FuseRmsNormPattern(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<graph::DivOp, graph::MulOp>(op))
      return failure();
    for (DivisionBy div : divisions(op)) {
      Value x = div.numerator;
      if (!isFloatTensor(x) || !keepsType(op, x))
        continue;
      auto rms = matchRootMeanSquare(div.denominator, div.reciprocal ? div.reciprocal : op);
      if (!rms || rms->base != x)
        continue;
      Operation *last = op;
      Value scale;
      if (Operation *mul = affineUser<graph::MulOp>(op->getResult(0), scale))
        last = mul;
      rewriter.setInsertionPoint(last);
      Location loc = rewriter.getFusedLoc({rms->square->getLoc(), op->getLoc(), last->getLoc()});
      auto norm = graph::RmsNormOp::create(rewriter, loc, x, scale, rewriter.getI64IntegerAttr(-1),
                                           rewriter.getF32FloatAttr(rms->epsilon));
      rewriter.replaceOp(last, norm.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not x over sqrt(mean(x^2) + eps) on the last axis");
  }
};

struct FuseRmsNormPass : impl::FuseRmsNormPassBase<FuseRmsNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRmsNormPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
