// Graph op definitions: folders and the constant materializer (shape inference is in the *Shapes.cpp files).
#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace kiln::graph;

#define GET_OP_CLASSES
#include "dialects/graph/IR/GraphOps.cpp.inc"

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto inputType = llvm::cast<RankedTensorType>(getInput().getType());
  auto resultType = llvm::cast<RankedTensorType>(getType());
  int64_t rank = inputType.getRank();
  int64_t start = (int64_t)getStart() < 0 ? (int64_t)getStart() + rank : (int64_t)getStart();
  start = std::clamp<int64_t>(start, 0, rank);
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < resultType.getDimSize(0); ++i) {
    int64_t d = inputType.getDimSize(start + i);
    if (d == ShapedType::kDynamic)
      return {};
    dims.push_back(d);
  }
  return DenseIntElementsAttr::get(resultType, dims);
}

/// Same rank and element type, each dim equal or dynamic on either side.
static bool compatibleRefinement(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, actual)) {
    auto ta = llvm::dyn_cast<RankedTensorType>(a), tb = llvm::dyn_cast<RankedTensorType>(b);
    if (!ta || !tb || ta.getElementType() != tb.getElementType() || ta.getRank() != tb.getRank())
      return false;
    for (int64_t i = 0; i < ta.getRank(); ++i)
      if (!ta.isDynamicDim(i) && !tb.isDynamicDim(i) && ta.getDimSize(i) != tb.getDimSize(i))
        return false;
  }
  return true;
}

bool ReshapeOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) { return compatibleRefinement(l, r); }
bool ConstantOfShapeOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) { return compatibleRefinement(l, r); }
bool AttentionOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) { return compatibleRefinement(l, r); }
bool ResizeOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) { return compatibleRefinement(l, r); }
bool MaxUnpoolOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) { return compatibleRefinement(l, r); } // newops

//===----------------------------------------------------------------------===//
// Folding of small integer tensors: the shape arithmetic exporters emit
// (Shape -> Slice/Gather -> Concat -> Reshape) becomes constants whenever the
// shapes involved are static, so reshapes get static types.
//===----------------------------------------------------------------------===//

namespace {
/// Integer values of a constant operand, if it is a small int tensor.
std::optional<SmallVector<int64_t>> intValues(Attribute attr) {
  auto dense = llvm::dyn_cast_or_null<DenseIntElementsAttr>(attr);
  if (!dense || dense.getNumElements() > 4096)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &v : dense.getValues<APInt>())
    out.push_back(v.getSExtValue());
  return out;
}

/// A static, small integer result type.
RankedTensorType foldableIntType(Type t) {
  auto rt = llvm::dyn_cast<RankedTensorType>(t);
  if (!rt || !rt.hasStaticShape() || !rt.getElementType().isSignlessInteger() ||
      rt.getElementType().isInteger(1) || rt.getNumElements() > 4096)
    return {};
  return rt;
}

Attribute makeInts(RankedTensorType rt, ArrayRef<int64_t> values) {
  SmallVector<APInt> ints;
  for (int64_t v : values)
    ints.push_back(APInt(rt.getElementTypeBitWidth(), v, /*isSigned=*/true));
  return DenseElementsAttr::get(rt, ints);
}

/// Row-major strides of a static shape.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Numpy-broadcast elementwise fold of two int constants.
OpFoldResult foldIntBinary(Type resultType, Attribute lhs, Attribute rhs, Value lhsV, Value rhsV,
                           std::function<std::optional<int64_t>(int64_t, int64_t)> f) {
  auto rt = foldableIntType(resultType);
  auto a = intValues(lhs), b = intValues(rhs);
  if (!rt || !a || !b)
    return {};
  auto at = llvm::cast<RankedTensorType>(lhsV.getType()), bt = llvm::cast<RankedTensorType>(rhsV.getType());
  int64_t rank = rt.getRank();
  SmallVector<int64_t> rs = stridesOf(rt.getShape()), as = stridesOf(at.getShape()), bs = stridesOf(bt.getShape());
  SmallVector<int64_t> out;
  for (int64_t flat = 0; flat < rt.getNumElements(); ++flat) {
    int64_t ai = 0, bi = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t c = (flat / rs[d]) % rt.getDimSize(d);
      int64_t da = d - (rank - at.getRank()), db = d - (rank - bt.getRank());
      if (da >= 0 && at.getDimSize(da) != 1)
        ai += c * as[da];
      if (db >= 0 && bt.getDimSize(db) != 1)
        bi += c * bs[db];
    }
    auto v = f((*a)[ai], (*b)[bi]);
    if (!v)
      return {};
    out.push_back(*v);
  }
  return makeInts(rt, out);
}

