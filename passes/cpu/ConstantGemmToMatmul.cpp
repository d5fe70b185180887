// Rewrites a Gemm whose B is a constant as a matrix product with a [K, N] constant weight plus its bias,
// so that it takes the packed-panel path of every other product.
//
// A Gemm with transB (PyTorch's Linear exports its [N, K] weight so) kept
// its own lowering: a dot product per output whose accumulator LLVM could
// not keep in a register, 3-11 GFLOP/s. It is every torchvision
// classifier's last layer (mobilenet_v3_small's two Gemms took half a
// millisecond of a 1.3 ms model). With the weight transposed at compile
// time it is a graph.matmul, which kiln-pad-product-columns and
// kiln-pack-matmul-weights turn into panels, and the bias add fuses into
// the product's tiles.
#include "passes/cpu/ConstantLayout.h"
#include "passes/cpu/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_CONSTANTGEMMTOMATMULPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct ConstantGemmToMatmulPass : impl::ConstantGemmToMatmulPassBase<ConstantGemmToMatmulPass> {
  void runOnOperation() override {
    SmallVector<graph::GemmOp> gemms;
    getOperation().walk([&](graph::GemmOp op) { gemms.push_back(op); });
    OpBuilder b(&getContext());
    for (graph::GemmOp op : gemms) {
      auto w = cast<RankedTensorType>(op.getB().getType());
      // alpha, beta and transA have no place in a plain product + add; a
      // weight read elsewhere too would be stored twice.
      bool plain = op.getAlpha().convertToDouble() == 1.0 && op.getTransA() == 0 &&
                   (!op.getC() || op.getBeta().convertToDouble() == 1.0);
      // Under 16 columns the product would not pack (kiln-pad-product-columns
      // leaves it), and the Gemm's dot products read its rows contiguously.
      int64_t columns = w.hasStaticShape() ? w.getDimSize(op.getTransB() != 0 ? 0 : 1) : 0;
      if (!plain || columns < 16 || !w.getElementType().isF32() ||
          !cast<RankedTensorType>(op.getA().getType()).getElementType().isF32() ||
          !op.getB().getDefiningOp<graph::ConstantOp>() || !op.getB().hasOneUse())
        continue;
      b.setInsertionPoint(op);
      SmallVector<Operation *> made;
      Value weight = op.getB();
      if (op.getTransB() != 0) {
        weight = permutedConstant(b, weight, ArrayRef<int64_t>{1, 0}, ".t");
        if (!weight)
          continue;
        made.push_back(weight.getDefiningOp());
      }
      Value result = graph::MatMulOp::create(b, op.getLoc(), op.getA(), weight);
      made.push_back(result.getDefiningOp());
      if (Value c = op.getC()) {
        result = graph::AddOp::create(b, op.getLoc(), result, c);
        made.push_back(result.getDefiningOp());
      }
      if (result.getType() != op.getType()) {
        for (Operation *m : llvm::reverse(made))
          m->erase();
        continue;
      }
      Operation *old = op.getB().getDefiningOp();
      op.replaceAllUsesWith(result);
      op.erase();
      if (old->use_empty())
        old->erase();
    }
  }
};

} // namespace
} // namespace kiln
