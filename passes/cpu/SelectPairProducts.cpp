// Marked pair products of 16-bit lanes -> x86's vpmaddwd intrinsic (after bufferization).
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_SELECTPAIRPRODUCTSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The unshuffled operand of extsi(shuffle(v, v, even or odd)).
Value shuffled(Value v) {
  auto ext = v.getDefiningOp<arith::ExtSIOp>();
  auto shuffle = ext ? ext.getIn().getDefiningOp<vector::ShuffleOp>() : nullptr;
  return shuffle ? shuffle.getV1() : Value();
}

struct SelectPairProductsPass : impl::SelectPairProductsPassBase<SelectPairProductsPass> {
  using SelectPairProductsPassBase::SelectPairProductsPassBase;

  void runOnOperation() override {
    int64_t lanes = vectorBits >= 512 ? 16 : vectorBits >= 256 ? 8 : 0;
    if (!lanes)
      return;
    StringRef name = lanes == 16 ? "llvm.x86.avx512.pmaddw.d.512" : "llvm.x86.avx2.pmadd.wd";
    SmallVector<arith::AddIOp> marked;
    getOperation().walk([&](arith::AddIOp op) {
      if (op->hasAttr("kiln.pair_product"))
        marked.push_back(op);
    });
    for (arith::AddIOp op : marked) {
      auto even = op.getLhs().getDefiningOp<arith::MulIOp>();
      auto type = cast<VectorType>(op.getType());
      int64_t cols = type.getDimSize(0);
      Value x = even ? shuffled(even.getLhs()) : Value(), y = even ? shuffled(even.getRhs()) : Value();
      if (!x || !y || cols % lanes != 0) {
        op->removeAttr("kiln.pair_product"); // stays generic: correct, slower
        continue;
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value sum = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getI32IntegerAttr(0)));
      for (int64_t i = 0; i < cols; i += lanes) {
        auto piece = [&](Value v) {
          return vector::ExtractStridedSliceOp::create(b, loc, v, ArrayRef<int64_t>{2 * i},
                                                       ArrayRef<int64_t>{2 * lanes}, ArrayRef<int64_t>{1});
        };
        Value part = LLVM::CallIntrinsicOp::create(b, loc, VectorType::get({lanes}, b.getI32Type()),
                                                   b.getStringAttr(name), ValueRange{piece(x), piece(y)})
                         .getResult(0);
        sum = vector::InsertStridedSliceOp::create(b, loc, part, sum, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{1});
      }
      op.getResult().replaceAllUsesWith(sum);
      op.erase();
    }
  }
};
} // namespace
} // namespace kiln
