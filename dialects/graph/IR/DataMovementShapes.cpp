// Result types of the data-movement and shape graph ops (DataMovementOps.td).
#include "dialects/graph/IR/ShapeInference.h"

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto type = llvm::dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return fail(loc, "constant value must be a ranked tensor");
  types.push_back(type);
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto shapeType = rankedType(adaptor.getShape());
  if (shapeType.isDynamicDim(0))
    return fail(loc, "reshape target rank must be static");
  int64_t rank = shapeType.getDimSize(0);
  SmallVector<int64_t> out(rank, kDyn);
  if (auto shape = constantInts(adaptor.getShape())) {
    int64_t inferAt = -1, known = 1;
    bool knownStatic = true;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t s = (*shape)[i];
      if (s == -1) {
        if (inferAt >= 0)
          return fail(loc, "reshape shape has more than one -1");
        inferAt = i;
        continue;
      }
      if (s < -1)
        return fail(loc, "reshape shape has invalid entry " + Twine(s));
      if (s == 0 && !adaptor.getAllowzero()) {
        if (i >= x.getRank())
          return fail(loc, "reshape copies dimension " + Twine(i) +
                               " that the input lacks");
        s = x.getDimSize(i);
      }
      out[i] = s;
      if (s == kDyn)
        knownStatic = false;
      else if (__builtin_mul_overflow(known, s, &known))
        return fail(loc, "reshape shape has more than 2^63 elements");
    }
    int64_t total = product(x.getShape());
    if (inferAt >= 0 && knownStatic && total != kDyn) {
      if (known == 0 || total % known != 0)
        return fail(loc, "reshape cannot infer -1: " + Twine(total) +
                             " elements into blocks of " + Twine(known));
      out[inferAt] = total / known;
    }
    if (inferAt < 0 && knownStatic && total != kDyn && total != known)
      return fail(loc, "reshape of " + Twine(total) + " elements into " +
                           Twine(known));
  }
  types.push_back(x.clone(out));
  return success();
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *, std::optional<Location>, Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  types.push_back(RankedTensorType::get({kDyn}, rankedType(adaptor.getStart()).getElementType()));
  return success();
}

