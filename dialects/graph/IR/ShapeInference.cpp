// Result-type inference for every graph op: the single place that knows ONNX's shape rules.
// The verifier re-runs it, so a hand-written type that disagrees is reported as an error.
#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

#include <map>

using namespace mlir;
using namespace kiln::graph;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

RankedTensorType rankedType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

LogicalResult fail(std::optional<Location> loc, const Twine &msg) {
  return emitOptionalError(loc, msg);
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    // Past 2^63 elements the count is as unknown as a dynamic one (a hostile model's dims).
    if (d == kDyn || __builtin_mul_overflow(p, d, &p))
      return kDyn;
  }
  return p;
}

/// Reads a constant integer tensor produced by graph.constant, if it is one.
std::optional<SmallVector<int64_t>> constantInts(Value v) {
  DenseIntElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &x : attr.getValues<APInt>())
    values.push_back(x.getSExtValue());
  return values;
}
} // namespace

namespace kiln::graph {

FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1)
      out[i] = db;
    else if (db == 1)
      out[i] = da;
    else if (da == kDyn)
      out[i] = db;
    else if (db == kDyn || da == db)
      out[i] = da;
    else
      return failure();
  }
  return out;
}

FailureOr<EinsumSpec> parseEinsum(StringRef equation, ArrayRef<int64_t> ranks) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ')
      eq.push_back(ch);
  StringRef lhs = eq, rhs;
  bool explicitOutput = false;
  size_t arrow = lhs.find("->");
  if (arrow != StringRef::npos) {
    rhs = lhs.substr(arrow + 2);
    lhs = lhs.substr(0, arrow);
    explicitOutput = true;
  }
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ranks.size())
    return failure();
  // Each term: letters with at most one "..."; returns the letters before and
  // after it (and whether it was there).
  struct Term {
    std::string before, after;
    bool ellipsis = false;
  };
  auto splitTerm = [](StringRef t) -> FailureOr<Term> {
    Term term;
    size_t dots = t.find("...");
    StringRef before = t, after;
    if (dots != StringRef::npos) {
      term.ellipsis = true;
      before = t.substr(0, dots);
      after = t.substr(dots + 3);
    }
    for (StringRef part : {before, after})
      for (char ch : part)
        if (!llvm::isAlpha(ch))
          return failure();
    term.before = before.str();
    term.after = after.str();
    return term;
  };
  EinsumSpec spec;
  int64_t ellipsisDims = 0;
  SmallVector<Term> parsed;
  for (auto [t, rank] : llvm::zip(terms, ranks)) {
    auto term = splitTerm(t);
    if (failed(term))
      return failure();
    int64_t letters = term->before.size() + term->after.size();
    if (term->ellipsis ? letters > rank : letters != rank)
      return failure();
    ellipsisDims = std::max(ellipsisDims, rank - letters);
    parsed.push_back(*term);
  }
  std::map<char, int> uses;
  for (auto [term, rank] : llvm::zip(parsed, ranks)) {
    SmallVector<int64_t> labels;
    for (char ch : term.before)
      labels.push_back(ch), ++uses[ch];
    int64_t own = rank - (int64_t)(term.before.size() + term.after.size());
    for (int64_t j = 0; j < own; ++j)
      labels.push_back(EinsumSpec::kEllipsisLabel + ellipsisDims - own + j);
    for (char ch : term.after)
      labels.push_back(ch), ++uses[ch];
    spec.inputs.push_back(labels);
  }
  auto ellipsisLabels = [&](SmallVector<int64_t> &out) {
    for (int64_t j = 0; j < ellipsisDims; ++j)
      out.push_back(EinsumSpec::kEllipsisLabel + j);
  };
  if (explicitOutput) {
    auto term = splitTerm(rhs);
    if (failed(term) || (!term->ellipsis && ellipsisDims > 0))
      return failure();
    for (char ch : term->before)
      spec.output.push_back(ch);
    if (term->ellipsis)
      ellipsisLabels(spec.output);
    for (char ch : term->after)
      spec.output.push_back(ch);
    for (char ch : term->before + term->after)
      if (!uses.count(ch))
        return failure();
  } else {
    ellipsisLabels(spec.output);
    for (auto [ch, n] : uses) // std::map: alphabetical (upper case first, as ASCII)
      if (n == 1)
        spec.output.push_back(ch);
  }
  // A result label may appear once only.
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t label : spec.output)
    if (!seen.insert(label).second)
      return failure();
  return spec;
}

FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return failure();
  return axis < 0 ? axis + rank : axis;
}

int64_t slidingWindowSize(int64_t in, int64_t kernel, int64_t padBegin,
                          int64_t padEnd, int64_t stride, int64_t dilation,
                          bool ceilMode) {
  if (in == kDyn)
    return kDyn;
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t size = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // ONNX/PyTorch rule: with ceil_mode, a last window must start inside the
  // input or the begin padding.
  if (ceilMode && (size - 1) * stride >= in + padBegin)
    --size;
  return size;
}

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

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (failed(normalizeAxis(adaptor.getAxis(), x.getRank())))
    return fail(loc, "log_softmax axis out of range");
  types.push_back(x);
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

