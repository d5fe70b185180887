// Ops that make a tensor rather than transform one: Constant, ConstantOfShape, Range, EyeLike.
#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

Results importConstant(NodeContext &c) {
  if (const auto *a = c.attr("value")) {
    auto attr = importTensor(c.b.getContext(), a->t(), c.source, c.error);
    if (failed(attr))
      return c.fail(c.error);
    return single(create<ConstantOp>(c, *attr));
  }
  auto scalarOrList = [&](Type et, auto values, bool scalar) -> Results {
    SmallVector<int64_t> shape;
    if (!scalar)
      shape.push_back(values.size());
    auto type = RankedTensorType::get(shape, et);
    if constexpr (std::is_same_v<typename decltype(values)::value_type, float>)
      return single(create<ConstantOp>(c, DenseElementsAttr::get(type, ArrayRef<float>(values))));
    else
      return single(create<ConstantOp>(c, DenseElementsAttr::get(type, ArrayRef<int64_t>(values))));
  };
  if (const auto *a = c.attr("value_float"))
    return scalarOrList(c.b.getF32Type(), SmallVector<float>{a->f()}, true);
  if (const auto *a = c.attr("value_floats"))
    return scalarOrList(c.b.getF32Type(),
                        SmallVector<float>(a->floats().begin(), a->floats().end()), false);
  if (const auto *a = c.attr("value_int"))
    return scalarOrList(c.b.getI64Type(), SmallVector<int64_t>{a->i()}, true);
  if (const auto *a = c.attr("value_ints"))
    return scalarOrList(c.b.getI64Type(),
                        SmallVector<int64_t>(a->ints().begin(), a->ints().end()), false);
  return c.fail("only value, value_float(s) and value_int(s) are supported");
}

Results importConstantOfShape(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  ElementsAttr value;
  if (const auto *a = c.attr("value")) {
    auto v = importTensor(c.b.getContext(), a->t(), c.source, c.error);
    if (failed(v))
      return c.fail(c.error);
    value = *v;
  } else {
    value = DenseElementsAttr::get(RankedTensorType::get({1}, c.b.getF32Type()), 0.0f);
  }
  if (!isa<DenseElementsAttr>(value) || value.getNumElements() != 1)
    return c.fail("value must hold exactly one element");
  return single(create<ConstantOfShapeOp>(c, c.input(0), value));
}

/// Range: folded into a constant when start/limit/delta are, a graph.range otherwise.
Results importRange(NodeContext &c) {
  if (failed(require(c, 3)))
    return failure();
  // ONNX's bounds are scalars. Checked before anything reads them: an empty
  // constant has no value to fold (reading one crashed), and a longer one
  // would silently fold from its first element.
  static constexpr const char *kBounds[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    auto t = cast<RankedTensorType>(c.input(i).getType());
    if (t.getRank() != 0) {
      std::string shape;
      llvm::raw_string_ostream os(shape);
      llvm::interleaveComma(t.getShape(), os, [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      });
      return c.fail(Twine("input '") + kBounds[i] + "' must be a scalar (rank 0), got shape [" + shape + "]");
    }
  }
  Type et = cast<RankedTensorType>(c.input(0).getType()).getElementType();
  DenseElementsAttr s, l, d;
  if (!matchPattern(c.input(0), m_Constant(&s)) || !matchPattern(c.input(1), m_Constant(&l)) ||
      !matchPattern(c.input(2), m_Constant(&d))) {
    // Bounds known only at run time (sequence lengths in decoders).
    return single(create<RangeOp>(c, c.input(0), c.input(1), c.input(2)));
  }
  auto scalar = [](DenseElementsAttr a) {
    return isa<FloatType>(a.getElementType()) ? (*a.getValues<APFloat>().begin()).convertToDouble()
                                              : (double)(*a.getValues<APInt>().begin()).getSExtValue();
  };
  double start = scalar(s), limit = scalar(l), delta = scalar(d);
  if (delta == 0)
    return c.fail("delta must not be 0");
  // Bounded in double before the conversion: NaN, infinities and huge counts are refused, not
  // converted (which would be undefined).
  double count = std::ceil((limit - start) / delta);
  if (!std::isfinite(count) || count > double(int64_t(1) << 24))
    return c.fail("range from " + Twine(std::to_string(start)) + " to " + std::to_string(limit) +
                  " by " + std::to_string(delta) + " has too many elements to fold (or is not finite)");
  int64_t n = std::max<int64_t>(0, int64_t(count));
  auto type = RankedTensorType::get({n}, et);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < n; ++i) {
    double v = start + i * delta;
    values.push_back(isa<FloatType>(et) ? Attribute(c.b.getFloatAttr(et, v))
                                        : Attribute(c.b.getIntegerAttr(et, (int64_t)v)));
  }
  return single(create<ConstantOp>(c, DenseElementsAttr::get(type, values)));
}

