// graph elementwise ops (binary with broadcasting, unary math, cast) -> linalg.generic.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// Lowers any single-result elementwise op given a scalar body.
template <typename OpTy>
struct ElementwisePattern : OpConversionPattern<OpTy> {
  ElementwisePattern(MLIRContext *ctx, BodyFn body)
      : OpConversionPattern<OpTy>(ctx), body(std::move(body)) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Value result = buildElementwise(rewriter, op.getLoc(), type,
                                    adaptor.getOperands(), body);
    rewriter.replaceOp(op, result);
    return success();
  }
  BodyFn body;
};

template <typename OpTy>
void add(RewritePatternSet &patterns, BodyFn body) {
  patterns.add<ElementwisePattern<OpTy>>(patterns.getContext(), std::move(body));
}

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

Value powScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x)) {
    y = castScalar(b, loc, y, x.getType());
    return math::PowFOp::create(b, loc, x, y);
  }
  if (isFloat(y)) {
    Value xf = castScalar(b, loc, x, y.getType());
    return castScalar(b, loc, math::PowFOp::create(b, loc, xf, y), x.getType());
  }
  y = castScalar(b, loc, y, x.getType());
  return math::IPowIOp::create(b, loc, x, y);
}

/// Cast needs the result's element type, so it gets its own pattern.
struct CastPattern : OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type to = type.getElementType();
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(), type,
                                            adaptor.getInput(),
                                            [to](OpBuilder &b, Location l, ValueRange a) {
                                              return castScalar(b, l, a[0], to);
                                            }));
    return success();
  }
};

/// graph.rotary: one elementwise loop over x, cos and sin whose body also reads x's partner
/// element along the last axis (i + H/2 for the first half, negated; i - H/2 for the second).
struct RotaryPattern : OpConversionPattern<RotaryOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RotaryOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    const int64_t rank = type.getRank(), half = type.getDimSize(rank - 1) / 2;
    Value x = adaptor.getInput();
    auto body = [x, rank, half](OpBuilder &b, Location l, ValueRange a) -> Value {
      SmallVector<Value> at;
      for (int64_t d = 0; d < rank; ++d)
        at.push_back(linalg::IndexOp::create(b, l, d));
      Value i = at.back(), h = arith::ConstantIndexOp::create(b, l, half);
      Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, i, h);
      at.back() = arith::SelectOp::create(b, l, first, arith::AddIOp::create(b, l, i, h),
                                          arith::SubIOp::create(b, l, i, h));
      Value partner = tensor::ExtractOp::create(b, l, x, at);
      partner = arith::SelectOp::create(b, l, first, arith::NegFOp::create(b, l, partner), partner);
      return addValues(b, l, mulValues(b, l, a[0], a[1]), mulValues(b, l, partner, a[2]));
    };
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(), type,
                                            ValueRange{x, adaptor.getCos(), adaptor.getSin()}, body));
    return success();
  }
};

/// Activations whose body reads the op's alpha/beta.
using ActivationFn = std::function<Value(OpBuilder &, Location, Value, double alpha, double beta)>;

template <typename OpTy>
struct ActivationPattern : OpConversionPattern<OpTy> {
  ActivationPattern(MLIRContext *ctx, ActivationFn body)
      : OpConversionPattern<OpTy>(ctx), body(std::move(body)) {}
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    double alpha = op.getAlpha().convertToDouble(), beta = op.getBeta().convertToDouble();
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(), type, adaptor.getInput(),
                                            [&](OpBuilder &b, Location l, ValueRange a) {
                                              return body(b, l, a[0], alpha, beta);
                                            }));
    return success();
  }
  ActivationFn body;
};

template <typename OpTy>
void addActivation(RewritePatternSet &patterns, ActivationFn body) {
  patterns.add<ActivationPattern<OpTy>>(patterns.getContext(), std::move(body));
}