LogicalResult PackedMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getLhs()), w = rankedType(adaptor.getRhs());
  if (a.getRank() < 2 || !w.hasStaticShape())
    return fail(loc, "packed_matmul needs a lhs of rank >= 2 and a static packed weight");
  int64_t k = a.getDimSize(a.getRank() - 1);
  if (k != kDyn && k != w.getDimSize(1))
    return fail(loc, "packed_matmul contracts " + Twine(k) + " with " + Twine(w.getDimSize(1)));
  SmallVector<int64_t> dims(a.getShape());
  dims.back() = w.getDimSize(0) * w.getDimSize(2);
  types.push_back(a.clone(dims));
  return success();
}

/// The result of a product by a weight in `panels` column panels of `width`
/// contracting `k`: the lhs's dims with N = `columns` (a padded last panel)
/// or panels x width.
static LogicalResult inferPanelProduct(StringRef op, std::optional<Location> loc, RankedTensorType a, int64_t k,
                                       int64_t panels, int64_t width, std::optional<uint64_t> columns,
                                       SmallVectorImpl<Type> &types) {
  int64_t ak = a.getDimSize(a.getRank() - 1);
  if (ak != kDyn && ak != k)
    return fail(loc, op + " contracts " + Twine(ak) + " with " + Twine(k));
  int64_t padded = panels * width, n = padded;
  if (columns) {
    n = int64_t(*columns);
    if (n > padded || n <= padded - width)
      return fail(loc, op + " columns " + Twine(n) + " do not end in the last panel");
  }
  SmallVector<int64_t> dims(a.getShape());
  dims.back() = n;
  types.push_back(a.clone(dims));
  return success();
}

LogicalResult QuantizedMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getLhs()), w = rankedType(adaptor.getWeight()),
       s = rankedType(adaptor.getScales());
  int64_t bits = adaptor.getBits(), group = adaptor.getGroupSize();
  if (a.getRank() < 2 || !a.getElementType().isF32() || !w.hasStaticShape() || !s.hasStaticShape())
    return fail(loc, "quantized_matmul needs an f32 lhs of rank >= 2 and static packed weights and scales");
  if (bits != 8 && bits != 4)
    return fail(loc, "quantized_matmul supports 8 and 4 bits, not " + Twine(bits));
  bool dynamic = adaptor.getDynamic();
  int64_t k = w.getDimSize(1) * (bits == 4 || dynamic ? 2 : 1);
  int64_t width = w.getDimSize(2) / (dynamic ? 2 : 1);
  if (dynamic && (bits != 8 || group != k || w.getDimSize(2) % 2 != 0))
    return fail(loc, "dynamic quantized_matmul needs 8 bits, one group per column and [N/B, K/2, 2B] pairs");
  if (group <= 0 || k % group != 0 || (bits == 4 && group % 2 != 0))
    return fail(loc, "quantized_matmul group size " + Twine(group) + " does not divide K = " + Twine(k));
  if (s.getDimSize(0) != w.getDimSize(0) || s.getDimSize(1) != k / group || s.getDimSize(2) != width)
    return fail(loc, "quantized_matmul scales do not match the weight's panels and groups");
  return inferPanelProduct("quantized_matmul", loc, a, k, w.getDimSize(0), width, adaptor.getColumns(), types);
}

