// Replaces f32 transcendental math ops by polynomial approximations that vectorize.
#include "passes/host/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "passes/host/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct ApproximateMathPass : impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      name.consume_front("math.");
      return name == "tanh" || name == "erf" || name == "exp" || name == "expm1" ||
             name == "log" || name == "log1p" || name == "log2";
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
