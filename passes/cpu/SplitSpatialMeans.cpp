// Splits a channels-last spatial mean into a mean over each map row, then a mean of the rows.
//
// reduce_mean(x [N, H, W, C], axes 1 and 2) lowered as one reduction makes each work item a
// vector of channels summed over every position of the map: the items read every row, half of
// them written by the other thread's share of the convolution before, and each sums H*W values
// into one accumulator, a chain of dependent adds. Squeeze-and-excitation takes such a mean of
// nearly every map in EfficientNet (112x112x32: 62 us on one thread, 50 us on two). The mean
// over W first has a work item per row (and channel vector): each thread reads the rows it
// wrote, in chains of W adds; the mean over H of the [N, H, 1, C] result is small.
#include "passes/cpu/Passes.h"

#include "dialects/graph/IR/Graph.h"

namespace kiln {
#define GEN_PASS_DEF_SPLITSPATIALMEANSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct SplitSpatialMeansPass : impl::SplitSpatialMeansPassBase<SplitSpatialMeansPass> {
  using SplitSpatialMeansPassBase::SplitSpatialMeansPassBase;

  void runOnOperation() override {
    SmallVector<graph::ReduceMeanOp> means;
    getOperation().walk([&](graph::ReduceMeanOp op) { means.push_back(op); });
    OpBuilder b(&getContext());
    for (graph::ReduceMeanOp op : means) {
      auto xt = cast<RankedTensorType>(op.getInput().getType());
      if (xt.getRank() != 4 || !xt.hasStaticShape() || !xt.getElementType().isF32() ||
          op.getAxes() != ArrayRef<int64_t>{1, 2} || xt.getDimSize(1) < 2 || xt.getDimSize(2) < 2 ||
          xt.getNumElements() * 4 < minBytes)
        continue;
      b.setInsertionPoint(op);
      Location loc = op.getLoc();
      // Row sums, not means: a mean's division would be a pass over the [N, H, 1, C] sums of
      // its own; one multiply by 1/W of the mean over H costs C.
      Value rows = graph::ReduceSumOp::create(b, loc, op.getInput(), b.getDenseI64ArrayAttr({2}),
                                              b.getI64IntegerAttr(1));
      Value mean = graph::ReduceMeanOp::create(b, loc, rows, b.getDenseI64ArrayAttr({1, 2}), op.getKeepdimsAttr());
      auto scalarType = RankedTensorType::get({1}, b.getF32Type());
      Value perRow = graph::ConstantOp::create(
          b, loc, cast<ElementsAttr>(DenseElementsAttr::get(scalarType, 1.0f / float(xt.getDimSize(2)))));
      Value result = graph::MulOp::create(b, loc, op.getType(), mean, perRow);
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }
};
} // namespace
} // namespace kiln
