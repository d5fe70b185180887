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
    for (auto [x, s] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
      // A sigmoid that something else also reads would be computed twice.
      auto sigmoid = s.getDefiningOp<graph::SigmoidOp>();
      if (!sigmoid || sigmoid.getInput() != x || !s.hasOneUse() || !isFloatTensor(x) || !keepsType(mul, x))
        continue;
      rewriter.replaceOpWithNewOp<graph::SiluOp>(mul, x);
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "not x * sigmoid(x)");
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
