// Result types of the elementwise graph ops (ElementwiseOps.td): broadcasting, axes, indices, selections.
#include "dialects/graph/IR/ShapeInference.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

static LogicalResult inferBinary(std::optional<Location> loc, Value lhs,
                                 Value rhs, SmallVectorImpl<Type> &types) {
  auto l = rankedType(lhs), r = rankedType(rhs);
  auto shape = broadcastShapes(l.getShape(), r.getShape());
  if (failed(shape))
    return fail(loc, "operands cannot be broadcast together");
  types.push_back(RankedTensorType::get(*shape, l.getElementType()));
  return success();
}

#define KILN_BINARY_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), types);        \
  }
KILN_BINARY_INFER(AddOp)
KILN_BINARY_INFER(SubOp)
KILN_BINARY_INFER(MulOp)
KILN_BINARY_INFER(DivOp)
KILN_BINARY_INFER(PowOp)
KILN_BINARY_INFER(MaxOp)
KILN_BINARY_INFER(MinOp)
KILN_BINARY_INFER(PReluOp)
KILN_BINARY_INFER(AndOp)
KILN_BINARY_INFER(OrOp)
KILN_BINARY_INFER(XorOp)
#undef KILN_BINARY_INFER


#define KILN_COMPARE_INFER(OP)                                                 \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    if (failed(inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), types)))   \
      return failure();                                                        \
    types[0] = cast<RankedTensorType>(types[0]).clone(IntegerType::get(ctx, 1)); \
    return success();                                                          \
  }
KILN_COMPARE_INFER(EqualOp)
KILN_COMPARE_INFER(LessOp)
KILN_COMPARE_INFER(LessOrEqualOp)
KILN_COMPARE_INFER(GreaterOp)
KILN_COMPARE_INFER(GreaterOrEqualOp)
#undef KILN_COMPARE_INFER

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto c = rankedType(adaptor.getCondition()), x = rankedType(adaptor.getX()),
       y = rankedType(adaptor.getY());
  if (x.getElementType() != y.getElementType())
    return fail(loc, "where branches must have the same element type");
  auto xy = broadcastShapes(x.getShape(), y.getShape());
  FailureOr<SmallVector<int64_t>> all = failure();
  if (succeeded(xy))
    all = broadcastShapes(c.getShape(), *xy);
  if (failed(all))
    return fail(loc, "operands cannot be broadcast together");
  types.push_back(RankedTensorType::get(*all, x.getElementType()));
  return success();
}

LogicalResult ClipOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  for (Value bound : {adaptor.getMin(), adaptor.getMax()}) {
    auto t = rankedType(bound);
    if (t.getNumElements() != 1 || t.getElementType() != x.getElementType())
      return fail(loc, "clip bounds must be single values of the input's type");
  }
  types.push_back(x);
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  for (int64_t d : adaptor.getShape())
    if (d < 0)
      return fail(loc, "expand shape has a negative entry");
  auto shape = broadcastShapes(x.getShape(), adaptor.getShape());
  if (failed(shape))
    return fail(loc, "input cannot be broadcast to the expand shape");
  types.push_back(x.clone(*shape));
  return success();
}

LogicalResult DynamicExpandOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto s = rankedType(adaptor.getShape());
  if (s.isDynamicDim(0))
    return fail(loc, "dynamic_expand needs a shape of static length");
  int64_t rank = std::max<int64_t>(x.getRank(), s.getDimSize(0));
  // Only an input dim of static size > 1 fixes the result's size.
  SmallVector<int64_t> dims(rank, kDyn);
  for (int64_t j = 0; j < x.getRank(); ++j) {
    int64_t d = x.getDimSize(j);
    if (d != kDyn && d != 1)
      dims[j + rank - x.getRank()] = d;
  }
  types.push_back(x.clone(dims));
  return success();
}