LogicalResult IntegerMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getLhs()), w = rankedType(adaptor.getWeight());
  if (a.getRank() < 2 || !a.getElementType().isInteger(32) || !w.hasStaticShape() || w.getDimSize(2) % 2 != 0)
    return fail(loc, "integer_matmul needs an i32 lhs of rank >= 2 and a static [N/B, K/2, 2B] weight");
  return inferPanelProduct("integer_matmul", loc, a, 2 * w.getDimSize(1), w.getDimSize(0), w.getDimSize(2) / 2,
                           adaptor.getColumns(), types);
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getLhs()), b = rankedType(adaptor.getRhs());
  if (a.getRank() < 1 || b.getRank() < 1)
    return fail(loc, "matmul operands must have rank >= 1");
  SmallVector<int64_t> as(a.getShape()), bs(b.getShape());
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  int64_t ka = as.back(), kb = bs[bs.size() - 2];
  if (ka != kDyn && kb != kDyn && ka != kb)
    return fail(loc, "matmul contraction sizes differ: " + Twine(ka) + " vs " +
                         Twine(kb));
  auto batch = broadcastShapes(ArrayRef<int64_t>(as).drop_back(2),
                               ArrayRef<int64_t>(bs).drop_back(2));
  if (failed(batch))
    return fail(loc, "matmul batch dimensions cannot be broadcast");
  SmallVector<int64_t> out = *batch;
  if (!aVec)
    out.push_back(as[as.size() - 2]);
  if (!bVec)
    out.push_back(bs.back());
  types.push_back(RankedTensorType::get(out, a.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getA()), b = rankedType(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return fail(loc, "gemm operands must be 2-D");
  bool ta = adaptor.getTransA() != 0, tb = adaptor.getTransB() != 0;
  int64_t m = a.getDimSize(ta ? 1 : 0), ka = a.getDimSize(ta ? 0 : 1);
  int64_t kb = b.getDimSize(tb ? 1 : 0), n = b.getDimSize(tb ? 0 : 1);
  if (ka != kDyn && kb != kDyn && ka != kb)
    return fail(loc, "gemm contraction sizes differ: " + Twine(ka) + " vs " +
                         Twine(kb));
  SmallVector<int64_t> out = {m, n};
  if (Value c = adaptor.getC()) {
    auto shape = broadcastShapes(out, rankedType(c).getShape());
    if (failed(shape) || shape->size() != 2)
      return fail(loc, "gemm bias C does not broadcast to the result");
  }
  types.push_back(RankedTensorType::get(out, a.getElementType()));
  return success();
}

/// Checks the per-spatial-axis attribute lengths shared by conv and pooling.
static LogicalResult checkWindowAttrs(std::optional<Location> loc,
                                      int64_t spatial, ArrayRef<int64_t> pads,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> dilations) {
  if ((int64_t)pads.size() != 2 * spatial ||
      (int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial)
    return fail(loc, "expected " + Twine(2 * spatial) + " pads and " +
                         Twine(spatial) + " strides and dilations");
  for (int64_t s : strides)
    if (s <= 0)
      return fail(loc, "strides must be positive");
  for (int64_t d : dilations)
    if (d <= 0)
      return fail(loc, "dilations must be positive");
  for (int64_t p : pads)
    if (p < 0)
      return fail(loc, "pads must be non-negative");
  return success();
}

/// Whether a conv/pool keeps auto_pad SAME_* for run time (its pads
/// unknown at compile time); any other kept value is an error.
static FailureOr<bool> runTimeSamePads(std::optional<Location> loc, std::optional<StringRef> autoPad) {
  if (!autoPad)
    return false;
  if (*autoPad != "SAME_UPPER" && *autoPad != "SAME_LOWER")
    return fail(loc, "unsupported auto_pad '" + *autoPad + "'");
  return true;
}

/// The output size of a SAME-padded window axis: ceil(in / stride).
static int64_t sameOutputSize(int64_t in, int64_t stride) {
  return in == kDyn ? kDyn : (in + stride - 1) / stride;
}

/// A convolution's optional bias: 1-D with one value per output channel.
static LogicalResult checkConvBias(std::optional<Location> loc, Value bias, int64_t cout) {
  if (!bias)
    return success();
  auto bt = rankedType(bias);
  if (bt.getRank() != 1 || (bt.getDimSize(0) != kDyn && cout != kDyn && bt.getDimSize(0) != cout))
    return fail(loc, "conv bias must be 1-D of size " + Twine(cout));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  int64_t rank = x.getRank(), spatial = rank - 2;
  if (rank < 3 || w.getRank() != rank)
    return fail(loc, "conv input and weight must have the same rank >= 3");
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getPads(),
                              adaptor.getStrides(), adaptor.getDilations())))
    return failure();
  int64_t group = adaptor.getGroup();
  if (group <= 0)
    return fail(loc, "group must be positive");
  // A weight of dynamic shape (a graph input) leaves its sizes to run time.
  int64_t cout = w.getDimSize(0);
  if (cout != kDyn && cout % group != 0)
    return fail(loc, "output channels " + Twine(cout) +
                         " not divisible by group " + Twine(group));
  int64_t cin = x.getDimSize(1);
  if (cin != kDyn && w.getDimSize(1) != kDyn && cin != w.getDimSize(1) * group)
    return fail(loc, "input channels " + Twine(cin) + " != weight channels " +
                         Twine(w.getDimSize(1)) + " x group " + Twine(group));
  if (failed(checkConvBias(loc, adaptor.getBias(), cout)))
    return failure();
  auto same = runTimeSamePads(loc, adaptor.getAutoPad());
  if (failed(same))
    return failure();
  SmallVector<int64_t> out = {x.getDimSize(0), cout};
  for (int64_t i = 0; i < spatial; ++i)
    out.push_back(*same ? sameOutputSize(x.getDimSize(2 + i), adaptor.getStrides()[i])
                  : w.isDynamicDim(2 + i)
                      ? kDyn
                      : slidingWindowSize(x.getDimSize(2 + i), w.getDimSize(2 + i), adaptor.getPads()[i],
                                          adaptor.getPads()[spatial + i], adaptor.getStrides()[i],
                                          adaptor.getDilations()[i], false));
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

