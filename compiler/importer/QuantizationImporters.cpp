// Quantized ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
#include "compiler/importer/ImporterHelpers.h"
#include "compiler/importer/OpCreate.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {

/// A per-axis scale or zero point (1-D, one entry per channel of `axis`)
/// reshaped to broadcast against a rank-`rank` tensor; per-tensor ones unchanged.
FailureOr<Value> alongAxis(NodeContext &c, Value v, int64_t rank, int64_t axis) {
  auto vt = cast<RankedTensorType>(v.getType());
  if (vt.getRank() == 0 || (vt.getRank() == 1 && vt.getDimSize(0) == 1 && rank != 1))
    return v;
  if (vt.getRank() != 1)
    return c.fail("scale and zero point must be scalars or 1-D (blocked quantization is not supported)");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return c.fail("axis out of range");
  // Unit dims around the channel axis (an unsqueeze, so a symbolic channel
  // count works too).
  SmallVector<int64_t> unitAxes;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis)
      unitAxes.push_back(i);
  if (unitAxes.empty())
    return v;
  return create<UnsqueezeOp>(c, v, unitAxes);
}

namespace {

//===----------------------------------------------------------------------===//
// Quantized ops. kiln's tensors keep no signedness (int8 and uint8 are both
// signless i8), so each quantized importer asks the model which one a tensor
// is, widens it with that sign (to float or i32), computes in the wide type,
// and narrows the result through one saturating cast.
//===----------------------------------------------------------------------===//

/// Ops whose output has their first input's element type (layout and
/// selection): followed when tracing where an 8-bit tensor's type comes from.
bool keepsInputType(StringRef op) {
  static const llvm::StringSet<> ops = {"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
                                        "Flatten",  "Slice",   "Gather",    "Concat",  "Expand",
                                        "Tile",     "Split",   "Pad",       "MaxPool", "Dropout"};
  return ops.contains(op);
}

int32_t onnxTypeOf(const onnx::GraphProto &g, const std::string &name, int depth);

/// The ONNX element type that node `n` gives its output `k` when the op
/// fixes it (or passes its input's on), else 0.
int32_t producedOnnxType(const onnx::GraphProto &g, const onnx::NodeProto &n, int k, int depth) {
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    return 0;
  const std::string &op = n.op_type();
  auto inputType = [&](int i) {
    return i < n.input_size() && !n.input(i).empty() ? onnxTypeOf(g, n.input(i), depth + 1) : 0;
  };
  for (const auto &a : n.attribute()) {
    if (op == "Constant" && a.name() == "value" && a.has_t())
      return a.t().data_type();
    if ((op == "Cast" && a.name() == "to") || (op == "QuantizeLinear" && a.name() == "output_dtype" && a.i()))
      return int32_t(a.i());
  }
  if (op == "QuantizeLinear")
    return n.input_size() > 2 && !n.input(2).empty() ? inputType(2) : onnx::TensorProto::UINT8;
  if (op == "DynamicQuantizeLinear")
    return k == 1 ? onnx::TensorProto::FLOAT : onnx::TensorProto::UINT8;
  if (op == "QLinearMatMul" || op == "QLinearConv") {
    int32_t t = inputType(7); // y_zero_point, else the input's (as ONNX's reference)
    return t ? t : inputType(0);
  }
  if (op == "MatMulInteger" || op == "ConvInteger")
    return onnx::TensorProto::INT32;
  return keepsInputType(op) ? inputType(0) : 0;
}

/// The element type of the main graph's value `name` as declared (initializer,
/// graph input/output, value_info) or as fixed by its producer, or 0.
int32_t onnxTypeOf(const onnx::GraphProto &g, const std::string &name, int depth) {
  if (depth > 32) // a cycle or a pathological chain: give up, as undeclared
    return 0;
  for (const auto &t : g.initializer())
    if (t.name() == name)
      return t.data_type();
  for (const auto *list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto &v : *list)
      if (v.name() == name && v.type().has_tensor_type())
        return v.type().tensor_type().elem_type();
  for (const auto &n : g.node())
    for (int k = 0; k < n.output_size(); ++k)
      if (n.output(k) == name)
        return producedOnnxType(g, n, k, depth);
  return 0;
}

/// The ONNX element type of the node's input `i` as the model declares it,
/// or 0 when not declared. kiln's tensors keep no signedness, so ops whose
/// meaning depends on it ask here.
int32_t declaredOnnxType(NodeContext &c, size_t i) {
  if ((int)i >= c.node.input_size() || c.node.input(i).empty())
    return 0;
  return onnxTypeOf(c.source.model.graph(), c.node.input(i), 0);
}

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// Whether the 8-bit quantized input `i` is uint8 (else int8); its zero
/// point `zp` (same type by the spec) answers when `i`'s type is undeclared.
/// Anything else, or a type nobody declares, is an error: guessing a sign
/// would give wrong numbers silently.
FailureOr<bool> isUint8(NodeContext &c, size_t i, size_t zp, StringRef what) {
  int32_t t = declaredOnnxType(c, i);
  if (!t && c.input(zp))
    t = declaredOnnxType(c, zp);
  bool byte = elementTypeOf(c.input(i)).isInteger(8);
  if (byte && t == onnx::TensorProto::UINT8)
    return true;
  if (byte && t == onnx::TensorProto::INT8)
    return false;
  if (byte && !t)
    (void)c.fail("cannot tell whether " + what + " is int8 or uint8 (declare its type in the model)");
  else
    (void)c.fail(what + " must be int8 or uint8 (ONNX type " + Twine(t) + " is not supported)");
  return failure();
}

/// Quantized values widened to `t` (float or i32). Signless i8 widens as
/// signed, so a uint8 tensor gets 256 added where that came out negative.
FailureOr<Value> widenQuantized(NodeContext &c, Value v, Type t, bool isUnsigned) {
  auto w = create<CastOp>(c, v, t);
  if (failed(w) || !isUnsigned)
    return w;
  auto negative = create<LessOp>(c, *w, scalarConstant(c, t, 0));
  auto shifted = create<AddOp>(c, *w, scalarConstant(c, t, 256));
  if (failed(negative) || failed(shifted))
    return failure();
  return create<WhereOp>(c, *negative, *shifted, *w);
}

/// Integral floats saturated to the int8 or uint8 range, stored as i8
/// through i32 (whose low byte is the uint8 bit pattern too: a direct
/// float -> i8 conversion of 200 would overflow).
FailureOr<Value> saturateToQuantized(NodeContext &c, Value q, bool isUnsigned) {
  Type ft = elementTypeOf(q);
  auto y = create<ClipOp>(c, q, scalarConstant(c, ft, isUnsigned ? 0 : -128),
                          scalarConstant(c, ft, isUnsigned ? 255 : 127));
  if (succeeded(y))
    y = create<CastOp>(c, *y, c.b.getI32Type());
  if (failed(y))
    return failure();
  return create<CastOp>(c, *y, c.b.getIntegerType(8));
}

/// saturate(round_half_even(x / scale) + zero_point), with `scale` and the
/// float `zeroPoint` (or null) already broadcastable against x.
FailureOr<Value> quantizeFloat(NodeContext &c, Value x, Value scale, Value zeroPoint, bool isUnsigned) {
  auto q = create<DivOp>(c, x, scale);
  if (succeeded(q))
    q = create<RoundOp>(c, *q);
  if (succeeded(q) && zeroPoint)
    q = create<AddOp>(c, *q, zeroPoint);
  if (failed(q))
    return failure();
  return saturateToQuantized(c, *q, isUnsigned);
}

/// How a quantization parameter (scale or zero point) maps onto its tensor.
enum class QuantParam {
  AsGiven,    // numpy broadcasting: per tensor, or the matmul rhs's per column
  PerRow,     // matmul lhs: 1-D [M] applies along rows
  PerTensor,  // a single value only
  PerChannel, // conv weight: 1-D [M] along the output channels (axis 0)
};

/// Quantization parameter input `i` shaped to broadcast against its tensor
/// of rank `rank`; null when the node omits it.
FailureOr<Value> quantParam(NodeContext &c, size_t i, QuantParam how, int64_t rank, StringRef what) {
  Value v = c.input(i);
  if (!v)
    return Value();
  auto vt = cast<RankedTensorType>(v.getType());
  bool single = vt.hasStaticShape() && vt.getNumElements() == 1;
  if (how == QuantParam::PerTensor && !single)
    return c.fail(what + " must have a single value (per tensor)");
  if (how == QuantParam::PerChannel)
    return alongAxis(c, v, rank, 0);
  if (how != QuantParam::PerRow || vt.getRank() != 1 || single)
    return v;
  if (rank < 2)
    return c.fail(what + ": per-row quantization needs a matrix operand");
  return create<UnsqueezeOp>(c, v, SmallVector<int64_t>{1});
}

/// Quantized input `i` minus its zero point input `zp` (when present), in i32.
FailureOr<Value> centeredInt32(NodeContext &c, size_t i, size_t zp, QuantParam how, StringRef what) {
  Value x = c.input(i);
  auto isUnsigned = isUint8(c, i, zp, what);
  if (failed(isUnsigned))
    return failure();
  if (c.input(zp) && !elementTypeOf(c.input(zp)).isInteger(8))
    return c.fail("the zero point of " + what + " must have its type");
  auto z = quantParam(c, zp, how, rankOf(x), (what + "'s zero point").str());
  auto xi = widenQuantized(c, x, c.b.getI32Type(), *isUnsigned);
  if (failed(z))
    return failure();
  if (failed(xi) || !*z)
    return xi;
  auto zi = widenQuantized(c, *z, c.b.getI32Type(), *isUnsigned);
  if (failed(zi))
    return failure();
  return create<SubOp>(c, *xi, *zi);
}

/// a_scale * b_scale / y_scale (the order ONNX's reference multiplies in),
/// each already shaped; all of one float type.
FailureOr<Value> combinedScale(NodeContext &c, Value a, Value b, Value y) {
  Type ft = elementTypeOf(a);
  if (!isa<FloatType>(ft) || elementTypeOf(b) != ft || elementTypeOf(y) != ft)
    return c.fail("scales must be float tensors of one type");
  auto s = create<MulOp>(c, a, b);
  if (failed(s))
    return failure();
  return create<DivOp>(c, *s, y);
}

/// QLinear* output: saturate(round_half_even(acc * scale + y_zero_point)).
/// In f64 like ONNX's reference (numpy promotes the int32 accumulator times
/// a float32 scale to float64): the product is exact there, so halfway
/// cases round as the exact value does.
FailureOr<Value> requantize(NodeContext &c, Value acc, Value scale, Value yZeroPoint, bool isUnsigned) {
  Type f64 = c.b.getF64Type();
  auto accF = create<CastOp>(c, acc, f64);
  auto s = create<CastOp>(c, scale, f64);
  if (failed(accF) || failed(s))
    return failure();
  auto y = create<MulOp>(c, *accF, *s);
  if (succeeded(y) && yZeroPoint) {
    auto z = widenQuantized(c, yZeroPoint, f64, isUnsigned);
    y = failed(z) ? z : create<AddOp>(c, *y, *z);
  }
  if (succeeded(y))
    y = create<RoundOp>(c, *y);
  if (failed(y))
    return failure();
  return saturateToQuantized(c, *y, isUnsigned);
}

/// Whether the QLinear* output (zero point input `yzp`) is uint8: by the
/// zero point's type, or the first input's when it is absent (as the reference).
FailureOr<bool> outputIsUint8(NodeContext &c, size_t yzp) {
  if (!c.input(yzp))
    return isUint8(c, 0, 0, "the output");
  return isUint8(c, yzp, yzp, "y_zero_point");
}

/// Fails naming the first of `indices` that the node omits.
LogicalResult requireInputs(NodeContext &c, std::initializer_list<size_t> indices) {
  for (size_t i : indices)
    if (!c.input(i))
      return c.fail("missing required input " + Twine(i));
  return success();
}

// DequantizeLinear: y = (x - zero_point) * scale, per tensor or per axis.
Results importDequantizeLinear(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (c.attr("block_size") && c.intAttr("block_size", 0) != 0)
    return c.fail("blocked quantization is not supported");
  Value x = c.input(0), scale = c.input(1), zp = c.input(2);
  Type ft = elementTypeOf(scale);
  if (!isa<FloatType>(ft))
    return c.fail("scale must be a float tensor");
  int64_t rank = rankOf(x), axis = c.intAttr("axis", 1);
  auto xf = widenQuantized(c, x, ft, declaredOnnxType(c, 0) == onnx::TensorProto::UINT8);
  auto s = alongAxis(c, scale, rank, axis);
  if (failed(xf) || failed(s))
    return failure();
  Value centered = *xf;
  if (zp) {
    auto zf = widenQuantized(c, zp, ft, declaredOnnxType(c, 2) == onnx::TensorProto::UINT8);
    if (failed(zf))
      return failure();
    auto z = alongAxis(c, *zf, rank, axis);
    if (failed(z))
      return failure();
    auto d = create<SubOp>(c, *xf, *z);
    if (failed(d))
      return failure();
    centered = *d;
  }
  return single(create<MulOp>(c, centered, *s));
}

// QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point) into
// int8 or uint8 (uint8 when the zero point is absent).
Results importQuantizeLinear(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (c.attr("block_size") && c.intAttr("block_size", 0) != 0)
    return c.fail("blocked quantization is not supported");
  Value x = c.input(0), scale = c.input(1), zp = c.input(2);
  Type ft = elementTypeOf(x);
  if (!isa<FloatType>(ft) || elementTypeOf(scale) != ft)
    return c.fail("input and scale must be float tensors of one type");
  int32_t outType = zp ? declaredOnnxType(c, 2) : onnx::TensorProto::UINT8;
  if (zp && !elementTypeOf(zp).isInteger(8))
    return c.fail("only int8 and uint8 outputs are supported");
  if (outType != onnx::TensorProto::UINT8 && outType != onnx::TensorProto::INT8)
    return c.fail("only int8 and uint8 outputs are supported (zero point type unknown)");
  bool isUnsigned = outType == onnx::TensorProto::UINT8;
  int64_t rank = rankOf(x), axis = c.intAttr("axis", 1);
  auto s = alongAxis(c, scale, rank, axis);
  if (failed(s))
    return failure();
  Value z;
  if (zp) {
    auto zf = widenQuantized(c, zp, ft, isUnsigned);
    auto za = failed(zf) ? zf : alongAxis(c, *zf, rank, axis);
    if (failed(za))
      return failure();
    z = *za;
  }
  return single(quantizeFloat(c, x, *s, z, isUnsigned));
}

// DynamicQuantizeLinear: uint8 over x's own range widened to include 0:
// scale = (max - min) / 255 (1 when x is all zeros, as ONNX's reference),
// zero_point = round(clip(-min / scale, 0, 255)), y as QuantizeLinear.
Results importDynamicQuantizeLinear(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  Type ft = elementTypeOf(x);
  if (!isa<FloatType>(ft))
    return c.fail("input must be a float tensor");
  Value zero = scalarConstant(c, ft, 0), qmax = scalarConstant(c, ft, 255);
  auto flat = create<ReshapeOp>(c, x, c.i64Constant({-1}), (int64_t)0);
  if (failed(flat))
    return failure();
  auto lo = create<ReduceMinOp>(c, *flat, ArrayRef<int64_t>{0}, (int64_t)0);
  auto hi = create<ReduceMaxOp>(c, *flat, ArrayRef<int64_t>{0}, (int64_t)0);
  if (failed(lo) || failed(hi))
    return failure();
  lo = create<MinOp>(c, *lo, zero);
  hi = create<MaxOp>(c, *hi, zero);
  if (failed(lo) || failed(hi))
    return failure();
  auto range = create<SubOp>(c, *hi, *lo);
  auto allZero = create<EqualOp>(c, *hi, *lo);
  if (failed(range) || failed(allZero))
    return failure();
  auto scale = create<DivOp>(c, *range, qmax);
  if (succeeded(scale))
    scale = create<WhereOp>(c, *allZero, scalarConstant(c, ft, 1), *scale);
  if (failed(scale))
    return failure();
  auto zp = create<DivOp>(c, *lo, *scale);
  if (succeeded(zp))
    zp = create<SubOp>(c, zero, *zp);
  if (succeeded(zp))
    zp = create<ClipOp>(c, *zp, zero, qmax);
  if (succeeded(zp))
    zp = create<RoundOp>(c, *zp);
  if (failed(zp))
    return failure();
  auto y = quantizeFloat(c, x, *scale, *zp, /*isUnsigned=*/true);
  auto zq = saturateToQuantized(c, *zp, /*isUnsigned=*/true);
  if (failed(y) || failed(zq))
    return failure();
  return SmallVector<Value>{*y, *scale, *zq};
}

// MatMulInteger: (A - a_zero_point) x (B - b_zero_point) in int32; A's zero
// point per tensor or per row, B's per tensor or per column.
Results importMatMulInteger(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  auto a = centeredInt32(c, 0, 2, QuantParam::PerRow, "A");
  auto b = centeredInt32(c, 1, 3, QuantParam::AsGiven, "B");
  if (failed(a) || failed(b))
    return failure();
  return single(create<MatMulOp>(c, *a, *b));
}

// QLinearMatMul: the int32 product of the centered operands, requantized with
// a_scale * b_scale / y_scale (a's parameters per tensor or per row, b's per
// tensor or per column).
Results importQLinearMatMul(NodeContext &c) {
  if (failed(requireInputs(c, {0, 1, 3, 4, 6})))
    return failure();
  int64_t ra = rankOf(c.input(0)), rb = rankOf(c.input(3));
  auto a = centeredInt32(c, 0, 2, QuantParam::PerRow, "a");
  auto b = centeredInt32(c, 3, 5, QuantParam::AsGiven, "b");
  auto yUnsigned = outputIsUint8(c, 7);
  auto as = quantParam(c, 1, QuantParam::PerRow, ra, "a_scale");
  if (failed(a) || failed(b) || failed(yUnsigned) || failed(as))
    return failure();
  // A scale must factor out of the sum over k: a's cannot vary along its
  // columns, nor b's along its rows.
  auto ast = cast<RankedTensorType>((*as).getType()), bst = cast<RankedTensorType>(c.input(4).getType());
  if (ast.getRank() >= 2 && ast.getDimSize(ast.getRank() - 1) != 1)
    return c.fail("a_scale must be per tensor or per row");
  if (bst.getRank() >= 2 && bst.getDimSize(bst.getRank() - 2) != 1 && rb >= 2)
    return c.fail("b_scale must be per tensor or per column");
  auto acc = create<MatMulOp>(c, *a, *b);
  auto scale = combinedScale(c, *as, c.input(4), c.input(6));
  if (failed(acc) || failed(scale))
    return failure();
  return single(requantize(c, *acc, *scale, c.input(7), *yUnsigned));
}

// ConvInteger: Conv of (x - x_zero_point) and (w - w_zero_point) in int32,
// zero padded after centering (padding contributes nothing); x's zero point
// per tensor, w's per tensor or per output channel.
Results importConvInteger(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  auto x = centeredInt32(c, 0, 2, QuantParam::PerTensor, "x");
  auto w = centeredInt32(c, 1, 3, QuantParam::PerChannel, "w");
  if (failed(x) || failed(w))
    return failure();
  return single(convolution(c, *x, *w, Value()));
}

// QLinearConv: ConvInteger plus the int32 bias B (quantized with scale
// x_scale * w_scale, zero point 0), requantized with
// x_scale * w_scale / y_scale; w's parameters per tensor or per output channel.
Results importQLinearConv(NodeContext &c) {
  if (failed(requireInputs(c, {0, 1, 3, 4, 6})))
    return failure();
  int64_t rank = rankOf(c.input(0));
  Value bias = c.input(8);
  if (bias && !elementTypeOf(bias).isInteger(32))
    return c.fail("B must be an int32 tensor");
  auto x = centeredInt32(c, 0, 2, QuantParam::PerTensor, "x");
  auto w = centeredInt32(c, 3, 5, QuantParam::PerChannel, "w");
  auto yUnsigned = outputIsUint8(c, 7);
  auto xs = quantParam(c, 1, QuantParam::PerTensor, rank, "x_scale");
  auto ys = quantParam(c, 6, QuantParam::PerTensor, rank, "y_scale");
  auto yz = quantParam(c, 7, QuantParam::PerTensor, rank, "y_zero_point");
  // The weight's per-channel scale is per output channel: axis 1 of y.
  auto ws = alongAxis(c, c.input(4), rank, 1);
  if (failed(x) || failed(w) || failed(yUnsigned) || failed(xs) || failed(ys) || failed(yz) || failed(ws))
    return failure();
  auto acc = convolution(c, *x, *w, bias);
  auto scale = combinedScale(c, *xs, *ws, *ys);
  if (failed(acc) || failed(scale))
    return failure();
  return single(requantize(c, *acc, *scale, *yz, *yUnsigned));
}

} // namespace

void addQuantizationImporters(llvm::StringMap<NodeImporter> &t) {
  t["DequantizeLinear"] = importDequantizeLinear;
  t["QuantizeLinear"] = importQuantizeLinear;
  t["DynamicQuantizeLinear"] = importDynamicQuantizeLinear;
  t["MatMulInteger"] = importMatMulInteger;
  t["QLinearMatMul"] = importQLinearMatMul;
  t["ConvInteger"] = importConvInteger;
  t["QLinearConv"] = importQLinearConv;
}

} // namespace kiln
