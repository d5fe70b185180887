// Rewrites memref.copy into linalg.copy, so copies become loops instead of runtime-helper calls.
#include "passes/host/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_MEMREFCOPYTOLINALGPASS
#include "passes/host/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct CopyPattern : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(), op.getTarget());
    return success();
  }
};

struct MemrefCopyToLinalgPass : impl::MemrefCopyToLinalgPassBase<MemrefCopyToLinalgPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<CopyPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
