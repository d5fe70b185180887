// ReverseSequence, composed from graph ops: per-batch reversed time indices fed to a GatherElements.
#include "compiler/importer/OpCreate.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// ReverseSequence: along time_axis, the first sequence_lens[b] entries of
/// batch b are reversed and the rest kept. As a gather along the time axis
/// with index(t, b) = t < len[b] ? len[b] - 1 - t : t, broadcast over the
/// trailing axes.
Results importReverseSequence(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  Value x = c.input(0), lens = c.input(1);
  auto xt = cast<RankedTensorType>(x.getType());
  auto lt = cast<RankedTensorType>(lens.getType());
  int64_t rank = xt.getRank();
  int64_t batchAxis = c.intAttr("batch_axis", 1), timeAxis = c.intAttr("time_axis", 0);
  if (rank < 2)
    return c.fail("input must have rank >= 2");
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    return c.fail("unsupported batch_axis/time_axis " + Twine(batchAxis) + "/" + Twine(timeAxis) +
                  " (one must be 0, the other 1)");
  if (lt.getRank() != 1 || !lt.getElementType().isInteger(64))
    return c.fail("sequence_lens must be a 1-D int64 tensor");
  if (!lt.isDynamicDim(0) && !xt.isDynamicDim(batchAxis) && lt.getDimSize(0) != xt.getDimSize(batchAxis))
    return c.fail("sequence_lens has " + Twine(lt.getDimSize(0)) + " entries for a batch of " +
                  Twine(xt.getDimSize(batchAxis)));
  Type i64 = c.b.getI64Type();
  // Time positions 0..T-1, a constant when T is static.
  Value steps;
  if (!xt.isDynamicDim(timeAxis)) {
    SmallVector<int64_t> values;
    for (int64_t t = 0; t < xt.getDimSize(timeAxis); ++t)
      values.push_back(t);
    steps = c.i64Constant(values);
  } else {
    auto length = create<ShapeOp>(c, x, timeAxis, c.b.getI64IntegerAttr(timeAxis + 1));
    if (failed(length))
      return failure();
    auto scalar = create<ReshapeOp>(c, *length, c.i64Constant({}), (int64_t)0);
    if (failed(scalar))
      return failure();
    auto range = create<RangeOp>(c, scalarConstant(c, i64, 0), *scalar, scalarConstant(c, i64, 1));
    if (failed(range))
      return failure();
    steps = *range;
  }
  // t along time_axis and len along batch_axis of a 2-D index grid.
  auto t2 = create<UnsqueezeOp>(c, steps, ArrayRef<int64_t>{1 - timeAxis});
  auto l2 = create<UnsqueezeOp>(c, lens, ArrayRef<int64_t>{1 - batchAxis});
  if (failed(t2) || failed(l2))
    return failure();
  auto inside = create<LessOp>(c, *t2, *l2);
  auto last = create<SubOp>(c, *l2, scalarConstant(c, i64, 1));
  if (failed(inside) || failed(last))
    return failure();
  auto reversed = create<SubOp>(c, *last, *t2);
  if (failed(reversed))
    return failure();
  auto index = create<WhereOp>(c, *inside, *reversed, *t2);
  if (failed(index))
    return failure();
  if (rank > 2) {
    SmallVector<int64_t> trailing;
    for (int64_t i = 2; i < rank; ++i)
      trailing.push_back(i);
    index = create<UnsqueezeOp>(c, *index, trailing);
    if (failed(index))
      return failure();
  }
  // Broadcast to the input's shape unless it already has it.
  if (cast<RankedTensorType>(index->getType()).getShape() != xt.getShape() || !xt.hasStaticShape()) {
    if (xt.hasStaticShape()) {
      index = create<ExpandOp>(c, *index, xt.getShape());
    } else {
      auto shape = create<ShapeOp>(c, x, (int64_t)0, IntegerAttr());
      if (failed(shape))
        return failure();
      index = create<DynamicExpandOp>(c, *index, *shape);
    }
    if (failed(index))
      return failure();
  }
  return single(create<GatherElementsOp>(c, x, *index, timeAxis));
}

} // namespace

void addReverseSequenceImporter(llvm::StringMap<NodeImporter> &t) {
  t["ReverseSequence"] = importReverseSequence;
}

} // namespace kiln
