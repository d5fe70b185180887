// graph.grid_sample -> one linalg.generic over the output that reads the input at computed taps (tensor.extract).
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;

/// Scalar arithmetic of one output element of GridSample, following
/// PyTorch's grid_sampler: unnormalize, apply the padding mode to the
/// coordinate, read taps (outside the input: 0), interpolate.
struct Sampler {
  OpBuilder &b;
  Location loc;
  Type et;
  Value input, n, ch;
  Value size[2];   // W, H as index
  Value sizeF[2];  // W, H as et
  bool align;
  StringRef padding;

  Value f(double v) { return scalarConstant(b, loc, et, v); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value clamp(Value x, Value lo, Value hi) {
    return arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, x, lo), hi);
  }

  /// Grid value in [-1, 1] -> pixel coordinate along axis a (0: x/W, 1: y/H).
  Value unnormalize(Value g, int a) {
    Value g1 = add(g, f(1));
    if (align)
      return mul(div(g1, f(2)), sub(sizeF[a], f(1)));
    return div(sub(mul(g1, sizeF[a]), f(1)), f(2));
  }

  /// Reflects x into [low, high] given twice the bounds (PyTorch's reflect_coordinates).
  Value reflect(Value x, Value twiceLow, Value twiceHigh) {
    Value lo = div(twiceLow, f(2));
    Value span = div(sub(twiceHigh, twiceLow), f(2));
    Value dist = math::AbsFOp::create(b, loc, sub(x, lo));
    Value safeSpan = arith::SelectOp::create(
        b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, span, f(0)), f(1), span);
    Value extra = arith::RemFOp::create(b, loc, dist, safeSpan);
    Value flips = math::FloorOp::create(b, loc, div(dist, safeSpan));
    Value even = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       arith::RemFOp::create(b, loc, flips, f(2)), f(0));
    Value r = arith::SelectOp::create(b, loc, even, add(extra, lo), add(sub(span, extra), lo));
    return arith::SelectOp::create(b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, span, f(0)),
                                   f(0), r);
  }

  /// The padding mode applied to a coordinate along axis a.
  Value pad(Value x, int a) {
    Value last = sub(sizeF[a], f(1));
    if (padding == "border")
      return clamp(x, f(0), last);
    if (padding == "reflection") {
      x = align ? reflect(x, f(0), mul(f(2), last)) : reflect(x, f(-1), sub(mul(f(2), sizeF[a]), f(1)));
      return clamp(x, f(0), last);
    }
    return x;
  }

  /// input[n, c, y, x] for integral float coordinates, 0 outside.
  Value tap(Value x, Value y) {
    Value xi = arith::FPToSIOp::create(b, loc, b.getI64Type(), x);
    Value yi = arith::FPToSIOp::create(b, loc, b.getI64Type(), y);
    xi = arith::IndexCastOp::create(b, loc, b.getIndexType(), xi);
    yi = arith::IndexCastOp::create(b, loc, b.getIndexType(), yi);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0), one = arith::ConstantIndexOp::create(b, loc, 1);
    auto inside = [&](Value i, Value n) {
      return arith::AndIOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i, zero),
                                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, n));
    };
    Value valid = arith::AndIOp::create(b, loc, inside(xi, size[0]), inside(yi, size[1]));
    auto clampIndex = [&](Value i, Value n) {
      return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, i, zero),
                                    arith::SubIOp::create(b, loc, n, one));
    };
    Value v = tensor::ExtractOp::create(b, loc, input,
                                        ValueRange{n, ch, clampIndex(yi, size[1]), clampIndex(xi, size[0])});
    return arith::SelectOp::create(b, loc, valid, v, f(0));
  }

  /// Cubic convolution weights (A = -0.75) of the taps at floor - 1 .. floor + 2.
  SmallVector<Value> cubicWeights(Value t) {
    const double a = -0.75;
    auto near = [&](Value x) { // |x| <= 1
      return add(mul(mul(sub(mul(f(a + 2), x), f(a + 3)), x), x), f(1));
    };
    auto far = [&](Value x) { // 1 < |x| < 2
      return sub(mul(add(mul(sub(mul(f(a), x), f(5 * a)), x), f(8 * a)), x), f(4 * a));
    };
    return {far(add(t, f(1))), near(t), near(sub(f(1), t)), far(sub(f(2), t))};
  }

  Value sample(StringRef mode, Value gx, Value gy) {
    Value x = unnormalize(gx, 0), y = unnormalize(gy, 1);
    if (mode == "nearest")
      return tap(math::RoundEvenOp::create(b, loc, pad(x, 0)), math::RoundEvenOp::create(b, loc, pad(y, 1)));
    if (mode == "bilinear") {
      x = pad(x, 0);
      y = pad(y, 1);
      Value x0 = math::FloorOp::create(b, loc, x), y0 = math::FloorOp::create(b, loc, y);
      Value x1 = add(x0, f(1)), y1 = add(y0, f(1));
      Value wx1 = sub(x, x0), wy1 = sub(y, y0);
      Value wx0 = sub(f(1), wx1), wy0 = sub(f(1), wy1);
      Value top = add(mul(tap(x0, y0), wx0), mul(tap(x1, y0), wx1));
      Value bottom = add(mul(tap(x0, y1), wx0), mul(tap(x1, y1), wx1));
      return add(mul(top, wy0), mul(bottom, wy1));
    }
    // bicubic: the padding mode applies to each tap's coordinate.
    Value x0 = math::FloorOp::create(b, loc, x), y0 = math::FloorOp::create(b, loc, y);
    SmallVector<Value> wx = cubicWeights(sub(x, x0)), wy = cubicWeights(sub(y, y0));
    Value result = f(0);
    for (int i = 0; i < 4; ++i) {
      Value yi = pad(add(y0, f(i - 1)), 1);
      Value row = f(0);
      for (int j = 0; j < 4; ++j)
        row = add(row, mul(tap(pad(add(x0, f(j - 1)), 0), yi), wx[j]));
      result = add(result, mul(row, wy[i]));
    }
    return result;
  }
};

