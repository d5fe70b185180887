// Importers of the ONNX ops whose output shape depends on input values: NonZero, Compress, Unique, NonMaxSuppression.
#include "compiler/importer/OpCreate.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <limits>

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// All results of OpTy (built with inferred types, or the node's error).
template <typename OpTy, unsigned NumResults = 1, typename... Args> Results build(NodeContext &c, Args &&...args) {
  auto op = createOperation<OpTy, NumResults>(c, std::forward<Args>(args)...);
  if (failed(op))
    return failure();
  return SmallVector<Value>((*op)->getResults());
}

Type elementType(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

Results importNonZero(NodeContext &c) {
  if (!c.input(0))
    return c.fail("missing required input 0");
  return build<NonZeroOp>(c, c.input(0));
}

Results importCompress(NodeContext &c) {
  if (!c.input(0) || !c.input(1))
    return c.fail("Compress needs input and condition");
  if (!elementType(c.input(1)).isInteger(1))
    return c.fail("Compress condition must be bool");
  IntegerAttr axis;
  if (c.attr("axis"))
    axis = c.b.getI64IntegerAttr(c.intAttr("axis", 0));
  return build<CompressOp>(c, c.input(0), c.input(1), axis);
}

Results importUnique(NodeContext &c) {
  if (!c.input(0))
    return c.fail("missing required input 0");
  IntegerAttr axis;
  if (c.attr("axis"))
    axis = c.b.getI64IntegerAttr(c.intAttr("axis", 0));
  int64_t sorted = c.intAttr("sorted", 1);
  if (sorted != 0 && sorted != 1)
    return c.fail("unsupported sorted " + Twine(sorted));
  return build<UniqueOp, 4>(c, c.input(0), axis, c.b.getI64IntegerAttr(sorted));
}

/// The optional scalar inputs get ONNX's defaults as constants: no boxes,
/// IoU threshold 0, and no score threshold (-inf, which every score but NaN
/// exceeds).
Results importNonMaxSuppression(NodeContext &c) {
  if (!c.input(0) || !c.input(1))
    return c.fail("NonMaxSuppression needs boxes and scores");
  auto f32Scalar = [&](float v) -> Value {
    auto type = RankedTensorType::get({1}, c.b.getF32Type());
    return ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(type, ArrayRef<float>(v)));
  };
  Value maxBoxes = c.input(2) ? c.input(2) : c.i64Constant({0});
  Value iou = c.input(3) ? c.input(3) : f32Scalar(0.0f);
  Value score = c.input(4) ? c.input(4) : f32Scalar(-std::numeric_limits<float>::infinity());
  int64_t center = c.intAttr("center_point_box", 0);
  if (center != 0 && center != 1)
    return c.fail("unsupported center_point_box " + Twine(center));
  return build<NonMaxSuppressionOp>(c, c.input(0), c.input(1), maxBoxes, iou, score, c.b.getI64IntegerAttr(center));
}

} // namespace

void addDataDependentImporters(llvm::StringMap<NodeImporter> &table) {
  table["NonZero"] = importNonZero;
  table["Compress"] = importCompress;
  table["Unique"] = importUnique;
  table["NonMaxSuppression"] = importNonMaxSuppression;
}

} // namespace kiln
