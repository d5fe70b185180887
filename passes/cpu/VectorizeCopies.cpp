// Buffer copies (linalg.copy on memrefs, what bufferization leaves where a value must move: into a
// padded or concatenated buffer's interior, out of a view it cannot alias) as vector loops over
// the run of elements that is contiguous in both buffers.
//
// convert-linalg-to-parallel-loops made them scalar loads and stores, one element at a time
// (13-20 GB/s on the Xeon and the EPYC alike): LLVM's loop vectorizer does not take a loop whose
// stores it cannot prove apart from its loads, and these copies move megabytes per run (ocr_det's
// concatenations and pixel shuffles, resnet18's pooled map into its padded copies).
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_VECTORIZECOPIESPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The first dim of the longest run of trailing dims that is contiguous in `type` (static sizes,
/// the last stride 1, each stride the next one's times its size), or rank when there is none.
int64_t contiguousFrom(MemRefType type) {
  int64_t rank = type.getRank();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || rank == 0 || strides.back() != 1 ||
      type.isDynamicDim(rank - 1))
    return rank;
  int64_t first = rank - 1;
  while (first > 0 && !type.isDynamicDim(first - 1) && !ShapedType::isDynamic(strides[first - 1]) &&
         strides[first - 1] == strides[first] * type.getDimSize(first))
    --first;
  return first;
}

/// Iterations the copy's parallel loop should have, at least, to be split over threads.
constexpr int64_t kMinItems = 8;

struct VectorizeCopiesPass : impl::VectorizeCopiesPassBase<VectorizeCopiesPass> {
  using VectorizeCopiesPassBase::VectorizeCopiesPassBase;

  void rewrite(linalg::CopyOp op) {
    auto source = dyn_cast<MemRefType>(op.getInputs()[0].getType());
    auto target = dyn_cast<MemRefType>(op.getOutputs()[0].getType());
    if (!source || !target || source.getShape() != target.getShape() || source.getRank() < 2)
      return;
    // Whole-byte scalars only: a vector of i1 would be read as packed bits, where a buffer of i1
    // holds a byte per element.
    Type et = source.getElementType();
    if (!et.isIntOrFloat() || et.getIntOrFloatBitWidth() % 8 != 0 || et != target.getElementType())
      return;
    int64_t rank = source.getRank();
    // The run that is contiguous in both is folded into one dim. Enough dims stay outside it
    // for the parallel loop to have kMinItems iterations where the shape allows (a whole
    // [1, C, H, W] map is one run, and one work item would leave the other threads idle);
    // dynamic dims (a batch) count as 1.
    int64_t first = std::max<int64_t>({contiguousFrom(source), contiguousFrom(target), 1});
    auto items = [&](int64_t upTo) {
      int64_t n = 1;
      for (int64_t d = 0; d < upTo; ++d)
        n *= source.isDynamicDim(d) ? 1 : source.getDimSize(d);
      return n;
    };
    while (first + 1 < rank && items(first) < kMinItems)
      ++first;
    if (first == rank)
      return;
    int64_t run = 1;
    for (int64_t d = first; d < rank; ++d)
      run *= source.getDimSize(d);
    int64_t lanes = vectorBits / et.getIntOrFloatBitWidth();
    // Runs shorter than half a vector (three channels of an image) stay scalar loops.
    if (lanes < 2 || 2 * run < lanes)
      return;

    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d < first; ++d)
      groups.push_back({d});
    groups.emplace_back();
    for (int64_t d = first; d < rank; ++d)
      groups.back().push_back(d);
    Value from = op.getInputs()[0], to = op.getOutputs()[0];
    if (first + 1 < rank) {
      from = memref::CollapseShapeOp::create(b, loc, from, groups);
      to = memref::CollapseShapeOp::create(b, loc, to, groups);
    }
    auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < first; ++d) {
      lbs.push_back(c(b, 0));
      ubs.push_back(memref::DimOp::create(b, loc, op.getInputs()[0], d));
      steps.push_back(c(b, 1));
    }
    auto vecType = VectorType::get({lanes}, et);
    Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(et));
    int64_t whole = run / lanes * lanes;
    scf::ParallelOp::create(b, loc, lbs, ubs, steps, [&](OpBuilder &pb, Location, ValueRange ivs) {
      auto move = [&](OpBuilder &mb, Value at, bool inBounds) {
        SmallVector<Value> idx(ivs.begin(), ivs.end());
        idx.push_back(at);
        Value v = vector::TransferReadOp::create(mb, loc, vecType, from, idx, pad, ArrayRef<bool>{inBounds});
        vector::TransferWriteOp::create(mb, loc, v, to, idx, ArrayRef<bool>{inBounds});
      };
      if (whole > 0)
        scf::ForOp::create(pb, loc, c(pb, 0), c(pb, whole), c(pb, lanes), ValueRange{},
                           [&](OpBuilder &fb, Location, Value j, ValueRange) {
                             move(fb, j, true);
                             scf::YieldOp::create(fb, loc);
                           });
      // The tail: a masked read and write of the last run % lanes elements.
      if (whole < run)
        move(pb, c(pb, whole), false);
      scf::ReduceOp::create(pb, loc);
    });
    op.erase();
  }

  void runOnOperation() override {
    SmallVector<linalg::CopyOp> copies;
    getOperation().walk([&](linalg::CopyOp op) {
      if (op.hasPureBufferSemantics())
        copies.push_back(op);
    });
    for (linalg::CopyOp op : copies)
      rewrite(op);
  }
};

} // namespace
} // namespace kiln
