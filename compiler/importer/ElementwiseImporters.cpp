// Elementwise ops: arithmetic, comparison and logic, activations, Clip, Where, Trilu, casts, Identity and Dropout.
#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

#include <limits>

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

template <typename OpTy> NodeImporter binary() {
  return [](NodeContext &c) -> Results {
    if (failed(require(c, 2)))
      return failure();
    Value rhs = c.input(1);
    // Before opset 7, `broadcast=1, axis=k` aligned B's dims with A's from
    // axis k: append unit dims to B so that numpy broadcasting agrees.
    if (c.opset < 7 && c.intAttr("broadcast", 0) && c.attr("axis")) {
      int64_t ra = rankOf(c.input(0)), rb = rankOf(rhs);
      int64_t axis = c.intAttr("axis", 0);
      if (axis < 0)
        axis += ra;
      int64_t trailing = ra - axis - rb;
      if (axis < 0 || trailing < 0)
        return c.fail("legacy broadcast axis out of range");
      if (trailing > 0) {
        SmallVector<int64_t> axes;
        for (int64_t i = 0; i < trailing; ++i)
          axes.push_back(rb + i);
        auto expanded = create<UnsqueezeOp>(c, rhs, axes);
        if (failed(expanded))
          return failure();
        rhs = *expanded;
      }
    }
    return single(create<OpTy>(c, c.input(0), rhs));
  };
}

template <typename OpTy> NodeImporter unary() {
  return [](NodeContext &c) -> Results {
    if (failed(require(c, 1)))
      return failure();
    return single(create<OpTy>(c, c.input(0)));
  };
}

Results importBitShift(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<BitShiftOp>(c, c.input(0), c.input(1), c.stringAttr("direction", "")));
}

Results importMod(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<ModOp>(c, c.input(0), c.input(1), c.intAttr("fmod", 0)));
}

Results importPRelu(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  Value slope = c.input(1);
  // Before opset 7 a 1-D slope applied per channel (axis 1).
  int64_t rank = rankOf(c.input(0));
  if (c.opset < 7 && rankOf(slope) == 1 && rank > 2) {
    SmallVector<int64_t> axes;
    for (int64_t i = 1; i < rank - 1; ++i)
      axes.push_back(i);
    auto expanded = create<UnsqueezeOp>(c, slope, axes);
    if (failed(expanded))
      return failure();
    slope = *expanded;
  }
  return single(create<PReluOp>(c, c.input(0), slope));
}

/// Activations with float parameters: (ONNX attribute, default) for alpha and beta.
template <typename OpTy>
NodeImporter activation(const char *alphaName, float alphaDefault, const char *betaName,
                        float betaDefault) {
  return [=](NodeContext &c) -> Results {
    if (failed(require(c, 1)))
      return failure();
    return single(create<OpTy>(c, c.input(0), c.b.getF32FloatAttr(c.floatAttr(alphaName, alphaDefault)),
                               c.b.getF32FloatAttr(c.floatAttr(betaName, betaDefault))));
  };
}

/// Gelu (opset 20): approximate "none" (erf) or "tanh".
Results importGelu(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  std::string approximate = c.stringAttr("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return c.fail("Gelu approximate '" + approximate + "' is not \"none\" or \"tanh\"");
  return single(create<GeluOp>(c, c.input(0), c.b.getStringAttr(approximate)));
}

/// Max, Min, Sum, Mean: a chain of broadcasting binary ops over all inputs.
template <typename OpTy> NodeImporter variadic(bool mean = false) {
  return [=](NodeContext &c) -> Results {
    SmallVector<Value> inputs;
    for (Value v : c.inputs)
      if (v)
        inputs.push_back(v);
    if (inputs.empty())
      return c.fail("needs at least one input");
    Value acc = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i) {
      auto next = create<OpTy>(c, acc, inputs[i]);
      if (failed(next))
        return failure();
      acc = *next;
    }
    if (mean && inputs.size() > 1) {
      Type et = cast<RankedTensorType>(acc.getType()).getElementType();
      auto ft = dyn_cast<FloatType>(et);
      if (!ft)
        return c.fail("Mean needs a floating-point type");
      auto n = create<ConstantOp>(c, DenseElementsAttr::get(RankedTensorType::get({}, et),
                                                            c.b.getFloatAttr(ft, inputs.size())));
      if (failed(n))
        return failure();
      return single(create<DivOp>(c, acc, *n));
    }
    if (inputs.size() == 1)
      return single(create<IdentityOp>(c, acc));
    return SmallVector<Value>{acc};
  };
}