LogicalResult PackedConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  ArrayRef<int64_t> kernel = adaptor.getKernelShape();
  int64_t rank = x.getRank(), spatial = rank - 2;
  if (rank < 3 || (int64_t)kernel.size() != spatial || !w.hasStaticShape())
    return fail(loc, "packed_conv needs one kernel size per spatial axis and a static packed weight");
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getPads(), adaptor.getStrides(), adaptor.getDilations())))
    return failure();
  int64_t window = 1;
  for (int64_t k : kernel)
    window *= k;
  int64_t cin = x.getDimSize(1);
  if (window <= 0 || (cin != kDyn && cin * window != w.getDimSize(1)))
    return fail(loc, "packed_conv weight rows " + Twine(w.getDimSize(1)) + " != input channels x window");
  int64_t cout = w.getDimSize(0) * w.getDimSize(2);
  if (failed(checkConvBias(loc, adaptor.getBias(), cout)))
    return failure();
  SmallVector<int64_t> out = {x.getDimSize(0), cout};
  for (int64_t i = 0; i < spatial; ++i)
    out.push_back(slidingWindowSize(x.getDimSize(2 + i), kernel[i], adaptor.getPads()[i],
                                    adaptor.getPads()[spatial + i], adaptor.getStrides()[i],
                                    adaptor.getDilations()[i], false));
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  int64_t rank = x.getRank(), spatial = rank - 2;
  if (rank < 3 || w.getRank() != rank)
    return fail(loc, "conv_transpose input and weight must have the same rank >= 3");
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getPads(), adaptor.getStrides(),
                              adaptor.getDilations())))
    return failure();
  if ((int64_t)adaptor.getOutputPadding().size() != spatial)
    return fail(loc, "expected " + Twine(spatial) + " output_padding values");
  int64_t group = adaptor.getGroup();
  // A weight of dynamic shape (a graph input) leaves its sizes to run time.
  if (group <= 0 || (!w.isDynamicDim(0) && w.getDimSize(0) % group != 0))
    return fail(loc, "weight input channels not divisible by group");
  int64_t cin = x.getDimSize(1);
  if (cin != kDyn && !w.isDynamicDim(0) && cin != w.getDimSize(0))
    return fail(loc, "input channels " + Twine(cin) + " != weight's " + Twine(w.getDimSize(0)));
  SmallVector<int64_t> out = {x.getDimSize(0), w.isDynamicDim(1) ? kDyn : w.getDimSize(1) * group};
  // Kept output_shape/auto_pad: the size is the requested one, pads at run time.
  auto same = runTimeSamePads(loc, adaptor.getAutoPad());
  if (failed(same))
    return failure();
  std::optional<ArrayRef<int64_t>> outputShape = adaptor.getOutputShape();
  if (outputShape && (int64_t)outputShape->size() != spatial)
    return fail(loc, "expected " + Twine(spatial) + " output_shape values");
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = x.getDimSize(2 + i);
    if (outputShape || *same) {
      int64_t size = outputShape ? (*outputShape)[i] : in == kDyn ? kDyn : in * adaptor.getStrides()[i];
      if (size != kDyn && size <= 0)
        return fail(loc, "conv_transpose output size is not positive");
      out.push_back(size);
      continue;
    }
    if (in == kDyn || w.isDynamicDim(2 + i)) {
      out.push_back(kDyn);
      continue;
    }
    int64_t size = adaptor.getStrides()[i] * (in - 1) + adaptor.getOutputPadding()[i] +
                   adaptor.getDilations()[i] * (w.getDimSize(2 + i) - 1) + 1 -
                   adaptor.getPads()[i] - adaptor.getPads()[spatial + i];
    if (size <= 0)
      return fail(loc, "conv_transpose output size is not positive");
    out.push_back(size);
  }
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

// --- Resize family (Resize, Upsample) ---
/// Reads a constant float tensor produced by graph.constant, if it is one.
static std::optional<SmallVector<double>> constantFloats(Value v) {
  DenseFPElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<double> values;
  for (const APFloat &x : attr.getValues<APFloat>())
    values.push_back(x.convertToDouble());
  return values;
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t rank = x.getRank();
  StringRef mode = adaptor.getMode(), ctm = adaptor.getCoordinateTransformationMode();
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return fail(loc, "unsupported resize mode '" + mode + "'");
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                           "tf_half_pixel_for_nn", "tf_crop_and_resize"}, ctm))
    return fail(loc, "unsupported coordinate_transformation_mode '" + ctm + "'");
  if (mode == "nearest" && !llvm::is_contained({"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
                                               adaptor.getNearestMode()))
    return fail(loc, "unsupported nearest_mode '" + adaptor.getNearestMode() + "'");
  if (mode != "nearest" && !isa<FloatType>(x.getElementType()))
    return fail(loc, "resize mode '" + mode + "' needs a float input");
  // scales, sizes and roi are 1-D: one value per axis (roi: two).
  auto checkVector = [&](Value v, StringRef name, int64_t length, bool isFloat) -> LogicalResult {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != 1 || (isFloat ? !isa<FloatType>(t.getElementType())
                                           : !t.getElementType().isInteger(64)))
      return fail(loc, "resize " + name + " must be a 1-D " + (isFloat ? "float" : "i64") + " tensor");
    if (!t.isDynamicDim(0) && t.getDimSize(0) != length)
      return fail(loc, "resize " + name + " must have " + Twine(length) + " values, got " +
                           Twine(t.getDimSize(0)));
    return success();
  };
  Value scales = adaptor.getScales(), sizes = adaptor.getSizes(), roi = adaptor.getRoi();
  if (bool(scales) == bool(sizes))
    return fail(loc, "resize needs exactly one of scales and sizes");
  if (scales && failed(checkVector(scales, "scales", rank, true)))
    return failure();
  if (sizes && failed(checkVector(sizes, "sizes", rank, false)))
    return failure();
  if (ctm == "tf_crop_and_resize" && !roi)
    return fail(loc, "coordinate_transformation_mode tf_crop_and_resize needs roi");
  if (roi && failed(checkVector(roi, "roi", 2 * rank, true)))
    return failure();
  SmallVector<int64_t> out(rank, kDyn);
  if (scales) {
    if (auto s = constantFloats(scales)) {
      for (int64_t i = 0; i < rank; ++i) {
        if (!((*s)[i] > 0))
          return fail(loc, "resize scales must be positive");
        if (!x.isDynamicDim(i))
          out[i] = (int64_t)std::floor((*s)[i] * (double)x.getDimSize(i));
      }
    }
  } else if (auto s = constantInts(sizes)) {
    for (int64_t i = 0; i < rank; ++i) {
      if ((*s)[i] < 0)
        return fail(loc, "resize sizes must not be negative");
      if (x.getDimSize(i) == 0 && (*s)[i] > 0)
        return fail(loc, "resize cannot fill axis " + Twine(i) + " from an empty input axis");
      out[i] = (*s)[i];
    }
  }
  types.push_back(x.clone(out));
  return success();
}
// --- end Resize family ---

