// Follows a value back to the tensor.empty its buffer will be; makes padded tensors whose border alone is filled.
#include "passes/cpu/InPlaceUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

using namespace mlir;

namespace kiln {

tensor::EmptyOp rootEmpty(Value v, Block *block, SmallVectorImpl<Operation *> *reshapes, bool singleUse,
                          OpOperand **use) {
  OpOperand *last = nullptr;
  while (true) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != block)
      return nullptr;
    if (auto empty = dyn_cast<tensor::EmptyOp>(def)) {
      if (use)
        *use = last;
      return empty;
    }
    if (singleUse && !v.hasOneUse())
      return nullptr;
    unsigned n = cast<OpResult>(v).getResultNumber();
    if (auto forall = dyn_cast<scf::ForallOp>(def)) {
      last = &forall.getOutputsMutable()[n];
    } else if (auto dps = dyn_cast<DestinationStyleOpInterface>(def); dps && n < dps.getNumDpsInits()) {
      last = dps.getDpsInitOperand(n);
    } else if (reshapes && isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def) &&
               cast<RankedTensorType>(def->getOperand(0).getType()).hasStaticShape() &&
               cast<RankedTensorType>(v.getType()).hasStaticShape()) {
      reshapes->push_back(def);
      last = &def->getOpOperand(0);
    } else {
      return nullptr;
    }
    v = last->get();
  }
}

Value undoReshapes(OpBuilder &b, Location loc, Value value, ArrayRef<Operation *> reshapes) {
  for (Operation *op : reshapes) {
    auto source = cast<RankedTensorType>(op->getOperand(0).getType());
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
      value = tensor::ExpandShapeOp::create(b, loc, source, value, collapse.getReassociationIndices());
    else
      value = tensor::CollapseShapeOp::create(b, loc, source, value,
                                              cast<tensor::ExpandShapeOp>(op).getReassociationIndices());
  }
  return value;
}

bool canPadInPlace(tensor::PadOp pad) {
  Value value = pad.getConstantPaddingValue();
  if (!value || !value.getDefiningOp<arith::ConstantOp>() || !pad.getResultType().hasStaticShape() ||
      !pad.getSourceType().hasStaticShape())
    return false;
  return llvm::all_of(pad.getStaticLow(), [](int64_t l) { return !ShapedType::isDynamic(l) && l >= 0; });
}

Value paddedBorder(OpBuilder &b, tensor::PadOp pad) {
  auto type = pad.getResultType();
  Location loc = pad.getLoc();
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> full = type.getShape(), inner = pad.getSourceType().getShape(), low = pad.getStaticLow();
  int64_t rank = full.size();
  Value fillValue = b.clone(*pad.getConstantPaddingValue().getDefiningOp())->getResult(0);
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
  return padded;
}

Value insertInterior(OpBuilder &b, tensor::PadOp pad, Value source, Value padded) {
  MLIRContext *ctx = b.getContext();
  SmallVector<int64_t> ones(pad.getSourceType().getRank(), 1);
  return tensor::InsertSliceOp::create(b, pad.getLoc(), source, padded, getAsIndexOpFoldResult(ctx, pad.getStaticLow()),
                                       getAsIndexOpFoldResult(ctx, pad.getSourceType().getShape()),
                                       getAsIndexOpFoldResult(ctx, ones));
}

Value extractInterior(OpBuilder &b, tensor::PadOp pad, Value padded) {
  MLIRContext *ctx = b.getContext();
  SmallVector<int64_t> ones(pad.getSourceType().getRank(), 1);
  return tensor::ExtractSliceOp::create(b, pad.getLoc(), pad.getSourceType(), padded,
                                        getAsIndexOpFoldResult(ctx, pad.getStaticLow()),
                                        getAsIndexOpFoldResult(ctx, pad.getSourceType().getShape()),
                                        getAsIndexOpFoldResult(ctx, ones));
}

} // namespace kiln
