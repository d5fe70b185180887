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

/// Whether, before `until` (null: anywhere), the buffer `shape` is written only by stores at
/// constant indices in the block of its allocation itself; reads (loads of the sizes for a loop's
/// bounds, dims, reshapes) and its dealloc are fine. Then what a load or reshape there sees at an
/// index is the last such store before it. Any other use, nested in a loop too, may write it.
bool writtenOnlyByConstantStores(Value shape, Operation *until) {
  Block *block = shape.getDefiningOp()->getBlock();
  for (OpOperand &use : shape.getUses()) {
    Operation *user = use.getOwner();
    Operation *top = block->findAncestorOpInBlock(*user);
    if (!top)
      return false;
    if ((until && (top == until || until->isBeforeInBlock(top))) ||
        isa<memref::LoadOp, memref::DimOp, memref::ReshapeOp, memref::DeallocOp>(user))
      continue;
    auto store = dyn_cast<memref::StoreOp>(user);
    if (!store || store != top || store.getMemRef() != shape || store.getIndices().size() != 1 ||
        !getConstantIntValue(store.getIndices()[0]))
      return false;
  }
  return true;
}

/// The value the last store at constant index `i` of `shape` before `op` (both in the block of
/// `shape`'s allocation) wrote, or null.
Value storedBefore(Value shape, Operation *op, int64_t i) {
  Value found;
  for (Operation *at = shape.getDefiningOp()->getNextNode(); at && at != op; at = at->getNextNode())
    if (auto store = dyn_cast<memref::StoreOp>(at); store && store.getMemRef() == shape)
      if (auto index = getConstantIntValue(store.getIndices()[0]); index && *index == i)
        found = store.getValueToStore();
  return found;
}

/// The loads of a shape buffer in its own block, at constant indices, become the values stored
/// there: the host computed them, and with no load left the buffer and its stores are dead
/// (canonicalization erases them). On the GPU they were a one-thread launch writing the sizes to
/// device memory for nothing once the reshape reads no buffer.
void forwardShapeLoads(Value shape) {
  Block *block = shape.getDefiningOp()->getBlock();
  if (!writtenOnlyByConstantStores(shape, nullptr))
    return;
  SmallVector<memref::LoadOp> loads;
  for (Operation *user : shape.getUsers())
    if (auto load = dyn_cast<memref::LoadOp>(user); load && load->getBlock() == block)
      loads.push_back(load);
  for (memref::LoadOp load : loads) {
    std::optional<int64_t> index =
        load.getIndices().size() == 1 ? getConstantIntValue(load.getIndices()[0]) : std::nullopt;
    if (!index)
      continue;
    Value stored = storedBefore(shape, load, *index);
    if (stored && stored.getType() == load.getType()) {
      load.getResult().replaceAllUsesWith(stored);
      load.erase();
    }
  }
}

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
  if (!alloc || !isa<memref::AllocOp, memref::AllocaOp>(alloc) || alloc->getBlock() != reshape->getBlock() ||
      !writtenOnlyByConstantStores(shape, reshape))
    return nullptr;
  Value found = storedBefore(shape, reshape, i);
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
      Value shape = reshape.getShape();
      reshape.getResult().replaceAllUsesWith(cast.getResult());
      reshape.erase();
      if (isa_and_nonnull<memref::AllocOp, memref::AllocaOp>(shape.getDefiningOp()))
        forwardShapeLoads(shape);
    }
  }
};

} // namespace
} // namespace kiln
