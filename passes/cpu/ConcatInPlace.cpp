// Producers write straight into their slice of the concatenation that reads them.
#include "passes/cpu/Passes.h"
#include "passes/cpu/InPlaceUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_CONCATINPLACEPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct ConcatInPlacePass : impl::ConcatInPlacePassBase<ConcatInPlacePass> {
  using ConcatInPlacePassBase::ConcatInPlacePassBase;

  void rewrite(tensor::ConcatOp concat) {
    auto type = concat.getResultType();
    if (!type.hasStaticShape())
      return;
    // Each operand whose buffer would come from a tensor.empty (through its
    // producers' destinations and reshapes, read by nothing else) gets its
    // slice of the concatenation as its producer's destination instead, and
    // its insert_slice, right after it, is then a copy onto itself that
    // bufferization drops. The slices and inserts form one chain in program
    // order (a slice is taken from the tensor with every earlier piece
    // inserted), which is what one-shot bufferization can prove in place;
    // a piece whose producer starts before the previous piece was inserted
    // is copied instead, as are the other operands (a slice of an input, a
    // value read twice), at the concat.
    struct Piece {
      Value operand;
      int64_t offset;
      OpOperand *use = nullptr; // the producer's use of its empty
      SmallVector<Operation *> reshapes;
    };
    SmallVector<Piece> pieces, inPlace;
    int64_t offset = 0, dim = concat.getDim();
    for (Value operand : concat.getInputs()) {
      Piece piece{operand, offset, nullptr, {}};
      offset += cast<RankedTensorType>(operand.getType()).getDimSize(dim);
      if (!rootEmpty(operand, concat->getBlock(), &piece.reshapes, /*singleUse=*/true, &piece.use))
        piece.use = nullptr;
      pieces.push_back(std::move(piece));
    }
    for (const Piece &piece : pieces)
      if (piece.use)
        inPlace.push_back(piece);
    if (inPlace.empty())
      return;
    llvm::sort(inPlace, [](const Piece &x, const Piece &y) {
      return x.use->getOwner()->isBeforeInBlock(y.use->getOwner());
    });
    Location loc = concat.getLoc();
    int64_t rank = type.getRank();
    OpBuilder b(inPlace.front().use->getOwner());
    auto slice = [&](const Piece &piece, Value whole, bool insert) -> Value {
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes, strides(rank, b.getIndexAttr(1));
      auto pieceType = cast<RankedTensorType>(piece.operand.getType());
      for (int64_t size : pieceType.getShape())
        sizes.push_back(b.getIndexAttr(size));
      offsets[dim] = b.getIndexAttr(piece.offset);
      if (insert)
        return tensor::InsertSliceOp::create(b, loc, piece.operand, whole, offsets, sizes, strides);
      return tensor::ExtractSliceOp::create(b, loc, pieceType, whole, offsets, sizes, strides);
    };
    // Made just before the first producer (not earlier: it would be live
    // across everything before). When a pad is the concatenation's only
    // reader (a convolution's padded input), the padded tensor is made there
    // and the concatenation is its interior, as kiln-pad-in-place would do
    // (after this pass, empty-tensor elimination would give the padded
    // interior to the chain's inserts but not to its first slice).
    auto pad = concat->hasOneUse() ? dyn_cast<tensor::PadOp>(*concat->user_begin()) : nullptr;
    if (pad && !canPadInPlace(pad))
      pad = nullptr;
    Value padded = pad ? paddedBorder(b, pad) : Value();
    Value whole = pad ? extractInterior(b, pad, padded)
                      : tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType()).getResult();
    Operation *lastInsert = nullptr;
    llvm::SmallPtrSet<Value, 4> inserted;
    for (const Piece &piece : inPlace) {
      Operation *user = piece.use->getOwner();
      if (lastInsert && user->isBeforeInBlock(lastInsert))
        continue;
      b.setInsertionPoint(user);
      Value empty = piece.use->get();
      piece.use->set(undoReshapes(b, loc, slice(piece, whole, false), piece.reshapes));
      if (empty.use_empty())
        empty.getDefiningOp()->erase();
      b.setInsertionPointAfterValue(piece.operand);
      whole = slice(piece, whole, true);
      lastInsert = whole.getDefiningOp();
      inserted.insert(piece.operand);
    }
    b.setInsertionPoint(concat);
    for (const Piece &piece : pieces)
      if (!inserted.contains(piece.operand))
        whole = slice(piece, whole, true);
    if (pad) {
      b.setInsertionPoint(pad);
      pad.replaceAllUsesWith(insertInterior(b, pad, whole, padded));
      pad.erase();
    } else {
      concat.replaceAllUsesWith(whole);
    }
    concat.erase();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<tensor::ConcatOp> concats;
    for (Block &block : func.getBody())
      for (auto concat : block.getOps<tensor::ConcatOp>())
        concats.push_back(concat);
    for (tensor::ConcatOp concat : concats)
      rewrite(concat);
  }
};
} // namespace
} // namespace kiln