LogicalResult InstanceNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() < 3)
    return fail(loc, "instance_norm input must have rank >= 3");
  types.push_back(x);
  return success();
}

template <typename Adaptor>
static LogicalResult inferPool(std::optional<Location> loc, Adaptor adaptor,
                               SmallVectorImpl<Type> &types,
                               std::optional<StringRef> autoPad = std::nullopt) {
  auto x = rankedType(adaptor.getInput());
  int64_t rank = x.getRank(), spatial = rank - 2;
  if (rank < 3)
    return fail(loc, "pooling input must have rank >= 3");
  if ((int64_t)adaptor.getKernelShape().size() != spatial)
    return fail(loc, "expected " + Twine(spatial) + " kernel_shape values");
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getPads(),
                              adaptor.getStrides(), adaptor.getDilations())))
    return failure();
  SmallVector<int64_t> out = {x.getDimSize(0), x.getDimSize(1)};
  auto same = runTimeSamePads(loc, autoPad);
  if (failed(same))
    return failure();
  for (int64_t i = 0; i < spatial; ++i)
    out.push_back(*same ? sameOutputSize(x.getDimSize(2 + i), adaptor.getStrides()[i]) : slidingWindowSize(
        x.getDimSize(2 + i), adaptor.getKernelShape()[i], adaptor.getPads()[i],
        adaptor.getPads()[spatial + i], adaptor.getStrides()[i],
        adaptor.getDilations()[i], adaptor.getCeilMode() != 0));
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferPool(loc, adaptor, types, adaptor.getAutoPad());
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return inferPool(loc, adaptor, types, adaptor.getAutoPad());
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() < 3)
    return fail(loc, "global pooling input must have rank >= 3");
  SmallVector<int64_t> out(x.getShape());
  for (int64_t i = 2; i < x.getRank(); ++i)
    out[i] = 1;
  types.push_back(x.clone(out));
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() < 2)
    return fail(loc, "batch_norm input must have rank >= 2");
  for (Value p : {adaptor.getScale(), adaptor.getBias(), adaptor.getMean(),
                  adaptor.getVariance()}) {
    auto t = rankedType(p);
    if (t.getRank() != 1 ||
        (t.getDimSize(0) != kDyn && x.getDimSize(1) != kDyn &&
         t.getDimSize(0) != x.getDimSize(1)))
      return fail(loc, "batch_norm parameters must be 1-D with one value per channel");
  }
  types.push_back(x);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  if (failed(axis))
    return fail(loc, "layer_norm axis out of range");
  SmallVector<int64_t> stats(x.getShape());
  for (int64_t i = *axis; i < x.getRank(); ++i)
    stats[i] = 1;
  types.push_back(x);
  types.push_back(x.clone(stats));
  types.push_back(x.clone(stats));
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (failed(normalizeAxis(adaptor.getAxis(), x.getRank())))
    return fail(loc, "rms_norm axis out of range");
  if (Value scale = adaptor.getScale()) {
    auto s = rankedType(scale);
    auto b = broadcastShapes(x.getShape(), s.getShape());
    if (s.getElementType() != x.getElementType() || failed(b) || s.getRank() > x.getRank())
      return fail(loc, "rms_norm scale must broadcast to the input's shape");
  }
  types.push_back(x);
  return success();
}

LogicalResult GeluOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (adaptor.getApproximate() != "none" && adaptor.getApproximate() != "tanh")
    return fail(loc, "gelu approximate must be \"none\" or \"tanh\"");
  types.push_back(rankedType(adaptor.getInput()));
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (failed(normalizeAxis(adaptor.getAxis(), x.getRank())))
    return fail(loc, "softmax axis out of range");
  types.push_back(x);
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto q = rankedType(adaptor.getQuery()), k = rankedType(adaptor.getKey()), v = rankedType(adaptor.getValue());
  int64_t rank = q.getRank();
  if (rank < 2 || k.getRank() != rank || v.getRank() != rank)
    return fail(loc, "attention needs query, key and value of one rank >= 2");
  auto agree = [](int64_t a, int64_t b) { return a == kDyn || b == kDyn || a == b; };
  if (!agree(q.getDimSize(rank - 1), k.getDimSize(rank - 1)))
    return fail(loc, "attention query and key head sizes differ");
  if (!agree(k.getDimSize(rank - 2), v.getDimSize(rank - 2)))
    return fail(loc, "attention key and value lengths differ");
  // Each key/value batch dim divides the query's (broadcast or grouped heads).
  for (int64_t i = 0; i + 2 < rank; ++i)
    for (RankedTensorType kv : {k, v}) {
      int64_t bq = q.getDimSize(i), bk = kv.getDimSize(i);
      if (bq != kDyn && bk != kDyn && (bk == 0 || bq % bk != 0))
        return fail(loc, "attention key/value batch dim " + Twine(i) + " (" + Twine(bk) +
                             ") does not divide the query's (" + Twine(bq) + ")");
    }
  SmallVector<int64_t> scores(q.getShape());
  scores.back() = k.getDimSize(rank - 2);
  if (Value mask = adaptor.getMask()) {
    auto m = rankedType(mask);
    auto shape = broadcastShapes(scores, m.getShape());
    // The mask must not make the scores larger than Q K^T.
    if (failed(shape) || shape->size() != scores.size() ||
        llvm::any_of(llvm::zip(*shape, scores), [](auto p) {
          return std::get<1>(p) != kDyn && std::get<0>(p) != std::get<1>(p);
        }))
      return fail(loc, "attention mask does not broadcast to the scores [..., Sq, Sk]");
  }
  SmallVector<int64_t> out(q.getShape());
  out.back() = v.getDimSize(rank - 1);
  types.push_back(q.clone(out));
  return success();
}

