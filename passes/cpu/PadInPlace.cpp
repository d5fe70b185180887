// Producers write straight into the interior of the padded copy a convolution or pooling reads.
#include "passes/cpu/Passes.h"
#include "passes/cpu/InPlaceUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_PADINPLACEPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct PadInPlacePass : impl::PadInPlacePassBase<PadInPlacePass> {
  using PadInPlacePassBase::PadInPlacePassBase;

  void rewrite(tensor::PadOp pad) {
    if (!canPadInPlace(pad))
      return;
    // The padded tensor is made just before the buffer its source would have
    // had (not earlier: it would be live, and take arena space, across
    // everything before its producer), so that its interior can be that
    // buffer. A source read by others as well keeps its own buffer (given the
    // interior, later in-place writes made bufferization copy it back out)
    // and is copied in, as is one whose buffer has no tensor.empty to take.
    tensor::EmptyOp root = rootEmpty(pad.getSource(), pad->getBlock());
    Operation *at = root && pad.getSource().hasOneUse() ? root.getOperation() : pad.getOperation();
    OpBuilder b(at);
    Value padded = paddedBorder(b, pad);
    b.setInsertionPoint(pad);
    pad.replaceAllUsesWith(insertInterior(b, pad, pad.getSource(), padded));
    pad.erase();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<tensor::PadOp> pads;
    for (Block &block : func.getBody())
      for (auto pad : block.getOps<tensor::PadOp>())
        pads.push_back(pad);
    for (tensor::PadOp pad : pads)
      rewrite(pad);
  }
};
} // namespace
} // namespace kiln