struct GridSamplePattern : OpConversionPattern<GridSampleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GridSampleOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput(), grid = adaptor.getGrid();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    SmallVector<Value> dims = {dimValue(rewriter, loc, grid, 0), dimValue(rewriter, loc, x, 1),
                               dimValue(rewriter, loc, grid, 1), dimValue(rewriter, loc, grid, 2)};
    Value w = dimValue(rewriter, loc, x, 3), h = dimValue(rewriter, loc, x, 2);
    auto asFloat = [&](Value i) {
      return castScalar(rewriter, loc, arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), i), et);
    };
    Value wf = asFloat(w), hf = asFloat(h);
    Value init = emptyTensor(rewriter, loc, rt, dims);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    auto gridMap = [&](int64_t component) {
      return AffineMap::get(4, 0, {d(0), d(2), d(3), getAffineConstantExpr(component, ctx)}, ctx);
    };
    SmallVector<AffineMap> maps = {gridMap(0), gridMap(1), AffineMap::getMultiDimIdentityMap(4, ctx)};
    SmallVector<IteratorType> iters(4, IteratorType::parallel);
    std::string mode = op.getMode().str(), padding = op.getPaddingMode().str();
    bool align = op.getAlignCorners() != 0;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{rt}, ValueRange{grid, grid}, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Sampler s{b, l, et, x, linalg::IndexOp::create(b, l, 0), linalg::IndexOp::create(b, l, 1),
                    {w, h}, {wf, hf}, align, padding};
          linalg::YieldOp::create(b, l, s.sample(mode, args[0], args[1]));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateSamplingLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<GridSamplePattern>(patterns.getContext());
}

} // namespace kiln
