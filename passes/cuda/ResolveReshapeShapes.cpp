// Replaces memref.reshape ops whose sizes are known on the host with memref.reinterpret_cast.
#include "passes/cuda/Passes.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace kiln {
#define GEN_PASS_DEF_RESOLVERESHAPESHAPESPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Element `i` of the shape buffer `shape` as seen by `reshape`, or null when unknown.
Value knownShapeElement(OpBuilder &b, memref::ReshapeOp reshape, Value shape, int64_t i) {
  Location loc = reshape.getLoc();
  auto asIndex = [&](Value v) -> Value {
    return v.getType().isIndex() ? v : (Value)arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  };
  if (auto global = shape.getDefiningOp<memref::GetGlobalOp>()) {
    auto def = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(global, global.getNameAttr());
    auto init = def && def.getConstant() ? dyn_cast_or_null<DenseIntElementsAttr>(def.getConstantInitValue())
                                         : DenseIntElementsAttr();
    if (!init || i >= init.getNumElements())
      return nullptr;
    return arith::ConstantIndexOp::create(b, loc, (*(init.value_begin<APInt>() + i)).getSExtValue());
  }
  // A buffer allocated and filled in this block: the last store at index i before the reshape.
  Operation *alloc = shape.getDefiningOp();
  if (!alloc || !isa<memref::AllocOp, memref::AllocaOp>(alloc) || alloc->getBlock() != reshape->getBlock())
    return nullptr;
  Value found;
  for (Operation *op = alloc->getNextNode(); op && op != reshape.getOperation(); op = op->getNextNode()) {
    auto store = dyn_cast<memref::StoreOp>(op);
    if (store && store.getMemRef() == shape && store.getIndices().size() == 1) {
      if (auto at = getConstantIntValue(store.getIndices()[0]); at && *at == i)
        found = store.getValueToStore();
      continue;
    }
    // Anything else that may write the buffer makes the stored values unreliable.
    if (llvm::is_contained(op->getOperands(), shape) && !isa<memref::DimOp>(op))
      return nullptr;
  }
  return found ? asIndex(found) : nullptr;
}

struct ResolveReshapeShapesPass : impl::ResolveReshapeShapesPassBase<ResolveReshapeShapesPass> {
  void runOnOperation() override {
    SmallVector<memref::ReshapeOp> reshapes;
    getOperation().walk([&](memref::ReshapeOp r) { reshapes.push_back(r); });
    for (memref::ReshapeOp reshape : reshapes) {
      auto source = dyn_cast<MemRefType>(reshape.getSource().getType());
      auto result = dyn_cast<MemRefType>(reshape.getResult().getType());
      if (!source || !result || !source.getLayout().isIdentity() || !result.getLayout().isIdentity())
        continue;
      OpBuilder b(reshape);
      Location loc = reshape.getLoc();
      int64_t rank = result.getRank();
      SmallVector<OpFoldResult> sizes(rank), strides(rank);
      bool known = true;
      for (int64_t i = 0; i < rank && known; ++i) {
        if (!result.isDynamicDim(i)) {
          sizes[i] = b.getIndexAttr(result.getDimSize(i));
        } else if (Value v = knownShapeElement(b, reshape, reshape.getShape(), i)) {
          sizes[i] = v;
        } else {
          known = false;
        }
      }
      if (!known)
        continue;
      // Row-major strides, static while every inner size is.
      OpFoldResult stride = b.getIndexAttr(1);
      for (int64_t i = rank - 1; i >= 0; --i) {
        strides[i] = stride;
        auto s = getConstantIntValue(stride), n = getConstantIntValue(sizes[i]);
        if (s && n)
          stride = b.getIndexAttr(*s * *n);
        else
          stride = arith::MulIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, stride),
                                         getValueOrCreateConstantIndexOp(b, loc, sizes[i]))
                       .getResult();
      }
      auto cast = memref::ReinterpretCastOp::create(b, loc, result, reshape.getSource(), b.getIndexAttr(0), sizes,
                                                    strides);
      reshape.getResult().replaceAllUsesWith(cast.getResult());
      reshape.erase();
    }
  }
};

} // namespace
} // namespace kiln