/// Same values, new static type (reshape-like ops).
OpFoldResult refold(Type resultType, Attribute input) {
  auto rt = llvm::dyn_cast<RankedTensorType>(resultType);
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(input);
  if (!rt || !rt.hasStaticShape() || !dense || dense.getNumElements() > 4096 ||
      dense.getNumElements() != rt.getNumElements())
    return {};
  return dense.reshape(rt);
}
} // namespace

OpFoldResult AddOp::fold(FoldAdaptor a) {
  return foldIntBinary(getType(), a.getLhs(), a.getRhs(), getLhs(), getRhs(),
                       [](int64_t x, int64_t y) -> std::optional<int64_t> { return x + y; });
}
OpFoldResult SubOp::fold(FoldAdaptor a) {
  return foldIntBinary(getType(), a.getLhs(), a.getRhs(), getLhs(), getRhs(),
                       [](int64_t x, int64_t y) -> std::optional<int64_t> { return x - y; });
}
OpFoldResult MulOp::fold(FoldAdaptor a) {
  return foldIntBinary(getType(), a.getLhs(), a.getRhs(), getLhs(), getRhs(),
                       [](int64_t x, int64_t y) -> std::optional<int64_t> { return x * y; });
}
OpFoldResult DivOp::fold(FoldAdaptor a) {
  return foldIntBinary(getType(), a.getLhs(), a.getRhs(), getLhs(), getRhs(),
                       [](int64_t x, int64_t y) -> std::optional<int64_t> {
                         if (y == 0)
                           return std::nullopt;
                         return x / y;
                       });
}

// Shape arithmetic negates axis counts (ONNX's expanded LayerNormalization
// builds its reduced shape from -axis): fold small int constants.
OpFoldResult NegOp::fold(FoldAdaptor a) {
  auto rt = foldableIntType(getType());
  auto x = intValues(a.getInput());
  if (!rt || !x)
    return {};
  SmallVector<int64_t> out;
  for (int64_t v : *x)
    out.push_back(-v);
  return makeInts(rt, out);
}

// No padding on any side, whatever the mode: the input (PyTorch exports an F.pad with zero
// pads as a Pad node, which kept ocr_rec's last feature map out of the channels-last layout).
OpFoldResult PadOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() && llvm::all_of(getPads(), [](int64_t p) { return p == 0; }))
    return getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor a) { return refold(getType(), a.getInput()); }
OpFoldResult FlattenOp::fold(FoldAdaptor a) { return refold(getType(), a.getInput()); }
OpFoldResult SqueezeOp::fold(FoldAdaptor a) { return refold(getType(), a.getInput()); }
OpFoldResult UnsqueezeOp::fold(FoldAdaptor a) { return refold(getType(), a.getInput()); }

OpFoldResult CastOp::fold(FoldAdaptor a) {
  // A cast to the input's own type (ONNX function bodies cast to the stash type) is the input.
  if (getInput().getType() == getType())
    return getInput();
  auto rt = foldableIntType(getType());
  auto v = intValues(a.getInput());
  if (!rt || !v)
    return {};
  return makeInts(rt, *v);
}

template <typename OpTy>
static OpFoldResult foldIntReduce(OpTy op, Attribute input, bool product) {
  auto rt = foldableIntType(op.getType());
  auto v = intValues(input);
  auto it = llvm::cast<RankedTensorType>(op.getInput().getType());
  // Only full reductions of a 1-D tensor (Size, element counts).
  if (!rt || !v || it.getRank() != 1 || rt.getNumElements() != 1)
    return {};
  int64_t acc = product ? 1 : 0;
  for (int64_t x : *v)
    acc = product ? acc * x : acc + x;
  return makeInts(rt, {acc});
}
OpFoldResult ReduceProdOp::fold(FoldAdaptor a) { return foldIntReduce(*this, a.getInput(), true); }
OpFoldResult ReduceSumOp::fold(FoldAdaptor a) { return foldIntReduce(*this, a.getInput(), false); }

OpFoldResult ConcatOp::fold(FoldAdaptor a) {
  auto rt = foldableIntType(getType());
  if (!rt || rt.getRank() != 1)
    return {};
  SmallVector<int64_t> out;
  for (Attribute in : a.getInputs()) {
    auto v = intValues(in);
    if (!v)
      return {};
    out.append(v->begin(), v->end());
  }
  if ((int64_t)out.size() != rt.getNumElements())
    return {};
  return makeInts(rt, out);
}