Results importClip(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  auto scalar = [&](Value given, bool isMin, StringRef attrName) -> FailureOr<Value> {
    if (given)
      return given;
    auto type = RankedTensorType::get({}, et);
    Attribute value;
    if (auto ft = dyn_cast<FloatType>(et)) {
      double d = c.opset < 11 && c.attr(attrName)
                     ? c.floatAttr(attrName, 0)
                     : (isMin ? -std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::infinity());
      value = DenseElementsAttr::get(type, c.b.getFloatAttr(ft, d));
    } else {
      auto it = cast<IntegerType>(et);
      APInt v = isMin ? APInt::getSignedMinValue(it.getWidth()) : APInt::getSignedMaxValue(it.getWidth());
      value = DenseElementsAttr::get(type, v);
    }
    return create<ConstantOp>(c, cast<ElementsAttr>(value));
  };
  auto lo = scalar(c.opset >= 11 ? c.input(1) : Value(), true, "min");
  auto hi = scalar(c.opset >= 11 ? c.input(2) : Value(), false, "max");
  if (failed(lo) || failed(hi))
    return failure();
  return single(create<ClipOp>(c, x, *lo, *hi));
}

Results importWhere(NodeContext &c) {
  if (failed(require(c, 3)))
    return failure();
  return single(create<WhereOp>(c, c.input(0), c.input(1), c.input(2)));
}

Results importIsNaN(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<IsNaNOp>(c, c.input(0)));
}

Results importIsInf(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<IsInfOp>(c, c.input(0), c.intAttr("detect_positive", 1), c.intAttr("detect_negative", 1)));
}

Results importTrilu(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t k = 0;
  Value kValue;
  if (Value kIn = c.input(1)) {
    DenseIntElementsAttr kAttr;
    if (matchPattern(kIn, m_Constant(&kAttr))) {
      if (!kAttr.empty())
        k = (*kAttr.getValues<APInt>().begin()).getSExtValue();
    } else {
      // A computed offset only moves the mask, never the shape: read it at run time.
      kValue = kIn;
    }
  }
  return single(create<TriluOp>(c, c.input(0), kValue, c.intAttr("upper", 1), k));
}

Results importCast(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t to = c.intAttr("to", 0);
  Type et = onnxElementType(c.b.getContext(), to);
  if (!et)
    return c.fail("unsupported target type " + Twine(to));
  if (isStringType(et) || isStringType(c.input(0).getType()))
    return importStringCast(c, c.input(0), et);
  return single(create<CastOp>(c, c.input(0), et));
}

Results importCastLike(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  Type et = cast<RankedTensorType>(c.input(1).getType()).getElementType();
  if (isStringType(et) || isStringType(c.input(0).getType()))
    return importStringCast(c, c.input(0), et);
  return single(create<CastOp>(c, c.input(0), et));
}

/// Dropout whose training_mode is true or computed: graph.dropout.
Results importTrainingDropout(NodeContext &c) {
  Value x = c.input(0);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  if (!isa<FloatType>(et))
    return c.fail("dropout needs a floating-point input");
  Value ratio = c.input(1);
  if (!ratio) {
    auto half = create<ConstantOp>(c, DenseElementsAttr::get(RankedTensorType::get({}, et),
                                                             c.b.getFloatAttr(et, 0.5)));
    if (failed(half))
      return failure();
    ratio = *half;
  }
  auto op = createOperation<DropoutOp, 2>(c, x, ratio, c.input(2), c.intAttr("seed", 0));
  if (failed(op))
    return failure();
  SmallVector<Value> results{(*op)->getResult(0)};
  if (c.node.output_size() == 2)
    results.push_back((*op)->getResult(1));
  return results;
}

Results importIdentityLike(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  // Dropout is the identity only at inference: training_mode must be absent,
  // or a constant false.
  if (c.node.op_type() == "Dropout" && c.input(2)) {
    DenseIntElementsAttr training;
    bool off = matchPattern(c.input(2), m_Constant(&training)) &&
               (training.empty() || (*training.getValues<APInt>().begin()).isZero());
    if (!off)
      return importTrainingDropout(c);
  }
  if (c.node.op_type() == "Dropout" && c.intAttr("is_test", 1) == 0 && c.opset < 7)
    return c.fail("is_test=0 (random dropout) is not supported");
  auto y = create<IdentityOp>(c, c.input(0));
  if (failed(y))
    return failure();
  SmallVector<Value> results{*y};
  // Dropout's mask (opset 12+: bool) keeps every element at inference: all
  // true, in the input's shape (a constant once the shape folds).
  if (c.node.op_type() == "Dropout" && c.opset >= 12 && c.node.output_size() == 2 &&
      !c.node.output(1).empty()) {
    auto shape = create<ShapeOp>(c, c.input(0), (int64_t)0, IntegerAttr());
    if (failed(shape))
      return failure();
    auto one = DenseElementsAttr::get(RankedTensorType::get({1}, c.b.getI1Type()), true);
    auto mask = create<ConstantOfShapeOp>(c, *shape, one);
    if (failed(mask))
      return failure();
    results.push_back(*mask);
  }
  for (int i = (int)results.size(); i < c.node.output_size(); ++i)
    if (!c.node.output(i).empty())
      return c.fail("only the first output is supported");
  return results;
}

} // namespace

