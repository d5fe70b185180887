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
  Block *block = reshape->getBlock();
  if (!alloc || !isa<memref::AllocOp, memref::AllocaOp>(alloc) || alloc->getBlock() != block)
    return nullptr;
  // Before the reshape the buffer may be read (loads of the same sizes for a loop's bounds, dims)
  // and written only by stores at constant indices in this block; any other use, nested in a loop
  // too, may write it and makes the stored values unreliable.
  for (OpOperand &use : shape.getUses()) {
    Operation *user = use.getOwner();
    Operation *top = block->findAncestorOpInBlock(*user);
    if (!top)
      return nullptr;
    if (top == alloc || top == reshape.getOperation() || reshape->isBeforeInBlock(top) ||
        isa<memref::LoadOp, memref::DimOp>(user))
      continue;
    auto store = dyn_cast<memref::StoreOp>(user);
    if (!store || store != top || store.getMemRef() != shape || store.getIndices().size() != 1 ||
        !getConstantIntValue(store.getIndices()[0]))
      return nullptr;
  }
  Value found;
  for (Operation *op = alloc->getNextNode(); op && op != reshape.getOperation(); op = op->getNextNode())
    if (auto store = dyn_cast<memref::StoreOp>(op); store && store.getMemRef() == shape)
      if (auto at = getConstantIntValue(store.getIndices()[0]); at && *at == i)
        found = store.getValueToStore();
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
