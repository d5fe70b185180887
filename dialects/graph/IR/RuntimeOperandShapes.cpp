// Result types of the graph ops with run-time shape operands (RuntimeOperandOps.td).
#include "dialects/graph/IR/ShapeInference.h"

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

//===----------------------------------------------------------------------===//
// Run-time shape operands (shapeinputs): the values are data, so the dims
// they decide are dynamic; only the static lengths of the operands count.
//===----------------------------------------------------------------------===//

namespace {
/// The static length of a 1-D operand, or failure.
FailureOr<int64_t> staticLength(Value v) {
  auto t = rankedType(v);
  if (t.getRank() != 1 || t.isDynamicDim(0))
    return failure();
  return t.getDimSize(0);
}

RankedTensorType allDynamic(RankedTensorType like, int64_t rank) {
  return RankedTensorType::get(SmallVector<int64_t>(rank, kDyn), like.getElementType());
}
} // namespace

LogicalResult DynamicStridedSliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                      Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto n = staticLength(adaptor.getStarts());
  if (failed(n))
    return fail(loc, "dynamic_strided_slice starts must be 1-D of static length");
  for (Value v : {adaptor.getEnds(), adaptor.getAxes(), adaptor.getSteps()}) {
    auto m = staticLength(v);
    if (failed(m) || *m != *n)
      return fail(loc, "dynamic_strided_slice starts, ends, axes and steps need one value per sliced axis");
  }
  types.push_back(allDynamic(x, x.getRank()));
  return success();
}

LogicalResult DynamicSqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto n = staticLength(adaptor.getAxes());
  if (failed(n))
    return fail(loc, "dynamic_squeeze axes must be 1-D of static length");
  if (*n > x.getRank())
    return fail(loc, "dynamic_squeeze: " + Twine(*n) + " axes for a rank-" + Twine(x.getRank()) + " input");
  types.push_back(allDynamic(x, x.getRank() - *n));
  return success();
}

LogicalResult DynamicUnsqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto n = staticLength(adaptor.getAxes());
  if (failed(n))
    return fail(loc, "dynamic_unsqueeze axes must be 1-D of static length");
  types.push_back(allDynamic(x, x.getRank() + *n));
  return success();
}

LogicalResult DynamicTileOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto n = staticLength(adaptor.getRepeats());
  if (failed(n) || *n != x.getRank())
    return fail(loc, "dynamic_tile needs one repeat per axis (" + Twine(x.getRank()) + ")");
  types.push_back(allDynamic(x, x.getRank()));
  return success();
}

LogicalResult DynamicPadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  StringRef mode = adaptor.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return fail(loc, "unsupported pad mode '" + mode + "'");
  auto n = staticLength(adaptor.getPads());
  if (failed(n) || *n != 2 * x.getRank())
    return fail(loc, "dynamic_pad needs " + Twine(2 * x.getRank()) + " pads");
  auto v = rankedType(adaptor.getValue());
  if (!v.hasStaticShape() || v.getNumElements() != 1 || v.getElementType() != x.getElementType())
    return fail(loc, "pad value must be a single element of the input's type");
  types.push_back(allDynamic(x, x.getRank()));
  return success();
}

LogicalResult DynamicReduceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  StringRef kind = adaptor.getKind();
  static const char *kinds[] = {"sum", "mean", "max", "min", "prod", "l1", "l2", "sum_square", "log_sum",
                                "log_sum_exp"};
  if (!llvm::is_contained(kinds, kind))
    return fail(loc, "unknown dynamic_reduce kind '" + kind + "'");
  if ((kind == "log_sum_exp" || kind == "log_sum" || kind == "l2" || kind == "mean") &&
      !isa<FloatType>(x.getElementType()))
    return fail(loc, "dynamic_reduce " + kind + " needs a floating-point input");
  auto n = staticLength(adaptor.getAxes());
  if (failed(n) || *n == 0)
    return fail(loc, "dynamic_reduce axes must be 1-D of static, non-zero length");
  if (!adaptor.getKeepdims()) {
    if (*n > x.getRank())
      return fail(loc, "dynamic_reduce: " + Twine(*n) + " axes for a rank-" + Twine(x.getRank()) + " input");
    types.push_back(allDynamic(x, x.getRank() - *n));
    return success();
  }
  SmallVector<int64_t> out;
  for (int64_t d : x.getShape())
    out.push_back(d == 1 ? 1 : kDyn);
  types.push_back(x.clone(out));
  return success();
}

} // namespace kiln::graph
