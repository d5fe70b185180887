// Software prefetch for the weight streams of quantized products (after bufferization).
#include "passes/cpu/Passes.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_PREFETCHWEIGHTSTREAMSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct PrefetchWeightStreamsPass : impl::PrefetchWeightStreamsPassBase<PrefetchWeightStreamsPass> {
  using PrefetchWeightStreamsPassBase::PrefetchWeightStreamsPassBase;

  /// A vector read of 8-bit panels [P, rows, B] straight from a weight
  /// argument: what the quantized kernels stream (bufferization drops marks
  /// on the reads, so the shape is the mark).
  static bool isWeightStream(func::FuncOp func, vector::TransferReadOp read) {
    auto arg = dyn_cast<BlockArgument>(read.getBase());
    auto type = dyn_cast<MemRefType>(read.getBase().getType());
    return arg && arg.getOwner()->getParentOp() == func.getOperation() &&
           func.getArgAttr(arg.getArgNumber(), attrs::kWeight) && type && type.getRank() == 3 &&
           type.getElementType().isInteger(8);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<vector::TransferReadOp> reads;
    func.walk([&](vector::TransferReadOp read) {
      if (isWeightStream(func, read))
        reads.push_back(read);
    });
    for (vector::TransferReadOp read : reads) {
      auto type = dyn_cast<MemRefType>(read.getBase().getType());
      if (!type || type.getRank() < 2 || !type.hasStaticShape() || distance <= 0)
        continue;
      // Rows ahead: `distance` bytes of rows of the innermost dim.
      int64_t rowBytes = type.getDimSize(type.getRank() - 1) * type.getElementTypeBitWidth() / 8;
      int64_t rows = std::max<int64_t>(1, distance / std::max<int64_t>(rowBytes, 1));
      OpBuilder b(read);
      Location loc = read.getLoc();
      SmallVector<Value> indices(read.getIndices());
      int64_t dim = type.getRank() - 2;
      Value ahead = arith::AddIOp::create(b, loc, indices[dim], arith::ConstantIndexOp::create(b, loc, rows));
      indices[dim] = arith::MinSIOp::create(b, loc, ahead,
                                            arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim) - 1));
      memref::PrefetchOp::create(b, loc, read.getBase(), indices, /*isWrite=*/false, /*localityHint=*/3,
                                 /*isDataCache=*/true);
    }
  }
};
} // namespace
} // namespace kiln
