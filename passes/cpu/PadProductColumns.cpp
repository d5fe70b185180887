// Pads the constant [K, N] weight of a matrix product whose N is not a multiple of 16 to whole 16-column panels, and slices the padding off the product.
//
// kiln-pack-matmul-weights stores a weight as column panels of 16 to 64
// columns only when one of those widths divides N; any other N (an OCR
// recognizer's 6625 classes, GPT-2's 50257 tokens) kept the unpacked
// product, several times slower. With up to 15 zero columns added, the
// weight packs, and the slice costs nothing (consumers read through a view).
#include "passes/cpu/ConstantLayout.h"
#include "passes/cpu/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_PADPRODUCTCOLUMNSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct PadProductColumnsPass : impl::PadProductColumnsPassBase<PadProductColumnsPass> {
  void runOnOperation() override {
    SmallVector<graph::MatMulOp> products;
    getOperation().walk([&](graph::MatMulOp op) { products.push_back(op); });
    OpBuilder b(&getContext());
    for (graph::MatMulOp op : products) {
      auto a = cast<RankedTensorType>(op.getLhs().getType());
      auto w = cast<RankedTensorType>(op.getRhs().getType());
      auto rt = cast<RankedTensorType>(op.getType());
      // A weight read elsewhere too (tied embeddings) would be stored twice.
      if (a.getRank() < 2 || w.getRank() != 2 || !w.hasStaticShape() || !w.getElementType().isF32() ||
          !op.getRhs().getDefiningOp<graph::ConstantOp>() || !op.getRhs().hasOneUse())
        continue;
      int64_t n = w.getDimSize(1), pad = panelPadding(n);
      if (pad == 0 || n < 16)
        continue;
      b.setInsertionPoint(op);
      Value padded = permutedConstant(b, op.getRhs(), ArrayRef<int64_t>{0, 1}, ".padded", {}, pad);
      if (!padded)
        continue;
      Value product = graph::MatMulOp::create(b, op.getLoc(), op.getLhs(), padded);
      SmallVector<Operation *> made = {padded.getDefiningOp(), product.getDefiningOp()};
      int64_t last = rt.getRank() - 1;
      // A constant bias added to the product (a classifier head's Add) is padded too and added
      // before the slice: after it, the slice kept the add out of the product's tiles
      // (kiln-fuse-epilogues), a memory-bound pass of its own over the logits (ocr_rec's
      // 40 x 6625 head: 135 us beside its 661 us product, 1 thread on the Xeon).
      graph::AddOp add = op->hasOneUse() ? dyn_cast<graph::AddOp>(*op->getUsers().begin()) : nullptr;
      Value bias = add ? (add.getLhs() == op.getResult() ? add.getRhs() : add.getLhs()) : Value();
      auto bt = bias ? dyn_cast<RankedTensorType>(bias.getType()) : nullptr;
      Operation *replaced = op;
      if (bt && bias != op.getResult() && bias.getDefiningOp<graph::ConstantOp>() && bt.hasStaticShape() &&
          bt.getRank() >= 1 && bt.getRank() <= rt.getRank() && bt.getDimSize(bt.getRank() - 1) == n &&
          bt.getNumElements() == n && add.getType() == op.getType()) {
        SmallVector<int64_t> identity = llvm::to_vector(llvm::seq<int64_t>(0, bt.getRank()));
        if (Value paddedBias = permutedConstant(b, bias, identity, ".padded", {}, pad)) {
          b.setInsertionPoint(add);
          product = graph::AddOp::create(b, add.getLoc(), product, paddedBias);
          made.append({paddedBias.getDefiningOp(), product.getDefiningOp()});
          replaced = add;
        }
      }
      Value sliced = graph::SliceOp::create(b, op.getLoc(), product, b.getDenseI64ArrayAttr({0}),
                                            b.getDenseI64ArrayAttr({n}), b.getDenseI64ArrayAttr({last}),
                                            b.getDenseI64ArrayAttr({1}));
      made.push_back(sliced.getDefiningOp());
      if (sliced.getType() != replaced->getResult(0).getType()) {
        // Unreachable in practice (the slice restores the product's type): undo, users first.
        for (Operation *m : llvm::reverse(made))
          m->erase();
        continue;
      }
      Operation *old = op.getRhs().getDefiningOp();
      Operation *oldBias = replaced != op.getOperation() ? bias.getDefiningOp() : nullptr;
      replaced->getResult(0).replaceAllUsesWith(sliced);
      if (replaced != op.getOperation())
        replaced->erase();
      op.erase();
      if (old->use_empty())
        old->erase();
      if (oldBias && oldBias->use_empty())
        oldBias->erase();
    }
  }
};

} // namespace
} // namespace kiln