OpFoldResult SliceOp::fold(FoldAdaptor a) {
  auto rt = foldableIntType(getType());
  auto v = intValues(a.getInput());
  auto it = llvm::cast<RankedTensorType>(getInput().getType());
  if (!rt || !v || it.getRank() != 1 || getAxes().size() != 1)
    return {};
  int64_t dim = it.getDimSize(0), step = getSteps()[0];
  int64_t start = getStarts()[0] < 0 ? getStarts()[0] + dim : getStarts()[0];
  start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
  SmallVector<int64_t> out;
  for (int64_t k = 0; k < rt.getNumElements(); ++k)
    out.push_back((*v)[start + k * step]);
  return makeInts(rt, out);
}

OpFoldResult GatherOp::fold(FoldAdaptor a) {
  auto rt = foldableIntType(getType());
  auto data = intValues(a.getData()), idx = intValues(a.getIndices());
  auto dt = llvm::cast<RankedTensorType>(getData().getType());
  if (!rt || !data || !idx || dt.getRank() != 1)
    return {};
  SmallVector<int64_t> out;
  for (int64_t i : *idx) {
    if (i < 0)
      i += dt.getDimSize(0);
    if (i < 0 || i >= dt.getDimSize(0))
      return {};
    out.push_back((*data)[i]);
  }
  return makeInts(rt, out);
}

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor a) {
  auto rt = llvm::dyn_cast<RankedTensorType>(getType());
  auto value = llvm::dyn_cast<DenseElementsAttr>(getValue());
  if (!rt || !rt.hasStaticShape() || !value || rt.getNumElements() > 4096)
    return {};
  return DenseElementsAttr::get(rt, *value.value_begin<Attribute>());
}

namespace {
/// Inference BatchNormalization with constant parameters is x * a + b with
/// a = scale / sqrt(var + eps) and b = bias - mean * a per channel: folded
/// here, the kernels do one multiply-add per element instead of a square root
/// and a division.
struct FoldBatchNormParameters : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op, PatternRewriter &rewriter) const override {
    DenseFPElementsAttr scale, bias, mean, var;
    auto xt = llvm::cast<RankedTensorType>(op.getInput().getType());
    if (!xt.getElementType().isF32() || xt.getRank() < 2 || xt.isDynamicDim(1) || !matchPattern(op.getScale(), m_Constant(&scale)) ||
        !matchPattern(op.getBias(), m_Constant(&bias)) || !matchPattern(op.getMean(), m_Constant(&mean)) ||
        !matchPattern(op.getVariance(), m_Constant(&var)))
      return failure();
    int64_t channels = scale.getNumElements();
    if (bias.getNumElements() != channels || mean.getNumElements() != channels ||
        var.getNumElements() != channels)
      return failure();
    float eps = op.getEpsilon().convertToFloat();
    auto s = scale.getValues<float>(), b = bias.getValues<float>(), m = mean.getValues<float>(),
         v = var.getValues<float>();
    SmallVector<float> a, shift;
    for (int64_t c = 0; c < channels; ++c) {
      a.push_back(s[c] / std::sqrt(v[c] + eps));
      shift.push_back(b[c] - m[c] * a.back());
    }
    // [C, 1, ..., 1] so that numpy broadcasting lines C up with axis 1.
    SmallVector<int64_t> shape(xt.getRank() - 1, 1);
    shape[0] = channels;
    auto type = RankedTensorType::get(shape, rewriter.getF32Type());
    Value aC = ConstantOp::create(rewriter, op.getLoc(), DenseElementsAttr::get(type, ArrayRef<float>(a)));
    Value bC = ConstantOp::create(rewriter, op.getLoc(), DenseElementsAttr::get(type, ArrayRef<float>(shift)));
    Value scaled = MulOp::create(rewriter, op.getLoc(), op.getType(), op.getInput(), aC);
    rewriter.replaceOpWithNewOp<AddOp>(op, op.getType(), scaled, bC);
    return success();
  }
};
} // namespace

void BatchNormOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldBatchNormParameters>(context);
}

std::string kiln::graph::firstName(Location loc) {
  std::string name;
  loc->walk([&](Location l) {
    if (auto nl = dyn_cast<NameLoc>(l)) {
      name = nl.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

bool kiln::graph::constantBytes(ElementsAttr value, std::vector<char> &scratch, ArrayRef<char> &bytes) {
  if (auto res = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return false;
    bytes = blob->getData();
    return true;
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return false;
  ArrayRef<char> raw = dense.getRawData();
  if (!dense.isSplat()) {
    bytes = raw;
    return true;
  }
  int64_t count = dense.getNumElements();
  scratch.resize(raw.size() * count);
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(scratch.data() + i * raw.size(), raw.data(), raw.size());
  bytes = scratch;
  return true;
}
