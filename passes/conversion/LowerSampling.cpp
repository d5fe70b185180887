// graph.grid_sample and graph.roi_align -> one linalg.generic over the output each, reading the input at computed taps.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
  /// The same sampler building at `other` (inside a loop body).
  Sampler at(OpBuilder &other) const {
    return Sampler{other, loc, et, input, n, ch, {size[0], size[1]}, {sizeF[0], sizeF[1]}, align, padding};
  }
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

/// RoiAlign as ONNX Runtime computes it: each bin of a region takes
/// sampling_ratio^2 samples (sampling_ratio 0: ceil(region / output size)
/// per axis, loops with run-time bounds) at the centres of a regular sub-grid; a sample
/// more than one pixel outside the input counts as 0, others are clamped to
/// the input and interpolated bilinearly. avg divides the sum by the sample
/// count; max takes the largest weighted corner value of any sample (ONNX
/// Runtime's definition).
struct RoiAlignPattern : OpConversionPattern<RoiAlignOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RoiAlignOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput(), rois = adaptor.getRois(), batch = adaptor.getBatchIndices();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    SmallVector<Value> dims = {dimValue(rewriter, loc, rois, 0), dimValue(rewriter, loc, x, 1),
                               dimValue(rewriter, loc, x, 0), dimValue(rewriter, loc, x, 0)};
    dims[2] = arith::ConstantIndexOp::create(rewriter, loc, rt.getDimSize(2));
    dims[3] = arith::ConstantIndexOp::create(rewriter, loc, rt.getDimSize(3));
    Value h = dimValue(rewriter, loc, x, 2), w = dimValue(rewriter, loc, x, 3);
    auto asFloat = [&](Value i) {
      return castScalar(rewriter, loc, arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), i), et);
    };
    Value hf = asFloat(h), wf = asFloat(w);
    Value init = emptyTensor(rewriter, loc, rt, dims);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    auto roiMap = [&](int64_t k) { return AffineMap::get(4, 0, {d(0), getAffineConstantExpr(k, ctx)}, ctx); };
    SmallVector<AffineMap> maps = {roiMap(0), roiMap(1), roiMap(2), roiMap(3), AffineMap::get(4, 0, {d(0)}, ctx),
                                   AffineMap::getMultiDimIdentityMap(4, ctx)};
    SmallVector<IteratorType> iters(4, IteratorType::parallel);
    bool halfPixel = op.getCoordinateTransformationMode() == "half_pixel";
    bool isMax = op.getMode() == "max";
    int64_t ratio = op.getSamplingRatio(), outH = rt.getDimSize(2), outW = rt.getDimSize(3);
    double scale = op.getSpatialScale().convertToDouble();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{rt}, ValueRange{rois, rois, rois, rois, batch}, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Sampler s{b, l, et, x, {}, linalg::IndexOp::create(b, l, 1), {w, h}, {wf, hf}, false, "zeros"};
          s.n = arith::IndexCastOp::create(b, l, b.getIndexType(), args[4]);
          double offset = halfPixel ? 0.5 : 0.0;
          auto start = [&](Value v) { return s.sub(s.mul(v, s.f(scale)), s.f(offset)); };
          Value x1 = start(args[0]), y1 = start(args[1]), x2 = start(args[2]), y2 = start(args[3]);
          Value roiW = s.sub(x2, x1), roiH = s.sub(y2, y1);
          if (!halfPixel) {
            roiW = arith::MaximumFOp::create(b, l, roiW, s.f(1));
            roiH = arith::MaximumFOp::create(b, l, roiH, s.f(1));
          }
          Value binH = s.div(roiH, s.f(outH)), binW = s.div(roiW, s.f(outW));
          auto asF = [&](Value i) {
            return castScalar(b, l, arith::IndexCastOp::create(b, l, b.getI64Type(), i), et);
          };
          Value ph = asF(linalg::IndexOp::create(b, l, 2)), pw = asF(linalg::IndexOp::create(b, l, 3));
          Value y0 = s.add(y1, s.mul(ph, binH)), x0 = s.add(x1, s.mul(pw, binW));
          Value acc = isMax ? lowestValue(b, l, et) : s.f(0);
          if (ratio > 0) {
            for (int64_t iy = 0; iy < ratio; ++iy) {
              Value y = s.add(y0, s.div(s.mul(s.f(iy + 0.5), binH), s.f(ratio)));
              for (int64_t ix = 0; ix < ratio; ++ix) {
                Value xs = s.add(x0, s.div(s.mul(s.f(ix + 0.5), binW), s.f(ratio)));
                Value v = roiSample(s, xs, y, isMax);
                acc = isMax ? arith::MaximumFOp::create(b, l, acc, v) : s.add(acc, v);
              }
            }
            if (!isMax)
              acc = s.div(acc, s.f(ratio * ratio));
          } else {
            // Adaptive: ceil(roi size / output size) samples per bin and axis, loops.
            auto count = [&](Value roi, int64_t out) {
              Value n = math::CeilOp::create(b, l, s.div(roi, s.f(out)));
              n = arith::FPToSIOp::create(b, l, b.getI64Type(), n);
              n = arith::MaxSIOp::create(b, l, n, arith::ConstantIntOp::create(b, l, 0, 64));
              return arith::IndexCastOp::create(b, l, b.getIndexType(), n).getResult();
            };
            Value gridH = count(roiH, outH), gridW = count(roiW, outW);
            Value gridHF = asF(gridH), gridWF = asF(gridW);
            Value zero = arith::ConstantIndexOp::create(b, l, 0), one = arith::ConstantIndexOp::create(b, l, 1);
            auto rows = scf::ForOp::create(b, l, zero, gridH, one, ValueRange{acc});
            {
              OpBuilder rb = OpBuilder::atBlockBegin(rows.getBody());
              Sampler rs = s.at(rb);
              Value iy = castScalar(rb, l, arith::IndexCastOp::create(rb, l, rb.getI64Type(), rows.getInductionVar()), et);
              Value y = rs.add(y0, rs.div(rs.mul(rs.add(iy, rs.f(0.5)), binH), gridHF));
              auto cols = scf::ForOp::create(rb, l, zero, gridW, one, ValueRange{rows.getRegionIterArg(0)});
              {
                OpBuilder cb = OpBuilder::atBlockBegin(cols.getBody());
                Sampler cs = s.at(cb);
                Value ix = castScalar(cb, l, arith::IndexCastOp::create(cb, l, cb.getI64Type(), cols.getInductionVar()), et);
                Value xs = cs.add(x0, cs.div(cs.mul(cs.add(ix, cs.f(0.5)), binW), gridWF));
                Value v = roiSample(cs, xs, y, isMax);
                Value a = cols.getRegionIterArg(0);
                scf::YieldOp::create(cb, l, isMax ? (Value)arith::MaximumFOp::create(cb, l, a, v) : cs.add(a, v));
              }
              scf::YieldOp::create(rb, l, cols.getResult(0));
            }
            acc = rows.getResult(0);
            if (!isMax)
              acc = s.div(acc, arith::MaximumFOp::create(b, l, s.mul(gridHF, gridWF), s.f(1)));
          }
          linalg::YieldOp::create(b, l, acc);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }

  /// One bilinear sample (max: the largest weighted corner); 0 when more
  /// than a pixel outside the input.
  static Value roiSample(Sampler &s, Value x, Value y, bool isMax) {
    OpBuilder &b = s.b;
    Location l = s.loc;
    auto lt = [&](Value p, Value q) { return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, p, q); };
    Value outside = arith::OrIOp::create(
        b, l, arith::OrIOp::create(b, l, lt(y, s.f(-1)), lt(s.sizeF[1], y)),
        arith::OrIOp::create(b, l, lt(x, s.f(-1)), lt(s.sizeF[0], x)));
    y = arith::MaximumFOp::create(b, l, y, s.f(0));
    x = arith::MaximumFOp::create(b, l, x, s.f(0));
    auto corners = [&](Value p, Value size) {
      Value last = s.sub(size, s.f(1));
      Value low = math::FloorOp::create(b, l, p);
      Value atEnd = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE, low, last);
      low = arith::SelectOp::create(b, l, atEnd, last, low);
      Value high = arith::SelectOp::create(b, l, atEnd, last, s.add(low, s.f(1)));
      p = arith::SelectOp::create(b, l, atEnd, last, p);
      return std::tuple{low, high, s.sub(p, low)};
    };
    auto [yl, yh, ly] = corners(y, s.sizeF[1]);
    auto [xl, xh, lx] = corners(x, s.sizeF[0]);
    Value hy = s.sub(s.f(1), ly), hx = s.sub(s.f(1), lx);
    Value v1 = s.mul(s.mul(hy, hx), s.tap(xl, yl)), v2 = s.mul(s.mul(hy, lx), s.tap(xh, yl));
    Value v3 = s.mul(s.mul(ly, hx), s.tap(xl, yh)), v4 = s.mul(s.mul(ly, lx), s.tap(xh, yh));
    Value v = isMax ? (Value)arith::MaximumFOp::create(
                          b, l, arith::MaximumFOp::create(b, l, v1, v2), arith::MaximumFOp::create(b, l, v3, v4))
                    : s.add(s.add(v1, v2), s.add(v3, v4));
    return arith::SelectOp::create(b, l, outside, s.f(0), v);
  }
};

} // namespace

void populateSamplingLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<GridSamplePattern, RoiAlignPattern>(patterns.getContext());
}

} // namespace kiln
