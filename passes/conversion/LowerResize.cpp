// graph.resize (ONNX Resize/Upsample: nearest, linear, cubic; constant or run-time scales) -> linalg.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;

/// What one axis needs inside the kernel, computed once before it: the input
/// length, the scale and the unrounded resized length (input * scale) in f64,
/// as ONNX's reference computes coordinates in double precision, and for
/// tf_crop_and_resize the roi's terms.
struct Axis {
  Value inDim, outDim;       // index
  Value inLen, scale, len;   // f64
  Value roiDelta, roiOffset; // f64, crop mode only: end - start, start * (in - 1)
  bool identity = false;     // output coordinate == input coordinate, known at compile time
};

std::optional<SmallVector<double>> constantValues(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<double> values;
  if (isa<FloatType>(attr.getElementType()))
    for (const APFloat &x : attr.getValues<APFloat>())
      values.push_back(x.convertToDouble());
  else
    for (const APInt &x : attr.getValues<APInt>())
      values.push_back((double)x.getSExtValue());
  return values;
}

/// Each output coordinate maps back to a fractional input coordinate (ONNX's
/// coordinate_transformation_mode); nearest then reads one element, linear
/// blends 2 neighbours per resized axis and cubic 4 (Keys' kernel with
/// cubic_coeff_a, reads beyond the edge repeat the edge element as ONNX's
/// edge padding does).
struct ResizePattern : OpConversionPattern<ResizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ResizeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    int64_t rank = rt.getRank();
    StringRef ctm = op.getCoordinateTransformationMode();
    bool crop = ctm == "tf_crop_and_resize";
    if (op.getMode() != "nearest" && !isa<FloatType>(et))
      return rewriter.notifyMatchFailure(op, "interpolating resize needs floats");
    // Weights and sums in f32 (f64 for f64 data).
    Type ct = et.isF64() ? (Type)rewriter.getF64Type() : (Type)rewriter.getF32Type();
    auto f64 = rewriter.getF64Type();
    OpBuilder &b = rewriter;
    auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    auto toF64 = [&](Value i) -> Value {
      return arith::SIToFPOp::create(b, loc, f64, arith::IndexCastOp::create(b, loc, b.getI64Type(), i));
    };
    auto element = [&](Value t, int64_t i) -> Value {
      return tensor::ExtractOp::create(b, loc, t, ValueRange{index(i)});
    };

    Value scales = adaptor.getScales(), sizes = adaptor.getSizes();
    auto known = constantValues(scales ? scales : sizes);
    // Coordinate rules under which a scale of 1 maps each output coordinate to itself.
    bool identityAtOne =
        ctm == "half_pixel" || ctm == "pytorch_half_pixel" || ctm == "align_corners" || ctm == "asymmetric";
    SmallVector<Axis> axes(rank);
    for (int64_t i = 0; i < rank; ++i) {
      Axis &a = axes[i];
      a.inDim = dimValue(b, loc, x, i);
      a.inLen = toF64(a.inDim);
      if (scales) {
        a.scale = castScalar(b, loc, element(scales, i), f64);
        a.len = arith::MulFOp::create(b, loc, a.scale, a.inLen);
        // A NaN, negative or huge run-time scale must not reach fptosi (poison): NaN and
        // negatives give 0, the rest at most 2^53 (too large to allocate, an error later).
        Value f0 = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0));
        Value big = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(9007199254740992.0));
        Value valid = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, a.len, f0);
        Value len = arith::SelectOp::create(b, loc, valid, arith::MinimumFOp::create(b, loc, a.len, big), f0);
        a.outDim = arith::IndexCastOp::create(
            b, loc, b.getIndexType(),
            arith::FPToSIOp::create(b, loc, b.getI64Type(), math::FloorOp::create(b, loc, len)));
        // floor(1.0 * n) == n: a unit scale keeps even a dynamic length.
        a.identity = identityAtOne && known && (*known)[i] == 1.0;
      } else {
        a.outDim = arith::IndexCastOp::create(b, loc, b.getIndexType(), element(sizes, i));
        a.scale = arith::DivFOp::create(b, loc, toF64(a.outDim), a.inLen);
        // scale * input as ONNX's reference has it, not the size itself: the two differ
        // in the last bit, which decides whether a crop point lies inside the input.
        a.len = arith::MulFOp::create(b, loc, a.scale, a.inLen);
        a.identity = identityAtOne && known && !xt.isDynamicDim(i) && (*known)[i] == (double)xt.getDimSize(i);
      }
      if (!rt.isDynamicDim(i)) {
        a.outDim = index(rt.getDimSize(i));
      } else {
        // A run-time size below 0 is empty, and an empty input resizes to nothing (nothing to read).
        Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a.inDim, index(0));
        a.outDim = arith::SelectOp::create(b, loc, empty, index(0),
                                           arith::MaxSIOp::create(b, loc, a.outDim, index(0)));
      }
      if (crop) {
        // In the roi's own type, as ONNX's reference computes these two.
        Value start = element(adaptor.getRoi(), i), end = element(adaptor.getRoi(), rank + i);
        Value last = castScalar(
            b, loc,
            arith::SubFOp::create(b, loc, a.inLen, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1))),
            start.getType());
        a.roiDelta = castScalar(b, loc, arith::SubFOp::create(b, loc, end, start), f64);
        a.roiOffset = castScalar(b, loc, arith::MulFOp::create(b, loc, start, last), f64);
      }
    }

    SmallVector<Value> outDims;
    for (const Axis &a : axes)
      outDims.push_back(a.outDim);
    Value init = emptyTensor(b, loc, rt, outDims);
    auto generic = linalg::GenericOp::create(
        b, loc, rt, ValueRange{}, ValueRange{init},
        SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, b.getContext())},
        SmallVector<IteratorType>(rank, IteratorType::parallel), [&](OpBuilder &nb, Location l, ValueRange) {
          SmallVector<Value> coords;
          for (int64_t d = 0; d < rank; ++d)
            coords.push_back(linalg::IndexOp::create(nb, l, d));
          linalg::YieldOp::create(nb, l, interpolate(nb, l, op, x, axes, coords, ct));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }

  /// The output element at `coords`.
  static Value interpolate(OpBuilder &b, Location l, ResizeOp op, Value x, ArrayRef<Axis> axes,
                           ArrayRef<Value> coords, Type ct) {
    StringRef mode = op.getMode(), ctm = op.getCoordinateTransformationMode(),
              nearestMode = op.getNearestMode();
    Type et = cast<RankedTensorType>(x.getType()).getElementType();
    int64_t rank = axes.size();
    auto f64 = b.getF64Type();
    auto fc = [&](double v) -> Value { return arith::ConstantOp::create(b, l, b.getF64FloatAttr(v)); };
    auto cc = [&](double v) -> Value { return arith::ConstantOp::create(b, l, b.getFloatAttr(ct, v)); };
    auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, l, v); };
    auto toIndex = [&](Value f) -> Value {
      return arith::IndexCastOp::create(b, l, b.getIndexType(),
                                        arith::FPToSIOp::create(b, l, b.getI64Type(), f));
    };
    auto clampIndex = [&](Value i, const Axis &a) -> Value {
      Value last = arith::SubIOp::create(b, l, a.inDim, index(1));
      return arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, i, index(0)), last);
    };
    auto add = [&](Value p, Value q) -> Value { return arith::AddFOp::create(b, l, p, q); };
    auto sub = [&](Value p, Value q) -> Value { return arith::SubFOp::create(b, l, p, q); };
    auto mul = [&](Value p, Value q) -> Value { return arith::MulFOp::create(b, l, p, q); };
    auto div = [&](Value p, Value q) -> Value { return arith::DivFOp::create(b, l, p, q); };
    auto select = [&](Value c, Value p, Value q) -> Value { return arith::SelectOp::create(b, l, c, p, q); };
    auto isOne = [&](Value len) -> Value {
      return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, len, fc(1));
    };

    // Fractional input coordinate of output coordinate `c` along `a`; for
    // crop mode also whether it falls outside the input.
    Value outside;
    auto source = [&](const Axis &a, Value c) -> Value {
      Value o = arith::SIToFPOp::create(b, l, f64, arith::IndexCastOp::create(b, l, b.getI64Type(), c));
      Value half = fc(0.5), last = sub(a.inLen, fc(1));
      if (ctm == "half_pixel")
        return sub(div(add(o, half), a.scale), half);
      if (ctm == "pytorch_half_pixel") {
        // As ONNX's reference, the unrounded resized length decides; then 0 as the spec
        // says (the reference's -0.5 differs only for cubic).
        Value many = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, a.len, fc(1));
        return select(many, sub(div(add(o, half), a.scale), half), fc(0));
      }
      if (ctm == "align_corners") {
        // ONNX divides by the unrounded resized length minus 1.
        Value one = isOne(a.len);
        Value den = select(one, fc(1), sub(a.len, fc(1)));
        return select(one, fc(0), div(mul(o, last), den));
      }
      if (ctm == "tf_half_pixel_for_nn")
        return div(add(o, half), a.scale);
      if (ctm == "tf_crop_and_resize") {
        Value one = isOne(a.len);
        Value den = select(one, fc(1), sub(a.len, fc(1)));
        Value v = select(one, div(mul(a.roiDelta, last), fc(2)), div(mul(mul(o, a.roiDelta), last), den));
        v = add(v, a.roiOffset);
        Value out =
            arith::OrIOp::create(b, l, arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, v, fc(0)),
                                 arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, v, last));
        outside = outside ? arith::OrIOp::create(b, l, outside, out) : out;
        return v;
      }
      return div(o, a.scale); // asymmetric
    };

    // Per axis: the input indices read and their weights (one tap for an
    // identity axis or nearest).
    SmallVector<SmallVector<Value>> taps(rank), weights(rank);
    for (int64_t i = 0; i < rank; ++i) {
      const Axis &a = axes[i];
      if (a.identity) {
        taps[i] = {coords[i]};
        continue;
      }
      Value v = source(a, coords[i]);
      if (mode == "nearest") {
        Value r;
        if (nearestMode == "floor")
          r = math::FloorOp::create(b, l, v);
        else if (nearestMode == "ceil")
          r = math::CeilOp::create(b, l, v);
        else if (nearestMode == "round_prefer_ceil")
          r = math::FloorOp::create(b, l, add(v, fc(0.5)));
        else // round_prefer_floor: halves go down
          r = math::CeilOp::create(b, l, sub(v, fc(0.5)));
        taps[i] = {clampIndex(toIndex(r), a)};
        continue;
      }
      if (mode == "linear") {
        // Clamping the coordinate first is ONNX's edge padding for two taps.
        Value last = sub(a.inLen, fc(1));
        v = arith::MinimumFOp::create(b, l, arith::MaximumFOp::create(b, l, v, fc(0)), last);
        Value f0 = math::FloorOp::create(b, l, v);
        Value t = castScalar(b, l, sub(v, f0), ct);
        Value lo = clampIndex(toIndex(f0), a);
        taps[i] = {lo, clampIndex(arith::AddIOp::create(b, l, lo, index(1)), a)};
        weights[i] = {arith::SubFOp::create(b, l, cc(1), t), t};
        continue;
      }
      // Cubic: taps floor(v) - 1 .. floor(v) + 2 at distances t + 1, t, 1 - t, 2 - t.
      Value f0 = math::FloorOp::create(b, l, v);
      Value t = castScalar(b, l, sub(v, f0), ct);
      Value base = toIndex(f0);
      double A = op.getCubicCoeffA().convertToDouble();
      auto cA = cc(A), cA2 = cc(A + 2), cA3 = cc(A + 3), c5A = cc(5 * A), c8A = cc(8 * A), c4A = cc(4 * A);
      auto mulC = [&](Value p, Value q) -> Value { return arith::MulFOp::create(b, l, p, q); };
      auto addC = [&](Value p, Value q) -> Value { return arith::AddFOp::create(b, l, p, q); };
      auto subC = [&](Value p, Value q) -> Value { return arith::SubFOp::create(b, l, p, q); };
      // |d| in [1, 2): ((A d - 5A) d + 8A) d - 4A;  |d| < 1: ((A + 2) d - (A + 3)) d d + 1.
      auto far = [&](Value d) { return subC(mulC(addC(mulC(subC(mulC(cA, d), c5A), d), c8A), d), c4A); };
      auto near = [&](Value d) { return addC(mulC(mulC(subC(mulC(cA2, d), cA3), d), d), cc(1)); };
      Value oneMinusT = subC(cc(1), t);
      SmallVector<Value> w = {far(addC(t, cc(1))), near(t), near(oneMinusT), far(addC(oneMinusT, cc(1)))};
      SmallVector<Value> raw;
      for (int64_t k = 0; k < 4; ++k)
        raw.push_back(arith::AddIOp::create(b, l, base, index(k - 1)));
      if (op.getExcludeOutside()) {
        Value sum;
        for (int64_t k = 0; k < 4; ++k) {
          Value in = arith::AndIOp::create(
              b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, raw[k], index(0)),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, raw[k], a.inDim));
          w[k] = arith::SelectOp::create(b, l, in, w[k], cc(0));
          sum = sum ? addC(sum, w[k]) : w[k];
        }
        for (int64_t k = 0; k < 4; ++k)
          w[k] = arith::DivFOp::create(b, l, w[k], sum);
      }
      for (int64_t k = 0; k < 4; ++k)
        taps[i].push_back(clampIndex(raw[k], a));
      weights[i] = w;
    }

    Value result;
    if (mode == "nearest" || llvm::all_of(weights, [](const auto &w) { return w.empty(); })) {
      SmallVector<Value> src;
      for (int64_t i = 0; i < rank; ++i)
        src.push_back(taps[i][0]);
      result = tensor::ExtractOp::create(b, l, x, src);
    } else {
      // Sum over every combination of taps, weighted by the product of the axes' weights.
      SmallVector<int64_t> pick(rank, 0);
      Value acc = cc(0);
      while (true) {
        SmallVector<Value> src;
        Value w;
        for (int64_t i = 0; i < rank; ++i) {
          src.push_back(taps[i][pick[i]]);
          if (!weights[i].empty())
            w = w ? arith::MulFOp::create(b, l, w, weights[i][pick[i]]) : weights[i][pick[i]];
        }
        Value v = castScalar(b, l, tensor::ExtractOp::create(b, l, x, src), ct);
        acc = arith::AddFOp::create(b, l, acc, arith::MulFOp::create(b, l, w, v));
        int64_t i = rank - 1;
        while (i >= 0 && ++pick[i] == (int64_t)taps[i].size())
          pick[i--] = 0;
        if (i < 0)
          break;
      }
      result = castScalar(b, l, acc, et);
    }
    if (outside) {
      Value fill = scalarConstant(b, l, et, op.getExtrapolationValue().convertToDouble());
      result = arith::SelectOp::create(b, l, outside, fill, result);
    }
    return result;
  }
};

} // namespace

void populateResizeLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ResizePattern>(patterns.getContext());
}

} // namespace kiln