template <typename Adaptor>
static LogicalResult inferReduce(std::optional<Location> loc, Adaptor adaptor,
                                 SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t rank = x.getRank();
  SmallVector<bool> reduced(rank, adaptor.getAxes().empty());
  for (int64_t axis : adaptor.getAxes()) {
    auto a = normalizeAxis(axis, rank);
    if (failed(a))
      return fail(loc, "reduction axis " + Twine(axis) + " out of range");
    reduced[*a] = true;
  }
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back(x.getDimSize(i));
    else if (adaptor.getKeepdims())
      out.push_back(1);
  }
  types.push_back(x.clone(out));
  return success();
}

#define KILN_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferReduce(loc, adaptor, types);                                   \
  }
KILN_REDUCE_INFER(ReduceMeanOp)
KILN_REDUCE_INFER(ReduceSumOp)
KILN_REDUCE_INFER(ReduceMaxOp)
KILN_REDUCE_INFER(ReduceMinOp)
KILN_REDUCE_INFER(ReduceProdOp)
KILN_REDUCE_INFER(ReduceL1Op)
KILN_REDUCE_INFER(ReduceL2Op)
KILN_REDUCE_INFER(ReduceSumSquareOp)
KILN_REDUCE_INFER(ReduceLogSumOp)
KILN_REDUCE_INFER(ReduceLogSumExpOp)
#undef KILN_REDUCE_INFER

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

/// The cache's type with the cache axis dynamic (its length depends on the position).
static LogicalResult inferCacheView(std::optional<Location> loc, Value cache, int64_t axis,
                                    SmallVectorImpl<Type> &types) {
  auto t = rankedType(cache);
  if (axis < 0 || axis >= t.getRank())
    return fail(loc, "kv cache axis " + Twine(axis) + " is out of range for rank " + Twine(t.getRank()));
  SmallVector<int64_t> dims(t.getShape());
  dims[axis] = kDyn;
  types.push_back(t.clone(dims));
  return success();
}

LogicalResult KvCacheAppendOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto c = rankedType(adaptor.getCache()), u = rankedType(adaptor.getUpdate());
  int64_t axis = adaptor.getAxis();
  if (c.getRank() != u.getRank() || c.getElementType() != u.getElementType())
    return fail(loc, "kv cache update must have the cache's rank and element type");
  for (int64_t i = 0; i < c.getRank(); ++i)
    if (i != axis && c.getDimSize(i) != kDyn && u.getDimSize(i) != kDyn && c.getDimSize(i) != u.getDimSize(i))
      return fail(loc, "kv cache update differs from the cache in dimension " + Twine(i));
  return inferCacheView(loc, adaptor.getCache(), axis, types);
}

LogicalResult KvCachePrefixOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferCacheView(loc, adaptor.getCache(), adaptor.getAxis(), types);
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
    auto clampIndex = [&](int64_t v, bool isEnd) {
      if (v < 0)
        v += dim;
      if (steps[i] > 0)
        return std::clamp<int64_t>(v, 0, dim);
      return std::clamp<int64_t>(v, isEnd ? -1 : 0, dim - 1);
    };
    int64_t s = clampIndex(starts[i], false), e = clampIndex(ends[i], true);
    int64_t step = steps[i];
    int64_t n = step > 0 ? (e - s + step - 1) / step : (s - e - step - 1) / -step;
    out[*axis] = std::max<int64_t>(n, 0);
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

