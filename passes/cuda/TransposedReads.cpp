// Lets elementwise ops read a transpose's input in transposed order instead of a transposed copy.
//
// Llama-style decoders split the q and k projections into heads with a Transpose to
// [B, H, S, D] and apply rotary embeddings to the result. The rotary generic reads its input twice
// per element (x and its rotated half, the second through tensor.extract), so kiln-fuse-elementwise
// cannot fuse the transpose into it: on the GPU the transpose was a copy and a launch of its own,
// twice per layer. Reading the transpose's input with permuted indices gives the same values with
// no copy; the permutation keeps the last dim last, so a head's elements stay contiguous. A
// GPT-2's keys and values go from the transpose into the KV cache by the append's row slices: the
// transpose moves onto each row and writes the cache directly (two launches fewer per layer).
#include "passes/cuda/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_TRANSPOSEDREADSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The transpose's input index for each of its result indices: result dim i is input dim perm[i].
template <typename T>
SmallVector<T> toInputOrder(ArrayRef<T> resultOrder, ArrayRef<int64_t> perm) {
  SmallVector<T> out(resultOrder.size());
  for (auto [i, p] : llvm::enumerate(perm))
    out[p] = resultOrder[i];
  return out;
}

/// Whether `v`'s only use is as the source of a tensor.insert_slice: a slice of the transpose
/// written into another tensor (a KV cache's row). Its transpose then writes the destination
/// directly (empty-tensor elimination), so no copy of the whole transpose is left.
bool insertedOnly(Value v) {
  return v.hasOneUse() && isa<tensor::InsertSliceOp>(*v.getUsers().begin()) &&
         cast<tensor::InsertSliceOp>(*v.getUsers().begin()).getSource() == v;
}

/// Whether every use of `v` (a transpose's result) is a read this pass can redirect: an input of a
/// linalg.generic (not its init), a tensor.extract, or a slice (tensor.extract_slice that keeps
/// the rank) whose own uses are such reads.
bool onlyRedirectableReads(Value v) {
  return llvm::all_of(v.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<tensor::ExtractOp>(user))
      return true;
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user))
      return slice.getSourceType().getRank() == slice.getType().getRank() &&
             (onlyRedirectableReads(slice.getResult()) || insertedOnly(slice.getResult()));
    auto generic = dyn_cast<linalg::GenericOp>(user);
    return generic && generic.isDpsInput(&use);
  });
}

/// Redirects the reads of `t`'s result to its input and erases it; a slice of the result becomes
/// a transpose of the input's slice, redirected in turn.
void readThrough(linalg::TransposeOp t) {
  if (!onlyRedirectableReads(t->getResult(0)))
    return; // a slice's transpose written into another tensor: it stays, on the slice

  Value result = t->getResult(0), input = t.getInput();
  ArrayRef<int64_t> perm = t.getPermutation();
  SmallVector<linalg::TransposeOp> sliced;
  for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
    Operation *user = use.getOwner();
    OpBuilder b(user);
    if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
      SmallVector<Value> indices = toInputOrder<Value>(SmallVector<Value>(extract.getIndices()), perm);
      extract.replaceAllUsesWith(tensor::ExtractOp::create(b, extract.getLoc(), input, indices).getResult());
      extract.erase();
      continue;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
      Location loc = slice.getLoc();
      Value part = tensor::ExtractSliceOp::create(
          b, loc, input, toInputOrder<OpFoldResult>(slice.getMixedOffsets(), perm),
          toInputOrder<OpFoldResult>(slice.getMixedSizes(), perm), toInputOrder<OpFoldResult>(slice.getMixedStrides(), perm));
      Value init = tensor::EmptyOp::create(b, loc, slice.getMixedSizes(), slice.getType().getElementType());
      auto moved = linalg::TransposeOp::create(b, loc, part, init, perm);
      slice.replaceAllUsesWith(moved->getResult(0));
      slice.erase();
      sliced.push_back(moved);
      continue;
    }
    auto generic = cast<linalg::GenericOp>(user);
    AffineMap map = generic.getMatchingIndexingMap(&use);
    SmallVector<AffineExpr> exprs = toInputOrder<AffineExpr>(map.getResults(), perm);
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    maps[use.getOperandNumber()] = AffineMap::get(map.getNumDims(), map.getNumSymbols(), exprs, map.getContext());
    use.set(input);
    generic.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
  }
  t->erase();
  for (linalg::TransposeOp moved : sliced)
    readThrough(moved);
}

struct TransposedReadsPass : impl::TransposedReadsPassBase<TransposedReadsPass> {
  void runOnOperation() override {
    SmallVector<linalg::TransposeOp> transposes;
    getOperation().walk([&](linalg::TransposeOp t) {
      ArrayRef<int64_t> perm = t.getPermutation();
      if (t.hasPureTensorSemantics() && !perm.empty() && perm.back() == int64_t(perm.size()) - 1 &&
          !t->getResult(0).use_empty() && onlyRedirectableReads(t->getResult(0)))
        transposes.push_back(t);
    });
    for (linalg::TransposeOp t : transposes)
      readThrough(t);
  }
};

} // namespace
} // namespace kiln
