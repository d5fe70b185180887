// Gives each destination of a shared linalg.fill on tensors its own fill (kiln-fill-per-destination).
//
// CSE merges identical fills: every product of a transformer whose output has the same shape
// starts from one zero-filled tensor. One-shot bufferization then fills one buffer, keeps it alive
// for the whole model, and copies it into each product's output before the product overwrites
// it (copy before write). On the GPU each copy is a launch that reads and writes the whole
// output. With a fill per destination, each right before it, the fill writes the product's own
// buffer, kiln-call-device-gemm turns a zero fill right before a product into beta = 0 and
// kiln-form-block-reductions takes one into its reduction's launch: no launch.
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

/// The ops that make a fill's destination: a tensor.empty, or a reshape of one (elementwise
/// fusion's reshape propagation leaves a head split's fill on an expand_shape of the empty tensor);
/// empty when it is something else.
SmallVector<Operation *> destinationOps(linalg::FillOp fill) {
  Value dest = fill.getDpsInits()[0];
  SmallVector<Operation *> ops;
  if (auto reshape = dest.getDefiningOp(); isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(reshape)) {
    ops.push_back(reshape);
    dest = reshape->getOperand(0);
  }
  auto empty = dest.getDefiningOp<tensor::EmptyOp>();
  if (!empty)
    return {};
  ops.insert(ops.begin(), empty);
  return ops;
}

struct FillPerDestinationPass : impl::FillPerDestinationPassBase<FillPerDestinationPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() && !destinationOps(fill).empty())
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
      if (destinations.empty())
        continue;
      // In program order where that is defined (use lists are not), so the first keeps it.
      Block *block = destinations.front()->getOwner()->getBlock();
      bool oneBlock =
          llvm::all_of(destinations, [&](OpOperand *u) { return u->getOwner()->getBlock() == block; });
      if (oneBlock)
        llvm::sort(destinations,
                   [](OpOperand *x, OpOperand *y) { return x->getOwner()->isBeforeInBlock(y->getOwner()); });
      // The first destination's fill right before it (CSE may have left it before other products):
      // kiln-form-block-reductions takes in only a fill right before its reduction.
      if (!read && oneBlock && fill->getBlock() == block)
        fill->moveBefore(destinations.front()->getOwner());
      if (destinations.size() < (read ? 1u : 2u))
        continue;
      SmallVector<Operation *> made = destinationOps(fill);
      for (OpOperand *use : llvm::drop_begin(destinations, read ? 0 : 1)) {
        // Right before its user, so the sizes of a dynamic empty tensor dominate it (they
        // dominate the original fill, which dominates every use).
        OpBuilder b(use->getOwner());
        IRMapping mapping;
        for (Operation *op : made)
          b.clone(*op, mapping);
        use->set(b.clone(*fill, mapping)->getResult(0));
      }
    }
  }
};

} // namespace
} // namespace kiln
