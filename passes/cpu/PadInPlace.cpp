// Producers write straight into the interior of the padded copy a convolution or pooling reads.
#include "passes/cpu/Passes.h"

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

  /// The tensor.empty whose buffer `v` will live in: followed back through
  /// destination operands (linalg ops, fills) and scf.forall shared outputs,
  /// in `block`; null when the chain leaves it or meets anything else (a
  /// reshape, a function argument), where the source keeps a buffer of its own.
  static tensor::EmptyOp rootEmpty(Value v, Block *block) {
    while (true) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != block)
        return nullptr;
      if (auto empty = dyn_cast<tensor::EmptyOp>(def))
        return empty;
      unsigned n = cast<OpResult>(v).getResultNumber();
      if (auto forall = dyn_cast<scf::ForallOp>(def))
        v = forall.getOutputs()[n];
      else if (auto dps = dyn_cast<DestinationStyleOpInterface>(def); dps && n < dps.getNumDpsInits())
        v = dps.getDpsInitOperand(n)->get();
      else
        return nullptr;
    }
  }

  void rewrite(tensor::PadOp pad) {
    auto type = pad.getResultType();
    Value value = pad.getConstantPaddingValue();
    auto constant = value ? value.getDefiningOp<arith::ConstantOp>() : nullptr;
    if (!type.hasStaticShape() || !pad.getSourceType().hasStaticShape() || !constant)
      return;
    SmallVector<int64_t> low = llvm::to_vector(pad.getStaticLow());
    if (llvm::any_of(low, ShapedType::isDynamic) || llvm::any_of(low, [](int64_t l) { return l < 0; }))
      return;
    // The padded tensor is made just before the buffer its source would have
    // had (not earlier: it would be live, and take arena space, across
    // everything before its producer), so that its interior can be that
    // buffer. A source read by others as well keeps its own buffer (given the
    // interior, later in-place writes made bufferization copy it back out)
    // and is copied in, as is one whose buffer has no tensor.empty to take.
    // Either way only the border is filled: per padded dim d, a low and a
    // high slab over the interior of the dims before d and the whole of the
    // dims after it.
    tensor::EmptyOp root = rootEmpty(pad.getSource(), pad->getBlock());
    Operation *at = root && pad.getSource().hasOneUse() ? root.getOperation() : pad.getOperation();
    OpBuilder b(at);
    Location loc = pad.getLoc();
    MLIRContext *ctx = b.getContext();
    ArrayRef<int64_t> full = type.getShape(), inner = pad.getSourceType().getShape();
    int64_t rank = full.size();
    Value fillValue = b.clone(*constant)->getResult(0);
    Value padded = tensor::EmptyOp::create(b, loc, full, type.getElementType());
    SmallVector<int64_t> ones(rank, 1);
    auto insertFilled = [&](ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
      Value slab = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
      slab = linalg::FillOp::create(b, loc, fillValue, slab).getResult(0);
      padded = tensor::InsertSliceOp::create(b, loc, slab, padded, getAsIndexOpFoldResult(ctx, offsets),
                                             getAsIndexOpFoldResult(ctx, sizes), getAsIndexOpFoldResult(ctx, ones));
    };
    for (int64_t d = 0; d < rank; ++d) {
      int64_t high = full[d] - low[d] - inner[d];
      SmallVector<int64_t> offsets(rank, 0), sizes(full);
      for (int64_t e = 0; e < d; ++e) {
        offsets[e] = low[e];
        sizes[e] = inner[e];
      }
      if (low[d] > 0) {
        offsets[d] = 0;
        sizes[d] = low[d];
        insertFilled(offsets, sizes);
      }
      if (high > 0) {
        offsets[d] = low[d] + inner[d];
        sizes[d] = high;
        insertFilled(offsets, sizes);
      }
    }
    b.setInsertionPoint(pad);
    Value inserted = tensor::InsertSliceOp::create(b, loc, pad.getSource(), padded, getAsIndexOpFoldResult(ctx, low),
                                                   getAsIndexOpFoldResult(ctx, inner),
                                                   getAsIndexOpFoldResult(ctx, ones));
    pad.replaceAllUsesWith(inserted);
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
