// Fuses chains of elementwise linalg ops, but never an elementwise producer into a matrix product.
#include "passes/fusion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// MLIR's elementwise fusion would also pull a producer (a norm's scale, a
/// SwiGLU product) into the operand of a matrix product: the body then
/// recomputes it for every output column and is no longer a multiply-add,
/// so the register-blocked microkernel cannot take it. Keep those apart.
bool allowFusion(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  return !(consumer && linalg::isaContractionOpInterface(consumer));
}

/// A reshape next to a matrix product stays a reshape: folding it in by expansion would give the
/// product more dims (a head split [b, s, 64] -> [b, s, 4, 16] after a projection makes its n two
/// dims), which the device's product call and the CPU microkernel do not take.
bool allowReshapeFusion(OpOperand *fused) {
  auto isProduct = [](Operation *op) {
    auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
    return linalgOp && linalg::isaContractionOpInterface(linalgOp);
  };
  return allowFusion(fused) && !isProduct(fused->get().getDefiningOp()) && !isProduct(fused->getOwner());
}

struct FuseElementwisePass : impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, allowFusion);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, allowReshapeFusion);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, allowFusion);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