LogicalResult BitShiftOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  if (!isa<IntegerType>(rankedType(adaptor.getLhs()).getElementType()))
    return fail(loc, "bit_shift needs integers");
  if (adaptor.getDirection() != "LEFT" && adaptor.getDirection() != "RIGHT")
    return fail(loc, "bit_shift direction must be LEFT or RIGHT");
  return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), types);
}

LogicalResult ModOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  if (!adaptor.getFmod() && isa<FloatType>(rankedType(adaptor.getLhs()).getElementType()))
    return fail(loc, "mod of floating-point values needs fmod=1");
  return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), types);
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  ArrayRef<int64_t> pads = adaptor.getPads();
  StringRef mode = adaptor.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return fail(loc, "unsupported pad mode '" + mode + "'");
  if ((int64_t)pads.size() != 2 * x.getRank())
    return fail(loc, "pad needs " + Twine(2 * x.getRank()) + " pads");
  if (rankedType(adaptor.getValue()).getNumElements() != 1)
    return fail(loc, "pad value must be a single element");
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    if (pads[i] < 0 || pads[x.getRank() + i] < 0)
      return fail(loc, "negative pads (cropping) are not supported");
    int64_t d = x.getDimSize(i);
    out.push_back(d == kDyn ? kDyn : d + pads[i] + pads[x.getRank() + i]);
  }
  types.push_back(x.clone(out));
  return success();
}

template <typename Adaptor>
static LogicalResult inferArg(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                              SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  if (failed(axis))
    return fail(loc, "axis out of range");
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    if (i != *axis)
      out.push_back(x.getDimSize(i));
    else if (adaptor.getKeepdims())
      out.push_back(1);
  }
  types.push_back(RankedTensorType::get(out, IntegerType::get(ctx, 64)));
  return success();
}
LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferArg(ctx, loc, adaptor, types);
}
LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferArg(ctx, loc, adaptor, types);
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto d = rankedType(adaptor.getData()), i = rankedType(adaptor.getIndices());
  if (d.getRank() != i.getRank())
    return fail(loc, "data and indices must have the same rank");
  if (failed(normalizeAxis(adaptor.getAxis(), d.getRank())))
    return fail(loc, "axis out of range");
  types.push_back(RankedTensorType::get(i.getShape(), d.getElementType()));
  return success();
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto d = rankedType(adaptor.getData()), i = rankedType(adaptor.getIndices());
  int64_t r = d.getRank(), q = i.getRank(), b = adaptor.getBatchDims();
  if (q < 1 || r < 1)
    return fail(loc, "gather_nd needs data and indices of rank >= 1");
  if (b < 0 || b >= std::min(q, r))
    return fail(loc, "batch_dims out of range");
  int64_t k = i.getDimSize(q - 1);
  if (k == kDyn)
    return fail(loc, "gather_nd needs a static last dimension of indices");
  if (k < 1 || b + k > r)
    return fail(loc, "gather_nd index tuples are longer than the data's rank");
  for (int64_t j = 0; j < b; ++j)
    if (d.getDimSize(j) != kDyn && i.getDimSize(j) != kDyn && d.getDimSize(j) != i.getDimSize(j))
      return fail(loc, "gather_nd batch dimensions differ");
  SmallVector<int64_t> out(i.getShape().drop_back());
  llvm::append_range(out, d.getShape().drop_front(b + k));
  types.push_back(RankedTensorType::get(out, d.getElementType()));
  return success();
}