// newops: pooling with indices, linear algebra, sampling.
namespace kiln::graph {

LogicalResult MaxPoolWithIndicesOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                     Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (adaptor.getStorageOrder() != 0 && adaptor.getStorageOrder() != 1)
    return fail(loc, "storage_order must be 0 or 1");
  if (failed(inferPool(loc, adaptor, types)))
    return failure();
  types.push_back(cast<RankedTensorType>(types[0]).clone(IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult MaxUnpoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), idx = rankedType(adaptor.getIndices());
  auto shapeType = rankedType(adaptor.getShape());
  if (idx.getRank() != x.getRank())
    return fail(loc, "max_unpool indices must have the input's rank");
  for (int64_t i = 0; i < x.getRank(); ++i)
    if (x.getDimSize(i) != kDyn && idx.getDimSize(i) != kDyn && x.getDimSize(i) != idx.getDimSize(i))
      return fail(loc, "max_unpool indices must have the input's shape");
  if (shapeType.isDynamicDim(0))
    return fail(loc, "max_unpool shape must have a static length");
  SmallVector<int64_t> dims(shapeType.getDimSize(0), kDyn);
  if (auto shape = constantInts(adaptor.getShape())) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if ((*shape)[i] < 0)
        return fail(loc, "max_unpool shape has a negative dimension");
      dims[i] = (*shape)[i];
    }
  }
  types.push_back(x.clone(dims));
  return success();
}

LogicalResult DetOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t rank = x.getRank();
  if (rank < 2)
    return fail(loc, "det input must have rank >= 2");
  if (!isa<FloatType>(x.getElementType()))
    return fail(loc, "det input must be floating point");
  int64_t m = x.getDimSize(rank - 2), n = x.getDimSize(rank - 1);
  if (m != kDyn && n != kDyn && m != n)
    return fail(loc, "det needs square matrices, got " + Twine(m) + "x" + Twine(n));
  types.push_back(x.clone(x.getShape().drop_back(2)));
  return success();
}

LogicalResult GridSampleOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), g = rankedType(adaptor.getGrid());
  if (x.getRank() != 4 || g.getRank() != 4)
    return fail(loc, "grid_sample needs a 4-D input and a 4-D grid");
  if (!isa<FloatType>(x.getElementType()) || g.getElementType() != x.getElementType())
    return fail(loc, "grid_sample input and grid must have the same float type");
  if (g.getDimSize(3) != kDyn && g.getDimSize(3) != 2)
    return fail(loc, "grid_sample grid's last dim must be 2");
  int64_t n = x.getDimSize(0) != kDyn ? x.getDimSize(0) : g.getDimSize(0);
  if (x.getDimSize(0) != kDyn && g.getDimSize(0) != kDyn && x.getDimSize(0) != g.getDimSize(0))
    return fail(loc, "grid_sample input and grid batch sizes differ");
  StringRef mode = adaptor.getMode(), padding = adaptor.getPaddingMode();
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return fail(loc, "unsupported grid_sample mode '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return fail(loc, "unsupported grid_sample padding_mode '" + padding + "'");
  types.push_back(x.clone({n, x.getDimSize(1), g.getDimSize(1), g.getDimSize(2)}));
  return success();
}

LogicalResult RoiAlignOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), rois = rankedType(adaptor.getRois());
  auto idx = rankedType(adaptor.getBatchIndices());
  if (x.getRank() != 4 || !isa<FloatType>(x.getElementType()))
    return fail(loc, "roi_align needs a 4-D float input");
  if (rois.getRank() != 2 || rois.getElementType() != x.getElementType() ||
      (rois.getDimSize(1) != kDyn && rois.getDimSize(1) != 4))
    return fail(loc, "roi_align rois must be [R, 4] of the input's type");
  if (idx.getRank() != 1 || (idx.getDimSize(0) != kDyn && rois.getDimSize(0) != kDyn &&
                             idx.getDimSize(0) != rois.getDimSize(0)))
    return fail(loc, "roi_align batch_indices must be [R]");
  if (adaptor.getMode() != "avg" && adaptor.getMode() != "max")
    return fail(loc, "unsupported roi_align mode '" + adaptor.getMode() + "'");
  StringRef ctm = adaptor.getCoordinateTransformationMode();
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return fail(loc, "unsupported roi_align coordinate_transformation_mode '" + ctm + "'");
  int64_t outH = adaptor.getOutputHeight(), outW = adaptor.getOutputWidth();
  if (outH < 1 || outW < 1)
    return fail(loc, "roi_align output_height and output_width must be positive");
  int64_t ratio = adaptor.getSamplingRatio();
  if (ratio < 0)
    return fail(loc, "roi_align sampling_ratio must be >= 0");
  int64_t r = rois.getDimSize(0) != kDyn ? rois.getDimSize(0) : idx.getDimSize(0);
  types.push_back(x.clone({r, x.getDimSize(1), outH, outW}));
  return success();
}

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