/// Gelu (opset 20): 0.5 x (1 + erf(x / sqrt 2)), or with tanh(sqrt(2/pi) (x + 0.044715 x^3)).
struct GeluPattern : OpConversionPattern<GeluOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GeluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool tanhForm = op.getApproximate() == "tanh";
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(), type, adaptor.getInput(),
                                            [tanhForm](OpBuilder &b, Location l, ValueRange a) {
      Value x = a[0];
      Type t = x.getType();
      Value phi;
      if (tanhForm) {
        Value x3 = mulValues(b, l, mulValues(b, l, x, x), x);
        Value inner = addValues(b, l, x, mulValues(b, l, scalarConstant(b, l, t, 0.044715), x3));
        inner = mulValues(b, l, scalarConstant(b, l, t, 0.7978845608028654), inner);
        phi = math::TanhOp::create(b, l, inner);
      } else {
        phi = math::ErfOp::create(b, l, mulValues(b, l, x, scalarConstant(b, l, t, 0.7071067811865476)));
      }
      Value half = mulValues(b, l, x, scalarConstant(b, l, t, 0.5));
      return mulValues(b, l, half, addValues(b, l, phi, scalarConstant(b, l, t, 1)));
    }));
    return success();
  }
};

/// Mod: C's fmod (fmod=1, floats or ints), or Python's rule where the result
/// takes the divisor's sign (fmod=0, ints).
struct ModPattern : OpConversionPattern<ModOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ModOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool fmod = op.getFmod() != 0;
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildElementwise(
                               rewriter, op.getLoc(), type, adaptor.getOperands(),
                               [fmod](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 if (isFloat(a[0]))
                                   return arith::RemFOp::create(b, l, a[0], a[1]);
                                 Type t = a[0].getType();
                                 Value zero = scalarConstant(b, l, t, 0);
                                 // Guard division by zero (undefined in ONNX; must not trap).
                                 Value isZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a[1], zero);
                                 Value d = arith::SelectOp::create(b, l, isZero, scalarConstant(b, l, t, 1), a[1]);
                                 Value r = arith::RemSIOp::create(b, l, a[0], d);
                                 if (fmod)
                                   return r;
                                 Value rNeg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, r, zero);
                                 Value dNeg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, d, zero);
                                 Value rNonZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, r, zero);
                                 Value differ = arith::XOrIOp::create(b, l, rNeg, dNeg);
                                 Value fix = arith::AndIOp::create(b, l, differ, rNonZero);
                                 return arith::SelectOp::create(b, l, fix, arith::AddIOp::create(b, l, r, d), r);
                               }));
    return success();
  }
};

/// Float classification ops with an i1 result.
template <typename OpTy>
struct ClassifyPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool pos = true, neg = true;
    if constexpr (std::is_same_v<OpTy, IsInfOp>) {
      pos = op.getDetectPositive() != 0;
      neg = op.getDetectNegative() != 0;
    }
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildElementwise(
                               rewriter, op.getLoc(), type, adaptor.getInput(),
                               [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 Value x = a[0];
                                 if constexpr (std::is_same_v<OpTy, IsNaNOp>)
                                   return arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, x, x);
                                 auto ft = cast<FloatType>(x.getType());
                                 auto inf = [&](bool negative) -> Value {
                                   return arith::ConstantOp::create(
                                       b, l, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), negative)));
                                 };
                                 Value result = arith::ConstantOp::create(b, l, b.getBoolAttr(false));
                                 if (pos)
                                   result = arith::OrIOp::create(
                                       b, l, result, arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, x, inf(false)));
                                 if (neg)
                                   result = arith::OrIOp::create(
                                       b, l, result, arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, x, inf(true)));
                                 return result;
                               }));
    return success();
  }
};

/// BitShift on unsigned integers: shift amounts of the width or more give 0.
struct BitShiftPattern : OpConversionPattern<BitShiftOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BitShiftOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool left = op.getDirection() == "LEFT";
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildElementwise(
                               rewriter, op.getLoc(), type, adaptor.getOperands(),
                               [left](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 Type t = a[0].getType();
                                 Value width = scalarConstant(b, l, t, t.getIntOrFloatBitWidth());
                                 Value tooFar = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, a[1], width);
                                 Value shifted = left ? (Value)arith::ShLIOp::create(b, l, a[0], a[1])
                                                      : (Value)arith::ShRUIOp::create(b, l, a[0], a[1]);
                                 return arith::SelectOp::create(b, l, tooFar, scalarConstant(b, l, t, 0), shifted);
                               }));
    return success();
  }
};

/// Expand: an elementwise copy broadcast to the result's shape.
struct ExpandPattern : OpConversionPattern<ExpandOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExpandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(),
                                            cast<RankedTensorType>(op.getType()), adaptor.getInput(),
                                            [](OpBuilder &, Location, ValueRange a) { return a[0]; }));
    return success();
  }
};