static LogicalResult checkReduction(std::optional<Location> loc, StringRef reduction) {
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return fail(loc, "unknown scatter reduction '" + reduction + "'");
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto d = rankedType(adaptor.getData()), i = rankedType(adaptor.getIndices()),
       u = rankedType(adaptor.getUpdates());
  if (d.getRank() != i.getRank() || i.getRank() != u.getRank())
    return fail(loc, "data, indices and updates must have the same rank");
  if (failed(verifyCompatibleShape(i.getShape(), u.getShape())))
    return fail(loc, "indices and updates must have the same shape");
  if (d.getElementType() != u.getElementType())
    return fail(loc, "data and updates must have the same element type");
  if (failed(normalizeAxis(adaptor.getAxis(), d.getRank())))
    return fail(loc, "axis out of range");
  if (failed(checkReduction(loc, adaptor.getReduction())))
    return failure();
  types.push_back(d);
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto d = rankedType(adaptor.getData()), i = rankedType(adaptor.getIndices()),
       u = rankedType(adaptor.getUpdates());
  int64_t r = d.getRank(), q = i.getRank();
  if (q < 1 || r < 1)
    return fail(loc, "scatter_nd needs data and indices of rank >= 1");
  int64_t k = i.getDimSize(q - 1);
  if (k == kDyn || k < 1 || k > r)
    return fail(loc, "scatter_nd needs a static index length in [1, rank(data)]");
  SmallVector<int64_t> expected(i.getShape().drop_back());
  llvm::append_range(expected, d.getShape().drop_front(k));
  if (failed(verifyCompatibleShape(expected, u.getShape())))
    return fail(loc, "updates must have shape indices.shape[:-1] + data.shape[k:]");
  if (d.getElementType() != u.getElementType())
    return fail(loc, "data and updates must have the same element type");
  if (failed(checkReduction(loc, adaptor.getReduction())))
    return failure();
  types.push_back(d);
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), kt = rankedType(adaptor.getK());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  if (failed(axis))
    return fail(loc, "axis out of range");
  if (kt.hasStaticShape() && kt.getNumElements() != 1)
    return fail(loc, "top_k needs a single k");
  SmallVector<int64_t> out(x.getShape());
  out[*axis] = kDyn;
  if (auto k = constantInts(adaptor.getK())) {
    int64_t n = x.getDimSize(*axis);
    if ((*k)[0] < 0 || (n != kDyn && (*k)[0] > n))
      return fail(loc, "k out of range");
    out[*axis] = (*k)[0];
  }
  types.push_back(x.clone(out));
  types.push_back(RankedTensorType::get(out, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return fail(loc, "einsum needs at least one operand");
  SmallVector<int64_t> ranks;
  Type et = rankedType(adaptor.getInputs()[0]).getElementType();
  for (Value v : adaptor.getInputs()) {
    ranks.push_back(rankedType(v).getRank());
    if (rankedType(v).getElementType() != et)
      return fail(loc, "einsum operands must have one element type");
  }
  auto spec = parseEinsum(adaptor.getEquation(), ranks);
  if (failed(spec))
    return fail(loc, "invalid einsum equation '" + adaptor.getEquation() + "'");
  llvm::DenseMap<int64_t, int64_t> sizes;
  for (auto [v, labels] : llvm::zip(adaptor.getInputs(), spec->inputs)) {
    auto t = rankedType(v);
    for (auto [dim, label] : llvm::enumerate(labels)) {
      int64_t size = t.getDimSize(dim);
      auto [it, inserted] = sizes.try_emplace(label, size);
      if (inserted || size == kDyn)
        continue;
      if (it->second == kDyn)
        it->second = size;
      else if (label >= EinsumSpec::kEllipsisLabel && (size == 1 || it->second == 1))
        it->second = std::max(it->second, size); // ellipsis dims broadcast numpy-style
      else if (it->second != size)
        return fail(loc, "einsum operands disagree on the size of a label");
    }
  }
  SmallVector<int64_t> out;
  for (int64_t label : spec->output) {
    if (!sizes.count(label))
      return fail(loc, "einsum result label is not in any operand");
    out.push_back(sizes[label]);
  }
  types.push_back(RankedTensorType::get(out, et));
  return success();
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  ArrayRef<int64_t> repeats = adaptor.getRepeats();
  if ((int64_t)repeats.size() != x.getRank())
    return fail(loc, "tile needs one repeat per axis");
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    if (repeats[i] < 0)
      return fail(loc, "tile repeats must be non-negative");
    int64_t d = x.getDimSize(i), tiled = kDyn;
    // Repeats come from the model (a constant input): a product past int64 is an error, not UB.
    if (d != kDyn && llvm::MulOverflow(d, repeats[i], tiled))
      return fail(loc, "tile repeats overflow dim " + std::to_string(i) + " (" + std::to_string(d) + " x " +
                           std::to_string(repeats[i]) + ")");
    out.push_back(tiled);
  }
  types.push_back(x.clone(out));
  return success();
}