void addElementwiseImporters(llvm::StringMap<NodeImporter> &t) {
  t["Add"] = binary<AddOp>();
  t["Sub"] = binary<SubOp>();
  t["Mul"] = binary<MulOp>();
  t["Div"] = binary<DivOp>();
  t["Pow"] = binary<PowOp>();
  t["And"] = binary<AndOp>();
  t["Or"] = binary<OrOp>();
  t["Xor"] = binary<XorOp>();
  t["Equal"] = binary<EqualOp>();
  t["Less"] = binary<LessOp>();
  t["LessOrEqual"] = binary<LessOrEqualOp>();
  t["Greater"] = binary<GreaterOp>();
  t["GreaterOrEqual"] = binary<GreaterOrEqualOp>();
  t["BitShift"] = importBitShift;
  t["Mod"] = importMod;
  t["PRelu"] = importPRelu;
  t["Sqrt"] = unary<SqrtOp>();
  t["Exp"] = unary<ExpOp>();
  t["Log"] = unary<LogOp>();
  t["Neg"] = unary<NegOp>();
  t["Abs"] = unary<AbsOp>();
  t["Reciprocal"] = unary<ReciprocalOp>();
  t["Floor"] = unary<FloorOp>();
  t["Ceil"] = unary<CeilOp>();
  t["Relu"] = unary<ReluOp>();
  t["Sigmoid"] = unary<SigmoidOp>();
  t["Tanh"] = unary<TanhOp>();
  t["Erf"] = unary<ErfOp>();
  t["Sin"] = unary<SinOp>();
  t["Cos"] = unary<CosOp>();
  t["Tan"] = unary<TanOp>();
  t["Asin"] = unary<AsinOp>();
  t["Acos"] = unary<AcosOp>();
  t["Atan"] = unary<AtanOp>();
  t["Sinh"] = unary<SinhOp>();
  t["Cosh"] = unary<CoshOp>();
  t["Asinh"] = unary<AsinhOp>();
  t["Acosh"] = unary<AcoshOp>();
  t["Atanh"] = unary<AtanhOp>();
  t["Sign"] = unary<SignOp>();
  t["Round"] = unary<RoundOp>();
  t["Softplus"] = unary<SoftplusOp>();
  t["Softsign"] = unary<SoftsignOp>();
  t["HardSwish"] = unary<HardSwishOp>();
  t["Mish"] = unary<MishOp>();
  t["Not"] = unary<NotOp>();
  t["Elu"] = activation<EluOp>("alpha", 1.0f, "", 0.0f);
  t["LeakyRelu"] = activation<LeakyReluOp>("alpha", 0.01f, "", 0.0f);
  t["Selu"] = activation<SeluOp>("alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f);
  t["HardSigmoid"] = activation<HardSigmoidOp>("alpha", 0.2f, "beta", 0.5f);
  t["Celu"] = activation<CeluOp>("alpha", 1.0f, "", 0.0f);
  t["ThresholdedRelu"] = activation<ThresholdedReluOp>("alpha", 1.0f, "", 0.0f);
  t["Shrink"] = activation<ShrinkOp>("lambd", 0.5f, "bias", 0.0f);
  t["Gelu"] = importGelu;
  t["Max"] = variadic<MaxOp>();
  t["Min"] = variadic<MinOp>();
  t["Sum"] = variadic<AddOp>();
  t["Mean"] = variadic<AddOp>(/*mean=*/true);
  t["Clip"] = importClip;
  t["Where"] = importWhere;
  t["IsNaN"] = importIsNaN;
  t["IsInf"] = importIsInf;
  t["Trilu"] = importTrilu;
  t["Cast"] = importCast;
  t["CastLike"] = importCastLike;
  t["Identity"] = importIdentityLike;
  t["Dropout"] = importIdentityLike;
}

} // namespace kiln
