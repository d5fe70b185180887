// Result types of the graph ops whose result sizes depend on the data (DataDependentOps.td).
#include "dialects/graph/IR/ShapeInference.h"

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

//===----------------------------------------------------------------------===//
// Data-dependent result shapes (datadep family): the counted dims are always
// dynamic, whatever the operands; see docs/dynamic-shapes.md.
//===----------------------------------------------------------------------===//

LogicalResult NonZeroOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>, Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  types.push_back(RankedTensorType::get({rankedType(adaptor.getInput()).getRank(), kDyn}, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult CompressOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), c = rankedType(adaptor.getCondition());
  if (c.getRank() != 1 || !c.getElementType().isInteger(1))
    return fail(loc, "compress condition must be a 1-D bool tensor");
  int64_t length = c.getDimSize(0);
  if (!adaptor.getAxis()) {
    int64_t n = product(x.getShape());
    if (length != kDyn && n != kDyn && length > n)
      return fail(loc, "compress condition has " + Twine(length) + " entries for " + Twine(n) + " elements");
    types.push_back(RankedTensorType::get({kDyn}, x.getElementType()));
    return success();
  }
  auto axis = normalizeAxis(*adaptor.getAxis(), x.getRank());
  if (failed(axis))
    return fail(loc, "compress axis " + Twine((int64_t)*adaptor.getAxis()) + " out of range");
  int64_t n = x.getDimSize(*axis);
  if (length != kDyn && n != kDyn && length > n)
    return fail(loc, "compress condition has " + Twine(length) + " entries for an axis of " + Twine(n));
  SmallVector<int64_t> out(x.getShape());
  out[*axis] = kDyn;
  types.push_back(x.clone(out));
  return success();
}

LogicalResult UniqueOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  Type i64 = IntegerType::get(ctx, 64);
  int64_t n;
  if (adaptor.getAxis()) {
    auto axis = normalizeAxis(*adaptor.getAxis(), x.getRank());
    if (failed(axis))
      return fail(loc, "unique axis " + Twine((int64_t)*adaptor.getAxis()) + " out of range");
    SmallVector<int64_t> out(x.getShape());
    out[*axis] = kDyn;
    n = x.getDimSize(*axis);
    types.push_back(x.clone(out));
  } else {
    n = product(x.getShape());
    types.push_back(RankedTensorType::get({kDyn}, x.getElementType()));
  }
  types.push_back(RankedTensorType::get({kDyn}, i64));
  types.push_back(RankedTensorType::get({n}, i64));
  types.push_back(RankedTensorType::get({kDyn}, i64));
  return success();
}

LogicalResult NonMaxSuppressionOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                                    SmallVectorImpl<Type> &types) {
  auto boxes = rankedType(adaptor.getBoxes()), scores = rankedType(adaptor.getScores());
  if (boxes.getRank() != 3 || scores.getRank() != 3)
    return fail(loc, "non_max_suppression needs boxes [batches, boxes, 4] and scores [batches, classes, boxes]");
  if (!boxes.getElementType().isF32() || !scores.getElementType().isF32())
    return fail(loc, "unsupported non_max_suppression element type (boxes and scores must be f32)");
  auto differ = [](int64_t a, int64_t b) { return a != kDyn && b != kDyn && a != b; };
  if (differ(boxes.getDimSize(2), 4))
    return fail(loc, "non_max_suppression boxes need 4 coordinates, got " + Twine(boxes.getDimSize(2)));
  if (differ(boxes.getDimSize(0), scores.getDimSize(0)) || differ(boxes.getDimSize(1), scores.getDimSize(2)))
    return fail(loc, "non_max_suppression boxes and scores disagree on batches or boxes");
  auto scalar = [](Value v, Type et) {
    auto t = rankedType(v);
    return t.getElementType() == et && t.hasStaticShape() && t.getNumElements() == 1;
  };
  if (!scalar(adaptor.getMaxOutputBoxesPerClass(), IntegerType::get(ctx, 64)) ||
      !scalar(adaptor.getIouThreshold(), Float32Type::get(ctx)) ||
      !scalar(adaptor.getScoreThreshold(), Float32Type::get(ctx)))
    return fail(loc, "non_max_suppression needs one-element max_output_boxes_per_class (i64) and thresholds (f32)");
  if (adaptor.getCenterPointBox() != 0 && adaptor.getCenterPointBox() != 1)
    return fail(loc, "unsupported center_point_box " + Twine((int64_t)adaptor.getCenterPointBox()));
  types.push_back(RankedTensorType::get({kDyn, 3}, IntegerType::get(ctx, 64)));
  return success();
}

} // namespace kiln::graph
