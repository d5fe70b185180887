// Gives each destination of a shared linalg.fill on tensors its own fill (kiln-fill-per-destination).
//
// CSE merges identical fills: every product of a transformer whose output has the same shape
// starts from one zero-filled tensor. One-shot bufferization then fills one buffer, keeps it alive
// for the whole model, and copies it into each product's output before the product overwrites
// it (copy before write). On the GPU each copy is a launch that reads and writes the whole
// output. With a fill per destination the fill writes the product's own buffer, and
// kiln-call-device-gemm turns a zero fill right before a product into beta = 0: no launch.
#include "passes/cuda/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace kiln {
#define GEN_PASS_DEF_FILLPERDESTINATIONPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct FillPerDestinationPass : impl::FillPerDestinationPassBase<FillPerDestinationPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() && fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
        fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills) {
      // The uses as a destination. The first keeps the original, unless the fill is also read
      // (an operand): then a destination written in place would need a copy to keep the zeros
      // for that read, so every destination gets its own.
      SmallVector<OpOperand *> destinations;
      bool read = false;
      for (OpOperand &use : fill.getResult(0).getUses()) {
        if (auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner()); dps && dps.isDpsInit(&use))
          destinations.push_back(&use);
        else
          read = true;
      }
      if (destinations.size() < (read ? 1u : 2u))
        continue;
      // In program order where that is defined (use lists are not), so the first keeps it.
      Block *block = destinations.front()->getOwner()->getBlock();
      if (llvm::all_of(destinations, [&](OpOperand *u) { return u->getOwner()->getBlock() == block; }))
        llvm::sort(destinations,
                   [](OpOperand *x, OpOperand *y) { return x->getOwner()->isBeforeInBlock(y->getOwner()); });
      auto empty = fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>();
      for (OpOperand *use : llvm::drop_begin(destinations, read ? 0 : 1)) {
        // Right before its user, so the sizes of a dynamic empty tensor dominate it (they
        // dominate the original fill, which dominates every use).
        OpBuilder b(use->getOwner());
        Operation *newEmpty = b.clone(*empty);
        IRMapping mapping;
        mapping.map(empty.getResult(), newEmpty->getResult(0));
        use->set(b.clone(*fill, mapping)->getResult(0));
      }
    }
  }
};

} // namespace
} // namespace kiln