LogicalResult IsNaNOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (!isa<FloatType>(x.getElementType()))
    return fail(loc, "is_nan needs a floating-point input");
  types.push_back(x.clone(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult IsInfOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (!isa<FloatType>(x.getElementType()))
    return fail(loc, "is_inf needs a floating-point input");
  types.push_back(x.clone(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult HardmaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (failed(normalizeAxis(adaptor.getAxis(), x.getRank())))
    return fail(loc, "hardmax axis out of range");
  types.push_back(x);
  return success();
}

LogicalResult TriluOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (Value k = adaptor.getKValue()) {
    auto kt = rankedType(k);
    if (!kt.hasStaticShape() || kt.getNumElements() != 1 || !kt.getElementType().isInteger(64))
      return fail(loc, "trilu k must be a single int64 value");
  }
  types.push_back(x);
  return success();
}

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (failed(normalizeAxis(adaptor.getAxis(), x.getRank())))
    return fail(loc, "cum_sum axis out of range");
  types.push_back(x);
  return success();
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto i = rankedType(adaptor.getIndices()), v = rankedType(adaptor.getValues());
  if (v.getNumElements() != 2)
    return fail(loc, "one_hot values must hold [off, on]");
  Value depthValue = adaptor.getDepthValue();
  if (depthValue && rankedType(depthValue).getNumElements() != 1)
    return fail(loc, "one_hot depth must be a single value");
  if (!depthValue && adaptor.getDepth() <= 0)
    return fail(loc, "one_hot depth must be positive");
  int64_t outRank = i.getRank() + 1;
  auto axis = normalizeAxis(adaptor.getAxis(), outRank);
  if (failed(axis))
    return fail(loc, "one_hot axis out of range");
  SmallVector<int64_t> out(i.getShape());
  out.insert(out.begin() + *axis, depthValue ? kDyn : adaptor.getDepth());
  types.push_back(RankedTensorType::get(out, v.getElementType()));
  return success();
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), t = rankedType(adaptor.getTarget());
  if (x.getRank() < 2 || t.getRank() != x.getRank() - 1)
    return fail(loc, "nll_loss needs input [N, C, d...] and target [N, d...]");
  StringRef r = adaptor.getReduction();
  if (r != "none" && r != "sum" && r != "mean")
    return fail(loc, "unknown reduction '" + r + "'");
  if (r == "none")
    types.push_back(RankedTensorType::get(t.getShape(), x.getElementType()));
  else
    types.push_back(RankedTensorType::get({}, x.getElementType()));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  types.push_back(
      rankedType(adaptor.getInput()).clone(adaptor.getTo()));
  return success();
}

LogicalResult GeluOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (adaptor.getApproximate() != "none" && adaptor.getApproximate() != "tanh")
    return fail(loc, "gelu approximate must be \"none\" or \"tanh\"");
  types.push_back(rankedType(adaptor.getInput()));
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto r = rankedType(adaptor.getRatio()), t = rankedType(adaptor.getTrainingMode());
  if (!r.hasStaticShape() || r.getNumElements() != 1 || !t.hasStaticShape() || t.getNumElements() != 1)
    return fail(loc, "dropout ratio and training_mode must be single values");
  types.push_back(x);
  types.push_back(x.clone(IntegerType::get(ctx, 1)));
  return success();
}

} // namespace kiln::graph