Value cmp(OpBuilder &b, Location l, Value x, Value y, arith::CmpFPredicate f,
          arith::CmpIPredicate i) {
  if (isFloat(x))
    return arith::CmpFOp::create(b, l, f, x, y);
  return arith::CmpIOp::create(b, l, i, x, y);
}

Value select(OpBuilder &b, Location l, Value c, Value x, Value y) {
  return arith::SelectOp::create(b, l, c, x, y);
}

Value expOf(OpBuilder &b, Location l, Value x) { return math::ExpOp::create(b, l, x); }

Value softplus(OpBuilder &b, Location l, Value x) {
  // log(1 + e^x), exactly x once e^x would overflow the sum's precision.
  Value big = scalarConstant(b, l, x.getType(), 20);
  Value soft = math::Log1pOp::create(b, l, expOf(b, l, x));
  return select(b, l, cmp(b, l, x, big, arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt), x, soft);
}

} // namespace

void populateElementwiseLoweringPatterns(RewritePatternSet &patterns) {
  using B = OpBuilder &;
  using L = Location;
  using A = ValueRange;
  add<AddOp>(patterns, [](B b, L l, A a) { return addValues(b, l, a[0], a[1]); });
  add<SubOp>(patterns, [](B b, L l, A a) { return subValues(b, l, a[0], a[1]); });
  add<MulOp>(patterns, [](B b, L l, A a) { return mulValues(b, l, a[0], a[1]); });
  add<DivOp>(patterns, [](B b, L l, A a) { return divValues(b, l, a[0], a[1]); });
  add<PowOp>(patterns, [](B b, L l, A a) { return powScalar(b, l, a[0], a[1]); });
  add<SqrtOp>(patterns, [](B b, L l, A a) -> Value { return math::SqrtOp::create(b, l, a[0]); });
  add<ExpOp>(patterns, [](B b, L l, A a) -> Value { return math::ExpOp::create(b, l, a[0]); });
  add<LogOp>(patterns, [](B b, L l, A a) -> Value { return math::LogOp::create(b, l, a[0]); });
  add<TanhOp>(patterns, [](B b, L l, A a) -> Value { return math::TanhOp::create(b, l, a[0]); });
  add<ErfOp>(patterns, [](B b, L l, A a) -> Value { return math::ErfOp::create(b, l, a[0]); });
  add<FloorOp>(patterns, [](B b, L l, A a) -> Value { return math::FloorOp::create(b, l, a[0]); });
  add<CeilOp>(patterns, [](B b, L l, A a) -> Value { return math::CeilOp::create(b, l, a[0]); });
  add<IdentityOp>(patterns, [](B, L, A a) -> Value { return a[0]; });
  add<NegOp>(patterns, [](B b, L l, A a) -> Value {
    if (isFloat(a[0]))
      return arith::NegFOp::create(b, l, a[0]);
    return subValues(b, l, scalarConstant(b, l, a[0].getType(), 0), a[0]);
  });
  add<AbsOp>(patterns, [](B b, L l, A a) -> Value {
    if (isFloat(a[0]))
      return math::AbsFOp::create(b, l, a[0]);
    return math::AbsIOp::create(b, l, a[0]);
  });
  add<ReciprocalOp>(patterns, [](B b, L l, A a) {
    return divValues(b, l, scalarConstant(b, l, a[0].getType(), 1), a[0]);
  });
  add<ReluOp>(patterns, [](B b, L l, A a) {
    return maxValues(b, l, a[0], scalarConstant(b, l, a[0].getType(), 0));
  });
  add<SigmoidOp>(patterns, [](B b, L l, A a) -> Value {
    Value one = scalarConstant(b, l, a[0].getType(), 1);
    return arith::DivFOp::create(b, l, one, arith::AddFOp::create(b, l, one, expOfNegated(b, l, a[0])));
  });
  add<SiluOp>(patterns, [](B b, L l, A a) -> Value {
    Value one = scalarConstant(b, l, a[0].getType(), 1);
    return arith::DivFOp::create(b, l, a[0], arith::AddFOp::create(b, l, one, expOfNegated(b, l, a[0])));
  });
  patterns.add<CastPattern, GeluPattern, RotaryPattern, ExpandPattern, ModPattern, BitShiftPattern, ClassifyPattern<IsNaNOp>,
               ClassifyPattern<IsInfOp>>(patterns.getContext());

  using F = arith::CmpFPredicate;
  using I = arith::CmpIPredicate;
  add<SinOp>(patterns, [](B b, L l, A a) -> Value { return math::SinOp::create(b, l, a[0]); });
  add<TanOp>(patterns, [](B b, L l, A a) -> Value { return math::TanOp::create(b, l, a[0]); });
  add<AsinOp>(patterns, [](B b, L l, A a) -> Value { return math::AsinOp::create(b, l, a[0]); });
  add<AcosOp>(patterns, [](B b, L l, A a) -> Value { return math::AcosOp::create(b, l, a[0]); });
  add<AtanOp>(patterns, [](B b, L l, A a) -> Value { return math::AtanOp::create(b, l, a[0]); });
  add<SinhOp>(patterns, [](B b, L l, A a) -> Value { return math::SinhOp::create(b, l, a[0]); });
  add<CoshOp>(patterns, [](B b, L l, A a) -> Value { return math::CoshOp::create(b, l, a[0]); });
  add<AsinhOp>(patterns, [](B b, L l, A a) -> Value { return math::AsinhOp::create(b, l, a[0]); });
  add<AcoshOp>(patterns, [](B b, L l, A a) -> Value { return math::AcoshOp::create(b, l, a[0]); });
  add<AtanhOp>(patterns, [](B b, L l, A a) -> Value { return math::AtanhOp::create(b, l, a[0]); });
  add<CosOp>(patterns, [](B b, L l, A a) -> Value { return math::CosOp::create(b, l, a[0]); });
  add<RoundOp>(patterns, [](B b, L l, A a) -> Value { return math::RoundEvenOp::create(b, l, a[0]); });
  add<SignOp>(patterns, [](B b, L l, A a) {
    Type t = a[0].getType();
    Value zero = scalarConstant(b, l, t, 0);
    Value pos = select(b, l, cmp(b, l, a[0], zero, F::OGT, I::sgt), scalarConstant(b, l, t, 1), zero);
    return select(b, l, cmp(b, l, a[0], zero, F::OLT, I::slt), scalarConstant(b, l, t, -1), pos);
  });
  add<SoftplusOp>(patterns, [](B b, L l, A a) { return softplus(b, l, a[0]); });
  add<SoftsignOp>(patterns, [](B b, L l, A a) -> Value {
    Value one = scalarConstant(b, l, a[0].getType(), 1);
    return arith::DivFOp::create(b, l, a[0],
                                 arith::AddFOp::create(b, l, one, math::AbsFOp::create(b, l, a[0])));
  });
  add<HardSwishOp>(patterns, [](B b, L l, A a) {
    Type t = a[0].getType();
    Value h = addValues(b, l, mulValues(b, l, a[0], scalarConstant(b, l, t, 1.0 / 6)),
                        scalarConstant(b, l, t, 0.5));
    h = maxValues(b, l, minValues(b, l, h, scalarConstant(b, l, t, 1)), scalarConstant(b, l, t, 0));
    return mulValues(b, l, a[0], h);
  });
  add<MishOp>(patterns, [](B b, L l, A a) -> Value {
    return arith::MulFOp::create(b, l, a[0], math::TanhOp::create(b, l, softplus(b, l, a[0])));
  });
  add<NotOp>(patterns, [](B b, L l, A a) -> Value {
    return arith::XOrIOp::create(b, l, a[0], scalarConstant(b, l, a[0].getType(), 1));
  });
  add<MaxOp>(patterns, [](B b, L l, A a) { return maxValues(b, l, a[0], a[1]); });
  add<MinOp>(patterns, [](B b, L l, A a) { return minValues(b, l, a[0], a[1]); });
  add<PReluOp>(patterns, [](B b, L l, A a) {
    Value zero = scalarConstant(b, l, a[0].getType(), 0);
    return select(b, l, cmp(b, l, a[0], zero, F::OLT, I::slt), mulValues(b, l, a[0], a[1]), a[0]);
  });
  add<AndOp>(patterns, [](B b, L l, A a) -> Value { return arith::AndIOp::create(b, l, a[0], a[1]); });
  add<OrOp>(patterns, [](B b, L l, A a) -> Value { return arith::OrIOp::create(b, l, a[0], a[1]); });
  add<XorOp>(patterns, [](B b, L l, A a) -> Value { return arith::XOrIOp::create(b, l, a[0], a[1]); });
  add<EqualOp>(patterns, [](B b, L l, A a) { return cmp(b, l, a[0], a[1], F::OEQ, I::eq); });
  add<LessOp>(patterns, [](B b, L l, A a) { return cmp(b, l, a[0], a[1], F::OLT, I::slt); });
  add<LessOrEqualOp>(patterns, [](B b, L l, A a) { return cmp(b, l, a[0], a[1], F::OLE, I::sle); });
  add<GreaterOp>(patterns, [](B b, L l, A a) { return cmp(b, l, a[0], a[1], F::OGT, I::sgt); });
  add<GreaterOrEqualOp>(patterns, [](B b, L l, A a) { return cmp(b, l, a[0], a[1], F::OGE, I::sge); });
  add<WhereOp>(patterns, [](B b, L l, A a) { return select(b, l, a[0], a[1], a[2]); });
  add<ClipOp>(patterns, [](B b, L l, A a) { return minValues(b, l, maxValues(b, l, a[0], a[1]), a[2]); });

  using D = double;
  addActivation<EluOp>(patterns, [](B b, L l, Value x, D alpha, D) {
    Type t = x.getType();
    Value neg = mulValues(b, l, scalarConstant(b, l, t, alpha),
                          subValues(b, l, expOf(b, l, x), scalarConstant(b, l, t, 1)));
    return select(b, l, cmp(b, l, x, scalarConstant(b, l, t, 0), F::OLT, I::slt), neg, x);
  });
  addActivation<LeakyReluOp>(patterns, [](B b, L l, Value x, D alpha, D) {
    Type t = x.getType();
    return select(b, l, cmp(b, l, x, scalarConstant(b, l, t, 0), F::OLT, I::slt),
                  mulValues(b, l, x, scalarConstant(b, l, t, alpha)), x);
  });
  addActivation<SeluOp>(patterns, [](B b, L l, Value x, D alpha, D gamma) {
    Type t = x.getType();
    Value neg = mulValues(b, l, scalarConstant(b, l, t, alpha),
                          subValues(b, l, expOf(b, l, x), scalarConstant(b, l, t, 1)));
    Value v = select(b, l, cmp(b, l, x, scalarConstant(b, l, t, 0), F::OLE, I::sle), neg, x);
    return mulValues(b, l, v, scalarConstant(b, l, t, gamma));
  });
  addActivation<HardSigmoidOp>(patterns, [](B b, L l, Value x, D alpha, D beta) {
    Type t = x.getType();
    Value v = addValues(b, l, mulValues(b, l, x, scalarConstant(b, l, t, alpha)),
                        scalarConstant(b, l, t, beta));
    return maxValues(b, l, minValues(b, l, v, scalarConstant(b, l, t, 1)), scalarConstant(b, l, t, 0));
  });
  addActivation<CeluOp>(patterns, [](B b, L l, Value x, D alpha, D) {
    Type t = x.getType();
    Value zero = scalarConstant(b, l, t, 0);
    Value e = expOf(b, l, divValues(b, l, x, scalarConstant(b, l, t, alpha)));
    Value neg = mulValues(b, l, scalarConstant(b, l, t, alpha), subValues(b, l, e, scalarConstant(b, l, t, 1)));
    return addValues(b, l, maxValues(b, l, x, zero), minValues(b, l, neg, zero));
  });
  addActivation<ThresholdedReluOp>(patterns, [](B b, L l, Value x, D alpha, D) {
    Type t = x.getType();
    return select(b, l, cmp(b, l, x, scalarConstant(b, l, t, alpha), F::OGT, I::sgt), x,
                  scalarConstant(b, l, t, 0));
  });
  // Shrink: alpha carries lambd, beta carries bias.
  addActivation<ShrinkOp>(patterns, [](B b, L l, Value x, D lambd, D bias) {
    Type t = x.getType();
    Value zero = scalarConstant(b, l, t, 0);
    Value up = select(b, l, cmp(b, l, x, scalarConstant(b, l, t, lambd), F::OGT, I::sgt),
                      subValues(b, l, x, scalarConstant(b, l, t, bias)), zero);
    return select(b, l, cmp(b, l, x, scalarConstant(b, l, t, -lambd), F::OLT, I::slt),
                  addValues(b, l, x, scalarConstant(b, l, t, bias)), up);
  });
}

} // namespace kiln
