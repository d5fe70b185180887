// Recognizes SiLU exported as Mul(x, Sigmoid(x)) as graph.silu (SwiGLU then reads silu(gate) * up).
#include "passes/fusion/FusionUtils.h"
#include "passes/fusion/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSESILUPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln::fusion;

namespace kiln {
namespace {

struct FuseSiluPattern : OpRewritePattern<graph::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(graph::MulOp mul, PatternRewriter &rewriter) const override {
    auto sigmoid = selfGate<graph::SigmoidOp>(mul);
    if (!sigmoid)
      return rewriter.notifyMatchFailure(mul, "not x * sigmoid(x)");
    rewriter.replaceOpWithNewOp<graph::SiluOp>(mul, sigmoid.getInput());
    return success();
  }
};

struct FuseSiluPass : impl::FuseSiluPassBase<FuseSiluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseSiluPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