// Text features (tfidf family): TfIdfVectorizer. The output width comes from
// the attributes alone; every attribute inconsistency is an error here, so
// the lowering can index the pool without checks.
LogicalResult TfIdfVectorizerOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() != 1 && x.getRank() != 2)
    return fail(loc, "tfidf_vectorizer input must be 1-D [C] or 2-D [N, C], got rank " + Twine(x.getRank()));
  if (!x.getElementType().isInteger(32) && !x.getElementType().isInteger(64))
    return fail(loc, "unsupported tfidf_vectorizer input type (int32 or int64 tokens only)");
  StringRef mode = adaptor.getMode();
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return fail(loc, "unsupported tfidf_vectorizer mode '" + mode + "' (TF, IDF or TFIDF)");
  int64_t minLength = adaptor.getMinGramLengthAttr().getInt(), maxLength = adaptor.getMaxGramLengthAttr().getInt();
  if (minLength < 1 || maxLength < minLength)
    return fail(loc, "tfidf_vectorizer min_gram_length " + Twine(minLength) + " and max_gram_length " +
                         Twine(maxLength) + " must satisfy 1 <= min_gram_length <= max_gram_length");
  // ODS's I64Attr getters are unsigned: read the signed values.
  int64_t maxSkip = adaptor.getMaxSkipCountAttr().getInt();
  if (maxSkip < 0)
    return fail(loc, "tfidf_vectorizer max_skip_count must be >= 0, got " + Twine(maxSkip));
  ArrayRef<int64_t> counts = adaptor.getNgramCounts(), indexes = adaptor.getNgramIndexes();
  int64_t poolSize = adaptor.getPoolInt64s().size();
  if (counts.empty())
    return fail(loc, "tfidf_vectorizer ngram_counts must not be empty");
  // ngram_counts[i] is where the (i+1)-grams start; each segment must hold
  // whole n-grams.
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] < 0 || counts[i] > poolSize || (i > 0 && counts[i] < counts[i - 1]))
      return fail(loc, "tfidf_vectorizer ngram_counts must be non-decreasing offsets into pool_int64s (" +
                           Twine(poolSize) + " values), got " + Twine(counts[i]) + " at " + Twine(i));
  int64_t ngrams = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : poolSize;
    int64_t length = i + 1;
    if ((end - begin) % length != 0)
      return fail(loc, "tfidf_vectorizer ngram_counts: the " + Twine(length) + "-grams span " +
                           Twine(end - begin) + " values of pool_int64s, not a multiple of " + Twine(length));
    ngrams += (end - begin) / length;
  }
  if ((int64_t)indexes.size() != ngrams)
    return fail(loc, "tfidf_vectorizer ngram_indexes has " + Twine(indexes.size()) +
                         " entries but pool_int64s holds " + Twine(ngrams) + " n-grams");
  if (indexes.empty())
    return fail(loc, "tfidf_vectorizer ngram_indexes must not be empty");
  // The lowering keeps per-column tables: a width beyond any vocabulary is
  // refused rather than allocated.
  constexpr int64_t kMaxWidth = int64_t(1) << 24;
  int64_t width = 0;
  for (int64_t index : indexes) {
    if (index < 0)
      return fail(loc, "tfidf_vectorizer ngram_indexes value " + Twine(index) + " is out of range");
    if (index >= kMaxWidth)
      return fail(loc, "unsupported tfidf_vectorizer ngram_indexes value " + Twine(index) + " (at most " +
                           Twine(kMaxWidth - 1) + ")");
    width = std::max(width, index + 1);
  }
  ArrayRef<float> weights = adaptor.getWeights();
  if (!weights.empty() && (int64_t)weights.size() != ngrams)
    return fail(loc, "tfidf_vectorizer weights has " + Twine(weights.size()) + " entries, ngram_indexes " +
                         Twine(ngrams));
  if (!weights.empty() && mode != "TF" && (int64_t)weights.size() < width)
    return fail(loc, "tfidf_vectorizer weights has " + Twine(weights.size()) + " entries for " + Twine(width) +
                         " output columns (weights[o] scales column o)");
  SmallVector<int64_t> shape(x.getShape().drop_back());
  shape.push_back(width);
  types.push_back(RankedTensorType::get(shape, Float32Type::get(ctx)));
  return success();
}

// Strings family: string tensors have i128 elements (kiln_abi_string). A cast
// has exactly one string side and one f32/f64 side; StringNormalizer takes
// [C] or [1, C] and gives a data-dependent length.
LogicalResult StringCastOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  Type from = x.getElementType(), to = adaptor.getTo();
  const bool fromString = from.isInteger(128), toString = to.isInteger(128);
  if (fromString == toString)
    return fail(loc, "string_cast needs exactly one string side");
  Type number = fromString ? to : from;
  if (!number.isF32() && !number.isF64())
    return fail(loc, "unsupported string cast " + Twine(fromString ? "from string to " : "to string from ") +
                         "a non-float type (float and double only)");
  types.push_back(RankedTensorType::get(x.getShape(), to));
  return success();
}

LogicalResult StringNormalizerOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (!x.getElementType().isInteger(128))
    return fail(loc, "string_normalizer needs a string input");
  if (x.getRank() != 1 && !(x.getRank() == 2 && (x.getDimSize(0) == 1 || x.getDimSize(0) == kDyn)))
    return fail(loc, "string_normalizer input must be [C] or [1, C]");
  StringRef action = adaptor.getCaseChangeAction();
  if (action != "LOWER" && action != "UPPER" && action != "NONE")
    return fail(loc, "unsupported case_change_action '" + action + "' (LOWER, UPPER or NONE)");
  StringRef locale = adaptor.getLocale();
  if (!locale.empty() && locale != "C" && locale != "en_US" && !locale.starts_with("en_US.") &&
      !locale.starts_with("C."))
    return fail(loc, "unsupported locale '" + locale + "' (kiln's case mapping is that of en_US)");
  for (Attribute w : adaptor.getStopwords())
    if (!isa<StringAttr>(w))
      return fail(loc, "string_normalizer stopwords must be strings");
  SmallVector<int64_t> shape = {kDyn};
  if (x.getRank() == 2)
    shape.insert(shape.begin(), 1);
  types.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}
// end strings family

} // namespace kiln::graph
