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
    Type t = a[0].getType();
    Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, a[0]));
    Value one = scalarConstant(b, l, t, 1);
    return arith::DivFOp::create(b, l, one, arith::AddFOp::create(b, l, one, e));
  });
  patterns.add<CastPattern>(patterns.getContext());
}

} // namespace kiln