LogicalResult ConstantOfShapeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto shapeType = rankedType(adaptor.getShape());
  if (shapeType.isDynamicDim(0))
    return fail(loc, "constant_of_shape needs a shape of static length");
  if (adaptor.getValue().getNumElements() != 1)
    return fail(loc, "constant_of_shape value must be a single element");
  SmallVector<int64_t> dims(shapeType.getDimSize(0), kDyn);
  if (auto shape = constantInts(adaptor.getShape())) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if ((*shape)[i] < 0)
        return fail(loc, "constant_of_shape has a negative dimension");
      dims[i] = (*shape)[i];
    }
  }
  types.push_back(RankedTensorType::get(dims, adaptor.getValue().getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if ((int64_t)perm.size() != x.getRank())
    return fail(loc, "transpose perm must have one entry per axis");
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return fail(loc, "transpose perm is not a permutation");
    seen[p] = true;
    out.push_back(x.getDimSize(p));
  }
  types.push_back(x.clone(out));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (axis < -x.getRank() || axis > x.getRank())
    return fail(loc, "flatten axis out of range");
  if (axis < 0)
    axis += x.getRank();
  types.push_back(x.clone({product(x.getShape().take_front(axis)),
                           product(x.getShape().drop_front(axis))}));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return fail(loc, "concat needs at least one input");
  auto first = rankedType(adaptor.getInputs().front());
  auto axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (failed(axis))
    return fail(loc, "concat axis out of range");
  SmallVector<int64_t> out(first.getShape());
  out[*axis] = 0;
  for (Value v : adaptor.getInputs()) {
    auto t = rankedType(v);
    if (t.getRank() != first.getRank())
      return fail(loc, "concat inputs must have the same rank");
    for (int64_t i = 0; i < t.getRank(); ++i) {
      int64_t d = t.getDimSize(i);
      if (i == *axis) {
        out[i] = (out[i] == kDyn || d == kDyn) ? kDyn : out[i] + d;
      } else if (d != kDyn) {
        if (out[i] != kDyn && out[i] != d)
          return fail(loc, "concat inputs differ in dimension " + Twine(i));
        out[i] = d;
      }
    }
  }
  types.push_back(first.clone(out));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto data = rankedType(adaptor.getData());
  auto idx = rankedType(adaptor.getIndices());
  auto axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (failed(axis))
    return fail(loc, "gather axis out of range");
  SmallVector<int64_t> out(data.getShape().take_front(*axis));
  llvm::append_range(out, idx.getShape());
  llvm::append_range(out, data.getShape().drop_front(*axis + 1));
  types.push_back(data.clone(out));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    axes = adaptor.getAxes(), steps = adaptor.getSteps();
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return fail(loc, "slice starts, ends, axes and steps must have equal lengths");
  SmallVector<int64_t> out(x.getShape());
  SmallVector<bool> seen(x.getRank(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = normalizeAxis(axes[i], x.getRank());
    if (failed(axis) || seen[*axis])
      return fail(loc, "slice axes must be distinct and in range");
    seen[*axis] = true;
    if (steps[i] == 0)
      return fail(loc, "slice step must not be 0");
    int64_t dim = x.getDimSize(*axis);
    if (dim == kDyn) {
      out[*axis] = kDyn;
      continue;
    }
    out[*axis] = sliceExtent(starts[i], ends[i], steps[i], dim).count;
  }
  types.push_back(x.clone(out));
  return success();
}

LogicalResult DynamicSliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t n = adaptor.getAxes().size();
  for (Value v : {adaptor.getStarts(), adaptor.getEnds()}) {
    auto t = rankedType(v);
    if (t.getRank() != 1 || t.getDimSize(0) != n)
      return fail(loc, "dynamic_slice starts and ends need one value per axis");
  }
  if ((int64_t)adaptor.getSteps().size() != n)
    return fail(loc, "dynamic_slice needs one step per axis");
  SmallVector<int64_t> out(x.getShape());
  SmallVector<bool> seen(x.getRank(), false);
  for (int64_t k = 0; k < n; ++k) {
    auto a = normalizeAxis(adaptor.getAxes()[k], x.getRank());
    if (failed(a) || seen[*a] || adaptor.getSteps()[k] == 0)
      return fail(loc, "dynamic_slice axes must be distinct and in range, steps non-zero");
    seen[*a] = true;
    out[*a] = kDyn;
  }
  types.push_back(x.clone(out));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  SmallVector<bool> drop(x.getRank(), false);
  if (adaptor.getAxes().empty()) {
    for (int64_t i = 0; i < x.getRank(); ++i)
      drop[i] = x.getDimSize(i) == 1;
  }
  for (int64_t axis : adaptor.getAxes()) {
    auto a = normalizeAxis(axis, x.getRank());
    if (failed(a))
      return fail(loc, "squeeze axis " + Twine(axis) + " out of range");
    if (x.getDimSize(*a) != 1 && x.getDimSize(*a) != kDyn)
      return fail(loc, "squeeze axis " + Twine(axis) + " has size " +
                           Twine(x.getDimSize(*a)));
    drop[*a] = true;
  }
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < x.getRank(); ++i)
    if (!drop[i])
      out.push_back(x.getDimSize(i));
  types.push_back(x.clone(out));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t outRank = x.getRank() + adaptor.getAxes().size();
  SmallVector<bool> inserted(outRank, false);
  for (int64_t axis : adaptor.getAxes()) {
    auto a = normalizeAxis(axis, outRank);
    if (failed(a) || inserted[*a])
      return fail(loc, "unsqueeze axes must be distinct and in range");
    inserted[*a] = true;
  }
  SmallVector<int64_t> out;
  int64_t next = 0;
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(inserted[i] ? 1 : x.getDimSize(next++));
  types.push_back(x.clone(out));
  return success();
}

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  int64_t rank = rankedType(adaptor.getInput()).getRank();
  auto clampAxis = [&](int64_t a) {
    return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank);
  };
  int64_t start = clampAxis(adaptor.getStart());
  int64_t end = adaptor.getEnd() ? clampAxis(*adaptor.getEnd()) : rank;
  types.push_back(RankedTensorType::get({std::max<int64_t>(end - start, 0)},
                                        IntegerType::get(ctx, 64)));
  return success();
}

} // namespace kiln::graph
