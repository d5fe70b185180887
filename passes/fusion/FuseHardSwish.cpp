// Recognizes HardSwish exported as Mul(x, HardSigmoid(x; 1/6, 0.5)) as graph.hard_swish.
//
// PyTorch exports nn.Hardswish below opset 14 as those two nodes. As two ops,
// x has two readers, so a convolution producing x could not take the
// activation as its epilogue once the chain around it was split into row
// bands (ocr_det's first 240x320x24 map: the HardSigmoid and the Mul ran as
// passes of their own over 7.4 MB, 1.4 ms of its 21). graph.hard_swish
// computes the same arithmetic (x * clamp(x * f32(1/6) + 0.5, 0, 1)).
#include "passes/fusion/FusionUtils.h"
#include "passes/fusion/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEHARDSWISHPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln::fusion;

namespace kiln {
namespace {

struct FuseHardSwishPattern : OpRewritePattern<graph::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(graph::MulOp mul, PatternRewriter &rewriter) const override {
    // HardSwish's own parameters only, in f32 (what ONNX HardSwish and the lowering use).
    auto gate = selfGate<graph::HardSigmoidOp>(mul);
    if (!gate || gate.getAlpha().convertToFloat() != float(1.0 / 6) || gate.getBeta().convertToFloat() != 0.5f)
      return rewriter.notifyMatchFailure(mul, "not x * hard_sigmoid(x; 1/6, 0.5)");
    rewriter.replaceOpWithNewOp<graph::HardSwishOp>(mul, gate.getInput());
    return success();
  }
};

struct FuseHardSwishPass : impl::FuseHardSwishPassBase<FuseHardSwishPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseHardSwishPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