// EyeLike depends on its input's shape only: with a static shape it is a
// constant (ones where col - row == k), built here once.
Results importEyeLike(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  auto xt = cast<RankedTensorType>(c.input(0).getType());
  if (xt.getRank() != 2)
    return c.fail("input must be a 2-D tensor");
  Type et = xt.getElementType();
  if (c.attr("dtype")) {
    int64_t dtype = c.intAttr("dtype", 0);
    et = onnxElementType(c.b.getContext(), dtype);
    if (!et)
      return c.fail("unsupported dtype " + Twine(dtype));
  }
  if (!et.isIntOrFloat())
    return c.fail("unsupported element type");
  if (!xt.hasStaticShape()) {
    // A run-time shape: row index + k == column index, compared over ranges.
    Type i64 = c.b.getI64Type();
    Emitter e{c, i64};
    Value shape = e.op<ShapeOp>(c.input(0), (int64_t)0, IntegerAttr());
    Value zero = scalarConstant(c, i64, 0), one = scalarConstant(c, i64, 1);
    Value rows = e.op<RangeOp>(zero, e.pick(shape, 0, 0), one);
    Value cols = e.op<RangeOp>(zero, e.pick(shape, 0, 1), one);
    Value shifted = e.add(e.unsqueeze(rows, {1}), scalarConstant(c, i64, (double)c.intAttr("k", 0)));
    Value diagonal = e.op<EqualOp>(shifted, e.unsqueeze(cols, {0}));
    Value y = e.op<CastOp>(diagonal, et);
    if (!e.ok)
      return failure();
    return single(y);
  }
  int64_t rows = xt.getDimSize(0), cols = xt.getDimSize(1), k = c.intAttr("k", 0);
  auto type = RankedTensorType::get({rows, cols}, et);
  DenseElementsAttr value;
  if (auto ft = dyn_cast<FloatType>(et)) {
    SmallVector<APFloat> v(rows * cols, APFloat::getZero(ft.getFloatSemantics()));
    for (int64_t r = 0; r < rows; ++r)
      if (r + k >= 0 && r + k < cols)
        v[r * cols + r + k] = APFloat::getOne(ft.getFloatSemantics());
    value = DenseElementsAttr::get(type, v);
  } else {
    unsigned width = et.getIntOrFloatBitWidth();
    SmallVector<APInt> v(rows * cols, APInt(width, 0));
    for (int64_t r = 0; r < rows; ++r)
      if (r + k >= 0 && r + k < cols)
        v[r * cols + r + k] = APInt(width, 1);
    value = DenseElementsAttr::get(type, v);
  }
  return single(create<ConstantOp>(c, value));
}

} // namespace

void addConstantImporters(llvm::StringMap<NodeImporter> &t) {
  t["Constant"] = importConstant;
  t["ConstantOfShape"] = importConstantOfShape;
  t["Range"] = importRange;
  t["EyeLike"] = importEyeLike;
}

} // namespace kiln
